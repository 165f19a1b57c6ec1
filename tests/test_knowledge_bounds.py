"""Bounded knowledge: the same claim merges instead of copying, and past the cap the
facts least worth keeping go in one batch (disbelieved first, authored kept)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import npc_memory
from npc_memory.components import Fact, KnowledgeBase
from npc_memory.content import load_pack, validate_pack
from npc_memory.events import FactLearned
from npc_memory.rules.knowledge import MAX_ALIASES, FactIndex, is_shareable, learn
from npc_memory.systems.gossip import GossipSystem

from .conftest import tick


def capped(cap: int) -> npc_memory.Pack:
    data = load_pack("village").model_dump()
    data["knowledge"].update(cap=cap, cap_slack=0.25)
    data["knowledge"]["facts"] = []
    return validate_pack(data)


def test_the_same_claim_seen_twice_is_one_fact_with_both_origins() -> None:
    plugin = npc_memory.install(world="k", pack=capped(50))
    plugin.add_npc(key="wren", room="market")
    plugin.add_player(key="bram")
    learned: list[FactLearned] = []
    plugin.on(FactLearned, learned.append)
    plugin.observe(room="market", subject="bram", content="Bram stole bread", tags=["theft"], confidence=0.6)
    plugin.clock.advance(60.0)
    plugin.observe(room="market", subject="bram", content="Bram stole bread", tags=["theft"], confidence=0.9)
    facts = plugin.facts("wren")
    assert len(facts) == 1 and len(learned) == 1
    assert facts[0].confidence == 0.9 and len(facts[0].aliases) == 1  # reinforced, origin remembered


def test_past_the_cap_the_least_worth_keeping_go_in_one_batch() -> None:
    plugin = npc_memory.install(world="k", pack=capped(8))
    plugin.add_npc(key="wren", room="market")
    plugin.learn_fact("wren", "The well is dry", topic="well", importance=0.1)  # authored by the game
    for i in range(8):
        plugin.observe(room="market", content=f"rumour {i}", topic=f"r{i}", importance=0.1 * (i + 1))
    # wren's first eviction came before the cap, at 7 facts (its eviction phase), and
    # took the weakest rumour; the authored fact, as weak, stays
    held = {f.content for f in plugin.npc("wren").knowledge.facts}
    assert held == {"The well is dry", *(f"rumour {i}" for i in range(1, 8))}
    plugin.observe(room="market", content="rumour 8", topic="r8", importance=0.85)
    facts = plugin.npc("wren").knowledge.facts
    assert len(facts) == 6  # 9 > cap 8: evicted down to 8 × (1 − 0.25) in one pass
    kept = {f.content for f in facts}
    assert kept == {"The well is dry", "rumour 8", "rumour 7", "rumour 6", "rumour 5", "rumour 4"}
    tick("k", 1)
    assert len(plugin.npc("wren").knowledge.facts) == 6  # and gossip indexes followed


def test_a_room_where_everyone_knows_the_news_goes_quiet() -> None:
    plugin = npc_memory.install(world="k", pack=capped(50), deterministic=True)
    for key in ("ada", "bo", "cy"):
        plugin.add_npc(key=key, archetype="innkeeper", room="tavern")
    plugin.observe(room="tavern", content="The mill burned down", importance=0.9)  # all three saw it
    system = next(p for p in plugin.processors if isinstance(p, GossipSystem))
    tick("k", 30)
    assert system.exchanges == 0  # nothing to tell anyone
    assert "tavern" not in system.board.active  # the tellers ran out of misses: no more wasted draws
    plugin.add_npc(key="dee", archetype="innkeeper", room="tavern")  # a newcomer: the room wakes up
    tick("k", 30)
    assert any("mill" in f.content for f in plugin.facts("dee"))  # and hears it


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["bram", "cora", None]), st.sampled_from(["theft", "trade", "x"]),
                  st.sampled_from(["a", "b", "c", "d"]), st.floats(0.05, 1.0), st.floats(0.0, 1.0),
                  st.sampled_from(["observation", "gossip", "conversation"]),
                  st.one_of(st.none(), st.floats(10.0, 2000.0)), st.booleans(), st.booleans(), st.integers(0, 6)),
        max_size=60,
    ),
    st.floats(0.0, 1.0),
    st.sampled_from([(4, 0.25), (4, 0.0), (7, 0.1), (12, 0.5)]),
)
def test_the_fact_index_always_equals_one_built_afresh(
    steps: list[tuple[Any, ...]], phase: float, bounds: tuple[int, float]
) -> None:
    """Learning keeps the index as a fresh build would have it, through merges, expiry and
    eviction (small caps: most steps past them; the first eviction anywhere between the
    caps' two ends), locked and flagged facts among them; and a fresh build places the
    first eviction where the running index does (ids taken and handed back as the
    service does)."""
    cap, slack = bounds
    rules = capped(cap).knowledge.model_copy(update={"cap_slack": slack})
    kb = KnowledgeBase()
    index = FactIndex(kb, rules, 0.0, phase)
    for n, (subject, topic, content, confidence, importance, source, expires, locked, flagged, hops) in enumerate(steps):
        now = float(n * 20)
        fact = Fact(id=f"f{kb.next_id}", origin=f"o{n % 9}" if source == "gossip" else f"seen{n}", content=content,
                    subject=subject, topic=topic, confidence=confidence, importance=importance, source=source,
                    created=now, tags=("flagged",) if flagged else (), hops=hops, locked=locked and n % 5 == 0,
                    expires=None if expires is None else now + expires)
        kb.next_id += 1
        outcome = learn(kb, fact, rules, now, (), index)
        if outcome.stored is None and not outcome.removed:
            kb.next_id -= 1
        fresh = FactIndex(kb, rules, now, phase)
        assert index.phase == fresh.phase
        assert (index.by_id, index.held, index.claims, index.origins) == (fresh.by_id, fresh.held, fresh.claims, fresh.origins)
        assert index.position == fresh.position
        live = [i for i in index.shareable if i in index.by_id and is_shareable(index.by_id[i], rules, now)]
        # stale ids may linger until a draw meets them; a fact that became shareable later is newer news
        assert sorted(live) == sorted(fresh.shareable) and len(set(index.shareable)) == len(index.shareable)
        assert index.next_expiry <= fresh.next_expiry
        assert len(kb.facts) <= max(rules.cap, sum(f.locked for f in kb.facts))


def test_a_claim_seen_again_after_its_copy_expired_is_kept() -> None:
    """Expired facts leave before the new one is compared with them: a sighting that
    never expires is not merged into a copy about to go."""
    rules = capped(50).knowledge
    kb = KnowledgeBase()
    index = FactIndex(kb, rules, 0.0)
    first = Fact(id="f1", origin="seen1", content="the bridge is out", topic="bridge", confidence=0.9,
                 importance=0.9, source="observation", created=0.0, expires=100.0)
    again = Fact(id="f2", origin="seen2", content="the bridge is out", topic="bridge", confidence=0.9,
                 importance=0.9, source="observation", created=200.0)
    learn(kb, first, rules, 0.0, (), index)
    outcome = learn(kb, again, rules, 200.0, (), index)
    assert outcome.stored == again and outcome.merged is None and outcome.removed == (first,)
    assert kb.facts == [again]


def test_a_claim_merged_to_a_confidence_worth_telling_is_told() -> None:
    """The second sighting raises a held claim's confidence past what gossip needs: the
    room hears of it without anyone moving (the board is told, not rebuilt)."""
    plugin = npc_memory.install(world="k", pack=capped(50), deterministic=True)
    try:
        for key in ("wren", "bo"):
            plugin.add_npc(key=key, archetype="innkeeper", room="tavern")
        assert plugin.learn_fact("wren", "The mill burned down", topic="mill", importance=0.9, confidence=0.1)
        tick("k", 60)
        assert not any("mill" in f.content for f in plugin.facts("bo")), "0.1: not worth telling"
        wren = plugin.npc("wren")  # a second origin for the same claim, as a second sighting gives
        assert plugin._knowledge.learn(
            wren, content="The mill burned down", category="world_event", subject=None, topic="mill", tags=(),
            confidence=0.9, importance=0.9, source="observation", room="tavern", origin="seen:again",
        ) is None
        assert [f.confidence for f in plugin.facts("wren")] == [0.9], "merged"
        tick("k", 60)
        assert any("mill" in f.content for f in plugin.facts("bo"))
    finally:
        npc_memory.uninstall("k")


def test_facts_evicted_with_a_fact_too_weak_to_keep_are_gone_after_a_reload(tmp_path: Any) -> None:
    store = tmp_path / "world.db"
    plugin = npc_memory.install(world="k", pack=capped(8), store=store)
    plugin.add_npc(key="wren", room="market")
    for i in range(9):  # (its first eviction came at 7 facts: see eviction_phase)
        plugin.observe(room="market", content=f"rumour {i}", topic=f"r{i}", importance=0.5 + 0.05 * i)
    assert len(plugin.npc("wren").knowledge.facts) == 8
    plugin.save()
    # 9 > cap 8: three go in one pass, the new, weakest one among them
    assert plugin.observe(room="market", content="a trifle", topic="t", importance=0.01) == ["wren"]
    held = sorted(f.content for f in plugin.npc("wren").knowledge.facts)
    assert len(held) == 6 and "a trifle" not in held
    npc_memory.uninstall(world="k")
    again = npc_memory.install(world="k", pack=capped(8), store=store)
    again.add_npc(key="wren", room="market")
    assert sorted(f.content for f in again.npc("wren").knowledge.facts) == held


def test_the_origins_an_npc_knows_stay_bounded_however_often_a_claim_is_heard() -> None:
    """The index knows the origins its facts keep (each fact at most MAX_ALIASES + 1),
    not every origin ever merged."""
    rules = load_pack("village").knowledge
    kb = KnowledgeBase()
    index = FactIndex(kb, rules, 0.0)
    for i in range(500):
        fact = Fact(id=f"f{kb.next_id}", origin=f"o{i}", content="Bram stole bread", subject="bram", topic="theft")
        kb.next_id += 1
        learn(kb, fact, rules, float(i), index=index)
    [held] = kb.facts
    assert index.origins == {held.origin, *held.aliases}
    assert len(index.origins) == MAX_ALIASES + 1 and "o499" in index.origins


def test_witnesses_who_learn_the_same_things_do_not_all_evict_on_the_same_call() -> None:
    # Eviction sorts all of an NPC's facts: 100 witnesses reaching the cap on one call
    # made that call a hundred sorts (75 ms at cap 500). Each NPC's first eviction comes
    # at its own count (from its key), so later ones stay spread too.
    cap, witnesses = 40, 100
    plugin = npc_memory.install(world="k", pack=capped(cap))  # cap_slack 0.25: keep 30
    keys = [f"n{i}" for i in range(witnesses)]
    for key in keys:
        plugin.add_npc(key=key, room="square")
    evicting_per_call = []
    for call in range(cap * 4):
        before = [len(plugin.npc(k).knowledge.facts) for k in keys]
        plugin.observe(room="square", content=f"rumour {call}", topic=f"r{call}", importance=0.5)
        after = [len(plugin.npc(k).knowledge.facts) for k in keys]
        assert max(after) <= cap
        evicting_per_call.append(sum(a < b for a, b in zip(after, before, strict=True)))
    assert sum(evicting_per_call) >= witnesses * 2  # everyone evicted, most of them more than once
    assert max(evicting_per_call) <= witnesses // 4
    assert min(len(plugin.npc(k).knowledge.facts) for k in keys) >= 30


def test_where_an_npc_first_evicts_depends_on_its_key_alone() -> None:
    def counts(world: str, order: list[str]) -> dict[str, int]:
        plugin = npc_memory.install(world=world, pack=capped(40))
        for key in order:
            plugin.add_npc(key=key, room="square")
        for call in range(45):
            plugin.observe(room="square", content=f"rumour {call}", topic=f"r{call}", importance=0.5)
        return {key: len(plugin.npc(key).knowledge.facts) for key in order}

    keys = [f"n{i}" for i in range(30)]
    first = counts("k1", keys)
    assert first == counts("k2", list(reversed(keys)))
    assert len(set(first.values())) > 3  # spread, not one count for all


def test_facts_replaced_after_the_first_eviction_leave_the_next_one_at_the_cap() -> None:
    plugin = npc_memory.install(world="k", pack=capped(40))  # keep 30; wren's first eviction: past 31
    plugin.add_npc(key="wren", room="market")
    plugin.add_player(key="bram", room="elsewhere")
    for i in range(35):
        subject = "bram" if i >= 33 else None
        plugin.observe(room="market", subject=subject, content=f"rumour {i}", topic=f"r{i}", importance=0.5)
    assert len(plugin.npc("wren").knowledge.facts) == 33  # evicted once, at 32, down to 30
    plugin.privacy.forget_player("bram")  # its two facts go: the facts are replaced
    assert len(plugin.npc("wren").knowledge.facts) == 31
    for i in range(35, 44):
        plugin.observe(room="market", content=f"rumour {i}", topic=f"r{i}", importance=0.5)
    assert len(plugin.npc("wren").knowledge.facts) == 40  # up to the cap, not evicted again early
    plugin.observe(room="market", content="rumour 44", topic="r44", importance=0.5)
    assert len(plugin.npc("wren").knowledge.facts) == 30


def _observe_rumours(plugin: npc_memory.MemoryPlugin, calls: range) -> None:
    for call in calls:  # importance varies: some new facts are the weakest, evicted at once
        plugin.observe(room="square", content=f"rumour {call}", topic=f"r{call}", importance=0.1 + call % 7 / 10)


def test_witnesses_stay_spread_after_a_reload(tmp_path: Any) -> None:
    keys = [f"n{i}" for i in range(100)]
    plugin = npc_memory.install(world="k", pack=capped(40), store=tmp_path / "w.db")
    for key in keys:
        plugin.add_npc(key=key, room="square")
    _observe_rumours(plugin, range(100))  # everyone evicted, most more than once
    npc_memory.uninstall(world="k")  # (saves)
    again = npc_memory.install(world="k", pack=capped(40), store=tmp_path / "w.db")
    for key in keys:
        again.add_npc(key=key, room="square")
    evicting_per_call = []
    for call in range(100, 160):
        before = [len(again.npc(k).knowledge.facts) for k in keys]
        _observe_rumours(again, range(call, call + 1))
        after = [len(again.npc(k).knowledge.facts) for k in keys]
        evicting_per_call.append(sum(a < b for a, b in zip(after, before, strict=True)))
    assert sum(evicting_per_call) >= 100 and max(evicting_per_call) <= 25


def test_a_world_reloaded_midway_evicts_as_one_that_never_stopped(tmp_path: Any) -> None:
    keys = ["wren", "ada", "bo", "cy", "tom"]

    def facts(reload_at: int | None) -> dict[str, list[str]]:
        store = tmp_path / f"w{reload_at}.db"
        plugin = npc_memory.install(world="k", pack=capped(40), store=store, seed=3)
        for key in keys:
            plugin.add_npc(key=key, room="square")
        for call in range(90):
            if call == reload_at:
                npc_memory.uninstall(world="k")
                plugin = npc_memory.install(world="k", pack=capped(40), store=store, seed=3)
                for key in keys:
                    plugin.add_npc(key=key, room="square")
            _observe_rumours(plugin, range(call, call + 1))
        held = {key: [f.content for f in plugin.npc(key).knowledge.facts] for key in keys}
        npc_memory.uninstall(world="k")
        return held

    never = facts(None)
    for reload_at in (25, 33, 45, 70):  # before, around and after each NPC's first eviction
        assert facts(reload_at) == never, reload_at
