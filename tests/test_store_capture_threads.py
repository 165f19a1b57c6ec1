"""The writer thread captures documents while the game changes them: each capture is
one sequence of C calls the GIL does not interrupt, so it sees the document at one
instant."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable

import pytest

import npc_memory
from npc_memory.rules import knowledge as knowledge_rules
from npc_memory.rules import memory as memory_rules
from npc_memory.store.checks import document_problems
from npc_memory.store.records import NpcCapture, capture_handle, document_of_capture, gil_enabled

pytestmark = pytest.mark.skipif(not gil_enabled(), reason="atomic captures need a GIL")


def gap(captured: NpcCapture) -> int:
    """Memories made minus interactions: 0 or 1 at every instant of the loop below (a
    memory is added, then the interaction counted), anything else if torn."""
    memories = captured.bank.next_id - 1
    rel = captured.relationships.get("alice")
    return memories - (rel.interaction_count if rel is not None else 0)


def torn_captures(capture: object, seconds: float = 1.5, limit: int = 3000) -> tuple[int, int]:
    """Capture hilda from another thread while this one changes her; returns
    (captures, torn ones)."""
    plugin = npc_memory.install(world="threads", pack="village")
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    handle = plugin.npc("hilda")
    stop = threading.Event()
    seen: list[int] = []

    def other_thread() -> None:
        while not stop.is_set() and len(seen) < limit:
            seen.append(gap(capture(handle)))  # type: ignore[operator]

    thread = threading.Thread(target=other_thread)
    thread.start()
    deadline = time.perf_counter() + seconds
    n = 0
    try:
        while time.perf_counter() < deadline and thread.is_alive():
            n += 1
            plugin.remember("hilda", None, f"round {n}")
            plugin.record_interaction("hilda", "alice")
    finally:
        stop.set()
        thread.join()
        npc_memory.uninstall("threads")
    return len(seen), sum(1 for g in seen if g not in (0, 1))


def test_atomic_captures_from_another_thread_are_never_torn() -> None:
    from npc_memory.store.records import capture_atomically

    captures, torn = torn_captures(lambda h: capture_atomically(h, 0.0))
    assert captures > 100 and torn == 0


class Finalized:
    """Cyclic garbage whose finalizer lets other threads run, as a game's object with
    ``__del__`` may when a collection reclaims it."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0)


def with_collections(capture: Callable[[object], NpcCapture]) -> tuple[int, int]:
    """:func:`torn_captures` with the automatic collector running every few allocations
    and finalizers that switch threads in the garbage it reclaims."""
    thresholds = gc.get_threshold()
    gc.set_threshold(5)

    def making_garbage(handle: object) -> NpcCapture:
        Finalized()
        return capture(handle)

    try:
        return torn_captures(making_garbage)
    finally:
        gc.set_threshold(*thresholds)
        gc.collect()


def test_captures_stay_whole_with_collections_due_all_the_time() -> None:
    """A collection that ran inside a copy could run a finalizer that lets the game's
    thread change the NPC mid-copy (on Python 3.11 even free what is being copied).
    From 3.12 collections wait for the interpreter loop; on 3.11 the copy holds
    automatic collection off, which is why the writer captures there only beside a
    running FrameCollector (``writer_may_capture``)."""
    from npc_memory.store.records import capture_atomically

    captures, torn = with_collections(lambda h: capture_atomically(h, 0.0))  # type: ignore[arg-type,return-value]
    assert captures > 100 and torn == 0


def test_the_check_catches_a_capture_made_in_two_steps() -> None:
    """The control: copying the bank, letting other threads run, then copying the
    relationships (what a Python-level copy on another thread amounts to) is torn."""

    def two_steps(handle: object) -> NpcCapture:
        first = capture_handle(handle, 0.0)
        time.sleep(0)  # a thread switch, as may happen between any two bytecodes
        second = capture_handle(handle, 0.0)
        assert isinstance(first, NpcCapture) and isinstance(second, NpcCapture)
        first.relationships = second.relationships
        return first

    _, torn = torn_captures(two_steps, seconds=3.0)
    assert torn > 0


def test_a_capture_between_any_two_statements_of_a_new_record_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer may capture an NPC between any two statements of the game thread: at
    the moment a new memory or fact has just been put in its list, the document already
    counts its id as used (``next_id`` past it), so the capture is one a store loads."""
    plugin = npc_memory.install(world="ids", pack="village")
    try:
        plugin.add_npc(key="hilda", room="forge")
        plugin.add_player(key="alice", room="forge")
        problems: list[str] = []
        inserted = 0

        def check() -> None:
            nonlocal inserted
            inserted += 1
            problems.extend(document_problems(document_of_capture(capture_handle(plugin.npc("hilda"), 0.0))))

        learn, insert = knowledge_rules.learn, memory_rules.insert

        def learn_then_check(*args: object, **kwargs: object) -> knowledge_rules.LearnOutcome:
            outcome = learn(*args, **kwargs)  # type: ignore[arg-type]
            check()
            return outcome

        def insert_then_check(*args: object, **kwargs: object) -> None:
            insert(*args, **kwargs)  # type: ignore[arg-type]
            check()

        monkeypatch.setattr(knowledge_rules, "learn", learn_then_check)
        monkeypatch.setattr(memory_rules, "insert", insert_then_check)
        for i in range(3):
            plugin.remember("hilda", "alice", f"Alice bought nails, batch {i}")
            plugin.remember("hilda", None, f"The mill burned down, part {i}")
            plugin.observe(room="forge", content=f"alice was seen stealing bread, time {i}", subject="alice")
        assert inserted >= 9
        assert problems == []
    finally:
        npc_memory.uninstall("ids")
