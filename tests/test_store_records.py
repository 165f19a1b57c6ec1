"""Captures and patches: a patch between two captures, applied to the first one's
document (after a trip through msgpack), gives the second one's document exactly."""

from __future__ import annotations

import gc
import random
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npc_memory.components import (
    ConversationSummary,
    EpisodicMemory,
    Fact,
    FactionMember,
    Identity,
    KnowledgeBase,
    Location,
    MemoryBank,
    NpcHandle,
    NpcTraits,
    PairMemories,
    ProceduralMemory,
    Relationship,
    Relationships,
    SemanticMemory,
    Turn,
    WorkingMemory,
)
from npc_memory.store import SCHEMA_VERSION, NpcDocument, Part
from npc_memory.store.records import (
    NpcCapture,
    NpcPatch,
    apply_list_edit,
    apply_patch,
    capture_atomically,
    capture_handle,
    diff,
    document_of_capture,
    list_edit,
    record_decoder,
    record_encoder,
)

_counter = iter(range(10**9))


def memory(kind: str) -> Any:
    n = next(_counter)
    if kind == "episodic":
        return EpisodicMemory(id=f"m{n}", content=f"event {n}", tags=("trade",), importance=0.5)
    if kind == "semantic":
        return SemanticMemory(id=f"m{n}", content=f"fact {n}", source_episodes=(f"m{n - 1}",))
    return ProceduralMemory(id=f"m{n}", content=f"habit {n}", pattern="greets", reinforcement=n % 5 + 1)


def fact() -> Fact:
    n = next(_counter)
    return Fact(id=f"f{n}", origin=f"o{n}", content=f"rumour {n}", subject="alice", confidence=0.7)


def document(players: int = 3) -> NpcDocument:
    bank = MemoryBank(next_id=50)
    for p in range(players):
        bank.players[f"p{p}"] = PairMemories(
            episodic=[memory("episodic") for _ in range(3)], semantic=[memory("semantic")],
            procedural=[memory("procedural")],
        )
    return NpcDocument(
        v=SCHEMA_VERSION, key="hilda", name="Hilda", faction="smiths", archetype="blacksmith", room="forge",
        traits=NpcTraits(archetype="blacksmith", sociability=0.7), bank=bank,
        relationships=Relationships(by_player={f"p{p}": Relationship(trust=0.1 * p) for p in range(players)}),
        working=WorkingMemory(
            open={"p0": [Turn("Alice", "hello")]},
            recent={"p1": [ConversationSummary(conversation="c1", summary="s", turns=2, ended_at=3.0)]},
            conversations={"p1": 1}, extracted=["c1"],
        ),
        knowledge=KnowledgeBase(facts=[fact() for _ in range(5)], next_id=6),
    )


def mutate_list(rng: random.Random, items: list[Any], make: Any) -> None:
    op = rng.randrange(6)
    if op == 0 or not items:
        items.append(make())
    elif op == 1:
        items[rng.randrange(len(items))] = make()
    elif op == 2:
        del items[rng.randrange(len(items))]
    elif op == 3:
        items.insert(rng.randrange(len(items) + 1), make())
    elif op == 4:
        rng.shuffle(items)
    else:
        items.append(items[0])  # the same record twice


