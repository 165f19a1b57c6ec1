"""Conversations: lines said between an NPC and a player (kept in the NPC's
WorkingMemory, so an open conversation survives a restart), ending them into
extraction jobs, and applying extraction results exactly once."""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

import msgspec

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components import (
    SELF,
    ConversationSummary,
    Memory,
    NpcHandle,
    PendingConversation,
    PlayerHandle,
    Scope,
    Turn,
    WorkingMemory,
)
from npc_memory.components.relationship import Dimension, Relationship
from npc_memory.errors import InvalidArgumentError, MemoryCapacityError, PrivacyError
from npc_memory.events import ExtractionDropped, MemoriesExtracted
from npc_memory.extraction.model import ExtractedMemory, ExtractionJob, ExtractionResult
from npc_memory.extraction.pipeline import ExtractionPipeline
from npc_memory.extraction.rules import summarize
from npc_memory.rules import privacy as privacy_rules
from npc_memory.rules import relationships as rel_rules
from npc_memory.rules.knowledge import FLAGGED
from npc_memory.safety import is_marked
from npc_memory.services.knowledge import KnowledgeService
from npc_memory.services.memories import MemoryService
from npc_memory.services.relationships import RelationshipService
from npc_memory.services.safety import said
from npc_memory.state import Part, TickShare, WorldState

RULES_CONFIDENCE = 0.7
"""Confidence of memories the rule-based extractor made."""

LLM_CONFIDENCE = 0.9
"""Confidence of memories the LLM extractor made."""

RETIRE_PER_TALK = 4
"""Entries of earlier days' talk tallies freed each time a conversation's tally is
taken (it adds at most one): a day's tally is gone within a quarter of the next
day's conversations."""


class ConversationEnded(msgspec.Struct, frozen=True, kw_only=True):
    """What ``end_conversation`` did: the conversation's id, its working-memory summary,
    and what happened to its extraction: ``"queued"``, ``"extracted"`` (queue full: the
    rules extracted it at once; or every line was flagged by the safety screen, so there
    was nothing to extract) or ``"dropped"`` (queue full, pack says drop)."""

    conversation: str
    summary: str
    status: Literal["queued", "extracted", "dropped"]


@dataclass
class TalkDay:
    """What one game day's conversations did to a pair: |change| per dimension, and how
    many memories of each tag they left."""

    spent: dict[Dimension, float] = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)


@dataclass
class Applying:
    """An extraction result being applied a memory at a time: the next memory, the ids
    stored so far and the relationship change they add up to (applied with the last)."""

    result: ExtractionResult
    npc: NpcHandle
    player: PlayerHandle
    confidence: float
    scope: Scope
    talk: TalkDay
    rel: Relationship
    resumed: bool = False
    """Part of the result may be held already (restored or parked while applied): a
    memory held from the conversation is taken as applied, not stored again."""
    next: int = 0
    ids: list[str] = field(default_factory=list)
    deltas: dict[Dimension, float] = field(default_factory=dict)
    statements: list[tuple[int, Memory, ExtractedMemory]] = field(default_factory=list)
    """What the player said about themselves, by the line it starts at: filed in the
    order it was said once the memories are in (a later line corrects an earlier one)."""


