"""The built-in context providers: relationship, working memory, memories, knowledge."""

from __future__ import annotations

import heapq

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components import Relationship, Stage
from npc_memory.content.schema import ContextWording
from npc_memory.context.builder import ContextRequest, fit
from npc_memory.rules.knowledge import is_expired
from npc_memory.safety import quote

DEFAULT_WORDING = ContextWording()


def stage_name(stage: Stage) -> str:
    return stage.value.replace("_", " ")


def attitude(rel: Relationship, wording: ContextWording = DEFAULT_WORDING) -> str:
    """How the NPC feels, in words, from the disposition (levels from the pack)."""
    if rel.disposition > wording.warmly_above:
        return "you regard them warmly"
    if rel.disposition > wording.positively_above:
        return "you regard them positively"
    if rel.disposition < wording.hostility_below:
        return "you regard them with hostility"
    if rel.disposition < wording.negatively_below:
        return "you regard them negatively"
    return "you have neutral feelings toward them"


def reputation(rel: Relationship | None, wording: ContextWording = DEFAULT_WORDING) -> str:
    """The ``{reputation}`` placeholder: a label for how the NPC sees the player."""
    if rel is None or (not rel.has_met and abs(rel.disposition) < wording.stranger_within):
        return "stranger (no prior interaction)"
    return f"{stage_name(rel.stage)} ({attitude(rel, wording).removeprefix('you ')})"


def age(now: float, then: float) -> str:
    days = (now - then) / SECONDS_PER_DAY
    if days < 1:
        return "today"
    if days < 2:
        return "yesterday"
    return f"{int(days)} days ago"


class RelationshipProvider:
    """Stage, attitude and the notable dimensions of the relationship."""

    name = "relationship"

    def render(self, request: ContextRequest, budget: int) -> str | None:
        rel = request.npc.relationships.by_player.get(request.player.identity.key)
        who = request.player.identity.name
        if rel is None:
            return fit([f"You have never dealt with {who}."], budget)
        wording = request.rules.wording
        details = []
        if rel.trust > wording.trustworthy_above:
            details.append("trustworthy")
        elif rel.trust < wording.untrustworthy_below:
            details.append("untrustworthy")
        if rel.fear > wording.intimidating_above:
            details.append("intimidating")
        if rel.respect > wording.respectable_above:
            details.append("respectable")
        detail = f" ({', '.join(details)})" if details else ""
        count = rel.interaction_count
        met = ", never met in person" if not count else ", met once" if count == 1 else f", met {count} times"
        line = f"Relationship with {who}: {stage_name(rel.stage)}{met}; {attitude(rel, wording)}{detail}."
        return fit([line], budget)


class WorkingMemoryProvider:
    """The last conversations with the player, newest last."""

    name = "working_memory"

    def render(self, request: ContextRequest, budget: int) -> str | None:
        recent = request.npc.working.recent.get(request.player.identity.key, [])
        if not recent:
            return None
        lines = [f"- {age(request.now, s.ended_at)}: {quote(s.summary)}" for s in recent]
        return fit(lines, budget, header=f"Your recent conversations with {request.player.identity.name}:")


class MemoryProvider:
    """The memories most relevant to the player's message (recall: relevance × salience)."""

    name = "memories"

    def render(self, request: ContextRequest, budget: int) -> str | None:
        recalled = request.recall(request.message, request.rules.recall_k)
        if not recalled:
            return fit([f"You have no specific memories of {request.player.identity.name}."], budget)
        now = request.now
        lines = [f"- {quote(m.content)} ({age(now, m.created)})" for m in recalled]
        return fit(lines, budget, header=f"What you remember of {request.player.identity.name}:")


class KnowledgeProvider:
    """What the NPC believes about the player, then the most important other news;
    one belief per topic; shaky beliefs worded as hearsay."""

    name = "knowledge"

    def render(self, request: ContextRequest, budget: int) -> str | None:
        now, rules = request.now, request.rules
        player = request.player.identity.key
        about, news = [], []
        for fact in request.npc.knowledge.facts:
            if not fact.believed or is_expired(fact, now):
                continue
            if fact.subject != player:
                news.append(fact)
            elif fact.source != "conversation":  # facts drawn from conversations repeat the memories shown
                about.append(fact)
        most = max(1, budget // 6)  # a line costs at least ~6 tokens: more could never fit
        chosen = [
            *heapq.nlargest(most, about, key=lambda f: (f.importance, f.created)),
            *heapq.nlargest(most, news, key=lambda f: (f.importance, f.created)),
        ]
        if not chosen:
            return None
        uncertain = rules.uncertain_below
        lines = (
            f"- I heard that {quote(f.content)}, but I'm not sure."
            if f.confidence < uncertain
            else f"- {quote(f.content)}"
            for f in chosen
        )
        return fit(lines, budget, header="What you know:")


DEFAULT_PROVIDERS = (RelationshipProvider(), WorkingMemoryProvider(), MemoryProvider(), KnowledgeProvider())
"""The built-in providers, in the order their sections appear."""
