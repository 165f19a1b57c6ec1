"""The conversation API and ExtractionSystem offline: ids, working memory, budgets per
tick, a bounded queue that never loses a job silently, idempotency across restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.events import Event, ExtractionDropped, MemoriesExtracted
from npc_memory.extraction.model import ExtractionJob, ExtractionResult
from npc_memory.services.conversations import RETIRE_PER_TALK
from npc_memory.store import TinyDBStore

from .conftest import Village, settle, tick


def pack(**budgets: Any) -> npc_memory.Pack:
    data = load_pack("village").model_dump()
    data["budgets"].update(budgets)
    return validate_pack(data)


def talk(plugin: npc_memory.MemoryPlugin, npc: str = "hilda", player: str = "alice",
         line: str = "I'll help you carry the ore, let me help.") -> npc_memory.ConversationEnded:
    plugin.say(npc, player, plugin.player(player).identity.name, line)
    plugin.say(npc, player, plugin.npc(npc).identity.name, "Thank you for the help.")
    ended = plugin.end_conversation(npc, player)
    assert ended is not None
    return ended


def collect(plugin: npc_memory.MemoryPlugin, kind: type[Event] = MemoriesExtracted) -> list[Any]:
    seen: list[Any] = []
    plugin.on(kind, seen.append)
    return seen


def test_end_conversation_numbers_summarises_and_queues(village: Village) -> None:
    p = village.plugin
    ended = talk(p)
    assert ended.conversation == "hilda/alice/1" and ended.status == "queued"
    assert ended.summary == 'Talked with Alice (2 lines): "I\'ll help you carry the ore, let me help."'
    assert [s.conversation for s in p.query.working_memory("hilda", "alice")] == ["hilda/alice/1"]
    assert p.query.has_met("hilda", "alice") and p.memories("hilda", "alice") == []
    assert p.end_conversation("hilda", "alice") is None  # nothing open: ending again is harmless
    assert talk(p).conversation == "hilda/alice/2" and talk(p, npc="brandt").conversation == "brandt/alice/1"
    for _ in range(3):
        talk(p)
    assert [s.conversation for s in p.query.working_memory("hilda", "alice")] == [f"hilda/alice/{i}" for i in (3, 4, 5)]


def test_a_count_that_trails_the_ids_in_use_never_numbers_a_conversation_twice(village: Village) -> None:
    """A crash can restore an NPC copied mid-``end_conversation`` (its transcript gone,
    its count for the player not yet raised) beside metadata that holds the job: the next
    conversation still gets a new id, whether that job is pending or applied."""
    p = village.plugin
    hilda = p.npc("hilda")
    assert talk(p).conversation == "hilda/alice/1"
    hilda.working.conversations["alice"] = 0  # the count as the copy holds it; job 1 pending
    assert talk(p).conversation == "hilda/alice/2"
    tick("test", 20)
    assert not p.extraction.pending()
    hilda.working.conversations["alice"] = 1  # again behind: jobs 1 and 2 are applied
    assert talk(p).conversation == "hilda/alice/3"
    tick("test", 20)
    assert p.extraction.stats.duplicates == 0
    assert sorted(hilda.working.extracted) == ["hilda/alice/1", "hilda/alice/2", "hilda/alice/3"]


def test_extraction_applies_within_the_tick_budgets() -> None:
    plugin = npc_memory.install(
        world="t", pack=pack(extraction_dispatch_per_tick=2, extraction_apply_per_tick=1), deterministic=True
    )  # the count caps alone (no time budget cuts a tick short)
    plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.add_player(key="alice", faction="adventurers")
    seen = collect(plugin)
    for _ in range(4):
        talk(plugin)
    counts = []
    for _ in range(5):
        tick("t")
        counts.append(len(seen))
    assert counts == [1, 2, 3, 4, 4]  # one applied per tick although two were dispatched
    assert [e.reason for e in seen] == ["rules: no llm configured"] * 4
    memory = plugin.memories("hilda", "alice")[0]
    assert "helpful" in memory.tags and memory.confidence == 0.7 and memory.source_conversation


def test_a_full_queue_extracts_inline_or_drops_but_always_says_so() -> None:
    plugin = npc_memory.install(world="t", pack=pack(extraction_queue=2))
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    seen = collect(plugin)
    statuses = [talk(plugin).status for _ in range(3)]
    assert statuses == ["queued", "queued", "extracted"]
    assert seen[0].reason == "queue full: extracted by the rules at once" and len(plugin.memories("hilda", "alice")) == 1
    npc_memory.uninstall("t")

    plugin = npc_memory.install(world="t", pack=pack(extraction_queue=2, extraction_overflow="drop"))
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    dropped = collect(plugin, ExtractionDropped)
    statuses = [talk(plugin).status for _ in range(3)]
    assert statuses == ["queued", "queued", "dropped"]
    assert [d.conversation for d in dropped] == ["hilda/alice/3"] and plugin.extraction.stats.dropped == 1
    assert len(plugin.query.working_memory("hilda", "alice")) == 3  # the summary is kept


def test_say_validates_and_bounds_a_conversation(village: Village) -> None:
    p = village.plugin
    with pytest.raises(npc_memory.InvalidArgumentError, match="text must not be empty"):
        p.say("hilda", "alice", "Alice", "  ")
    with pytest.raises(npc_memory.UnknownEntityError, match="is an NPC, not a player"):
        p.say("hilda", "brandt", "Brandt", "hi")
    for i in range(500):
        p.say("hilda", "alice", "Alice", f"line {i}")
    with pytest.raises(npc_memory.InvalidArgumentError, match="500 lines; end it first"):
        p.say("hilda", "alice", "Alice", "one more")


def test_a_result_is_applied_once(village: Village) -> None:
    p = village.plugin
    seen = collect(p)
    talk(p)
    tick("test")
    [event] = seen
    job = ExtractionJob(conversation=event.conversation, npc="hilda", npc_name="Hilda", player="alice", player_name="Alice")
    p.extraction.ready.append(ExtractionResult(job=job, memories=(), source="rules", reason="again"))
    tick("test")
    assert len(seen) == 1 and p.extraction.stats.duplicates == 1


def test_results_for_absent_npcs_wait_until_they_return(village: Village) -> None:
    p = village.plugin
    seen = collect(p)
    talk(p)
    p.remove("hilda")
    tick("test", 3)
    assert seen == [] and len(p.extraction.parked) == 1
    p.add_npc(key="hilda", archetype="blacksmith")
    assert len(seen) == 1 and p.memories("hilda", "alice")[0].tags == ("helpful",)


def test_pending_jobs_survive_a_restart_and_apply_once(tmp_path: Path) -> None:
    # Count caps only (deterministic): what the ticks get done does not hang on the
    # machine's speed, so a fixed number of ticks applies every job.
    db = tmp_path / "w.db"
    plugin = npc_memory.install(world="t", store=db, deterministic=True)
    plugin.add_npc(key="hilda", archetype="blacksmith")
    plugin.add_player(key="alice", faction="adventurers")
    talk(plugin)
    talk(plugin)
    npc_memory.uninstall("t")  # the two jobs were never processed: they are saved as pending
    store = TinyDBStore(db)
    assert [j.conversation for j in store.read_meta().pending_extractions] == ["hilda/alice/1", "hilda/alice/2"]  # type: ignore[union-attr]
    store.close()

    plugin = npc_memory.install(world="t", store=db, deterministic=True)
    seen = collect(plugin)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    tick("t", 3)
    assert [e.conversation for e in seen] == ["hilda/alice/1", "hilda/alice/2"]
    assert talk(plugin).conversation == "hilda/alice/3"  # numbering continues
    npc_memory.uninstall("t")

    # A crash after the NPC was saved with its extraction but before the metadata dropped
    # the job: the restored job is recognised and skipped. The stale metadata also lacks
    # the third conversation, which waits in Hilda's document: it is queued again.
    store = TinyDBStore(db)
    meta = store.read_meta()
    assert meta is not None
    stale = msgspec.structs.replace(meta, pending_extractions=[
        ExtractionJob(conversation="hilda/alice/1", npc="hilda", npc_name="Hilda", player="alice", player_name="Alice")])
    store.write_meta(stale)
    store.close()
    plugin = npc_memory.install(world="t", store=db, deterministic=True)
    seen = collect(plugin)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    before = len(plugin.memories("hilda", "alice"))
    tick("t", 3)
    assert [e.conversation for e in seen] == ["hilda/alice/3"] and plugin.extraction.stats.duplicates == 1
    # (the same words as the first conversation: they reinforce the memory it gave)
    assert len(plugin.memories("hilda", "alice")) == before and seen[0].memories == ("m1",)
    npc_memory.uninstall("t")


def test_working_memory_and_extracted_ids_persist(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    plugin = npc_memory.install(world="t", store=db)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    talk(plugin)
    settle("t")
    npc_memory.uninstall("t")
    plugin = npc_memory.install(world="t", store=db)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    assert [s.conversation for s in plugin.query.working_memory("hilda", "alice")] == ["hilda/alice/1"]
    assert plugin.npc("hilda").working.extracted == ["hilda/alice/1"]
    npc_memory.uninstall("t")


def bandits(p: npc_memory.MemoryPlugin, crier: str, answer: tuple[str, str]) -> tuple[Any, Any, Any]:
    """``crier`` calls for help against bandits and ``answer`` is said back: the
    relationship before, the one tagged memory it leaves, and the relationship after."""
    before = p.relationship("hilda", "alice")
    p.say("hilda", "alice", crier, "Bandits are attacking the village! Help me!")
    p.say("hilda", "alice", *answer)
    p.end_conversation("hilda", "alice")
    tick("test")
    [memory] = [m for m in p.memories("hilda", "alice") if m.tags]
    return before, memory, p.relationship("hilda", "alice")


def test_the_bandit_conversation_offline(village: Village) -> None:
    """The blacksmith cries for help and Alice answers: a memory of Alice taking on the fight,
    a task not yet done (quest), and more trust and respect for her, with no LLM at all."""
    before, memory, after = bandits(village.plugin, "Hilda", ("Alice", "I'll get my sword. Together we'll drive them off."))
    assert memory.tags == ("quest",) and memory.source_conversation == "hilda/alice/1"
    assert memory.content.startswith('Alice promised me (Alice: "I\'ll get my sword.')
    assert after.trust > before.trust and after.respect > before.respect


def test_the_npcs_own_words_are_its_memory_and_move_nothing(village: Village) -> None:
    """When the NPC is the one who takes up arms, the deed is hers: remembered as what she
    told Alice, never credited to Alice."""
    before, memory, after = bandits(village.plugin, "Alice", ("Hilda", "I'll get my hammer. Together we'll drive them off."))
    assert memory.content.startswith('I told Alice: "I\'ll get my hammer.')
    assert (after.trust, after.respect) == (before.trust, before.respect)
    assert not [f for f in village.plugin.facts("hilda") if f.subject == "alice"]


def test_importing_the_plugin_does_not_import_the_sdk() -> None:
    import subprocess
    import sys

    code = "import sys, npc_memory; assert 'anthropic' not in sys.modules; npc_memory.AnthropicExtractor; assert 'anthropic' in sys.modules"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr


def test_yesterdays_talk_tally_is_freed_a_few_entries_per_conversation(village: Village) -> None:
    """Talk moves a pair only so far a game day; the next day starts afresh, and the
    day's tally (an entry per pair that talked: hundreds of thousands on a busy server)
    is freed a few entries per later conversation, never all in the tick the day turns."""
    p = village.plugin
    talks = p._conversations
    for i in range(40):
        talks._talk_today(f"npc{i}", "alice").spent["trust"] = 0.1
    assert talks._talk_today("npc3", "alice").spent == {"trust": 0.1}  # the same day: kept
    p.clock.set(86_400.0 + 5.0)
    fresh = talks._talk_today("npc3", "alice")
    assert fresh.spent == {} and fresh.tags == {}
    assert sum(map(len, talks.talk_retired)) == 40 - RETIRE_PER_TALK
    uses = 1
    while talks.talk_retired:
        talks._talk_today("hilda", "alice")
        uses += 1
    assert uses == -(-40 // RETIRE_PER_TALK)
    assert list(talks.talk) == [("npc3", "alice"), ("hilda", "alice")]
