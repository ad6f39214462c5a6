"""The runner's control endpoint: read and set the executor count, over HTTP JSON with a bearer token.

    GET  /healthz             no token; {"status": "ok"}
    GET  /executors           {"current": n, "target": n, "min": a, "max": b, "draining": k, "ids": [...],
                               "mode": "in-place"}
    PUT  /executors           body {"target": n} -> 200 and the new state; 400 {"error": ...} when out of range
                              or malformed
    POST /executors/replace   body {"executors": ["3", ...]} -> 200 {"replaced": [...]}: decommission them and let
                              Spark start one in place of each (placement moves executors this way); 409 where the
                              job cannot (restart mode)
A missing or wrong token gets 401 and changes nothing. http.server in a daemon thread: a few calls a minute.
"""
from __future__ import annotations

import hmac
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Protocol

log = logging.getLogger(__name__)
MAX_BODY = 64 * 1024
METHODS = "use GET or PUT /executors, or POST /executors/replace"


class Scaler(Protocol):
    minimum: int
    maximum: int

    def state(self) -> dict: ...

    def set_target(self, n: int) -> None: ...

    def replace(self, executor_ids: list[str]) -> list[str]: ...


class BadRequest(ValueError):
    """A request the caller must fix; its message is returned as {"error": ...}."""


def parse_target(body: bytes, minimum: int, maximum: int) -> int:
    """The target of a PUT /executors body, or BadRequest with a message saying what is wrong."""
    try:
        doc = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        raise BadRequest('body must be JSON like {"target": 2}') from None
    if not isinstance(doc, dict) or "target" not in doc:
        raise BadRequest('body must be JSON like {"target": 2}')
    target = doc["target"]
    if isinstance(target, bool) or not isinstance(target, int):
        raise BadRequest(f"target must be an integer, got {json.dumps(target)}")
    if not minimum <= target <= maximum:
        raise BadRequest(f"target {target} is outside {minimum}..{maximum}")
    return target


def parse_replace(body: bytes) -> list[str]:
    """The executor ids of a POST /executors/replace body, or BadRequest."""
    try:
        doc = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        doc = None
    ids = doc.get("executors") if isinstance(doc, dict) else None
    if not isinstance(ids, list) or not ids or not all(isinstance(e, str) and e for e in ids):
        raise BadRequest('body must be JSON like {"executors": ["1", "2"]}')
    return ids


class NotPossible(RuntimeError):
    """The job cannot do this in its mode (e.g. replace executors when it rescales by restarting)."""


class ControlServer:
    """Serves the endpoint on (host, port) until stop()."""

    def __init__(self, scaler: Scaler, token: str, port: int, host: str = "0.0.0.0"):
        if not token:
            raise ValueError("the control endpoint needs a non-empty token")
        self.scaler, self._token = scaler, token.encode()
        self._server = ThreadingHTTPServer((host, port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="control", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> "ControlServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def authorized(self, header: str | None) -> bool:
        if not header or not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[len("Bearer "):].strip().encode(), self._token)


def _handler(server: ControlServer) -> Callable[..., BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # route through logging, not stderr
            log.info("control %s - %s", self.address_string(), fmt % args)

        def _reply(self, code: int, doc: dict) -> None:
            body = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if code == 401:
                self.send_header("WWW-Authenticate", 'Bearer realm="elastream"')
            self.end_headers()
            self.wfile.write(body)

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                raise BadRequest(f"body larger than {MAX_BODY} bytes")
            return self.rfile.read(length) if length > 0 else b""

        def _guard(self) -> bool:
            if server.authorized(self.headers.get("Authorization")):
                return True
            self._reply(401, {"error": "missing or wrong bearer token"})
            return False

        def do_GET(self):
            if self.path == "/healthz":
                return self._reply(200, {"status": "ok"})
            if self.path != "/executors":
                return self._reply(404, {"error": f"no such path {self.path}"})
            if self._guard():
                self._reply(200, server.scaler.state())

        def _authorized_body(self) -> bytes | None:
            """The request's body when the token is right; else None, with the 400 or 401 already sent."""
            try:
                body = self._body()  # read before replying so the connection stays usable
            except (BadRequest, ValueError) as err:
                self.close_connection = True
                self._reply(400, {"error": str(err)})
                return None
            return body if self._guard() else None

        def do_PUT(self):
            if self.path != "/executors":
                return self._reply(404, {"error": f"no such path {self.path}"})
            body = self._authorized_body()
            if body is None:
                return
            try:
                target = parse_target(body, server.scaler.minimum, server.scaler.maximum)
            except BadRequest as err:
                return self._reply(400, {"error": str(err)})
            try:
                server.scaler.set_target(target)
            except Exception as err:  # noqa: BLE001 - report the driver's refusal to the caller
                log.exception("rescale to %d failed", target)
                return self._reply(503, {"error": f"rescale failed: {err}"})
            self._reply(200, server.scaler.state())

        def do_POST(self):
            if self.path != "/executors/replace":
                return self._reply(405, {"error": METHODS})
            body = self._authorized_body()
            if body is None:
                return
            try:
                replaced = server.scaler.replace(parse_replace(body))
            except BadRequest as err:
                return self._reply(400, {"error": str(err)})
            except NotPossible as err:
                return self._reply(409, {"error": str(err)})
            except Exception as err:  # noqa: BLE001 - report the driver's refusal to the caller
                log.exception("replacing executors failed")
                return self._reply(503, {"error": f"replace failed: {err}"})
            self._reply(200, {"replaced": replaced})

        def do_DELETE(self):
            self._reply(405, {"error": METHODS})

        do_PATCH = do_DELETE

    return Handler
