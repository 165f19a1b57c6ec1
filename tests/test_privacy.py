"""Privacy end to end: forgetting a player everywhere, ending a game, consent, cloning
with a dry run, retention, and the audit log (real worlds, real stores on disk; the
tests taking ``backend`` run on a TinyDB store and on the test PostgreSQL server)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import msgspec
import pytest

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.errors import InvalidArgumentError, PrivacyError
from npc_memory.events import FactLearned
from npc_memory.store import AuditEntry, Store, TinyDBStore

from .fake_anthropic import FakeMessagesAPI, Reply, memory, message
from .privacy_world import KEY, NAME, OTHER, Backend, build, fold, run, store_bytes


def pack(**privacy: object) -> npc_memory.Pack:
    data = load_pack("village").model_dump()
    data["privacy"].update(privacy)
    return validate_pack(data)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "village.db"


def generations(plugin: npc_memory.MemoryPlugin) -> None:
    """Save, fold, change, save: the store keeps older generations (.prev) and a journal."""
    plugin.save()
    fold(plugin)
    for npc in plugin.npcs():
        plugin.remember(npc, None, "A quiet morning", importance=0.2)
    plugin.save()
    fold(plugin)
    plugin.remember("npc1", KEY, f"{NAME} waved", tags=["gift"])
    plugin.save()


# ---------------------------------------------------------------------- forget_player


def stray_copy(backend: Backend) -> None:
    """Something beside the documents that names the player: on TinyDB a damaged copy
    repair kept, on PostgreSQL an audit entry written by another tool."""
    if backend.postgres:
        store = backend.store()
        store.append_audit(AuditEntry(action="note", target=KEY, details={"said": f"{NAME} asked for help"}))
        store.close()
        return
    doc = next((backend.path / "docs").glob("npc2-*.json"))
    (doc.parent / (doc.name + ".broken")).write_bytes(doc.read_bytes())


def test_forget_player_leaves_no_trace_in_any_store_file_or_export(backend: Backend) -> None:
    plugin = npc_memory.install(world="w", store=backend.store(), seed=3)
    build(plugin)
    run("w", 20)
    generations(plugin)
    stray_copy(backend)
    assert len(backend.traces(KEY, NAME)) > 5
    report = plugin.privacy.forget_player(KEY, actor="privacy-desk")
    assert report.counts["player"] == 1 and report.counts["memories"] >= 12 and report.counts["facts"] >= 6
    assert report.counts["relationships"] == 6 and report.counts["files_scrubbed"] >= 1
    assert backend.traces(KEY, NAME) == []
    assert KEY not in plugin.players() and KEY not in plugin.storage.stored_players()
    for npc in plugin.npcs():
        assert KEY not in plugin.npc(npc).bank.players and KEY not in plugin.npc(npc).relationships.by_player
        assert all(NAME not in m.content for m in plugin.memories(npc, OTHER) + plugin.memories(npc))
        assert all(NAME not in f.content and f.subject != KEY for f in plugin.facts(npc, include_disbelieved=True))
    assert "Bob likes apples" in [m.content for m in plugin.memories("npc0", OTHER)]  # the rest stays
    standing = plugin._relationships.standing  # the faction-standing sums drop the player too
    assert all(key[1] != KEY for table in (standing.sums, standing.counts, standing.current) for key in table)
    run("w", 20)
    plugin.save()
    npc_memory.uninstall("w")
    assert backend.traces(KEY, NAME) == []
    export = backend.export()
    assert KEY.encode() not in export.lower() and NAME.lower().encode() not in export.lower()
    [entry] = [e for e in backend.audit() if e.action == "forget"]
    assert entry.actor == "privacy-desk" and entry.target == report.player and KEY not in entry.target
    assert entry.counts["memories"] == report.counts["memories"] and entry.wall_time and entry.game_time > 0


def test_forget_player_is_idempotent_and_works_for_a_player_only_in_the_store(backend: Backend) -> None:
    plugin = npc_memory.install(world="w", store=backend.store(), seed=3)
    build(plugin, npcs=3)
    plugin.remove(KEY)  # out of the live world, kept in the store
    npc_memory.uninstall("w")
    plugin = npc_memory.install(world="w", store=backend.store(), seed=3)  # the NPCs are only stored too
    assert KEY in plugin.storage.stored_players()
    first = plugin.privacy.forget_player(KEY)
    again = plugin.privacy.forget_player(KEY)
    assert first.player == again.player and first.counts["memories"] > 0
    assert again.counts.get("memories", 0) == 0 and again.counts.get("player", 0) == 0
    npc_memory.uninstall("w")
    assert backend.traces(KEY, NAME) == []
    assert [e.action for e in backend.audit()].count("forget") == 2


def test_forgetting_drops_queued_jobs_and_results_that_arrive_later(backend: Backend) -> None:
    plugin = npc_memory.install(world="w", store=backend.store(), seed=3)
    build(plugin, npcs=2)
    plugin.say("npc1", OTHER, "Bob", f"{NAME} told me a secret about the mill.")
    plugin.end_conversation("npc1", OTHER)  # a job about someone else that mentions the player
    assert plugin.extraction.pending()
    plugin.privacy.forget_player(KEY)
    assert plugin.extraction.queue == type(plugin.extraction.queue)()  # every waiting job mentioned them
    run("w", 5)
    for npc in plugin.npcs():
        assert all(NAME not in m.content for m in plugin.memories(npc, OTHER))
    plugin.save()
    assert backend.traces(KEY, NAME) == []


def test_after_forgetting_no_gossip_recall_or_context_carries_the_player() -> None:
    plugin = npc_memory.install(world="w", seed=5)
    build(plugin, npcs=5)
    heard: list[FactLearned] = []
    plugin.privacy.forget_player(KEY)
    plugin.on(FactLearned, heard.append)
    run("w", 200)
    assert heard, "gossip went on"
    for event in heard:
        fact = next(f for f in plugin.facts(event.npc, include_disbelieved=True) if f.id == event.fact)
        assert KEY not in (event.subject or "") and NAME not in fact.content
    for npc in plugin.npcs():
        text = plugin.context(npc, OTHER, f"Do you know {NAME}?", max_tokens=2000).text
        assert NAME not in text and KEY not in text
        assert all(NAME not in m.content for m in plugin.recall(npc, OTHER, NAME, k=20))


def test_forget_player_refuses_an_npc_key(db: Path) -> None:
    plugin = npc_memory.install(world="w", store=db, seed=3)
    build(plugin, npcs=2)
    with pytest.raises(InvalidArgumentError, match="is an NPC, not a player"):
        plugin.privacy.forget_player("npc0")
    with pytest.raises(InvalidArgumentError, match="actor must not be empty"):
        plugin.privacy.forget_player(KEY, actor=" ")
    assert KEY in plugin.players()


def test_remove_with_forget_forgets_a_player_everywhere(backend: Backend) -> None:
    plugin = npc_memory.install(world="w", store=backend.store(), seed=3)
    build(plugin, npcs=2)
    plugin.remove(KEY, forget=True)
    plugin.save()
    assert backend.traces(KEY, NAME) == []


# ---------------------------------------------------------------------- end_game


def test_end_game_purges_session_and_anon_items_and_keeps_consented_ones(backend: Backend) -> None:
    plugin = npc_memory.install(world="w", store=backend.store(), seed=3, game_id="game-1")
    hilda = plugin.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    plugin.add_player(key="alice", name="Alice", consent=True, room="forge")
    plugin.add_player(key="walker", name="Walker", room="forge")
    plugin.add_player(key="anon-7", name="Stranger", anonymous=True, room="forge")
    kept = plugin.remember(hilda, "alice", "Alice likes coffee", tags=["gift"])
    session = plugin.remember(hilda, "walker", "Walker asked about the mill")
    anon = plugin.remember(hilda, "anon-7", "A stranger mentioned a red car")
    plugin.remember(hilda, None, "The door code is 1234")  # world memory: session by default
    plugin.observe(room="forge", subject="walker", content="Walker dropped a coin", tags=["trade"])
    plugin.adjust_relationship(hilda, "anon-7", trust=0.2)
    plugin.say(hilda, "walker", "Walker", "Hello there")
    assert (kept.scope, session.scope, anon.scope) == ("player", "session", "anon")
    assert kept.game == session.game == "game-1"
    report = plugin.privacy.end_game(actor="game-server")
    assert report.game == "game-1"
    # Walker's two session memories (what he asked, and the coin Hilda saw him drop), the stranger's
    assert report.counts["memories"] == 4 and report.counts["facts"] == 1 and report.counts["relationships"] == 1
    npc_memory.uninstall("w")
    plugin = npc_memory.install(world="w", store=backend.store(), seed=3, game_id="game-2")
    plugin.add_npc(key="hilda", archetype="blacksmith")
    assert [m.content for m in plugin.memories("hilda", "alice")] == ["Alice likes coffee"]
    assert plugin.memories("hilda", "walker") == [] and plugin.memories("hilda", "anon-7") == []
    assert plugin.memories("hilda") == [] and plugin.query.working_memory("hilda", "walker") == []
    assert all(f.subject != "walker" for f in plugin.facts("hilda", include_disbelieved=True))
    assert "anon-7" not in plugin.npc("hilda").relationships.by_player
    [entry] = [e for e in plugin.storage.store.audit() if e.action == "end-game"]
    assert (entry.target, entry.actor, entry.counts["memories"]) == ("game-1", "game-server", 4)


def test_end_game_of_another_game_leaves_the_current_one_alone(backend: Backend) -> None:
    plugin = npc_memory.install(world="w", store=backend.store(), seed=3, game_id="old")
    plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.remember("hilda", None, "Made in the old game")
    npc_memory.uninstall("w")
    plugin = npc_memory.install(world="w", store=backend.store(), seed=3, game_id="new")
    plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.remember("hilda", None, "Made in the new game")
    plugin.privacy.end_game("old")
    assert [m.content for m in plugin.memories("hilda")] == ["Made in the new game"]


def test_end_game_compaction_names_no_player_and_is_bounded() -> None:
    plugin = npc_memory.install(world="w", pack=pack(end_game="compact", compact_max_per_npc=2), seed=3)
    hilda = plugin.add_npc(key="hilda", archetype="blacksmith")
    for i in range(4):
        plugin.add_player(key=f"anon{i}", name=f"Guest{i}", anonymous=True)
        for tag in ("trade", "gift", "combat"):
            plugin.remember(hilda, f"anon{i}", f"Guest{i} talked about {tag}", tags=[tag])
    plugin.add_player(key="walker", name="Walker")
    plugin.remember(hilda, "walker", "Walker traded fish", tags=["trade"])
    report = plugin.privacy.end_game()
    world = plugin.memories(hilda)
    assert report.counts["compacted"] == 2 and len(world) == 2
    assert all(m.scope == "social" and "Guest" not in m.content and "Walker" not in m.content for m in world)
    assert "trade (5 of them)" in " ".join(m.content for m in world)  # five different people, not merged


# ---------------------------------------------------------------------- consent


def test_withdrawn_consent_leaves_only_anonymous_fragments_of_this_game(backend: Backend) -> None:
    plugin = npc_memory.install(world="w", store=backend.store(), seed=3, game_id="g")
    hilda = plugin.add_npc(key="hilda", archetype="blacksmith", room="forge")
    plugin.add_player(key="alice", name="Alice", consent=True, room="forge")
    plugin.remember(hilda, "alice", "Alice loves blue books", tags=["gift"])
    plugin.learn_fact(hilda, "Alice is a scholar", subject="alice", tags=["trait"])
    report = plugin.privacy.set_consent("alice", False, actor="alice-herself")
    assert report.counts == {"memories": 1, "facts": 1} and not plugin.player("alice").profile.consent
    assert plugin.memories(hilda, "alice") == []
    [fragment] = plugin.memories(hilda)
    assert (fragment.scope, fragment.content, fragment.game) == ("anon", "someone loves blue books", "g")
    [fact] = [f for f in plugin.facts(hilda) if "scholar" in f.content]
    assert (fact.subject, fact.scope, fact.content) == (None, "anon", "someone is a scholar")
    with pytest.raises(PrivacyError, match="has not consented"):
        plugin.remember(hilda, "alice", "Alice is back", scope="player")
    plugin.privacy.end_game()
    assert plugin.memories(hilda) == [] and not [f for f in plugin.facts(hilda) if "scholar" in f.content]
    plugin.privacy.set_consent("alice", True)
    assert plugin.remember(hilda, "alice", "Alice returned").scope == "player"
    plugin.save()
    entries = [e for e in plugin.storage.store.audit() if e.action == "consent"]
    assert [e.details["consent"] for e in entries] == [False, True] and entries[0].actor == "alice-herself"
    assert all("alice" not in e.target for e in entries)


def test_withdrawn_consent_purges_by_pack_rule() -> None:
    plugin = npc_memory.install(world="w", pack=pack(withdrawn_consent="purge"), seed=3)
    hilda = plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.add_player(key="alice", name="Alice", consent=True)
    plugin.remember(hilda, "alice", "Alice loves blue books")
    plugin.privacy.set_consent("alice", False)
    assert plugin.memories(hilda, "alice") == [] and plugin.memories(hilda) == []


def test_consent_checks() -> None:
    plugin = npc_memory.install(world="w", seed=3)
    plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.add_player(key="anon", name="Someone", anonymous=True)
    with pytest.raises(PrivacyError, match="anonymous and cannot consent"):
        plugin.privacy.set_consent("anon", True)
    with pytest.raises(InvalidArgumentError, match="consent must be True or False"):
        plugin.privacy.set_consent("anon", "yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="no player 'ghost'"):
        plugin.privacy.set_consent("ghost", False)


# ---------------------------------------------------------------------- clone


def clone_world(store: Path | Store | None = None) -> npc_memory.MemoryPlugin:
    plugin = npc_memory.install(world="w", store=store, seed=3)
    hilda = plugin.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    plugin.add_npc(key="gerda", name="Gerda", archetype="blacksmith", room="forge")
    plugin.add_player(key="alice", name="Alice", consent=True)
    plugin.add_player(key="walker", name="Walker")
    plugin.remember(hilda, None, "I love reading", scope="profile", tags=["hobby"])
    plugin.remember(hilda, None, "My hat is black", scope="profile")
    plugin.remember(hilda, None, "I met the miller", scope="social", tags=["social"])
    plugin.remember(hilda, None, "The vault code is 99", scope="social", tags=["secret"])
    plugin.remember(hilda, None, "Something happened this session")  # session
    plugin.remember(hilda, "alice", "Alice likes coffee")  # player-specific
    plugin.learn_fact(hilda, "The festival of light is next month", tags=["lore"])
    plugin.learn_fact(hilda, "Alice is strong", subject="alice", tags=["trait"])
    return plugin


def test_clone_dry_run_is_exactly_what_the_real_run_copies(backend: Backend) -> None:
    plugin = clone_world(backend.store())
    plan = plugin.privacy.clone("hilda", "gerda", ["profile", "social", "knowledge"], dry_run=True, actor="designer")
    assert {c: [i.content for i in items] for c, items in plan.items.items()} == {
        "profile": ["I love reading", "My hat is black"],
        "social": ["I met the miller"],
        "knowledge": ["The festival of light is next month"],
    }
    reasons = {s.reason for s in plan.skipped}
    assert {"sensitive", "scope session", "scope player"} <= reasons
    assert any(r.startswith("player-specific (p-") for r in reasons)
    assert plugin.memories("gerda") == [] and plan.copied == {}
    done = plugin.privacy.clone("hilda", "gerda", ["profile", "social", "knowledge"], dry_run=False, actor="designer")
    assert done.items == plan.items and done.skipped == plan.skipped
    copies = {m.id: m for m in plugin.memories("gerda")}
    facts = {f.id: f for f in plugin.facts("gerda")}
    for category, ids in done.copied.items():
        for item, new_id in zip(done.items[category], ids, strict=True):
            copy = facts[new_id] if category == "knowledge" else copies[new_id]
            assert copy.content == item.content and copy.cloned_from == "hilda"
            assert copy.cloned_at == plugin.clock.now
    assert sorted(m.content for m in copies.values()) == ["I love reading", "I met the miller", "My hat is black"]
    assert plugin.memories("gerda", "alice") == []
    plugin.save()
    actions = [(e.action, e.target, e.actor) for e in plugin.storage.store.audit()]
    assert actions == [("clone-dry-run", "hilda->gerda", "designer"), ("clone", "hilda->gerda", "designer")]
    again = plugin.privacy.clone("hilda", "gerda", ["profile"], dry_run=True)
    assert again.items == {"profile": []} and {s.reason for s in again.skipped} >= {"already held by the target"}


def test_clone_skips_items_naming_a_player_without_consent() -> None:
    plugin = clone_world()
    plugin.remember("hilda", None, "Alice and I go fishing", scope="social")
    plan = plugin.privacy.clone("hilda", "gerda", ["social"])
    assert "Alice and I go fishing" in [i.content for i in plan.items["social"]]  # Alice consented
    with pytest.raises(PrivacyError, match="may not name a player who has not consented"):
        plugin.remember("hilda", None, "Walker and I go fishing", scope="social")
    plugin.privacy.set_consent("alice", False)
    plan = plugin.privacy.clone("hilda", "gerda", ["social"])
    assert "Alice and I go fishing" not in [i.content for i in plan.items["social"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("hilda", "hilda", ["profile"]), "two different NPCs"),
        (("hilda", "gerda", ["session"]), "categories must be some of profile, social, knowledge"),
        (("hilda", "gerda", []), "categories must be some of"),
        (("hilda", "gerda", "profile"), "categories must be a list"),
        (("hilda", "alice", ["profile"]), "alice"),
    ],
)
def test_clone_argument_errors(args: tuple[object, ...], message: str) -> None:
    plugin = clone_world()
    with pytest.raises(npc_memory.NpcMemoryError, match=message):
        plugin.privacy.clone(*args)  # type: ignore[arg-type]
    assert plugin.memories("gerda") == []


# ---------------------------------------------------------------------- retention


def test_decay_enforces_per_scope_retention_within_its_budget() -> None:
    plugin = npc_memory.install(world="w", pack=pack(retention_days={"session": 1.0, "anon": 0.5}), seed=3)
    hilda = plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.add_player(key="alice", consent=True)
    plugin.add_player(key="walker")
    plugin.remember(hilda, "alice", "Alice likes coffee", importance=1.0, locked=True)
    plugin.remember(hilda, "walker", "Walker asked the way", importance=1.0, locked=True)
    plugin.learn_fact(hilda, "Walker is lost", subject="walker", tags=["trait"], locked=True)
    run("w", 12, dt=3600.0)  # half a day: nothing is old enough
    assert plugin.memories(hilda, "walker")
    run("w", 48, dt=3600.0)  # two more days: DecaySystem's daily visit removes what outlived its scope
    assert plugin.memories(hilda, "walker") == []
    assert not [f for f in plugin.facts(hilda) if f.subject == "walker"]
    assert [m.content for m in plugin.memories(hilda, "alice")] == ["Alice likes coffee"]


def test_pack_privacy_rules_are_validated() -> None:
    with pytest.raises(npc_memory.PackError, match="retention_days"):
        pack(retention_days={"forever": 1.0})
    with pytest.raises(npc_memory.PackError, match="compact_template"):
        pack(compact_template="{player} was here")


# ---------------------------------------------------------------------- audit log


def test_audit_log_reports_and_skips_a_damaged_line_and_repair_mends_it(db: Path) -> None:
    plugin = clone_world(db)
    for _ in range(3):
        plugin.privacy.clone("hilda", "gerda", ["profile"])
    npc_memory.uninstall("w")
    [day] = list((db / "audit").glob("*.jsonl"))
    lines = day.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"hilda", b"hildA")  # a flipped bit: the checksum no longer matches
    day.write_bytes(b"\n".join(lines) + b'0000 {"action": "torn')
    store = TinyDBStore(db)
    readout = store.read_audit()
    store.close()
    assert len(readout.entries) == 2 and [p.line for p in readout.problems] == [2, 4]
    assert readout.problems[0].problem == "checksum mismatch"
    assert readout.problems[1].problem == "incomplete last line"
    from npc_memory.store.tools import repair_store

    report = repair_store(db)
    assert report.audit_lines_dropped == 2
    store = TinyDBStore(db)
    readout = store.read_audit()
    store.close()
    assert not readout.problems and [e.action for e in readout.entries][-1] == "repair"
    assert day.with_name(day.name + ".broken").exists()


def test_audit_entries_and_pseudonyms_are_stable_per_store(db: Path) -> None:
    plugin = clone_world(db)
    first = plugin.privacy.set_consent("alice", False).player
    second = plugin.privacy.set_consent("alice", True).player
    assert first == second and first.startswith("p-") and "alice" not in first
    other = npc_memory.install(world="other", store=db.with_name("other.db"), seed=3)
    other.add_player(key="alice", name="Alice")
    assert other.privacy.set_consent("alice", True).player != first  # another store, another salt
    lines = b"".join(store_bytes(db)[name] for name in store_bytes(db) if name.startswith("audit/2"))
    assert b"alice" not in lines.lower()
    entry = msgspec.json.decode(lines.split(b"\n")[0].split(b" ", 1)[1])
    assert set(entry) >= {"action", "target", "actor", "game_time", "wall_time"}
    assert json.loads(json.dumps(entry))["actor"] == "plugin"


def test_an_llm_result_still_in_flight_for_a_forgotten_player_is_dropped(
    api: FakeMessagesAPI, no_anthropic_environment: None
) -> None:
    gate = threading.Event()
    api.default = Reply(gate=gate, body=message([memory("Alice offered to fight the bandits with me.")]))
    base_url = f"http://127.0.0.1:{api._server.server_address[1]}"  # type: ignore[union-attr]
    data = load_pack("village").model_dump()
    data["llm"].update({"deadline": 30.0, "max_retries": 0})
    llm = npc_memory.AnthropicExtractor(api_key="test-key", base_url=base_url)
    plugin = npc_memory.install(world="llm", pack=validate_pack(data), llm=llm)
    plugin.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    plugin.add_player(key="alice", name="Alice", room="forge", consent=True)
    plugin.say("hilda", "alice", "Alice", "Bandits are attacking the village! Help me!")
    plugin.end_conversation("hilda", "alice")
    for _ in range(200):
        if plugin.extraction.in_flight:
            break
        run("llm", 1, dt=1.0)
    assert len(plugin.extraction.in_flight) == 1  # the server holds the answer
    plugin.privacy.forget_player("alice")
    assert plugin._conversations.pending() == []  # what a save would keep of it: nothing
    gate.set()
    for _ in range(400):
        if not plugin.extraction.in_flight and not plugin.extraction.ready:
            break
        run("llm", 1, dt=1 / 60)
        time.sleep(0.005)
    assert not plugin.extraction.in_flight and plugin.extraction.stats.applied == 0
    bank = plugin.npc("hilda").bank
    assert bank.count() == 0 and "alice" not in bank.players
    assert all("Alice" not in f.content for f in plugin.facts("hilda", include_disbelieved=True))


def test_documents_saved_before_game_ids_and_fact_scopes_load_with_the_narrowest_reading(db: Path) -> None:
    plugin = npc_memory.install(world="w", store=db, seed=3, game_id="g1")
    plugin.add_npc(key="hilda", archetype="blacksmith", room="forge")
    plugin.add_player(key="walker", name="Walker", room="forge")
    plugin.remember("hilda", "walker", "Walker asked the way")
    plugin.learn_fact("hilda", "Walker is lost", subject="walker", tags=["trait"])
    plugin.learn_fact("hilda", "The bridge is out", tags=["news"])
    npc_memory.uninstall("w")
    store = TinyDBStore(db)
    store.checkpoint()
    store.close()
    path = next((db / "docs").glob("hilda-*.json"))
    raw = path.read_text()
    for field in ('"game":"g1",', ',"game":"g1"', '"scope":"session",', '"scope":"social",'):
        raw = raw.replace(field, "")
    assert '"game"' not in raw and '"scope":"social"' not in raw
    path.write_text(raw)
    plugin = npc_memory.install(world="w", store=db, seed=3)
    plugin.add_npc(key="hilda", archetype="blacksmith")
    [memory] = plugin.memories("hilda", "walker")
    assert (memory.game, memory.scope) == (None, "session")
    facts = {f.content: f for f in plugin.facts("hilda")}
    assert facts["Walker is lost"].scope is None and facts["The bridge is out"].scope is None
    plugin.privacy.end_game()  # the current game also ends what was made before games had ids
    assert plugin.memories("hilda", "walker") == []
    assert [f.content for f in plugin.facts("hilda")] == ["The bridge is out"]  # read as social: kept


def test_end_game_deletes_anonymous_participants_no_longer_in_the_world(backend: Backend) -> None:
    plugin = npc_memory.install(world="w", store=backend.store(), seed=3)
    plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.add_player(key="anon-1", name="Stranger", anonymous=True)
    plugin.add_player(key="anon-2", name="Wanderer", anonymous=True)
    plugin.remember("hilda", "anon-1", "A stranger hummed")
    plugin.remove("anon-1")  # left the world: only the store holds them
    report = plugin.privacy.end_game()
    assert report.counts["anonymous_players"] == 1
    assert "anon-1" not in plugin.storage.stored_players() and "anon-2" in plugin.players()
    npc_memory.uninstall("w")
    assert backend.traces("anon-1", "Stranger") == []


def test_the_audit_log_of_a_store_written_before_checksums_is_still_read(db: Path) -> None:
    store = TinyDBStore(db)
    (db / "audit.jsonl").write_bytes(b'{"action":"forget","target":"npc9","game_time":5.0}\n')
    store.append_audit(AuditEntry(action="repair", target=str(db), actor="ops"))
    readout = store.read_audit()
    store.close()
    assert [(e.action, e.target) for e in readout.entries] == [("forget", "npc9"), ("repair", str(db))]
    assert not readout.problems and readout.entries[1].actor == "ops"


def test_compaction_never_words_a_summary_around_a_tag_that_names_a_player() -> None:
    plugin = npc_memory.install(world="w", pack=pack(end_game="compact"), seed=3)
    hilda = plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.add_player(key="walker", name="Walker")
    for i in range(3):
        plugin.remember(hilda, "walker", f"Talked about it {i}", tags=["walker"])
    plugin.remember(hilda, "walker", "Sold fish", tags=["trade"])
    assert plugin.privacy.end_game().counts["compacted"] == 1
    assert [m.tags for m in plugin.memories(hilda)] == [("trade",)]


def test_what_forgetting_keeps_to_drop_late_results_goes_once_no_older_job_waits() -> None:
    """Each forgotten key is kept with when it was forgotten, to drop results of jobs
    that ended before; once no such job waits it goes, so a long game with players
    forgotten now and then does not keep every one."""
    plugin = npc_memory.install(world="f", deterministic=True)
    plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.add_player(key="keep")
    plugin.say("hilda", "keep", "Keep", "I rescued your brother from the bandits at the mill.")
    plugin.end_conversation("hilda", "keep")  # queued: extracted at the next tick
    for i in range(3):
        plugin.add_player(key=f"gone{i}")
        plugin.privacy.forget_player(f"gone{i}")
    assert set(plugin._conversations.forgotten) == {"gone0", "gone1", "gone2"}  # a job ended before them
    run("f", 2)
    assert not plugin._conversations.pending()
    for i in range(3, 50):
        plugin.add_player(key=f"gone{i}")
        plugin.privacy.forget_player(f"gone{i}")
    assert set(plugin._conversations.forgotten) == {"gone49"}
    assert len(plugin.memories("hilda", "keep")) > 0
