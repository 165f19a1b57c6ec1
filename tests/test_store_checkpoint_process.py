"""Checkpoints in a checkpoint process (``TinyDBStore(checkpoint_process=True)``, the
plugin's store): the real ``python -m npc_memory.store.checkpointer`` folds the sealed
segments while the owner goes on appending; the owner finishes the checkpoint, and
falls back to folding on its own thread when the process cannot start, fails or is
killed. Nothing is lost either way."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from npc_memory import install, uninstall
from npc_memory.errors import StoreLockedError
from npc_memory.store import (
    NpcDocument,
    Store,
    StoreMeta,
    TinyDBStore,
    checkpointer,
    encode_document,
    tinydb_store,
)
from npc_memory.store.tinydb_store import file_name
from npc_memory.store.writer import StoreWriter, WriteBatch

from .test_store_contract import npc
from .test_store_damage import load
from .test_store_journal import patched

WAIT = 60.0
"""Seconds a test waits for a checkpoint process at most (a start takes under one)."""


def fill(store: TinyDBStore) -> dict[str, object]:
    """Whole documents, patched documents, a deletion and metadata, as rounds write them."""
    expected: dict[str, object] = {key: patched(store, key, [0.1, 0.3, 0.7]) for key in ("hilda", "bram")}
    store.write([encode_document(npc(f"n{i}", trust=i / 10)) for i in range(6)], StoreMeta(world="v", clock=9.0))
    store.write([encode_document(npc("gone"))])
    store.delete(["gone"])
    expected |= {f"n{i}": npc(f"n{i}", trust=i / 10) for i in range(6)}
    return expected


def run_maintenance(store: TinyDBStore, during: list[NpcDocument] | None = None) -> None:
    """Call ``maintain`` as the writer does (after each batch it writes) until the
    checkpoint is done; each call may first append ``during``'s next document."""
    started = time.monotonic()
    while store.maintain(time.perf_counter() + 0.001) or store.checkpointing:
        if during:
            store.write([encode_document(during.pop(0))])
        assert time.monotonic() - started < WAIT, "the checkpoint process never finished"
        time.sleep(0.005)


