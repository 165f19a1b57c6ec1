"""The HTTP client under the SDK: a cap on response sizes, and a record of how far each
HTTP attempt got (sent? headers received? how many body bytes?), which tells a call that
cost nothing (an error status, a connection never made) from one the API may have billed
without our knowing the usage (a body cut off, stalled or refused for its size).

The cap: a response announcing more than ``max_bytes`` in ``Content-Length`` is refused
as soon as its headers arrive, without reading the body; a body without a length is read
through a counting stream that stops at ``max_bytes``. Compressed bodies are not asked for
(``Accept-Encoding: identity``) and refused if sent anyway, so the cap bounds what is
decoded and parsed. Both are httpx event hooks on the SDK's default client, so they apply
whatever the transport (proxies included).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx2
from anthropic import DefaultAsyncHttpxClient

MAX_RESPONSE_BYTES = 256 * 1024
"""Default cap on a response body. The largest legitimate answer is bounded by the
output limit: the content pack allows at most 8,192 output tokens, about 32 KiB of text,
and even if every character were JSON-escaped as ``\\uXXXX`` inside the text block
(6 bytes each) the body stays under 200 KiB. Decoding and validating an answer just under
the cap takes ~0.9 ms of the worker thread (``benchmarks/test_bench_extraction.py``);
without a cap a 4 MB answer is parsed whole, and ticks running meanwhile wait up to
27 ms for the GIL (with the same load as that benchmark)."""


class ResponseTooLargeError(Exception):
    """A response body over the cap (announced or counted)."""


class UnexpectedEncodingError(Exception):
    """A compressed response body although none was asked for."""


@dataclass
class Attempt:
    """How far one HTTP attempt got: ``sent`` (handed to the connection), ``status``
    (response headers received), ``received`` (body bytes read), ``complete``."""

    sent: bool = False
    status: int | None = None
    received: int = 0
    complete: bool = False


CURRENT_ATTEMPT: ContextVar[Attempt | None] = ContextVar("npc_memory_llm_attempt", default=None)
"""The attempt the current asyncio task is making (set by the gateway around each SDK
call; the SDK sends from the same task, so the hooks below see it)."""


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, max_bytes: int, attempt: Attempt | None) -> None:
        self._inner = inner
        self._max_bytes = max_bytes
        self._attempt = attempt

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._inner:
            received += len(chunk)
            if self._attempt is not None:
                self._attempt.received = received
            if received > self._max_bytes:
                raise ResponseTooLargeError(f"body longer than {self._max_bytes} bytes")
            yield chunk
        if self._attempt is not None:
            self._attempt.complete = True

    async def aclose(self) -> None:
        await self._inner.aclose()


def event_hooks(max_bytes: int) -> dict[str, list[Callable[[Any], Awaitable[None]]]]:
    """httpx event hooks recording the current :class:`Attempt` and capping bodies."""

    async def on_request(request: httpx2.Request) -> None:
        attempt = CURRENT_ATTEMPT.get()
        if attempt is not None:
            attempt.sent = True

    async def on_response(response: httpx2.Response) -> None:
        attempt = CURRENT_ATTEMPT.get()
        if attempt is not None:
            attempt.status = response.status_code
        length = response.headers.get("content-length", "").strip()
        if length.isdigit() and int(length) > max_bytes:
            raise ResponseTooLargeError(f"Content-Length {int(length)} is over the {max_bytes}-byte cap")
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise UnexpectedEncodingError(f"Content-Encoding {encoding!r} was not asked for")
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _CappedStream(response.stream, max_bytes, attempt)

    return {"request": [on_request], "response": [on_response]}


def capped_http_client(max_bytes: int = MAX_RESPONSE_BYTES) -> httpx2.AsyncClient:
    """The SDK's default async HTTP client (its connection limits, keep-alive, proxies
    from the environment) with the size cap and the attempt record."""
    client: httpx2.AsyncClient = DefaultAsyncHttpxClient(
        event_hooks=event_hooks(max_bytes), headers={"Accept-Encoding": "identity"}
    )
    return client
