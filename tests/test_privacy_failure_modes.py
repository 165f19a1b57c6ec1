"""The twelve failure modes of the privacy design (seeds/memory-scopes-and-privacy.txt),
one named test each: what the failure would look like, and that it does not happen."""

from __future__ import annotations

import msgspec
import pytest

import npc_memory
from npc_memory.components import Fact, MemoryRecord, PlayerProfile, Relationship
from npc_memory.content import load_pack, validate_pack
from npc_memory.errors import PrivacyError
from npc_memory.extraction.validate import parse_memories
from npc_memory.store import NpcDocument, PlayerDocument, StoreMeta

from .privacy_world import Backend, run


def village(**privacy: object) -> npc_memory.MemoryPlugin:
    data = load_pack("village").model_dump()
    data["privacy"].update(privacy)
    # Count caps only: what a few ticks get done (conversations extracted) does not hang
    # on the machine's speed.
    plugin = npc_memory.install(world="fm", pack=validate_pack(data), seed=11, game_id="game-1",
                                deterministic=True)
    plugin.add_npc(key="carla", name="Carla", archetype="innkeeper", room="hall")
    plugin.add_npc(key="dan", name="Dan", archetype="bard", room="hall")
    plugin.add_player(key="p123", name="Alice", consent=True, room="hall")
    plugin.add_player(key="p456", name="Walker", room="hall")
    return plugin


def test_01_game_clues_are_never_stored() -> None:
    plugin = village()
    for call in (
        lambda: plugin.remember("carla", None, "The key is under the rug", tags=["game-only"]),
        lambda: plugin.learn_fact("carla", "The key is under the rug", tags=["game_only"]),
        lambda: plugin.observe(room="hall", content="The key is under the rug", tags=["game-only"]),
    ):
        with pytest.raises(PrivacyError, match="game clues"):
            call()
    extracted = parse_memories({"memories": [{"content": "The key is under the rug", "tags": ["game-only"]}]})
    assert extracted == ()
    assert plugin.memories("carla") == [] and not [f for f in plugin.facts("carla") if "rug" in f.content]


def test_02_anonymous_players_are_never_merged() -> None:
    plugin = village(end_game="compact")
    plugin.add_player(key="anon-a", name="Stranger", anonymous=True, room="hall")
    plugin.add_player(key="anon-b", name="Stranger", anonymous=True, room="hall")
    plugin.remember("dan", "anon-a", "I have a red car", tags=["trade"])
    plugin.remember("dan", "anon-b", "I have a red car", tags=["trade"])
    assert [m.content for m in plugin.recall("dan", "anon-b", "red car")] == ["I have a red car"]
    assert plugin.recall("dan", "anon-b", "red car")[0].scope == "anon"
    assert len(plugin.memories("dan", "anon-a")) == len(plugin.memories("dan", "anon-b")) == 1  # two stories
    plugin.privacy.end_game()
    [summary] = plugin.memories("dan")
    assert "2 of them" in summary.content and "Stranger" not in summary.content  # two people, not one
    assert plugin.memories("dan", "anon-a") == plugin.memories("dan", "anon-b") == []


def test_03_no_record_says_whether_a_participant_is_human_or_ai() -> None:
    suspicious = ("human", "ai", "bot", "controller", "is_ai", "is_human", "player_type")
    for struct in (PlayerProfile, PlayerDocument, NpcDocument, MemoryRecord, Fact, Relationship, StoreMeta):
        fields = set(struct.__struct_fields__)
        assert not fields & set(suspicious), (struct.__name__, fields & set(suspicious))
    plugin = village()
    with pytest.raises(TypeError):
        plugin.add_player(key="x", controller="ai")  # type: ignore[call-arg]


def test_04_low_confidence_recall_is_hedged() -> None:
    plugin = village()
    plugin.learn_fact("carla", "The mayor hides gold in the well", tags=["rumour"], confidence=0.3)
    plugin.learn_fact("carla", "The well is deep", tags=["lore"], confidence=1.0)
    text = plugin.context("carla", "p123", "Tell me about the well", max_tokens=2000).text
    hedged = text.lower()
    assert "i heard that «the mayor hides gold in the well», but i'm not sure" in hedged
    assert "the well is deep" in hedged and "well is deep», but i'm not sure" not in hedged


def test_05_newer_facts_win_and_history_is_kept() -> None:
    plugin = village()
    plugin.learn_fact("carla", "Alice has a dog", subject="p123", topic="pet", confidence=0.8)
    plugin.clock.advance(3600.0)
    plugin.learn_fact("carla", "Alice gave her dog away", subject="p123", topic="pet", confidence=0.9)
    facts = plugin.facts("carla", include_disbelieved=True)
    old, new = (next(f for f in facts if f.content == c) for c in ("Alice has a dog", "Alice gave her dog away"))
    assert new.believed and not old.believed and old.disbelieved_at == 3600.0
    assert [f.content for f in plugin.query.beliefs_about("carla", "p123")] == ["Alice gave her dog away"]


def test_06_compaction_is_bounded() -> None:
    plugin = village(end_game="compact", compact_max_per_npc=3)
    for i in range(40):
        plugin.remember("dan", "p456", f"Walker said thing {i}", tags=[f"topic{i % 12}"])
    report = plugin.privacy.end_game()
    assert report.counts["memories"] == 40 and report.counts["compacted"] == 3
    assert len(plugin.memories("dan")) == 3 and plugin.memories("dan", "p456") == []


