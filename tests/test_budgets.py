"""Per-tick budgets: each system stops at its count cap or its time budget (ms),
whichever comes first, always makes progress, and resumes where it stopped;
``deterministic=True`` keeps the count caps only."""

from __future__ import annotations

import math
import time
from pathlib import Path

import esper
import pytest

import npc_memory
from npc_memory.clock import GameClock
from npc_memory.content import load_pack, validate_pack
from npc_memory.services import persistence
from npc_memory.services.board import SURVEY_SLICE, GossipBoard
from npc_memory.state import StepCosts, TickBudget, TickShare, world_context
from npc_memory.systems.clock import ClockSystem, first_positional
from npc_memory.systems.decay import DecaySystem
from npc_memory.systems.gossip import GossipSystem

from .conftest import tick

HOUR = 3600.0


def pack_with(**budgets: float) -> npc_memory.Pack:
    """The village pack with ``budgets``; the tick's shared budget is generous unless
    given, so a slow tick on a busy machine never skips the system under test."""
    data = load_pack("village").model_dump()
    data["budgets"].update({"tick_ms": 1000.0, **budgets})
    return validate_pack(data)


def decay_of(plugin: npc_memory.MemoryPlugin) -> DecaySystem:
    return next(p for p in plugin.processors if isinstance(p, DecaySystem))


def test_a_time_budget_smaller_than_one_pair_still_does_one_pair_per_tick() -> None:
    plugin = npc_memory.install(world="b", pack=pack_with(decay_tick_ms=0.000001), time_scale=HOUR)
    for i in range(4):
        plugin.add_npc(key=f"n{i}")
    tick("b", 1)  # the cycle starts and visits one pair: the budget is spent at once
    assert decay_of(plugin).cursor.active
    tick("b", 3)  # four world pairs, one a tick
    assert decay_of(plugin).cursor.cycles == 1


def test_deterministic_keeps_the_count_caps_only() -> None:
    plugin = npc_memory.install(
        world="b", pack=pack_with(decay_tick_ms=0.000001), time_scale=HOUR, deterministic=True
    )
    for i in range(4):
        plugin.add_npc(key=f"n{i}")
    tick("b", 1)  # 50 pairs allowed by count: the whole cycle in one tick, time budget ignored
    assert decay_of(plugin).cursor.cycles == 1
    assert next(p for p in plugin.processors if isinstance(p, GossipSystem)).share.own_ms == float("inf")
    assert plugin._state.tick.total_ms == float("inf")


def test_rooms_left_by_the_gossip_time_budget_are_rebuilt_on_later_ticks() -> None:
    plugin = npc_memory.install(world="b", pack=pack_with(gossip_tick_ms=0.000001))
    for i in range(6):
        plugin.add_npc(key=f"n{i}", room=f"room{i // 2}")
        plugin.learn_fact(f"n{i}", f"news {i}", topic=f"t{i}", importance=0.9)
    board = next(p for p in plugin.processors if isinstance(p, GossipSystem)).board
    assert len(board.dirty) == 3 and board.rebuilds == 0
    tick("b", 1)
    assert board.rebuilds == 1  # one room a tick within a budget smaller than one room
    tick("b", 2)
    assert board.rebuilds == 3 and len(board.active) == 3  # the others on later ticks


def test_a_spent_tick_budget_skips_a_system_at_most_four_ticks_in_a_row() -> None:
    plugin = npc_memory.install(world="b", pack=pack_with(tick_ms=0.000001), time_scale=HOUR)
    for i in range(4):
        plugin.add_npc(key=f"n{i}")
    tick("b", 19)  # the tick's budget is spent before any system starts: one pair every 5th tick
    assert decay_of(plugin).cursor.active and decay_of(plugin).cursor.cycles == 0
    tick("b", 1)  # the fourth pair, on the 20th tick
    assert decay_of(plugin).cursor.cycles == 1