def mutate(rng: random.Random, doc: NpcDocument) -> int:
    """Change ``doc`` at random; returns the parts changed (0: its head only)."""
    bank, rels, working = doc.bank, doc.relationships.by_player, doc.working
    op = rng.randrange(16)
    players = list(bank.players)
    if op == 0:
        mutate_list(rng, doc.knowledge.facts, fact)
        doc.knowledge.next_id += 1
        return Part.KNOWLEDGE
    elif op == 1 and players:
        pair = bank.players[rng.choice(players)]
        kind = rng.choice(["episodic", "semantic", "procedural"])
        mutate_list(rng, getattr(pair, kind), lambda: memory(kind))
        bank.next_id += 1
        return Part.BANK
    elif op == 2:
        kind = rng.choice(["episodic", "semantic", "procedural"])
        mutate_list(rng, getattr(bank.world, kind), lambda: memory(kind))
        return Part.BANK
    elif op == 3:
        bank.pair_for_write(f"p{rng.randrange(8)}").episodic.append(memory("episodic"))
        return Part.BANK
    elif op == 4 and players:
        del bank.players[rng.choice(players)]
        return Part.BANK
    elif op == 5 and players:
        key = rng.choice(players)
        bank.players[key] = bank.players.pop(key)  # same content, moved to the end
        return Part.BANK
    elif op == 6:
        rels[f"p{rng.randrange(8)}"] = Relationship(trust=rng.random(), version=rng.randrange(9))
        return Part.RELATIONSHIPS
    elif op == 7 and rels:
        del rels[rng.choice(list(rels))]
        return Part.RELATIONSHIPS
    elif op == 8 and rels:
        key = rng.choice(list(rels))
        rels[key] = rels.pop(key)
        return Part.RELATIONSHIPS
    elif op == 9:
        working.open.setdefault(f"p{rng.randrange(4)}", []).append(Turn("Hilda", f"line {rng.random()}"))
        return Part.WORKING
    elif op == 10 and working.open:
        del working.open[rng.choice(list(working.open))]
        return Part.WORKING
    elif op == 11:
        working.remember_conversation(
            f"p{rng.randrange(4)}", ConversationSummary(conversation=f"c{rng.random()}", summary="x", turns=1, ended_at=1.0)
        )
        return Part.WORKING
    elif op == 12:
        working.mark_extracted(f"c{rng.randrange(1000)}")
        working.conversations[f"p{rng.randrange(4)}"] = rng.randrange(9)
        return Part.WORKING
    elif op == 13:
        bank.milestones[f"p{rng.randrange(4)}"] = rng.randrange(100)
        return Part.BANK
    elif op == 14:
        doc.room = rng.choice(["forge", "market", None])
        doc.name = rng.choice(["Hilda", "Hild"])
        return 0
    else:
        doc.traits = NpcTraits(archetype=doc.archetype, sociability=rng.random())
        return 0


def handle(doc: NpcDocument) -> NpcHandle:
    """A live NPC's handle over ``doc``'s containers."""
    return NpcHandle(
        entity=1, identity=Identity(key=doc.key, name=doc.name), faction=FactionMember(faction=doc.faction),
        location=Location(doc.room), traits=doc.traits, bank=doc.bank, relationships=doc.relationships,
        working=doc.working, knowledge=doc.knowledge,
    )


def capture(doc: NpcDocument, at: float, *, atomically: bool = False) -> NpcCapture:
    """As the tick (or the writer thread) captures a live NPC."""
    captured = (capture_atomically if atomically else capture_handle)(handle(doc), at)
    assert isinstance(captured, NpcCapture)
    return captured


def fresh(capture_: NpcCapture) -> NpcDocument:
    """The document of a capture, decoded anew (as replay starts from a shard)."""
    data = msgspec.json.encode(document_of_capture(capture_))
    return msgspec.json.decode(data, type=NpcDocument)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6), st.integers(0, 12))
def test_a_patch_turns_the_base_into_the_new_document_exactly(seed: int, rounds: int, changes: int) -> None:
    rng = random.Random(seed)
    live = document(players=rng.randrange(4))
    base = capture(live, 0.0)
    replayed = fresh(base)
    for round_ in range(1, rounds + 1):
        for _ in range(changes):
            mutate(rng, live)
        new = capture(live, float(round_), atomically=bool(round_ % 2))
        patch = diff(base, new, lsn=round_ + 1, base_lsn=round_)
        if patch is None:
            assert document_of_capture(new) == msgspec.structs.replace(document_of_capture(base), saved_at=new.saved_at)
            continue
        decoded = record_decoder.decode(record_encoder.encode(patch))
        assert isinstance(decoded, NpcPatch) and decoded.base == round_
        apply_patch(replayed, decoded)
        expected = fresh(new)
        assert replayed == expected
        assert list(replayed.bank.players) == list(expected.bank.players)
        assert list(replayed.relationships.by_player) == list(expected.relationships.by_player)
        assert list(replayed.working.open) == list(expected.working.open)
        assert msgspec.json.encode(replayed) == msgspec.json.encode(expected)  # the same canonical JSON
        base = new


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6), st.integers(0, 8))
def test_a_capture_of_the_parts_marked_changed_equals_a_whole_one(seed: int, rounds: int, changes: int) -> None:
    """The writer copies only the parts marked changed since the capture it wrote
    last and takes the others from it: the document is the same as a whole capture's,
    the parts not marked are shared, and the patch replays to the live document."""
    rng = random.Random(seed)
    live = document(players=rng.randrange(4))
    base = capture(live, 0.0)
    replayed = fresh(base)
    names = {Part.BANK: "bank", Part.RELATIONSHIPS: "relationships", Part.WORKING: "working", Part.KNOWLEDGE: "knowledge"}
    for round_ in range(1, rounds + 1):
        parts = 0
        for _ in range(changes):
            parts |= mutate(rng, live)
        new = capture_atomically(handle(live), float(round_), parts, base)
        assert isinstance(new, NpcCapture)
        whole = capture(live, float(round_))
        assert document_of_capture(new) == document_of_capture(whole)
        for bit, name in names.items():
            assert (getattr(new, name) is getattr(base, name)) == (not parts & bit)
        patch = diff(base, new, lsn=round_ + 1, base_lsn=round_)
        assert patch == diff(base, whole, lsn=round_ + 1, base_lsn=round_)
        if patch is not None:
            apply_patch(replayed, record_decoder.decode(record_encoder.encode(patch)))  # type: ignore[arg-type]
            assert replayed == fresh(whole)
        base = new


