"""A local fake of the Anthropic Messages API for tests: stdlib HTTP on 127.0.0.1 at an
ephemeral port, answering each request with the next scripted reply and recording
what the real SDK sent."""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer. ``gate``: hold the answer until the event is set."""

    status: int = 200
    body: bytes | dict[str, Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    gate: threading.Event | None = None
    content_type: str = "application/json"


def message(memories: list[dict[str, Any]] | None = None, *, text: str | None = None, tool: bool = False,
            usage: dict[str, int] | None = None) -> dict[str, Any]:
    """A Messages API response carrying ``{"memories": memories}`` (or raw ``text``)."""
    payload = {"memories": memories or []}
    if tool:
        content: list[dict[str, Any]] = [{"type": "tool_use", "id": "toolu_01", "name": "record_memories", "input": payload}]
    else:
        content = [{"type": "text", "text": json.dumps(payload) if text is None else text}]
    return {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": content, "stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None,
        "usage": usage or {"input_tokens": 420, "output_tokens": 80, "cache_creation_input_tokens": 0,
                           "cache_read_input_tokens": 900},
    }


def memory(content: str = "Alice offered to fight the bandits with me.", tags: list[str] | None = None,
           **fields: Any) -> dict[str, Any]:
    return {"content": content, "kind": "episodic", "tags": tags if tags is not None else ["heroic", "combat"],
            "importance": 0.8, "valence": "positive", "intensity": 0.7, **fields}


class FakeMessagesAPI:
    """Start with :meth:`start` (returns the base URL), script with :meth:`push`."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.default = Reply(body=message([memory()]))
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def start(self) -> str:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                with api._lock:
                    api.requests.append({"path": self.path, "headers": dict(self.headers), "json": json.loads(raw)})
                    reply = api.replies.popleft() if api.replies else api.default
                if reply.gate is not None:
                    reply.gate.wait(timeout=30)
                if reply.delay:
                    threading.Event().wait(reply.delay)
                body = json.dumps(reply.body).encode() if isinstance(reply.body, dict) else reply.body
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.content_type)
                    self.send_header("content-length", str(len(body)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (deadline): fine

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