def test_07_no_cross_npc_leakage_through_recall() -> None:
    plugin = village()
    plugin.remember("carla", "p123", "Alice told me her secret password is swordfish")
    for query in ("password", "swordfish", "secret", ""):
        assert all("swordfish" not in m.content for m in plugin.recall("dan", "p123", query, k=50))
    assert "swordfish" not in plugin.context("dan", "p123", "What is my password?", max_tokens=4000).text
    assert all("swordfish" not in m.content for m in plugin.recall("carla", "p456", "password", k=50))


def test_08_visibility_defaults_to_the_narrowest_scope() -> None:
    plugin = village()
    assert plugin.remember("carla", "p456", "Walker asked for ale").scope == "session"
    assert plugin.remember("carla", None, "It rained").scope == "session"
    assert plugin.remember("carla", "p123", "Alice asked for tea").scope == "player"  # she consented
    plugin.learn_fact("carla", "Walker is thirsty", subject="p456", tags=["trait"])
    plugin.observe(room="hall", content="Walker spilled the ale", tags=["clumsy"])  # names a non-consenter
    scopes = {f.content: f.scope for f in plugin.facts("carla")}
    assert scopes["Walker is thirsty"] == "session" and scopes["Walker spilled the ale"] == "session"
    with pytest.raises(PrivacyError):
        plugin.remember("carla", "p456", "Walker is a regular", scope="social")


def test_09_clone_never_copies_player_session_anon_or_sensitive_items() -> None:
    plugin = village()
    plugin.add_player(key="anon", name="Someone", anonymous=True)
    plugin.remember("carla", "p123", "Alice likes coffee")
    plugin.remember("carla", "anon", "A stranger hummed a song")
    plugin.remember("carla", None, "Told the secret codeword in game 123")  # session
    plugin.remember("carla", None, "The cellar key is mine", scope="profile", tags=["private"])
    plugin.remember("carla", None, "I brew the best ale", scope="profile")
    plan = plugin.privacy.clone("carla", "dan", ["profile", "social", "knowledge"], dry_run=False)
    assert [i.content for i in plan.items["profile"]] == ["I brew the best ale"]
    copied = [m.content for m in plugin.memories("dan")] + [
        m.content for p in ("p123", "anon") for m in plugin.memories("dan", p)
    ]
    assert copied == ["I brew the best ale"]


def test_10_player_privacy_needs_consent_and_allows_opt_out(backend: Backend) -> None:
    plugin = npc_memory.install(world="fm", store=backend.store(), seed=1)
    plugin.add_npc(key="carla", archetype="innkeeper")
    plugin.add_player(key="p456", name="Walker")
    with pytest.raises(PrivacyError, match="has not consented"):
        plugin.remember("carla", "p456", "Walker's favourite book", scope="player")
    with pytest.raises(PrivacyError, match="has not consented"):
        plugin.remember("carla", None, "Walker reads every night", scope="social")
    plugin.privacy.set_consent("p456", True)
    plugin.remember("carla", "p456", "Walker's favourite book is The Alchemist")
    plugin.privacy.set_consent("p456", False)  # opt-out
    assert plugin.memories("carla", "p456") == []
    plugin.privacy.forget_player("p456")  # and deletion
    plugin.save()
    assert backend.traces("walker") == []


def test_11_statements_are_attributed_to_the_participant_who_made_them() -> None:
    plugin = village()
    plugin.say("carla", "p123", "Alice", "I will help you fight the bandits!")
    plugin.say("carla", "p456", "Walker", "I stole bread from the baker.")
    plugin.end_conversation("carla", "p123")
    plugin.end_conversation("carla", "p456")
    run("fm", 3, dt=1.0)
    alice = " ".join(m.content for m in plugin.memories("carla", "p123"))
    walker = " ".join(m.content for m in plugin.memories("carla", "p456"))
    assert alice and walker
    assert "stole" not in alice and "bread" not in alice and "bandits" not in walker
    assert {m.source_conversation for m in plugin.memories("carla", "p456")} == {"carla/p456/1"}


def test_12_nothing_of_a_session_survives_the_game_end(backend: Backend) -> None:
    plugin = npc_memory.install(world="fm", store=backend.store(), seed=1, game_id="g1")
    plugin.add_npc(key="carla", archetype="innkeeper", room="hall")
    plugin.add_player(key="p456", name="Walker", room="hall")
    plugin.add_player(key="anon", name="Someone", anonymous=True, room="hall")
    plugin.remember("carla", "p456", "Walker ordered stew")
    plugin.remember("carla", "anon", "Someone whistled")
    plugin.observe(room="hall", subject="p456", content="Walker tipped well", tags=["gift"])
    plugin.privacy.end_game()
    npc_memory.uninstall("fm")
    plugin = npc_memory.install(world="fm", store=backend.store(), seed=1, game_id="g2")
    plugin.add_npc(key="carla", archetype="innkeeper")
    doc = plugin.npc("carla")
    scopes = [m.scope for p in (doc.bank.world, *doc.bank.players.values()) for m in p.all()]
    scopes += [f.scope for f in doc.knowledge.facts if f.scope is not None]
    assert "session" not in scopes and "anon" not in scopes
    [entry] = [e for e in plugin.storage.store.audit() if e.action == "end-game"]
    # (the observed tip is a memory of the witness beside its fact: both go)
    assert entry.target == "g1" and entry.counts["memories"] == 3 and entry.counts["facts"] == 1
    assert msgspec.json.encode(entry).count(b"Walker") == 0
