"""A local fake of the Anthropic Messages API for tests: stdlib HTTP on 127.0.0.1 at an
ephemeral port, answering each request with the next scripted reply and recording
what the real SDK sent.

Besides well-formed answers it misbehaves on request, the way real networks and proxies
do: a body cut off before its ``Content-Length``, a body that stalls half-way, a body
with no length at all (delimited by closing the connection), and huge bodies."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer. ``gate``: hold the answer until the event is set.

    ``cut_after``: announce the whole body's length but send only this many bytes, then
    close the connection. ``stall_after``: send this many bytes of the body, then wait
    (on ``gate`` when given, else ``stall`` seconds) before sending the rest.
    ``no_length``: send no ``Content-Length``; the body ends when the connection closes.
    """

    status: int = 200
    body: bytes | dict[str, Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    gate: threading.Event | None = None
    content_type: str = "application/json"
    cut_after: int | None = None
    stall_after: int | None = None
    stall: float = 30.0
    no_length: bool = False


def message(memories: list[dict[str, Any]] | None = None, *, text: Any = None, tool: bool = False,
            usage: dict[str, int] | None = None, stop_reason: str | None = None,
            content: Any = ...) -> dict[str, Any]:
    """A Messages API response carrying ``{"memories": memories}`` (or raw ``text``, which
    may be any JSON value to imitate a broken answer; or ``content`` as given)."""
    payload = {"memories": memories or []}
    if content is ...:
        if tool:
            content = [{"type": "tool_use", "id": "toolu_01", "name": "record_memories", "input": payload}]
        else:
            content = [{"type": "text", "text": json.dumps(payload) if text is None else text}]
    return {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": content, "stop_reason": stop_reason or ("tool_use" if tool else "end_turn"),
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 420, "output_tokens": 80, "cache_creation_input_tokens": 0,
                           "cache_read_input_tokens": 900},
    }


def memory(content: str = "Alice offered to fight the bandits with me.", tags: list[str] | None = None,
           **fields: Any) -> dict[str, Any]:
    return {"content": content, "kind": "episodic", "tags": tags if tags is not None else ["heroic", "combat"],
            "importance": 0.8, "valence": "positive", "intensity": 0.7, "evidence": [1, 2], **fields}


Responder = Callable[[dict[str, Any]], Reply | dict[str, Any]]
"""Computes an answer from a request's JSON body: a :class:`Reply`, or a response body."""


class FakeMessagesAPI:
    """Start with :meth:`start` (returns the base URL), script with :meth:`push`.

    ``responder``, when set, answers each request that finds no scripted reply waiting,
    from the request's JSON body (a simulated model); otherwise ``default`` answers. A
    responder that raises gets a 500 answered, and the error kept in ``responder_errors``."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.replies: deque[Reply] = deque()
        self.default = Reply(body=message([memory()]))
        self.responder: Responder | None = responder
        self.responder_errors: list[BaseException] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def start(self) -> str:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                try:
                    sent = json.loads(raw)
                except ValueError:  # the client went away mid-request (shutting down)
                    return
                with api._lock:
                    api.requests.append({"path": self.path, "headers": dict(self.headers), "json": sent})
                    scripted = api.replies.popleft() if api.replies else None
                    responder = api.responder
                if scripted is not None:
                    reply = scripted
                elif responder is not None:
                    try:
                        answer = responder(sent)
                    except Exception as exc:
                        with api._lock:
                            api.responder_errors.append(exc)
                        answer = Reply(status=500, body={"type": "error", "error": {
                            "type": "api_error", "message": f"responder failed: {exc!r}"}})
                    reply = answer if isinstance(answer, Reply) else Reply(body=answer)
                else:
                    reply = api.default
                if reply.gate is not None and reply.stall_after is None:
                    reply.gate.wait(timeout=30)
                if reply.delay:
                    threading.Event().wait(reply.delay)
                body = json.dumps(reply.body).encode() if isinstance(reply.body, dict) else reply.body
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.content_type)
                    if not reply.no_length:
                        self.send_header("content-length", str(len(body)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if reply.cut_after is not None:
                        self.wfile.write(body[: reply.cut_after])
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    if reply.stall_after is not None:
                        self.wfile.write(body[: reply.stall_after])
                        self.wfile.flush()
                        if reply.gate is not None:
                            reply.gate.wait(timeout=reply.stall)
                        else:
                            threading.Event().wait(reply.stall)
                        body = body[reply.stall_after:]
                    for start in range(0, len(body), 65536):
                        self.wfile.write(body[start : start + 65536])
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (deadline, size cap): fine

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self.base_url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
