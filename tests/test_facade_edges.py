"""Edges of the facade: wrong types get a clear error and change nothing, a call whose
handlers raise still returns its answer, and uninstall delivers what was queued."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import esper
import pytest

import npc_memory
from npc_memory.events import Event, MemoriesExtracted, RelationshipEvent

from .conftest import Village

BAD_CALLS: list[tuple[str, Callable[[npc_memory.MemoryPlugin], Any], str]] = [
    ("bool entity", lambda p: p.remember(True, "alice", "x"), "entity id or a key"),
    ("tags None", lambda p: p.remember("hilda", "alice", "x", tags=None), "tags must be a list"),  # type: ignore[arg-type]
    ("version bool", lambda p: p.adjust_relationship("hilda", "alice", expected_version=True, trust=0.1), "expected_version"),
    ("tag not text", lambda p: p.query.count_memories_by_tag("hilda", "alice", b"x"), "tag must be a string"),  # type: ignore[arg-type]
    ("min_importance None", lambda p: p.query.has_memory_matching("hilda", "alice", ["x"], None), "min_importance"),  # type: ignore[arg-type]
    ("strengthen str", lambda p: p.recall("hilda", "alice", "x", strengthen="no"), "strengthen"),  # type: ignore[arg-type]
    ("disbelieved str", lambda p: p.facts("hilda", include_disbelieved="yes"), "include_disbelieved"),  # type: ignore[arg-type]
    ("faction list", lambda p: p.add_npc(key="x", faction=[]), "faction must be a string"),  # type: ignore[arg-type]
    ("providers int", lambda p: p.context("hilda", "alice", providers=5), "providers"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("what", "call", "message"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_wrong_types_get_a_clear_error_and_change_nothing(
    village: Village, what: str, call: Callable[[npc_memory.MemoryPlugin], Any], message: str
) -> None:
    p = village.plugin
    before = (p.memories("hilda", "alice"), p.relationship("hilda", "alice"), p.npcs())
    with pytest.raises(npc_memory.InvalidArgumentError, match=message):
        call(p)
    assert (p.memories("hilda", "alice"), p.relationship("hilda", "alice"), p.npcs()) == before


def test_install_refuses_wrong_types_by_name() -> None:
    with pytest.raises(npc_memory.InvalidArgumentError, match="pack must be"):
        npc_memory.install(world="x", pack=5)  # type: ignore[arg-type]
    with pytest.raises(npc_memory.InvalidArgumentError, match="forward_events"):
        npc_memory.install(world="x", forward_events="yes")  # type: ignore[arg-type]
    with pytest.raises(npc_memory.InvalidArgumentError, match="real seconds"):
        npc_memory.install(world="x", fixed_step=-1.0)


def test_a_call_whose_handlers_raise_still_returns_its_answer(village: Village) -> None:
    p = village.plugin

    def broken(event: Event) -> None:
        raise RuntimeError("handler bug")

    p.on(RelationshipEvent, broken)
    p.say("hilda", "alice", "Alice", "Let me help you with the bellows.")
    with pytest.raises(npc_memory.EventHandlerError) as info:
        p.end_conversation("hilda", "alice")
    ended = info.value.result
    assert isinstance(ended, npc_memory.ConversationEnded) and ended.status == "queued"


def test_uninstall_delivers_what_was_queued(village: Village) -> None:
    p = village.plugin
    heard: list[Event] = []
    p.on(MemoriesExtracted, heard.append)

    class HostBug(esper.Processor):
        def process(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("host processor bug")

    esper.switch_world("test")
    esper.add_processor(HostBug(), priority=0)  # after extraction, before the plugin's EventSystem
    p.say("hilda", "alice", "Alice", "Let me help you with the bellows.")
    p.end_conversation("hilda", "alice")
    with pytest.raises(RuntimeError, match="host processor bug"):
        esper.process(1.0)
    esper.switch_world("default")
    assert heard == []  # applied, its event still queued
    npc_memory.uninstall("test")
    assert [e.conversation for e in heard] == ["hilda/alice/1"]  # delivered before the handlers went
