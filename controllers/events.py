"""EventSink port as Kubernetes events on the StreamApp (kopf posts them)."""
from __future__ import annotations

from typing import Any

import kopf

from elasticity.ports import Event


class KopfEventSink:
    def __init__(self, body: dict[str, Any]):
        self.body = body

    def emit(self, job: str, event: Event) -> None:
        kopf.event(self.body, type=event.type, reason=event.reason, message=event.message[:1024])
