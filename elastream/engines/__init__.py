"""The engines elastream runs, side by side: each comes through the same small interface (elastream.engines.base),
so the controllers and the local loop choose one by `spec.engine` and name no engine's details."""
from __future__ import annotations

from elastream.engines.base import Engine
from elastream.engines.spark import SparkEngine
from elastream.engines.storm import StormEngine

ENGINES: dict[str, Engine] = {"spark": SparkEngine(), "storm": StormEngine()}


def engine_for(spec) -> Engine:
    """The engine of a StreamAppSpec (its `engine` field is validated against ENGINES' names by the schema)."""
    return ENGINES[spec.engine]
