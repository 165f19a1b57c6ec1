"""Access to the PostgreSQL server the PostgreSQL store's tests run against.

``NPC_MEMORY_TEST_PG`` holds its URL (``eval "$(scripts/pg-test-server start)"`` starts
a throwaway one and sets it, as ``.ci/run`` does); without it, or without psycopg, those
tests skip. ``NPC_MEMORY_TEST_PG_DIR`` (set by the same script) lets tests restart it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "pg-test-server"


def pg_url() -> str:
    """The test server's URL; skips the calling test when there is none."""
    url = os.environ.get("NPC_MEMORY_TEST_PG")
    if not url:
        pytest.skip(
            "no PostgreSQL server: set NPC_MEMORY_TEST_PG "
            '(eval "$(scripts/pg-test-server start)" starts one; .ci/run does)'
        )
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        pytest.skip("psycopg / psycopg-pool not installed: pip install -e '.[postgres]'")
    return url


def new_world() -> str:
    """A world name no other test uses (tests share one database)."""
    return f"test-{uuid.uuid4().hex[:12]}"


def restart_server() -> None:
    """Restart the test server (every connection drops); skips without its directory."""
    directory = os.environ.get("NPC_MEMORY_TEST_PG_DIR")
    if not directory:
        pytest.skip("NPC_MEMORY_TEST_PG_DIR is not set: the server cannot be restarted from here")
    subprocess.run([str(SCRIPT), "restart", directory], check=True, capture_output=True, timeout=120)


@contextlib.contextmanager
def fresh_database(url: str) -> Iterator[str]:
    """The URL of a new, empty database on the server of ``url`` (dropped afterwards)."""
    import psycopg

    name = f"npc_memory_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield urllib.parse.urlsplit(url)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def wait_until_free(store: Any, keys: list[str]) -> None:
    """Wait until no live session owns ``keys``: the server notices a killed process's (or
    a terminated backend's) connection is gone a moment after it happened."""
    deadline = time.monotonic() + 30
    while any(store.owner_of(key) is not None for key in keys):
        assert time.monotonic() < deadline, f"{keys} still owned after 30 s"
        time.sleep(0.05)