class ConversationService:
    """Conversations of one plugin and the application of their extraction results."""

    def __init__(
        self,
        state: WorldState,
        pipeline: ExtractionPipeline,
        memories: MemoryService,
        knowledge: KnowledgeService,
        relationships: RelationshipService,
    ) -> None:
        self.state = state
        self.pipeline = pipeline
        self.memories = memories
        self.knowledge = knowledge
        self.relationships = relationships
        self.safety = memories.safety
        self.talk: dict[tuple[str, str], TalkDay] = {}
        """What conversations moved each pair today (see ``RelationshipRules``)."""
        self.talk_day = -1
        self.talk_retired: list[dict[tuple[str, str], TalkDay]] = []
        """Tallies of earlier days, freed :data:`RETIRE_PER_TALK` entries per use (a
        busy day's tally is hundreds of thousands of entries: freed at once, the
        tick where the day turns would take tens of milliseconds)."""
        self.forgotten: dict[str, float] = {}
        """Keys forgotten while this plugin runs, with when (game seconds): results of
        conversations that ended by then are dropped. Kept while a job that ended
        before it waits."""
        self.unmentionable: re.Pattern[str] | None = None
        """Keys and names of players forgotten while this plugin runs: extracted
        memories that mention one are not stored, waiting jobs that do are dropped."""
        self.applying: Applying | None = None
        """The first ready result while it is applied a memory per step (see :meth:`work`)."""
        self.partial: set[str] = set()
        """Conversations whose result was parked part-applied (its NPC or player left)."""

    def say(self, npc: NpcHandle, player: PlayerHandle, line: Turn, max_turns: int) -> None:
        """Append ``line`` to the open conversation of ``npc`` and ``player``."""
        turns = npc.working.open.get(player.identity.key, [])
        if len(turns) >= max_turns:
            raise InvalidArgumentError(
                f"the conversation of {npc.identity.key!r} and {player.identity.key!r} has "
                f"{max_turns} lines; end it first"
            )
        kept = self.safety.kept(self.safety.check(line.text, "say", npc.identity.key))
        if kept is None:
            return
        npc.working.open[player.identity.key] = turns
        turns.append(Turn(line.speaker, kept) if kept != line.text else line)
        self.state.mark(npc.identity.key, Part.WORKING)

    def open_lines(self, npc: NpcHandle, player: str) -> list[Turn]:
        """The lines of the open conversation of ``npc`` and ``player`` so far."""
        return list(npc.working.open.get(player, ()))

    def end(self, npc: NpcHandle, player: PlayerHandle) -> ConversationEnded | None:
        """Close the open conversation and queue its extraction (see the facade)."""
        npc_key, player_key = npc.identity.key, player.identity.key
        working = npc.working
        turns = working.open.get(player_key)
        if not turns:
            return None
        every = tuple(turns)
        quoted = [turn for turn in every if is_marked(turn.text)]
        turns = [turn for turn in every if not is_marked(turn.text)]  # flagged lines are never extracted
        # The count alone can trail the ids in use: the store's writer may copy the NPC
        # between the two statements below (transcript gone, count not yet raised) while
        # the metadata it writes later keeps the job, and a crash then restores both.
        counted = working.conversations.get(player_key, 0)
        number = max(counted, self._last_number(npc_key, player_key, working)) + 1
        archetype = self.state.pack.archetypes.get(npc.traits.archetype or "")
        job = ExtractionJob(
            conversation=f"{npc_key}/{player_key}/{number}",
            npc=npc_key,
            npc_name=npc.identity.name,
            npc_role=archetype.role if archetype is not None else "",
            player=player_key,
            player_name=player.identity.name,
            room=npc.location.room,
            turns=tuple(turns),
            ended_at=self.state.clock.now,
        )
        owns_up = self.knowledge.attribute_reader().corrections
        summary = ConversationSummary(
            conversation=job.conversation,
            summary=summarize(msgspec.structs.replace(job, turns=every), owns_up=owns_up),
            turns=len(every),
            ended_at=job.ended_at,
        )
        # From here on nothing can fail: the transcript becomes a job in one step. The
        # lines wait in the working memory (one part of the NPC's document with the
        # open ones) until their memories are applied: a snapshot that shows the
        # conversation ended holds either its lines or what they gave.
        if turns and not self.dropped(job):  # (one naming a forgotten player is never applied)
            working.pending.append(_pending(job))
        del working.open[player_key]
        working.conversations[player_key] = number
        working.remember_conversation(player_key, summary)
        self.state.mark(npc_key, Part.WORKING)
        self.relationships.record_interaction(npc, player)
        for turn in quoted:  # kept as said, quoted and marked: never extracted, never a claim
            with contextlib.suppress(MemoryCapacityError, PrivacyError):
                self.memories.remember(
                    npc, player_key, said(turn), importance=0.1, scope=self._scope(player),
                    source_conversation=job.conversation, actor=_speaker(job, turn.speaker), source="said",
                    reinforce_same=True,  # the same line in many conversations: kept once
                )
        status: Literal["queued", "extracted", "dropped"] = "queued"
        if not turns:
            status = "extracted"  # every line was flagged: nothing to extract
        elif not self.pipeline.enqueue(job):
            if self.state.pack.budgets.extraction_overflow == "rules":
                status = "extracted"
                self.apply(self.pipeline.extract_now(job, "queue full: extracted by the rules at once"))
            else:
                status = "dropped"
                working.settle(job.conversation)
                self.pipeline.stats.dropped += 1
                self.state.publish(
                    ExtractionDropped(
                        game_time=self.state.clock.now,
                        npc=npc_key,
                        player=player_key,
                        conversation=job.conversation,
                    )
                )
        return ConversationEnded(conversation=job.conversation, summary=summary.summary, status=status)

    def apply(self, result: ExtractionResult) -> None:
        """Turn one extraction result into memories, facts and relationship changes,
        once per conversation id, all at once. A result whose NPC or player is not in
        the live world waits (parked) until both are."""
        applying = self._start(result)
        while applying is not None and not self._apply_next(applying):
            pass

    def work(self, deadline: float, share: TickShare) -> None:
        """The extraction work of one tick, a step at a time, stopping at the pack's count
        caps or once ``time.perf_counter()`` passes ``deadline``: apply the results
        ready, a memory per step (the result being applied stays first in line, so it is
        saved as pending until it is complete), then dispatch queued jobs (offline: the
        rules read a line per step). A step that would likely end past ``deadline`` (by
        what such steps take, ``share.steps``) waits for the next tick; the tick's first
        step starts as :meth:`TickShare.starts` says. Work stopped resumes next tick where
        it stopped."""
        pipeline, budgets, steps = self.pipeline, self.state.pack.budgets, share.steps
        pipeline.collect()
        applied = dispatched = 0
        clock = time.perf_counter
        now, first = clock(), True
        while True:
            if pipeline.ready and applied < budgets.extraction_apply_per_tick:
                applying = self.applying
                resumed = applying is not None and applying.result is pipeline.ready[0]
                kind = "apply" if resumed else "apply-first"
            elif dispatched < budgets.extraction_dispatch_per_tick and pipeline.can_advance():
                kind = pipeline.next_step()
            else:
                return
            if first:
                if not share.starts(kind, now, deadline, first=True):
                    return  # no room for it in this tick: a later one
            elif not steps.fits(kind, now, deadline):
                return  # the step would likely end past the deadline: next tick
            first, started = False, now
            if kind.startswith("apply"):
                applied += self._apply_step()
            else:
                dispatched += pipeline.advance()
            now = clock()
            steps.took(kind, now - started)

    def _apply_step(self) -> int:
        """Apply the next memory of the first ready result (starting it first); returns 1
        when the result is done with (applied, dropped, a duplicate or parked)."""
        result = self.pipeline.ready[0]
        applying = self.applying
        if applying is None or applying.result is not result:  # not started, or dropped since
            applying = self.applying = self._start(result)
            if applying is None:
                self.pipeline.release_first()
                return 1
        elif not self._still(applying):
            self.applying = None
            self.pipeline.release_first()
            return 1
        if not self._apply_next(applying):
            return 0
        self.applying = None
        self.pipeline.release_first()
        return 1

    def _start(self, result: ExtractionResult) -> Applying | None:
        """Begin applying ``result``, or ``None``: it is dropped, a duplicate, or parked."""
        job = result.job
        registry = self.state.registry
        if self.dropped(job):
            self._settle(job)
            return None  # about an NPC or player forgotten since, or mentioning a forgotten player
        npc, player = registry.live_npc(job.npc), registry.live_player(job.player)
        if npc is None or player is None:
            self.pipeline.parked.append(result)
            return None
        if job.conversation in npc.working.extracted:
            self.pipeline.stats.duplicates += 1
            self._settle(job)
            return None
        return Applying(
            result=result,
            npc=npc,
            player=player,
            confidence=LLM_CONFIDENCE if result.source == "llm" else RULES_CONFIDENCE,
            scope=self._scope(player),
            talk=self._talk_today(job.npc, job.player),
            rel=self.relationships.peek(npc, job.player, player.faction.faction),
            resumed=job.conversation in self.partial or job.conversation in self.pipeline.restored,
        )

    def _still(self, applying: Applying) -> bool:
        """Whether ``applying``, stopped at a tick's end, may go on: its NPC and player are
        the live ones, neither forgotten since, and the conversation not applied by
        another copy of its result meanwhile (else it is parked or dropped)."""
        result = applying.result
        job = result.job
        if self.dropped(job) or job.conversation in applying.npc.working.extracted:
            self._settle(job)
            return False
        registry = self.state.registry
        npc, player = registry.live_npc(job.npc), registry.live_player(job.player)
        if npc is not applying.npc or player is not applying.player:
            self.pipeline.parked.append(result)  # applied again from its start, skipping what is held
            self.partial.add(job.conversation)
            return False
        return True

    def _apply_next(self, applying: Applying) -> bool:
        """Apply the next memory of ``applying``; after the last, the relationship change
        and the event. Returns whether the result is complete."""
        result, npc = applying.result, applying.npc
        job = result.job
        if applying.next < len(result.memories):
            extracted = result.memories[applying.next]
            applying.next += 1
            self._remember(applying, extracted)
            return False
        for _, memory, extracted in sorted(applying.statements, key=lambda s: s[0]):
            self.knowledge.learn_statement(
                npc,
                job.player,
                job.player_name,
                memory.content,
                tags=extracted.tags,
                confidence=applying.confidence,
                importance=extracted.importance,
                source_memory=memory.id,
                room=job.room,
            )
        self.knowledge.learn_denials(npc, job.player, job.player_name, job.conversation, job.turns, job.room)
        self.knowledge.learn_retractions(npc, job.player, job.player_name, job.conversation, job.turns)
        npc.working.mark_extracted(job.conversation)
        npc.working.settle(job.conversation)
        if applying.resumed:
            self.partial.discard(job.conversation)
            self.pipeline.restored.discard(job.conversation)
        self.state.mark(npc.identity.key, Part.WORKING)
        if applying.deltas:
            self.relationships.change(npc, job.player, applying.deltas)
        self.pipeline.stats.applied += 1
        self.state.publish(
            MemoriesExtracted(
                game_time=self.state.clock.now,
                npc=job.npc,
                player=job.player,
                conversation=job.conversation,
                source=result.source,
                reason=result.reason,
                memories=tuple(applying.ids),
            )
        )
        return True

    def _actor(self, job: ExtractionJob, actor: str) -> str | None:
        """The key of who did what an extracted memory of ``job`` records: the player,
        the NPC (:data:`SELF`), or a third party the plugin knows by that key or (only
        one) by that name; ``None`` for anyone else."""
        if actor == "player":
            return job.player
        if actor == "npc":
            return SELF
        registry = self.state.registry
        if actor in registry.by_key:
            return actor
        named = registry.by_name.get(actor.casefold(), ())
        return next(iter(named)) if len(named) == 1 else None

    def _remember(self, applying: Applying, extracted: ExtractedMemory) -> None:
        """Store one extracted memory of ``applying``; learn what it tells of the player
        and add what it moves to the relationship change."""
        job, npc = applying.result.job, applying.npc
        if privacy_rules.mentions(self.unmentionable, extracted.content):
            return
        held = (
            self.memories.held_from(npc, job.player, job.conversation, extracted.content)
            if applying.resumed
            else None
        )
        try:
            memory = held or self.memories.remember(
                npc,
                job.player,
                extracted.content,
                kind=extracted.kind,
                tags=extracted.tags,
                importance=extracted.importance,
                confidence=applying.confidence,
                valence=extracted.valence,
                intensity=extracted.intensity,
                scope=applying.scope,
                source_conversation=job.conversation,
                reinforce_same=True,
                actor=self._actor(job, extracted.actor),
                source=extracted.source,
                teller=job.player if extracted.source in ("heard", "claimed") else None,
            )
        except (MemoryCapacityError, PrivacyError):
            return
        applying.ids.append(memory.id)
        if FLAGGED in memory.tags:
            return  # an instruction-bearing result: kept quoted, moves nothing, never told on
        if extracted.actor != "player" or extracted.source == "heard":
            return  # the NPC's own words, someone else's deed: kept, never held for or against the player
        tags = self.state.pack.extraction.tags
        told = [t for t in extracted.tags if t in tags]
        if not extracted.claim and extracted.source == "said" and all(tags[t].act == "fact" for t in told):
            content = memory.content
            line = next((n for n, turn in enumerate(job.turns) if turn.text and turn.text in content), 0)
            applying.statements.append((line, memory, extracted))
        elif told and held is None and not extracted.claim and not any(tags[t].private for t in told):
            self.knowledge.learn(
                npc,
                content=memory.content,
                category="player_trait",
                subject=job.player,
                topic=None,
                tags=extracted.tags,
                confidence=applying.confidence,
                importance=extracted.importance,
                source="conversation",
                source_memory=memory.id,
                room=job.room,
            )
        rules, talk = self.state.pack.relationships, applying.talk
        said = rel_rules.memory_deltas(
            extracted.tags, extracted.importance, extracted.intensity, extracted.valence, rules
        )
        repeats = max((talk.tags.get(t, 0) for t in extracted.tags), default=0)
        for tag in extracted.tags:
            talk.tags[tag] = talk.tags.get(tag, 0) + 1
        allowed = rel_rules.talk_deltas(said, applying.rel, talk.spent, repeats, extracted.claim, rules)
        deltas = applying.deltas
        for dim, delta in allowed.items():
            deltas[dim] = deltas.get(dim, 0.0) + delta
            talk.spent[dim] = talk.spent.get(dim, 0.0) + abs(delta)

    @staticmethod
    def _scope(player: PlayerHandle) -> Scope:
        """The narrowest scope a memory about ``player`` may have."""
        return "player" if player.profile.consent else "anon" if player.profile.anonymous else "session"

    def _talk_today(self, npc: str, player: str) -> TalkDay:
        """How much conversations have moved ``npc``'s regard for ``player`` this game
        day (kept for the pairs that talked today; a restart starts the day afresh)."""
        day = int(self.state.clock.now // SECONDS_PER_DAY)
        if day != self.talk_day:
            self.talk_day = day
            if self.talk:
                self.talk_retired.append(self.talk)
                self.talk = {}
        if self.talk_retired:
            self._retire_talk(RETIRE_PER_TALK)
        talk = self.talk.get((npc, player))
        if talk is None:
            talk = self.talk[npc, player] = TalkDay()
        return talk

    def _retire_talk(self, count: int) -> None:
        """Free up to ``count`` entries of earlier days' tallies."""
        retired = self.talk_retired
        for _ in range(count):
            oldest = retired[0]
            oldest.popitem()
            if not oldest:
                retired.pop(0)
                if not retired:
                    return

    def drop_jobs_of(self, key: str) -> None:
        """Forget the extraction work waiting for ``key`` (an NPC or player being
        forgotten): parked and queued jobs go, and results in flight are dropped when
        they arrive."""
        self.talk = {pair: talk for pair, talk in self.talk.items() if key not in pair}
        self.talk_retired.clear()  # (nothing reads them: freed now rather than keep the key)
        self.pipeline.forget_jobs_of(key)
        # An entry matters only while a job that ended before it waits: older ones go.
        oldest = min((job.ended_at for job in self.pipeline.pending()), default=math.inf)
        self.forgotten = {k: when for k, when in self.forgotten.items() if when >= oldest}
        self.forgotten[key] = self.state.clock.now
        applying, ready = self.applying, self.pipeline.ready
        if applying is not None and key in (applying.result.job.npc, applying.result.job.player):
            if ready and ready[0] is applying.result:
                ready.popleft()  # stopped midway: what it stored goes with the key
            self.applying = None

    def _last_number(self, npc: str, player: str, working: WorkingMemory) -> int:
        """The highest number of a conversation of the pair still in use: in the ids the
        NPC keeps as extracted (its last 256) and in extraction work not yet applied.
        Numbering goes on from there or from the NPC's count for the player, whichever is
        higher, so an id is never given twice while either still holds it; an id older
        than those may come again for a player let go and met anew."""
        prefix = f"{npc}/{player}/"
        ids = [c for c in working.extracted if c.startswith(prefix)]
        ids += [job.conversation for job in self.pipeline.pending() if (job.npc, job.player) == (npc, player)]
        return max((int(c.rsplit("/", 1)[1]) for c in ids), default=0)

    def pending(self) -> list[ExtractionJob]:
        """The pipeline's jobs not yet applied, but those about a forgotten NPC or player
        or mentioning a forgotten player (what the store's metadata keeps)."""
        return [job for job in self.pipeline.pending() if not self.dropped(job)]

    def dropped(self, job: ExtractionJob) -> bool:
        """Whether ``job``'s result will be dropped: it is about a key forgotten since it
        ended, or its transcript mentions a forgotten player."""
        forgotten = self.forgotten
        if forgotten and job.ended_at <= max(forgotten.get(job.npc, -1.0), forgotten.get(job.player, -1.0)):
            return True
        pattern = self.unmentionable
        return pattern is not None and any(privacy_rules.mentions(pattern, t.text) for t in job.turns)

    def drop_jobs_mentioning(self, pattern: re.Pattern[str]) -> int:
        """From now on, drop extraction work and results that mention what ``pattern``
        finds (a forgotten player); returns the waiting jobs dropped."""
        previous = self.unmentionable
        self.unmentionable = pattern if previous is None else re.compile(
            f"{previous.pattern}|{pattern.pattern}", re.IGNORECASE
        )
        pipeline = self.pipeline
        before = len(pipeline.queue) + len(pipeline.parked) + len(pipeline.ready)
        pipeline.parked = [r for r in pipeline.parked if not self.dropped(r.job)]
        pipeline.ready = deque(r for r in pipeline.ready if not self.dropped(r.job))
        if self.applying is not None and not (pipeline.ready and pipeline.ready[0] is self.applying.result):
            self.applying = None
        kept = [job for job in pipeline.queue if not self.dropped(job)]
        if len(kept) != len(pipeline.queue):
            pipeline.queue.clear()
            pipeline.queue.extend(kept)
        return before - len(pipeline.queue) - len(pipeline.parked) - len(pipeline.ready)

    def _settle(self, job: ExtractionJob) -> None:
        """``job``'s conversation no longer waits in its NPC's working memory (the live
        NPC's, or the document of one only in the store)."""
        state = self.state
        npc = state.registry.live_npc(job.npc)
        working = npc.working if npc is not None else getattr(state.stored.get(job.npc), "working", None)
        if isinstance(working, WorkingMemory) and working.settle(job.conversation):
            state.mark(job.npc, Part.WORKING)

    def resume(self, npc: NpcHandle) -> int:
        """Queue the conversations a restored ``npc`` holds as pending that no extraction
        work holds (a crash came after the NPC's document was saved and before the
        store's metadata with the job); returns how many. One already extracted
        leaves the working memory instead. A job restored so ends no later than the
        clock restored (taken from the store's metadata, which may be older than the
        NPC's document), as the metadata's own jobs do: forgetting its player from now
        on drops it."""
        working = npc.working
        if not working.pending:
            return 0
        held = {job.conversation for job in self.pipeline.pending()}
        held.update(job.conversation for _, job in self.pipeline.released)
        waiting: list[ExtractionJob] = []
        for pending in list(working.pending):
            if pending.conversation in working.extracted:
                working.settle(pending.conversation)
                self.state.mark(npc.identity.key, Part.WORKING)
            elif pending.conversation not in held:
                job = _job(npc.identity.key, pending)
                waiting.append(msgspec.structs.replace(job, ended_at=min(job.ended_at, self.state.clock.now)))
        self.pipeline.restore(waiting)
        return len(waiting)

    def unpark(self) -> None:
        """Apply the results that waited for their NPC or player to be added."""
        if not self.pipeline.parked:
            return
        for result in self.pipeline.take_parked():
            self.apply(result)


def _pending(job: ExtractionJob) -> PendingConversation:
    """What of ``job`` its NPC's working memory keeps while it waits (all but the NPC's
    key and what an LLM call cost)."""
    return PendingConversation(**{name: getattr(job, name) for name in PendingConversation.__struct_fields__})


def _job(npc: str, pending: PendingConversation) -> ExtractionJob:
    """The extraction job of a conversation ``npc``'s working memory holds as pending."""
    return ExtractionJob(npc=npc, **msgspec.structs.asdict(pending))


def _speaker(job: ExtractionJob, speaker: str) -> str | None:
    """The ``actor`` of a line ``speaker`` said in ``job``: the NPC (:data:`SELF`), the
    player (their key), or ``None`` for anyone else."""
    if speaker in (job.npc_name, job.npc):
        return SELF
    return job.player if speaker in (job.player_name, job.player) else None
