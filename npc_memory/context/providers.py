"""The built-in context providers: relationship, working memory, memories, knowledge."""

from __future__ import annotations

import heapq

from npc_memory.clock import SECONDS_PER_DAY
from npc_memory.components import SELF, Memory, Relationship, Stage
from npc_memory.components.knowledge import Fact
from npc_memory.content.schema import MAX_RECALL_K, ContextWording
from npc_memory.context.builder import ContextRequest, fit
from npc_memory.rules.knowledge import is_expired
from npc_memory.rules.text import STOP_WORDS
from npc_memory.rules.tokens import tokens_of_length
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
        rel = request.relationship or request.npc.relationships.by_player.get(request.player.identity.key)
        who = request.player.identity.name
        if rel is None:
            pair = request.npc.bank.pair(request.player.identity.key)
            if pair is not None and len(pair):
                line = f"You have not dealt with {who} in person; you know of them only what you remember."
                return fit([line], budget)
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
    """The last conversations with the player, newest last; one whose quoted line the
    player took back since says so."""

    name = "working_memory"

    def render(self, request: ContextRequest, budget: int) -> str | None:
        player = request.player.identity.key
        recent = request.npc.working.recent.get(player, [])
        if not recent:
            return None
        pair = request.npc.bank.pair(player)
        withdrawn = _withdrawn(request.npc.knowledge.facts, player)
        taken: dict[str | None, list[tuple[Memory, str]]] = {}
        for memory in pair.all() if pair is not None else ():
            reason = memory.retracted or withdrawn.get(memory.id)
            if reason is not None:
                taken.setdefault(memory.source_conversation, []).append((memory, reason))
        who = request.player.identity.name
        lines = []
        for s in recent:
            quoted = s.summary.partition(': "')[2].removesuffix('"').removesuffix("...")
            held = taken.get(s.conversation, ())
            reason = next((why for m, why in held if quoted and quoted in m.content), None)
            note = f" ({_WITHDRAWN[reason].removeprefix('; ').format(who=who)})" if reason is not None else ""
            lines.append(f"- {age(request.now, s.ended_at)}: {quote(s.summary)}{note}")
        return fit(lines, budget, header=f"Your recent conversations with {who}:")