def test_the_tick_is_marked_running_from_the_clock_to_the_event_system() -> None:
    plugin = npc_memory.install(world="b", pack=pack_with(tick_ms=0.5), priority=0)
    seen: list[tuple[bool, float]] = []

    class Probe(esper.Processor):
        def process(self, *args: object, **kwargs: object) -> None:
            budget = plugin._state.tick
            seen.append((budget.idle.is_set(), budget.left - (time.perf_counter() - budget.charged_to)))

    with world_context("b"):
        esper.add_processor(Probe(), priority=40)  # between extraction and gossip
    assert plugin._state.tick.idle.is_set()  # no tick yet: the store's writer may work
    tick("b", 1)
    assert len(seen) == 1 and seen[0][0] is False  # inside the plugin's tick
    assert seen[0][1] <= 0.0005  # what is left of the tick's 0.5 ms after extraction
    assert plugin._state.tick.idle.is_set()  # closed again by EventSystem


def board_of(plugin: npc_memory.MemoryPlugin) -> GossipBoard:
    return next(p for p in plugin.processors if isinstance(p, GossipSystem)).board


def drawn_from(board: GossipBoard, room: str) -> tuple[list[str], list[float], list[str], list[float]]:
    built = board.rooms[room]
    return built.tellers.names, built.tellers.weights, built.listeners.names, built.listeners.weights


def crowded_hall(world: str) -> npc_memory.MemoryPlugin:
    plugin = npc_memory.install(world=world, pack=pack_with())
    for i in range(40):
        plugin.add_npc(key=f"n{i:02}", room="hall")
        if i % 3 == 0:
            plugin.learn_fact(f"n{i:02}", f"news {i}", topic=f"t{i}", importance=0.9)
    return plugin


