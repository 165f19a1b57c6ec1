"""FrameCollector runs CPython's garbage collector between frames; the plugin makes no
reference cycles as it runs, so freezing what survives a frame loses nothing."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path

import esper
import pytest

import npc_memory
from benchmarks.scale import DT, TIME_SCALE, Config, Load, populate
from npc_memory.collector import collection_paused
from npc_memory.systems.snapshot import SnapshotSystem

from .fake_anthropic import FakeMessagesAPI
from .test_llm_extraction import converse, make_plugin, tick_until


class Node:
    """A container the collector tracks, to build reference cycles from."""

    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    """A two-node reference cycle nothing else refers to; the weak reference tells
    whether it was reclaimed."""
    first, second = Node(), Node()
    first.other, second.other = second, first
    return weakref.ref(first)


@pytest.fixture(autouse=True)
def restore_collector() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


def allocate(containers: int) -> list[list[int]]:
    return [[i] for i in range(containers)]


def test_start_collects_freezes_and_turns_automatic_collection_off() -> None:
    gc.enable()
    dead = cycle()
    collector = npc_memory.FrameCollector().start()
    assert dead() is None
    assert not gc.isenabled() and collector.running
    assert gc.get_freeze_count() > 0 and gc.get_count()[0] < 10
    collector.stop()
    assert gc.isenabled() and not collector.running


def test_stop_leaves_a_disabled_collector_disabled() -> None:
    gc.disable()
    with npc_memory.FrameCollector():
        pass
    assert not gc.isenabled()


def test_nothing_runs_until_a_collection_is_due() -> None:
    with npc_memory.FrameCollector(young=5000) as collector:
        dead = cycle()
        assert not collector.due()
        assert collector.between_frames(1.0) is False
        assert dead() is not None and collector.collections == 0
        kept = allocate(5200)  # past young with room for objects freed meanwhile (they count down)
        assert collector.due()
        assert collector.between_frames(1.0) is True
        assert dead() is None, "a cycle that died within the frame is reclaimed"
        assert collector.collections == 1 and collector.forced == 0 and collector.last_pause > 0
        assert not collector.due() and len(kept) == 5200


def test_a_due_collection_waits_for_slack_unless_the_backlog_is_full() -> None:
    with npc_memory.FrameCollector(young=1000, backlog=3, longest=1.0) as collector:
        kept = allocate(1200)  # (past young with room for objects freed meanwhile)
        assert collector.between_frames(None)  # an unpaced loop: any time will do
        collector._per_object, collector._per_frame = 4e-6, 0.0  # as if it took 4 µs an object
        kept += allocate(1000)
        expected = 4e-6 * gc.get_count()[0]  # ~4 ms
        assert collector.between_frames(1.9 * expected) is False, "more than half the slack"
        assert collector.between_frames(2.1 * expected) is True
        collector._per_object, collector._per_frame = 4e-6, 0.0
        kept += allocate(3000)
        assert collector.between_frames(0.0) is True, "3 × young objects pending: it runs anyway"
        assert collector.collections == 3 and collector.forced == 1 and len(kept) == 5200


def test_a_collection_expected_to_take_longest_runs_without_slack() -> None:
    with npc_memory.FrameCollector(young=1000, longest=0.003) as collector:
        kept = allocate(1200)  # (past young with room for objects freed meanwhile)
        assert collector.between_frames(None)
        collector._per_object, collector._per_frame = 2e-6, 0.0  # 2 ms for the 1,000 below
        kept += allocate(1000)
        assert collector.between_frames(0.0) is False, "under longest: slack decides"
        kept += allocate(1000)  # 4 ms expected
        assert collector.due() and collector.expected_pause() >= 0.003
        assert collector.between_frames(0.0) is True
        assert collector.forced == 1 and len(kept) == 3200


def test_frames_make_a_collection_due_when_the_count_stays_low() -> None:
    """CPython's count falls whenever any container dies: a world at its caps, replacing
    old records with new ones, keeps it near zero while the young generation grows. The
    frames since the last collection, at the cost per frame it took, still bring one."""
    old = allocate(50_000)
    with npc_memory.FrameCollector(young=1000, longest=0.0025) as collector:  # freezes `old`
        kept = allocate(1200)  # (past young with room for objects freed meanwhile)
        assert collector.between_frames(None)
        collector._per_object, collector._per_frame = 0.0, 0.001  # as if 1 ms a frame
        due, ran = [], []
        for _ in range(3):
            kept += allocate(1000)
            del old[-1000:]  # as many old containers die: the count stays where it was
            assert gc.get_count()[0] < 1000
            due.append(collector.due())
            ran.append(collector.between_frames(0.0))
        assert ran == due == [False, False, True], "1, 2, 3 frames at 1 ms each: the third reaches longest"
        assert collector.collections == 2 and collector.forced == 1
        assert len(gc.get_objects(0)) < 100, "the young generation was walked and frozen"
        assert collector.total_pause >= collector.last_pause > 0


def test_the_first_due_collection_runs_without_slack_and_sets_the_estimates() -> None:
    """Before any young collection there is nothing to expect a pause from: a collector
    started in frames that are already late would otherwise wait for the backlog."""
    with npc_memory.FrameCollector(young=1000) as collector:
        assert collector.expected_pause() == 0.0
        kept = allocate(1200)  # (past young with room for objects freed meanwhile)
        assert collector.between_frames(-0.005) is True, "late frame, no estimate: it runs"
        assert collector.forced == 1
        kept += allocate(2000)
        assert collector.expected_pause() > 0.0 and len(kept) == 3200


def test_the_cost_per_object_follows_collections_that_frames_bring() -> None:
    """A cost per object measured once, too high, would make a few hundred objects look
    like a long pause in every later frame; each collection measures it afresh."""
    with npc_memory.FrameCollector(young=1000, longest=0.004) as collector:
        kept = allocate(1200)  # past young with room for objects freed meanwhile (they count down)
        assert collector.between_frames(None)
        collector._per_object, collector._per_frame = 1e-4, 0.0  # 300 objects: 30 ms
        kept += allocate(300)
        assert collector.between_frames(0.0) is True and collector.forced == 1
        assert collector._per_object < 1e-4, "measured again, below young counted as young"
        kept += allocate(300)
        assert collector.between_frames(0.0) is False, "300 objects: far from longest"
        assert collector.collections == 2 and len(kept) == 1800


def test_a_cycle_frozen_while_alive_waits_for_full() -> None:
    with npc_memory.FrameCollector(young=100) as collector:
        first, second = Node(), Node()
        first.other, second.other = second, first
        alive = weakref.ref(first)
        allocate(200)
        held = allocate(200)
        assert collector.between_frames(None) and len(held) == 200
        del first, second
        allocate(200)
        held += allocate(200)
        collector.between_frames(None)
        assert alive() is not None, "frozen with the survivors of its frame"
        pause = collector.full()
        assert alive() is None and pause > 0
        assert not gc.isenabled(), "still manual after a full collection"


def test_automatic_collection_comes_back_when_the_last_collector_stops() -> None:
    gc.enable()
    first = npc_memory.FrameCollector().start()
    second = npc_memory.FrameCollector().start()
    first.stop()
    assert not gc.isenabled(), "the second still runs"
    second.stop()
    assert gc.isenabled()


def test_a_paused_block_on_another_thread_never_turns_collection_back_on_under_a_collector() -> None:
    """The store's writer thread pauses collection around its copies; a collector that
    starts or stops meanwhile keeps collection as it should be."""
    gc.enable()
    inside, leave = threading.Event(), threading.Event()

    def writer() -> None:
        with collection_paused():
            inside.set()
            leave.wait(5)

    thread = threading.Thread(target=writer)
    thread.start()
    inside.wait(5)
    collector = npc_memory.FrameCollector().start()  # starts while the block holds collection off
    leave.set()
    thread.join(5)
    assert not gc.isenabled(), "the block ended: collection stays off while the collector runs"
    collector.stop()
    assert gc.isenabled(), "it was on before both"


def test_a_collector_turns_collection_off_again_if_the_game_turned_it_on() -> None:
    with npc_memory.FrameCollector(young=10**9) as collector:
        gc.enable()
        collector.between_frames(None)
        assert not gc.isenabled() and collector.reenabled == 1


def test_arguments_are_checked() -> None:
    with pytest.raises(npc_memory.InvalidArgumentError, match="young must be a positive int, got 0"):
        npc_memory.FrameCollector(young=0)
    with pytest.raises(npc_memory.InvalidArgumentError, match="backlog must be a positive int, got '50'"):
        npc_memory.FrameCollector(backlog="50")  # type: ignore[arg-type]
    for longest in (0, -1.0, float("inf"), float("nan"), True):
        with pytest.raises(npc_memory.InvalidArgumentError, match="longest must be positive seconds"):
            npc_memory.FrameCollector(longest=longest)
    with npc_memory.FrameCollector() as collector, pytest.raises(npc_memory.InvalidArgumentError, match="slack"):
        collector.between_frames(float("nan"))
    assert npc_memory.FrameCollector().between_frames() is False, "not started: nothing runs"


@pytest.mark.parametrize("mix", ["busy", "stress"])
def test_the_plugin_makes_no_reference_cycles(tmp_path: Path, mix: str) -> None:
    """A world under load, with extraction, gossip, decay, consolidation and snapshot
    rounds to a TinyDB store on the writer thread, leaves no cyclic garbage: every object
    it drops is freed by reference counting, so nothing a FrameCollector freezes leaks."""
    config = Config(npcs=60, players=8, ticks=0, mix=mix, rooms=4)  # type: ignore[arg-type]
    pack = npc_memory.load_pack("village")
    load = Load(config, pack)
    plugin = npc_memory.install(world="cycles", pack=pack, store=tmp_path / "world.db", seed=0,
                                time_scale=TIME_SCALE)
    populate(plugin, load)
    esper.switch_world("cycles")

    def play(ticks: int) -> None:
        for _ in range(ticks):
            for call in load.tick():
                getattr(plugin, call.kind)(*call.args, **call.kwargs)
            esper.process(DT)

    [snapshots] = [p for p in plugin.processors if isinstance(p, SnapshotSystem)]
    play(150)  # warm-up: first use of every code path builds caches
    plugin.save()
    rounds = snapshots.persistence.snapshots
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        play(250)  # snapshot rounds fall due every 60 game seconds (ticks)
        assert snapshots.persistence.snapshots - rounds >= 2
        found = gc.collect()
        kinds = sorted({type(o).__qualname__ for o in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert found == 0, f"reference cycles left as garbage: {found} objects of {kinds}"


@pytest.mark.usefixtures("no_anthropic_environment")
def test_llm_calls_leave_no_cycles_of_the_plugins_objects(api: FakeMessagesAPI) -> None:
    """Extraction through the real anthropic SDK on a local fake API: the plugin's request,
    call and future objects are freed as each call ends. (The SDK's HTTP stack leaves a few
    small cycles of its own, a socket transport per closed connection:
    :meth:`~npc_memory.FrameCollector.full` reclaims those.)"""
    plugin = make_plugin(api)

    def extract(conversations: int) -> None:
        before = plugin.extraction.stats.applied
        converse(plugin, conversations)
        tick_until(plugin, lambda: plugin.extraction.stats.applied == before + conversations)

    extract(2)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        extract(5)
        gc.collect()
        ours = sorted({f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage
                       if type(o).__module__.startswith(("npc_memory", "concurrent", "_asyncio"))
                       or type(o).__qualname__ == "coroutine"})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert ours == []