def wait_until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` until it holds (for ``WAIT`` seconds at most)."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < WAIT
        time.sleep(0.001)


def segments(db: Path) -> list[str]:
    return sorted(p.name for p in (db / "journal").glob("*.log"))


def test_a_checkpoint_process_writes_the_files_a_fold_on_the_thread_would(tmp_path: Path) -> None:
    by_process = TinyDBStore(tmp_path / "p.db", checkpoint_bytes=1, checkpoint_process=True)
    on_thread = TinyDBStore(tmp_path / "t.db", checkpoint_bytes=1, checkpoint_on_close=False)
    expected = fill(by_process)
    assert fill(on_thread) == expected
    assert not by_process.maintain(time.perf_counter() + 1.0)  # nothing for this thread to do
    assert by_process.checkpointing
    run_maintenance(by_process)
    on_thread.checkpoint()
    assert segments(tmp_path / "p.db") == segments(tmp_path / "t.db") == []
    for name in ["meta.json", *(f"docs/{file_name(key)}" for key in expected)]:
        assert (tmp_path / "p.db" / name).read_bytes() == (tmp_path / "t.db" / name).read_bytes(), name
    assert not (tmp_path / "p.db" / "docs" / file_name("gone")).exists()
    assert by_process.load().documents == expected == on_thread.load().documents
    by_process.close()
    on_thread.close()


def test_appends_go_on_while_the_process_folds_and_wait_for_the_next_checkpoint(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1, checkpoint_process=True)
    expected = fill(store)
    late = [npc(f"late{i}", trust=0.9) for i in range(50)]
    expected |= {d.key: d for d in late}
    store.maintain(time.perf_counter() + 1.0)
    assert store.checkpointing
    run_maintenance(store, during=late[:])  # each call that finds it running appends one
    # Everything sealed when the checkpoint began is folded; later appends are journal.
    assert (tmp_path / "v.db" / "docs" / file_name("hilda")).exists()
    run_maintenance(store)  # the next checkpoint (the journal is past 1 byte again)
    assert store.load().documents == expected
    store.close()
    assert load(tmp_path / "v.db") == expected


class CountingStore(TinyDBStore):
    """Counts the writer's calls of :meth:`maintain`."""

    calls = 0

    def maintain(self, deadline: float, pause: Callable[[], None] | None = None) -> bool:
        self.calls += 1
        return super().maintain(deadline, pause)


def test_the_writer_sleeps_while_the_checkpoint_process_folds(tmp_path: Path) -> None:
    """The writer thread does not poll the process: it waits for its next batch (a
    thread that polled would hold the game's interpreter thousands of times a second)."""
    store = CountingStore(tmp_path / "v.db", checkpoint_bytes=1, checkpoint_process=True)
    many = [npc(f"m{i}") for i in range(2000)]
    store.write([encode_document(d) for d in many])
    writer = StoreWriter(store)  # its idle thread starts the checkpoint
    wait_until(lambda: store.checkpointing)
    started = time.monotonic()
    time.sleep(0.2)
    assert store.checkpointing and store.calls == 1
    batches = 0
    while store.checkpointing:  # each batch wakes the writer, which finishes the checkpoint once it is done
        writer.submit(WriteBatch(captures=[]))
        writer.drain()
        batches += 1
        assert time.monotonic() - started < WAIT
        time.sleep(0.01)
    assert store.calls <= 2 * batches + 1  # a call or two after each batch, none in between
    writer.close()
    store.close()
    assert load(tmp_path / "v.db") == {d.key: d for d in many}


def test_a_writer_behind_on_its_batches_still_finishes_checkpoints(tmp_path: Path) -> None:
    """A writer whose queue never empties (rounds overrunning their interval) finishes a
    checkpoint whose process is done between two batches, not once it has caught up."""
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1, checkpoint_process=True)
    expected = fill(store)
    writer = StoreWriter(store)  # its idle thread starts the checkpoint
    wait_until(lambda: store.checkpointing)
    gate = threading.Event()

    def held(_: Store) -> None:
        gate.wait(WAIT)

    writer.submit(WriteBatch(after=held))  # the writer is busy ...
    assert store._child is not None
    store._child.process.wait()  # ... while the process finishes its fold
    seen: list[bool] = []
    for _ in range(3):  # ... and batches queue up behind
        writer.submit(WriteBatch(after=lambda _: seen.append(store.checkpointing)))
    gate.set()
    writer.drain()
    assert seen == [False, False, False]
    writer.close()
    store.close()
    assert load(tmp_path / "v.db") == expected


def test_closing_finishes_a_checkpoint_whose_process_is_done(tmp_path: Path) -> None:
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1, checkpoint_process=True, checkpoint_on_close=False)
    expected = fill(store)
    store.maintain(time.perf_counter() + 1.0)
    assert store._child is not None
    store._child.process.wait()
    store.close()
    assert segments(tmp_path / "v.db") == []
    assert load(tmp_path / "v.db") == expected
    assert b'"clock":9.0' in (tmp_path / "v.db" / "meta.json").read_bytes()  # read back from the journal


def test_closing_or_a_checkpoint_stops_a_process_still_folding_and_loses_nothing(tmp_path: Path) -> None:
    """Shutting down (or forgetting a player: a checkpoint now) does not wait for a
    low-priority fold: the process is stopped and what it folded is skipped."""
    for how in ("close", "checkpoint"):
        db = tmp_path / f"{how}.db"
        store = TinyDBStore(db, checkpoint_bytes=1, checkpoint_process=True, checkpoint_on_close=False)
        expected = fill(store)
        many = [npc(f"m{i}") for i in range(2000)]
        store.write([encode_document(d) for d in many])
        expected |= {d.key: d for d in many}
        store.maintain(time.perf_counter() + 1.0)
        child = store._child
        assert child is not None
        if how == "checkpoint":
            store.checkpoint()
            assert segments(db) == []
        store.close()
        assert child.process.poll() == -9  # stopped, not waited for
        assert load(db) == expected


def failing_python(tmp_path: Path) -> str:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho 'no module named npc_memory' >&2\nexit 3\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for the interpreter")
def test_a_process_that_fails_leaves_the_fold_to_the_thread_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1, checkpoint_process=True)
    store.checkpoint_python = failing_python(tmp_path)
    expected = fill(store)
    with caplog.at_level(logging.ERROR, "npc_memory.store"):
        run_maintenance(store)
    said = [r.message for r in caplog.records if "checkpoint process" in r.message]
    assert len(said) == tinydb_store.CHILD_TRIES
    assert all("exited with status 3" in m and "no module named npc_memory" in m for m in said)
    assert all("retried in a new one" in m for m in said[:-1]) and "from now on" in said[-1]
    assert not store.checkpoint_process  # not tried again
    assert segments(tmp_path / "v.db") == []  # folded on this thread instead
    assert store.load().documents == expected
    store.close()


def test_an_interpreter_that_cannot_start_leaves_the_fold_to_the_thread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1, checkpoint_process=True)
    store.checkpoint_python = str(tmp_path / "no-such-python")
    expected = fill(store)
    with caplog.at_level(logging.ERROR, "npc_memory.store"):
        run_maintenance(store)
    assert any("cannot start it" in r.message for r in caplog.records)
    assert segments(tmp_path / "v.db") == []
    assert store.load().documents == expected
    store.close()


def test_a_killed_checkpoint_process_loses_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1, checkpoint_process=True)
    expected = fill(store)
    many = [npc(f"m{i}", trust=0.2) for i in range(2000)]
    store.write([encode_document(d) for d in many])
    expected |= {d.key: d for d in many}
    store.maintain(time.perf_counter() + 1.0)
    assert store._child is not None
    docs = tmp_path / "v.db" / "docs"
    wait_until(lambda: any(docs.glob("*.json")))  # killed in the middle of its fold
    store._child.process.kill()
    store._child.process.wait()
    assert 0 < len(list(docs.glob("*.json"))) < len(expected)  # part folded, part not
    with caplog.at_level(logging.ERROR, "npc_memory.store"):
        run_maintenance(store)
    assert any("exited with status -9" in r.message for r in caplog.records)
    assert store.load().documents == expected
    store.close()
    assert load(tmp_path / "v.db") == expected


def test_the_plugins_store_checkpoints_in_a_process(tmp_path: Path) -> None:
    plugin = install(world="checkpointer", store=tmp_path / "v.db")
    try:
        store = plugin.storage.store
        assert isinstance(store, TinyDBStore) and store.checkpoint_process
        store.checkpoint_bytes = 1
        for i in range(20):
            plugin.add_npc(key=f"n{i}")
        plugin.save()
        started = time.monotonic()
        docs = tmp_path / "v.db" / "docs"
        while not (docs / file_name("n19")).exists():  # each save wakes the writer; only the process folds
            plugin.remember("n0", None, f"A note at {time.monotonic()}")
            plugin.save()
            assert time.monotonic() - started < WAIT
            time.sleep(0.01)
        assert store.checkpoint_process and store._child_failures == 0  # folded by the process
    finally:
        uninstall("checkpointer")


def test_a_process_whose_owner_has_changed_folds_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An owner that dies before its checkpoint process takes the checkpoint lock may be
    followed by one that folds the same segments: the process then leaves them alone."""
    store = TinyDBStore(tmp_path / "v.db", checkpoint_on_close=False)
    expected = fill(store)
    scan = store._start_scan(strict=True)
    assert scan is not None and store._lock_id is not None
    args = [str(tmp_path / "v.db"), "--thresholds", "[]", *map(str, scan.segments)]
    dev, inode = store._lock_id
    assert checkpointer.main(["--owner", f"{os.getpid() + 1}:{dev}:{inode}", *args]) == checkpointer.NEW_OWNER
    assert checkpointer.main(["--owner", f"{os.getpid()}:{dev}:{inode + 1}", *args]) == checkpointer.NEW_OWNER
    assert not list((tmp_path / "v.db" / "docs").glob("*.json"))
    assert checkpointer.main(["--owner", f"{os.getpid()}:{dev}:{inode}", *args]) == 0
    assert {p.name for p in (tmp_path / "v.db" / "docs").glob("*.json")} == {file_name(k) for k in expected}
    assert '"top":' in capsys.readouterr().out
    store.close()


@pytest.mark.parametrize("how", ["engine", "frozen", "none"])
def test_no_checkpoint_process_where_this_interpreter_cannot_start_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A game engine embedding Python reports its own executable (running it would
    start the game again), a frozen application likewise, some embeddings none."""
    if how == "engine":
        monkeypatch.setattr(sys, "executable", "/opt/game/bin/GameEngine")
    elif how == "frozen":
        monkeypatch.setattr(sys, "frozen", True, raising=False)
    else:
        monkeypatch.setattr(sys, "executable", "")
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1, checkpoint_process=True)
    assert not store.checkpoint_process
    expected = fill(store)
    run_maintenance(store)
    assert segments(tmp_path / "v.db") == []  # folded on the thread
    assert store.load().documents == expected
    store.close()


def test_the_checkpoint_process_imports_from_the_games_import_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A game that put ``npc_memory`` on ``sys.path`` itself (not installed) still gets
    a checkpoint process that finds it."""
    monkeypatch.setattr(sys, "path", ["/game/vendor", "", *sys.path])
    monkeypatch.setenv("PYTHONPATH", "/already/set")
    paths = tinydb_store._child_environment()["PYTHONPATH"].split(os.pathsep)
    assert paths[0] == "/game/vendor" and paths[-1] == "/already/set" and "" not in paths


def test_an_owner_that_dies_mid_checkpoint_leaves_a_fold_the_next_owner_waits_for(tmp_path: Path) -> None:
    """The checkpoint process outlives an owner that dies (it holds no lock of the
    owner's); the next owner must not fold beside it, so opening waits for it."""
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1, checkpoint_process=True)
    many = [npc(f"m{i}") for i in range(2000)]
    store.write([encode_document(d) for d in many])
    store.maintain(time.perf_counter() + 1.0)
    child = store._child
    assert child is not None
    wait_until(lambda: any((tmp_path / "v.db" / "docs").glob("*.json")))  # folding now
    store._child = None  # the owner dies: its lock goes, its checkpoint process goes on
    assert store._lock is not None
    store._lock.release()
    successor = TinyDBStore(tmp_path / "v.db")
    assert len(list((tmp_path / "v.db" / "docs").glob("*.json"))) == len(many)  # it waited for the whole fold
    assert child.process.wait() == 0
    assert successor.load().documents == {d.key: d for d in many}
    successor.close()
    child.files.close()
    store._journal.close()


def test_an_open_gives_up_on_a_checkpoint_process_that_never_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    TinyDBStore(tmp_path / "v.db").close()
    monkeypatch.setattr(tinydb_store, "ORPHAN_WAIT", 0.2)
    with tinydb_store.checkpoint_lock(tmp_path / "v.db"), pytest.raises(StoreLockedError, match="checkpoint process"):
        TinyDBStore(tmp_path / "v.db")
    TinyDBStore(tmp_path / "v.db").close()  # the lock it took was let go


SCHEDULING_PROBE = "import os; print(os.sched_getscheduler(0))"
"""A process that prints the scheduling policy it was born with."""


def in_real_time_thread(body: Callable[[], object]) -> object:
    """``body``'s result, run in a thread in the real-time class a server loop may run
    in (``SCHED_FIFO``); skips where this process may not take it."""
    if not hasattr(os, "sched_setscheduler"):
        pytest.skip("no POSIX scheduling classes here")
    outcome: list[object] = []

    def run() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        except OSError as exc:  # (not permitted, or not supported by this libc)
            outcome.append(("skip", exc))
            return
        try:
            outcome.append(body())
        except BaseException as exc:  # reported on the test's thread
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WAIT)
    assert outcome, "the real-time thread did not finish"
    if isinstance(outcome[0], tuple) and outcome[0][0] == "skip":
        pytest.skip(f"this process may not use a real-time scheduling class: {outcome[0][1]}")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def born_with() -> str:
    """The scheduling policy a process this thread starts now is born with."""
    probe = [sys.executable, "-c", SCHEDULING_PROBE]
    return subprocess.run(probe, capture_output=True, text=True, check=True, timeout=WAIT).stdout.strip()


def test_a_real_time_thread_starts_processes_in_normal_scheduling_and_keeps_its_class() -> None:
    def spawn() -> tuple[str, str, int, bool, str]:
        inherited = born_with()
        with tinydb_store._children_born_normal():
            born = born_with()
            during = os.sched_getscheduler(0) & ~os.SCHED_RESET_ON_FORK
        still_marked = bool(os.sched_getscheduler(0) & os.SCHED_RESET_ON_FORK)
        return inherited, born, during, still_marked, born_with()

    outcome = cast(tuple[str, str, int, bool, str], in_real_time_thread(spawn))
    inherited, born, during, still_marked, after = outcome
    assert inherited == str(os.SCHED_FIFO)  # what a process started from it is born in otherwise
    assert born == str(os.SCHED_OTHER)
    assert during == os.SCHED_FIFO  # the thread itself stays real-time throughout
    # The mark is cleared where the thread may clear it (a privileged one); else it stays.
    assert after == str(os.SCHED_OTHER if still_marked else os.SCHED_FIFO)


def test_a_checkpoint_process_started_from_a_real_time_writer_is_born_in_normal_scheduling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Born there, not moved there once started: in a real-time class its start took the
    store writer up to a second beside a busy real-time game thread."""
    born: list[int] = []

    class Recording(subprocess.Popen[bytes]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            born.append(os.sched_getscheduler(self.pid))  # before the store lowers it

    monkeypatch.setattr(tinydb_store.subprocess, "Popen", Recording)
    store = TinyDBStore(tmp_path / "v.db", checkpoint_bytes=1, checkpoint_process=True)
    expected = fill(store)

    def start() -> tuple[bool, int]:
        store.maintain(time.perf_counter() + 1.0)
        return store.checkpointing, os.sched_getscheduler(0) & ~os.SCHED_RESET_ON_FORK

    try:
        started, policy = cast(tuple[bool, int], in_real_time_thread(start))
        assert started and born == [os.SCHED_OTHER]
        assert policy == os.SCHED_FIFO  # the writer keeps its class
        run_maintenance(store)
        assert segments(tmp_path / "v.db") == []  # the process folded the journal
        assert store.load().documents == expected
    finally:
        store.close()