def test_a_room_survey_split_over_ticks_builds_the_same_room_as_one_pass() -> None:
    board = board_of(crowded_hall("b"))
    calls = 0
    while board.dirty or board.building is not None:
        board.refresh(deadline=0.0)  # past: one slice of occupants per call
        calls += 1
        assert board.rebuilds == (0 if board.building is not None else 1)
    assert calls == -(-40 // SURVEY_SLICE)
    split = drawn_from(board, "hall")
    board.touch("hall")
    board.refresh()  # no deadline: the whole room at once
    assert board.rebuilds == 2 and drawn_from(board, "hall") == split
    assert len(split[0]) == 14 and len(split[2]) == 40


def test_who_enters_leaves_or_learns_during_a_split_survey_is_in_the_room_it_builds() -> None:
    plugin = crowded_hall("b")
    board = board_of(plugin)
    board.refresh(deadline=0.0)  # n00-n15 surveyed
    plugin.move("n00", "yard")  # a surveyed teller leaves
    plugin.move("n39", "yard")  # one not yet surveyed leaves
    plugin.add_npc(key="late", room="hall")  # one enters
    plugin.learn_fact("n01", "fresh news", topic="fresh", importance=0.9)  # a surveyed listener learns
    while board.building is not None or "hall" in board.dirty:
        board.refresh(deadline=0.0)
    tellers, teller_weights, listeners, listener_weights = drawn_from(board, "hall")
    board.touch("hall")
    board.refresh()
    once = drawn_from(board, "hall")
    assert sorted(zip(tellers, teller_weights, strict=True)) == sorted(zip(once[0], once[1], strict=True))
    assert sorted(zip(listeners, listener_weights, strict=True)) == sorted(zip(once[2], once[3], strict=True))
    assert "n01" in tellers and "late" in listeners and "n00" not in listeners and "n39" not in listeners


def test_a_room_survey_bigger_than_any_tick_still_rebuilds_the_room() -> None:
    plugin = npc_memory.install(world="b", pack=pack_with(tick_ms=0.7))
    for i in range(6):
        plugin.add_npc(key=f"a{i}", room="yard")
        plugin.learn_fact(f"a{i}", f"news {i}", topic=f"t{i}", importance=0.9)
    tick("b", 3)
    gossip = next(p for p in plugin.processors if isinstance(p, GossipSystem))
    for _ in range(40):
        gossip.share.steps.took("survey", 0.0009)  # slices lately took 0.9 ms: more than the tick's 0.7
    for i in range(40):
        plugin.add_npc(key=f"h{i}", room="hall")
        plugin.learn_fact(f"h{i}", f"hall news {i}", topic=f"h{i}", importance=0.9)
    rebuilds = board_of(plugin).rebuilds
    # The hall takes 3 slices of 16, each after starve_ticks ticks of waiting: 15 ticks;
    # twice that leaves room for ticks a loaded machine spends before gossip's turn.
    tick("b", 6 * (gossip.share.tick.starve_ticks + 1))
    assert board_of(plugin).rebuilds > rebuilds and "hall" in board_of(plugin).rooms


def test_a_system_starts_no_step_its_estimate_says_would_end_past_the_deadline() -> None:
    plugin = npc_memory.install(world="b", pack=pack_with(decay_tick_ms=1000.0), time_scale=HOUR)
    for i in range(4):
        plugin.add_npc(key=f"n{i}")
    decay = decay_of(plugin)
    decay.share.steps.took("pair", 100.0)  # a pair lately took 100 s: past any tick's budget
    starve = decay.share.tick.starve_ticks
    tick("b", starve)
    assert decay.cursor.visits == 0  # it waits for a tick with room for it...
    tick("b", 1)
    assert decay.cursor.visits == 1  # ...at most starve_ticks ticks: a system always makes progress
    tick("b", 3 * (starve + 1))
    assert decay.cursor.cycles == 1 and decay.cursor.visits == 4


def test_step_costs_follow_what_steps_took() -> None:
    steps = StepCosts()
    assert steps.fits("read", 5.0, 5.0) and steps.fits("read", 5.0, None)  # nothing known yet
    steps.took("read", 0.01)  # one step: 10 ms
    assert not steps.fits("read", 5.0, 5.0099) and steps.fits("read", 5.0, 5.0101)
    for _ in range(60):
        steps.took("read", 0.001)  # steady 1 ms steps: the estimate comes down to them
    assert steps.fits("read", 5.0, 5.0011) and not steps.fits("read", 5.0, 5.0009)
    assert steps.fits("apply", 5.0, 5.0)  # kinds apart


def test_a_kind_whose_steps_vary_is_expected_to_take_as_long_as_its_slow_ones() -> None:
    steps = StepCosts()
    for _ in range(50):  # a line read once (10 ms), then again from a cache (1 ms)
        steps.took("read", 0.010)
        steps.took("read", 0.001)
    assert steps.fits("read", 5.0, 5.006)  # the system's own deadline: by the mean (5.5 ms)
    steps.limit = 5.010  # the tick's budget ends in 10 ms: a slow step would end past it
    assert not steps.fits("read", 5.0, 5.006) and not steps.fits("read", 5.0, 5.010)
    steps.limit = 5.025
    assert steps.fits("read", 5.0, 5.006)


def first_units(budget: TickBudget, share: TickShare, kind: str, ticks: int) -> list[bool]:
    """Whether ``share``'s first unit of ``kind`` starts in each of ``ticks`` ticks in
    which the systems before it took all but a twentieth of the budget (the budgets of
    these tests are in tens of milliseconds, so a thread descheduled for a moment on a
    loaded machine changes nothing)."""
    started = []
    for _ in range(ticks):
        budget.open()
        budget.left = budget.total_ms / 20_000.0
        budget.charged_to = time.perf_counter()
        deadline = share.deadline()
        assert deadline is not None
        now = time.perf_counter()
        assert not share.starts(kind, now, deadline, first=False)  # only a first unit may overrun
        started.append(share.starts(kind, now, deadline, first=True))
        budget.close()
    return started


def test_a_tick_runs_and_is_charged_from_the_clock_systems_first_step() -> None:
    budget = TickBudget(50.0)  # ample: a loaded machine's long sleep does not spend it
    share = budget.share(50.0)
    seen: list[bool] = []
    slept: list[float] = []

    def slow_dt(args: tuple[object, ...], kwargs: dict[str, object]) -> float | None:
        seen.append(budget.idle.is_set())
        began = time.perf_counter()
        time.sleep(0.002)  # reading dt took 2 ms (or more)
        slept.append(time.perf_counter() - began)
        return first_positional(args, kwargs)

    ClockSystem(GameClock(), slow_dt, tick=budget).process(1 / 60)
    now = time.perf_counter()
    deadline = share.deadline()
    assert seen == [False]  # the store's writer already stops at its next pause
    assert deadline is not None and deadline - now <= 0.050 - slept[0]  # reading dt was charged


def test_a_clock_that_raises_leaves_no_tick_running() -> None:
    budget = TickBudget(1.0)
    clock = ClockSystem(GameClock(), fixed_step=None, tick=budget)
    budget.reserve(0.0002)  # a round's end set aside for the next tick
    budget.held = 0.0003  # room held for a system that waited
    with pytest.raises(npc_memory.InvalidArgumentError, match="without dt"):
        clock.process()
    assert budget.idle.is_set() and budget.charged_to is None  # the writer thread does not wait for it
    assert budget.ticks == 0  # it did not count as a tick
    assert (budget.reserved, budget.held) == (0.0002, 0.0003)  # kept for the tick that runs
    clock.process(1 / 60)
    assert not budget.idle.is_set() and budget.ticks == 1
    assert budget.left == pytest.approx(0.0008) and budget.holding == 0.0003


def test_a_first_unit_waits_for_a_tick_with_room_for_it() -> None:
    budget, other = TickBudget(100.0), TickBudget(100.0)
    share, big = budget.share(50.0), other.share(20.0)
    share.steps.took("pair", 0.010)  # 10 ms, at most 25 ms by its spread: fits the system's 50 ms
    big.steps.took("room", 0.030)  # 30 ms, at most 75 ms: more than its system's 20 ms
    waits = [False] * budget.starve_ticks + [True] + [False] * budget.starve_ticks + [True]
    assert first_units(budget, share, "pair", len(waits)) == waits  # at most starve_ticks in a row
    assert first_units(other, big, "room", len(waits)) == waits
    budget.open()
    deadline = share.deadline()  # a whole tick left
    assert deadline is not None and share.starts("pair", time.perf_counter(), deadline, first=True)
    other.open()
    deadline = big.deadline()  # 20 ms of its own, but the tick has room for the unit
    assert deadline is not None and big.starts("room", time.perf_counter(), deadline, first=True)
    assert not big.starts("room", time.perf_counter(), deadline, first=False)  # and for one only


def room_before(budget: TickBudget, before: TickShare) -> float:
    """Opens a tick: the seconds the first system may spend."""
    budget.open()
    now = time.perf_counter()
    deadline = before.deadline()
    assert deadline is not None
    return deadline - now


def test_a_kind_not_seen_yet_is_taken_to_take_the_system_s_own_budget() -> None:
    budget = TickBudget(100.0)  # tens of milliseconds: a loaded machine's pauses change nothing
    share = budget.share(30.0)
    budget.open()
    budget.left = 0.020  # less than the system's 30 ms
    deadline = share.deadline()
    assert deadline is not None and not share.starts("new", time.perf_counter(), deadline, first=True)
    budget.close()
    budget.open()
    deadline = share.deadline()
    assert deadline is not None and share.starts("new", time.perf_counter(), deadline, first=True)
    assert StepCosts().fits("new", 5.0, 5.0)  # no budget to go by: nothing assumed


def test_a_unit_that_no_tick_has_room_for_does_not_wait_for_one() -> None:
    # (In tens of milliseconds: a thread descheduled for a moment changes nothing.)
    budget = TickBudget(100.0)
    share = budget.share(20.0)
    for _ in range(50):  # 10 or 50 ms: 30 ms on average, at most ~90 ms by its spread
        share.steps.took("apply", 0.010)
        share.steps.took("apply", 0.050)
    lefts = [0.060] * 5 + [0.050, 0.020]  # a tick usually has 60 ms left at its turn
    started = []
    for left in lefts:
        budget.open()
        budget.left, budget.charged_to = left, time.perf_counter()
        deadline = share.deadline()
        assert deadline is not None
        started.append(share.starts("apply", time.perf_counter(), deadline, first=True))
        budget.close()
    assert started[-2:] == [True, False]  # on average it fits 50 ms, not 20 ms


def test_the_systems_before_one_about_to_start_anyway_leave_it_room() -> None:
    # (In tens of milliseconds: a thread descheduled for a moment changes nothing.)
    budget = TickBudget(100.0)
    before, later = budget.share(100.0), budget.share(20.0)
    later.steps.took("room", 0.020)  # 20 ms, at most 50 ms
    for _ in range(budget.starve_ticks):
        assert room_before(budget, before) > 0.090  # nothing held
        budget.left, budget.charged_to = 0.010, time.perf_counter()  # the system before took all but 10 ms
        deadline = later.deadline()
        assert deadline is not None and not later.starts("room", time.perf_counter(), deadline, first=True)
        budget.close()
    assert room_before(budget, before) < 0.051  # its unit starts anyway now: 50 ms held for it
    budget.left, budget.charged_to = 0.055, time.perf_counter()  # the system before stopped there
    deadline = later.deadline()
    assert deadline is not None and later.steps.fits("room", time.perf_counter(), later.steps.limit)
    assert later.starts("room", time.perf_counter(), deadline, first=True)
    budget.close()
    for _ in range(budget.starve_ticks):  # the budget spent before the later system's turn
        assert room_before(budget, before) > 0.090
        budget.left = 0.0
        assert later.deadline() is None
        budget.close()
    assert 0.075 < room_before(budget, before) < 0.081  # its own 20 ms held for its one unit
    assert later.deadline() is not None
    budget.close()
    assert room_before(budget, before) > 0.090  # held for that tick only


def test_room_set_aside_for_the_next_tick_comes_off_its_budget_once() -> None:
    budget = TickBudget(0.8)
    budget.reserve(0.0002)
    budget.open()
    assert budget.left == pytest.approx(0.0006)
    budget.close()
    budget.open()
    assert budget.left == pytest.approx(0.0008)  # only the next tick
    budget.close()
    budget.reserve(0.5)
    budget.open()
    assert budget.left == 0.0  # never more than the whole budget


def test_a_snapshot_round_ends_in_a_tick_with_room_set_aside_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The round's metadata is made on the tick: the tick after the writer is seen to
    have captured the round (as on Python 3.12+ or beside a FrameCollector), with its
    cost set aside in that tick's budget."""
    monkeypatch.setattr(persistence, "writer_may_capture", lambda: True)
    data = load_pack("village").model_dump()
    data["budgets"].update(snapshot_interval=10.0)
    plugin = npc_memory.install(world="b", pack=validate_pack(data), store=tmp_path / "w.db")
    plugin.add_npc(key="hilda")
    tick("b", 10)  # the round begins: the writer captures it
    plugin.storage.flush()
    budget = plugin._state.tick
    assert budget.reserved == 0.0
    tick("b", 1)  # seen captured: room set aside
    assert budget.reserved > 0.0
    reserved = budget.reserved
    lefts: list[float] = []

    class Probe(esper.Processor):
        def process(self, *args: object, **kwargs: object) -> None:
            lefts.append(budget.left)  # not yet charged: no budgeted system has asked

    with world_context("b"):
        esper.add_processor(Probe(), priority=95)  # after the clock, before the budgeted systems
    tick("b", 1)
    assert budget.reserved == 0.0 and lefts[0] == pytest.approx(plugin.pack.budgets.tick_ms / 1000 - reserved)
    plugin.storage.flush()
    tick("b", 1)
    assert plugin.storage.unsaved_seconds() == 0.0


def test_a_systems_usual_room_follows_what_ticks_leave_it_but_not_ticks_without_a_budget() -> None:
    # (In tens of milliseconds: a thread descheduled for a moment changes nothing.)
    budget = TickBudget(100.0)
    share = budget.share(50.0)
    assert share.room is None  # no turn yet
    for _ in range(40):
        budget.open()
        budget.left, budget.charged_to = 0.030, time.perf_counter()  # the systems before it left 30 ms
        share.deadline()
        budget.close()
    assert share.room == pytest.approx(0.030, abs=0.002)
    budget.total_ms = math.inf  # deterministic: no time budget at all
    budget.open()
    share.deadline()
    budget.close()
    assert share.room == pytest.approx(0.030, abs=0.002)  # an unbounded tick says nothing of room
    budget.total_ms = 100.0
    budget.open()
    budget.left = 0.0  # a tick already spent at its turn
    share.deadline()
    budget.close()
    assert share.room == pytest.approx(0.030 * (1 - 1 / 8), abs=0.002)  # one tick moves it an eighth
