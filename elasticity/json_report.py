"""Reports as strict JSON: RFC 8259 has no Infinity or NaN, which Python's json writes bare and most readers refuse
(jq, JavaScript's JSON.parse); a figure that is not finite (an unreachable floor, a ratio over zero) is written null."""
from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """The value with every float that is not finite replaced by None, through dicts, lists and tuples."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any) -> str:
    """Indented strict JSON of the report, ending in a newline."""
    return json.dumps(finite(value), indent=2, allow_nan=False) + "\n"