def test_a_change_marked_on_another_part_is_not_captured() -> None:
    """What the marks are for: a part not marked is taken from the capture before."""
    live = document(players=1)
    base = capture(live, 0.0)
    live.knowledge.facts.append(fact())
    live.relationships.by_player["p0"] = Relationship(trust=0.7)
    new = capture_atomically(handle(live), 1.0, Part.RELATIONSHIPS, base)
    assert isinstance(new, NpcCapture)
    assert new.knowledge is base.knowledge and new.relationships["p0"] == Relationship(trust=0.7)
    patch = diff(base, new, lsn=2, base_lsn=1)
    assert patch is not None and patch.facts is None and patch.relationships == {"p0": Relationship(trust=0.7)}


def test_a_patch_carries_only_what_changed() -> None:
    live = document(players=3)
    base = capture(live, 0.0)
    live.knowledge.facts.append(fact())
    live.relationships.by_player["p1"] = Relationship(trust=0.9)
    patch = diff(base, capture(live, 1.0), lsn=2, base_lsn=1)
    assert patch is not None
    assert patch.facts == [0, 5, live.knowledge.facts[-1]]
    assert patch.relationships == {"p1": Relationship(trust=0.9)}
    assert patch.world is None and patch.pairs == {} and patch.extracted is None
    full = len(msgspec.json.encode(document_of_capture(base)))
    assert len(record_encoder.encode(patch)) < full / 3


def test_nothing_changed_is_no_patch() -> None:
    live = document()
    assert diff(capture(live, 0.0), capture(live, 5.0), lsn=2, base_lsn=1) is None


def test_a_capture_is_a_copy_the_garbage_collector_lets_be() -> None:
    live = document(players=2)
    captured = capture(live, 0.0)
    live.knowledge.facts.append(fact())
    live.bank.players["p0"].episodic.clear()
    live.relationships.by_player["p1"] = Relationship(trust=0.99)
    view = captured.view()
    assert len(view.facts) == 5 and len(view.pairs["p0"][0]) == 3  # not the live changes
    assert captured.relationships["p1"] == Relationship(trust=0.1)
    assert view.facts[0] is live.knowledge.facts[0]  # records are shared, not copied
    assert (captured.key, captured.room, captured.archetype) == ("hilda", "forge", "blacksmith")
    assert not any(map(gc.is_tracked, (captured, captured.bank, captured.working, captured.knowledge)))
    gc.collect()  # the collector untracks a tuple once it sees its items are untracked
    for part in (captured.bank, captured.working):
        assert not gc.is_tracked(part.items) and not gc.is_tracked(part.keys)


@pytest.mark.parametrize(
    ("base", "new"),
    [([], []), ([1, 2, 3], [1, 2, 3, 4]), ([1, 2, 3], [2, 3]), ([1, 2, 3], [3, 1, 2]), ([1, 2, 3], []), ([], [7, 8])],
)
def test_list_edits_round_trip(base: list[int], new: list[int]) -> None:
    objects = {n: object() for n in {*base, *new}}
    b, n = [objects[x] for x in base], [objects[x] for x in new]
    ops = list_edit(b, n)
    assert (ops is None) == (b == n)
    if ops is not None:
        # ints in ops are runs here, so encode the records as objects: they stay objects
        assert apply_list_edit(b, ops) == n


def test_an_edit_that_does_not_fit_is_refused() -> None:
    with pytest.raises(ValueError, match="outside a list of 2"):
        apply_list_edit(["a", "b"], [0, 3])
    with pytest.raises(ValueError, match="without its end"):
        apply_list_edit(["a", "b"], [0])
    doc = document(players=1)
    patch = NpcPatch(lsn=2, key="hilda", base=1, name="Hilda", pairs_gone=["nobody"])
    with pytest.raises(ValueError, match="nobody"):
        apply_patch(doc, patch)