class MemoryProvider:
    """The memories most relevant to the player's message (recall: relevance × salience),
    as many as fit, each under what it is: what the NPC saw the player do (or the game
    says they did), what the player told it, what the player claims, what it heard about
    them and from whom, what it told them itself, and its memories of the world. What the
    player said about themselves and later corrected, changed or contradicted reads as
    what they once said; a rumour the player denied, or that the NPC knows better than,
    says so."""

    name = "memories"
    line_tokens = 12
    """The fewest tokens a memory line takes: the budget over this is how many to rank."""

    def render(self, request: ContextRequest, budget: int) -> str | None:
        who = request.player.identity.name
        k = min(MAX_RECALL_K, max(request.rules.recall_k, budget // self.line_tokens))
        rank = request.candidates or request.recall
        recalled = rank(request.message, k)
        request.shown[self.name] = []
        if not recalled:
            return fit([f"You have no specific memories of {who}."], budget)
        world = {id(m) for m in request.npc.bank.world.all()}
        headers = (
            f"What you saw of {who}:",
            f"What {who} told you:",
            f"What {who} claims (you did not see it):",
            "What you heard, and from whom:",
            f"What you told {who}:",
            "What you remember of the world around you:",
        )
        blocks = _Blocks(headers)
        shown = request.shown[self.name]
        left_out = None
        player = request.player.identity.key
        withdrawn = _withdrawn(request.npc.knowledge.facts, player)
        doubted = {  # rumours about the player no longer believed, by content
            f.content: f.disbelief
            for f in request.npc.knowledge.facts
            if f.subject == player and f.attribute is None and f.source == "gossip"
            and f.disbelief in _DOUBTED
        }
        for memory in recalled:
            section = _section(memory, player, id(memory) in world)
            reason = (
                memory.retracted
                or withdrawn.get(memory.id)
                or (memory.source == "heard" and doubted.get(memory.content))
            )
            note = _WITHDRAWN.get(reason or "", "")
            provenance = f"{_provenance(memory, request)}{note.format(who=who)}"
            blocks.add(section, f"- {quote(memory.content)} ({provenance})")
            if blocks.tokens > budget:
                blocks.pop(section)  # too long: a shorter one further down may still fit
                left_out = left_out or memory
                continue
            shown.append(memory)
        if left_out is not None and shown:  # the best memory left out, cut to the room left
            section = _section(left_out, player, id(left_out) in world)
            blocks.add(section, "- «…»")  # what the line costs but its text (its section's header too)
            room = 4 * (budget - blocks.tokens)
            blocks.pop(section)
            if room >= 4 * self.line_tokens:
                blocks.add(section, f"- {quote(left_out.content[:room] + '…')}")
                if blocks.tokens <= budget:
                    shown.append(left_out)
                else:
                    blocks.pop(section)
        return blocks.text() or None


_WITHDRAWN = {
    "corrected": "; what {who} once said: they have owned up since that it was not so",
    "changed": "; what {who} once said: it has changed since, they told you",
    "contradicted": "; what {who} once said: they later said otherwise, without a word about it",
    "denied": "; {who} denied it to you, and you believe them",
    "outweighed": "; you no longer believe it: you know better",
}
"""How a memory of what the player said about themselves, or of a rumour about them, reads
once the belief it gave was withdrawn (by the fact's ``disbelief``) or the player took it
back (by the memory's ``retracted``): never as what holds now."""
_DOUBTED = frozenset(("denied", "outweighed"))


def _withdrawn(facts: list[Fact], player: str) -> dict[str | None, str]:
    """Why the beliefs that what ``player`` said about themselves gave were withdrawn
    (the facts' ``disbelief``), by the id of the memory of what they said."""
    return {
        f.source_memory: f.disbelief
        for f in facts
        if f.subject == player and f.disbelief is not None and f.attribute is not None
    }


def _section(memory: Memory, player: str, about_world: bool) -> int:
    """Which section of :class:`MemoryProvider` a memory goes under (an index of its
    headers): a memory of the world by source heard or not; of the player, by source,
    the NPC's own words apart."""
    if memory.source == "heard":
        return 3
    if about_world:
        return 5
    if memory.actor == SELF:
        return 4
    if memory.source == "claimed":
        return 2
    if memory.source == "said":
        return 1 if memory.actor == player else 4
    return 0 if memory.actor in (player, None) else 3


def _provenance(memory: Memory, request: ContextRequest) -> str:
    """When the NPC came by ``memory``, and from whom for what it heard."""
    when = age(request.now, memory.created)
    if memory.source == "heard" and memory.teller is not None and memory.teller != SELF:
        return f"{when}, from {request.name_of(memory.teller)}"
    return when


class _Blocks:
    """Lines under headers, each header shown only over lines of its own, with the length
    of the text they make kept as lines come and go: what a line costs is known without
    joining them all again."""

    def __init__(self, headers: tuple[str, ...]) -> None:
        self.headers = headers
        self.groups: tuple[list[str], ...] = tuple([] for _ in headers)
        self.filled = 0
        """How many headers have lines."""
        self.characters = 0
        """The length of :meth:`text`."""

    @property
    def tokens(self) -> int:
        """The estimated tokens of :meth:`text`."""
        return tokens_of_length(self.characters)

    def add(self, section: int, line: str) -> None:
        """``line`` at the end of the lines under ``headers[section]``."""
        group = self.groups[section]
        if not group:
            self.characters += len(self.headers[section]) + (1 if self.filled else 0)
            self.filled += 1
        group.append(line)
        self.characters += 1 + len(line)

    def pop(self, section: int) -> None:
        """Take back the last line added under ``headers[section]``."""
        group = self.groups[section]
        self.characters -= 1 + len(group.pop())
        if not group:
            self.filled -= 1
            self.characters -= len(self.headers[section]) + (1 if self.filled else 0)

    def text(self) -> str:
        """Each header with lines, then its lines, one to a line."""
        blocks = zip(self.headers, self.groups, strict=True)
        return "\n".join("\n".join((header, *lines)) for header, lines in blocks if lines)


def hearsay(content: str, sure: bool) -> str:
    """``content`` worded as something heard (quoted: it is remembered text), its names
    keeping their case."""
    first, _, rest = content.partition(" ")
    if first.lower() in STOP_WORDS or first.lower() in ("someone", "people", "everyone"):
        content = f"{first.lower()} {rest}" if rest else first.lower()
    said = quote(content.rstrip("."))
    return f"I heard that {said}." if sure else f"I heard that {said}, but I'm not sure."


class KnowledgeProvider:
    """What the NPC believes of the player that no memory shown beside it says (facts the
    game gave it, or rumours from before memories recorded them), then the most
    important other news and knowledge, each under its heading; one belief per topic;
    what came by gossip or is believed with little confidence worded as hearsay."""

    name = "knowledge"

    def render(self, request: ContextRequest, budget: int) -> str | None:
        now, rules = request.now, request.rules
        player = request.player.identity.key
        about, news = [], []
        pair = request.npc.bank.pair(player)
        remembered = {m.content for m in pair.all()} if pair is not None else set()
        for fact in request.npc.knowledge.facts:
            if not fact.believed or is_expired(fact, now):
                continue
            if fact.subject != player:
                news.append(fact)
            elif fact.source != "conversation" and fact.content not in remembered:
                about.append(fact)  # (what the NPC saw or heard as a memory, the memories show)
        most = max(1, budget // 6)  # a line costs at least ~6 tokens: more could never fit
        uncertain = rules.uncertain_below

        def line(fact: Fact) -> str:
            if fact.confidence < uncertain or fact.source == "gossip":
                return f"- {hearsay(fact.content, fact.confidence >= uncertain)}"
            return f"- {quote(fact.content)}"

        who = request.player.identity.name
        headers = (f"What you know about {who}:", "What you know of the world:")
        blocks = _Blocks(headers)
        chosen = (
            heapq.nlargest(most, about, key=lambda f: (f.importance, f.created)),
            heapq.nlargest(most, news, key=lambda f: (f.importance, f.created)),
        )
        for section, facts in enumerate(chosen):
            for fact in facts:
                blocks.add(section, line(fact))
                if blocks.tokens > budget:
                    blocks.pop(section)
                    break
        return blocks.text() or None


DEFAULT_PROVIDERS = (RelationshipProvider(), WorkingMemoryProvider(), MemoryProvider(), KnowledgeProvider())
"""The built-in providers, in the order their sections appear."""
