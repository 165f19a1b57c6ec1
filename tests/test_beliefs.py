"""Beliefs behave like beliefs: distinct deeds are distinct facts, rival claims about
the same topic compete, and the loser is kept with when, why and for which fact it
stopped being believed. Stores written before (schema 3) load with their facts
migrated."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import npc_memory
from npc_memory.components import Fact
from npc_memory.events import LieNoticed
from npc_memory.store import SCHEMA_VERSION, TinyDBStore

from .conftest import Village, settle, tick

SCHEMA_3_STORE = Path(__file__).parent / "fixtures" / "store_schema3"  # tests/fixtures/make_store_schema3.py


def test_two_thefts_are_two_facts_both_believed_and_both_told(village: Village) -> None:
    p = village.plugin
    p.move("bram", "forge")
    p.observe(room="forge", subject="bram", content="Bram stole a purse from Bo", tags=["theft"], importance=0.9)
    p.clock.advance(60)
    p.observe(room="forge", subject="bram", content="Bram stole a ring from Ada", tags=["theft"], importance=0.9)
    beliefs = p.query.beliefs_about("hilda", "bram")
    assert sorted(f.content for f in beliefs) == ["Bram stole a purse from Bo", "Bram stole a ring from Ada"]
    assert all(f.believed and f.topic is None and f.disbelief is None for f in beliefs)
    # both spread: a listener in the forge hears each from Hilda in time
    p.add_npc(key="tova", name="Tova", room="forge")
    tick("test", 400)
    heard = sorted(f.content for f in p.facts("tova") if f.subject == "bram")
    assert heard == ["Bram stole a purse from Bo", "Bram stole a ring from Ada"]


def test_the_same_deed_seen_twice_is_one_fact(village: Village) -> None:
    p = village.plugin
    p.observe(room="forge", subject="bram", content="Bram stole a purse from Bo", tags=["theft"])
    p.learn_fact("hilda", "Bram stole a purse from Bo", subject="bram", tags=["theft"])
    assert [f.content for f in p.facts("hilda", include_disbelieved=True)] == ["Bram stole a purse from Bo"]


def test_rival_claims_about_a_named_topic_compete_and_why_tells_the_history(village: Village) -> None:
    p = village.plugin
    p.learn_fact("hilda", "Bram lives by the mill", subject="bram", topic="home", confidence=0.6)
    p.clock.advance(3600)
    p.learn_fact("hilda", "Bram lives at the harbour", subject="bram", topic="home", confidence=0.6)
    [believed] = p.query.beliefs_about("hilda", "bram")
    assert believed.content == "Bram lives at the harbour"  # as strong and newer
    old = next(f for f in p.facts("hilda", include_disbelieved=True) if f.content == "Bram lives by the mill")
    assert (old.believed, old.disbelieved_at, old.disbelief, old.displaced_by) == (
        False, 3600.0, "outweighed", believed.id
    )
    why = p.query.why("hilda", old.id)
    assert "no longer believed since day 1 01:00" in why
    assert 'outweighed by a better-founded claim about the same home "Bram lives at the harbour"' in why
    # a weaker rival arriving later is kept, disbelieved, naming the belief that holds
    p.learn_fact("hilda", "Bram lives in a cave", subject="bram", topic="home", confidence=0.2)
    weak = next(f for f in p.facts("hilda", include_disbelieved=True) if f.content == "Bram lives in a cave")
    assert (weak.believed, weak.displaced_by) == (False, believed.id)
    assert [f.content for f in p.query.beliefs_about("hilda", "bram")] == ["Bram lives at the harbour"]


def test_two_gifts_handed_over_in_talk_are_two_facts() -> None:
    """The reader's deeds learned from conversations compete with nothing either (the
    release before filed them under their first tag: the second gift displaced the first)."""
    plugin = npc_memory.install(world="told", pack="village", seed=3, deterministic=True)
    try:
        plugin.add_npc(key="hilda", name="Hilda", room="forge")
        plugin.add_player(key="quinn", name="Quinn", room="forge", consent=True)
        for line in ("I brought you these herbs as a gift.", "I brought you a new hammer as a gift."):
            plugin.say("hilda", "quinn", "Quinn", line)
            plugin.end_conversation("hilda", "quinn")
            tick("told", 5)
            plugin.clock.advance(7200)
        told = plugin.facts("hilda", include_disbelieved=True)
        assert len(told) == 2 and all(f.believed and f.tags == ("gift",) for f in told)
    finally:
        npc_memory.uninstall("told")


def test_a_store_written_before_loads_with_distinct_deeds_believed_again(tmp_path: Path) -> None:
    # The fixture: document files of schema 3 (Milo's purse theft, Tom's closed mill),
    # then a journal of patches never folded (the ring theft, which displaced the purse
    # under the old default topic "theft"; the mill open again, under the game's topic).
    copy = tmp_path / "old.db"
    shutil.copytree(SCHEMA_3_STORE, copy)
    plugin = npc_memory.install(world="v3", pack="village", store=copy, seed=3, deterministic=True)
    try:
        plugin.add_npc(key="hilda")
        plugin.add_npc(key="tom")
        plugin.add_player(key="milo")
        thefts = sorted(f.content for f in plugin.query.beliefs_about("hilda", "milo"))
        assert thefts == ["Milo stole a purse from Bo", "Milo stole a ring from Ada"]
        mill = {f.content: f for f in plugin.facts("tom", include_disbelieved=True)}
        assert mill["The mill is open again"].believed and mill["The mill is open again"].topic == "mill"
        assert not mill["The mill is closed"].believed  # the game named the topic: still rivals
    finally:
        npc_memory.uninstall("v3")
    store = TinyDBStore(copy)
    store.load()
    store.checkpoint()  # the old journal folded into documents of the current schema
    store.close()
    for key in ("hilda", "tom"):
        [path] = (copy / "docs").glob(f"{key}-*.json")
        assert f'"v":{SCHEMA_VERSION}'.encode() in path.read_bytes(), path.name


def test_a_listener_who_heard_a_rumour_learns_its_correction_from_a_teller_who_knows_it(village: Village) -> None:
    p = village.plugin
    p.add_npc(key="tova", name="Tova", room="forge")
    p.observe(room="forge", subject="bram", content="Bram hides at the mill", topic="whereabouts", importance=0.8)
    assert [f.content for f in p.query.beliefs_about("tova", "bram")] == ["Bram hides at the mill"]
    p.move("tova", "market")  # away when Hilda sees otherwise
    p.clock.advance(3600)
    p.observe(room="forge", subject="bram", content="Bram hides at the harbour", topic="whereabouts", importance=0.8)
    rumour = next(f for f in p.facts("hilda", include_disbelieved=True) if f.content == "Bram hides at the mill")
    assert not rumour.believed and not any(f.content.endswith("mill") for f in p.query.beliefs_about("hilda", "bram"))
    p.move("tova", "forge")
    for _ in range(200):
        tick("test", 1)
        if any(f.content == "Bram hides at the harbour" for f in p.facts("tova")):
            break
    [believed] = p.query.beliefs_about("tova", "bram")
    assert believed.content == "Bram hides at the harbour" and believed.source == "gossip"
    old = next(f for f in p.facts("tova", include_disbelieved=True) if f.content == "Bram hides at the mill")
    assert (old.believed, old.disbelief, old.displaced_by) == (False, "outweighed", believed.id)


def hear_until(p: npc_memory.MemoryPlugin, npc: str, content: str, ticks: int = 300) -> Fact:
    """Tick until ``npc`` holds a fact of ``content``; that fact."""
    for _ in range(ticks):
        held = next((f for f in p.facts(npc, include_disbelieved=True) if f.content == content), None)
        if held is not None:
            return held
        tick("test", 1)
    raise AssertionError(f"{npc} never heard {content!r}")


def talk(p: npc_memory.MemoryPlugin, npc: str, player: str, *lines: tuple[str, str]) -> None:
    for speaker, line in lines:
        p.say(npc, player, speaker, line)
    p.end_conversation(npc, player)
    settle("test")


def test_a_player_s_denial_outweighs_a_rumour_and_reaches_those_who_heard_it(village: Village) -> None:
    p = village.plugin
    p.add_npc(key="tova", name="Tova", room="barracks")
    p.observe(room="barracks", subject="bram", content="Bram stole a purse from Bo", tags=["theft"], importance=0.8)
    before = p.relationship("hilda", "bram").trust
    p.move("brandt", "forge")  # Brandt, who saw it, tells Hilda
    rumour = hear_until(p, "hilda", "Bram stole a purse from Bo")
    assert rumour.source == "gossip" and rumour.believed
    assert p.relationship("hilda", "bram").trust < before - 0.01  # she thinks less of him
    p.move("brandt", "barracks")
    p.move("bram", "forge")
    talk(p, "hilda", "bram", ("Hilda", "Word is you lifted a purse off poor Bo."),
         ("Bram", "Wasn't me. I was down at the docks all night."))  # fmt: skip
    rumour = next(f for f in p.facts("hilda", include_disbelieved=True) if f.id == rumour.id)
    [denial] = [f for f in p.query.beliefs_about("hilda", "bram") if f.content.startswith("Bram denied it")]
    assert (rumour.believed, rumour.disbelief, rumour.displaced_by) == (False, "denied", denial.id)
    assert "Wasn't me." in denial.content and denial.source == "conversation" and denial.tags == ()
    assert 'denied by Bram: "Bram denied it' in p.query.why("hilda", rumour.id)
    assert p.relationship("hilda", "bram").trust == pytest.approx(before)  # and takes it back
    said = p.context("hilda", "bram", "Bo's purse").text  # what she heard, and that he denied it
    assert "from Brandt; Bram denied it to you, and you believe them)" in said
    # Tova heard the rumour from Brandt; Hilda, who knows the denial, tells her
    assert next(f for f in p.facts("tova") if f.content == "Bram stole a purse from Bo").believed
    p.move("tova", "forge")
    told = hear_until(p, "tova", denial.content)
    held = next(f for f in p.facts("tova", include_disbelieved=True) if f.content == "Bram stole a purse from Bo")
    assert told.believed and (held.believed, held.displaced_by) == (False, told.id)


def test_a_denial_of_what_the_npc_saw_is_a_lie_it_noticed(village: Village) -> None:
    p = village.plugin
    p.move("bram", "forge")
    p.observe(room="forge", subject="bram", content="Bram stole a purse from Bo", tags=["theft"], importance=0.8)
    noticed: list[LieNoticed] = []
    p.on(LieNoticed, noticed.append)
    before = p.relationship("hilda", "bram")
    talk(p, "hilda", "bram", ("Bram", "I never stole that purse, whatever you think you saw."))
    [seen] = p.query.beliefs_about("hilda", "bram")
    assert seen.content == "Bram stole a purse from Bo" and seen.source == "observation"
    [denial] = [f for f in p.facts("hilda", include_disbelieved=True) if f.content.startswith("Bram denied")]
    assert (denial.believed, denial.disbelief, denial.displaced_by) == (False, "outweighed", seen.id)
    assert [(e.npc, e.player, e.claim, e.denial) for e in noticed] == [("hilda", "bram", seen.id, denial.id)]
    assert p.query.inconsistencies("hilda", "bram") == [(seen, denial)]  # she may call the lie
    after = p.relationship("hilda", "bram")
    assert after.trust == pytest.approx(before.trust - 0.05) and after.respect == pytest.approx(before.respect - 0.02)


def test_a_denial_answers_the_claim_it_names_and_no_other(village: Village) -> None:
    p = village.plugin
    p.move("bram", "forge")
    p.learn_fact("hilda", "Bram stole a ring from Ada", subject="bram", tags=["theft"], confidence=0.5)
    p.learn_fact("hilda", "Bram mended the forge bellows", subject="bram", confidence=0.5)
    talk(p, "hilda", "bram",
         ("Bram", "I didn't catch your name, smith."),  # no denial
         ("Hilda", "Hilda. And the bellows?"),
         ("Bram", "Fixed them, aye. You think I stole Ada's ring?"),  # a question denies nothing
         ("Hilda", "Everyone says you took Ada's ring."),
         ("Bram", "That's a lie."))  # fmt: skip
    believed = {f.content for f in p.query.beliefs_about("hilda", "bram")}
    ring = next(f for f in p.facts("hilda", include_disbelieved=True) if f.content == "Bram stole a ring from Ada")
    assert ring.disbelief == "denied" and "Bram mended the forge bellows" in believed
    assert [f.content for f in p.facts("hilda") if f.content.startswith("Bram denied")] == [
        'Bram denied it ("Bram stole a ring from Ada"): "That\'s a lie."'
    ]
