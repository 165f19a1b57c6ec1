"""The facade stays small (issue 49, step 4): MemoryPlugin's public surface is at most
40 members, the rest is reached through its parts by subject — ``plugin.query``,
``plugin.privacy``, ``plugin.storage``, ``plugin.llm`` — and each part's public
methods are documented."""

from __future__ import annotations

import inspect

import pytest

from npc_memory.errors import InvalidArgumentError
from npc_memory.plugin import MemoryPlugin
from npc_memory.plugin.llm import LlmCalls
from npc_memory.plugin.privacy import PrivacyCalls
from npc_memory.plugin.storage import StorageCalls
from npc_memory.query import MemoryQuery

from .conftest import Village

PARTS = {"query": MemoryQuery, "privacy": PrivacyCalls, "storage": StorageCalls, "llm": LlmCalls}


def public(obj: object) -> set[str]:
    return {name for name in dir(obj) if not name.startswith("_")}


def test_the_facade_has_at_most_40_public_members(village: Village) -> None:
    members = public(village.plugin)
    assert len(members) <= 40, sorted(members)
    for name, part in PARTS.items():
        assert isinstance(getattr(village.plugin, name), part)


def test_every_public_call_of_the_facade_and_its_parts_is_documented() -> None:
    for owner in (MemoryPlugin, *PARTS.values()):
        for name, member in inspect.getmembers(owner):
            if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                assert inspect.getdoc(member), f"{owner.__name__}.{name} has no docstring"


def test_the_facade_module_is_at_most_600_lines() -> None:
    source = inspect.getsourcefile(MemoryPlugin)
    assert source is not None
    with open(source, encoding="utf-8") as file:
        assert len(file.readlines()) <= 600


def test_an_unknown_keyword_is_refused_by_name_and_changes_nothing(village: Village) -> None:
    plugin = village.plugin
    before = len(plugin.memories("hilda", "alice"))
    with pytest.raises(InvalidArgumentError, match=r"remember\(\) got unknown keyword arguments importanse"):
        plugin.remember("hilda", "alice", "Paid in full.", importanse=0.9)  # type: ignore[call-arg]
    with pytest.raises(InvalidArgumentError, match=r"learn_fact\(\) got unknown keyword arguments room"):
        plugin.learn_fact("hilda", "The mill burned.", room="mill")  # type: ignore[call-arg]
    with pytest.raises(InvalidArgumentError, match=r"observe\(\) got unknown keyword arguments locked"):
        plugin.observe(room="forge", content="A fire.", locked=True)  # type: ignore[call-arg]
    assert len(plugin.memories("hilda", "alice")) == before
    assert not [f for f in plugin.facts("hilda") if f.content == "The mill burned."]


def test_every_documented_option_is_taken(village: Village) -> None:
    plugin = village.plugin
    memory = plugin.remember(
        "hilda", "alice", "Brought the bread.", kind="episodic", tags=["help"], importance=0.7, confidence=0.9,
        valence="positive", intensity=0.2, locked=True, room="bakery", source_conversation="c1",
        affect_relationship=True, actor="alice", source="witnessed", teller=None,
    )  # fmt: skip
    assert (memory.importance, memory.confidence, memory.locked, memory.room) == (0.7, 0.9, True, "bakery")
    assert (memory.source, memory.actor, memory.tags) == ("witnessed", "alice", ("help",))
    fact = plugin.learn_fact(
        "hilda", "The well is dry.", tags=["water"], importance=0.4, confidence=0.8, category="world_event",
        topic="well", locked=True, expires_in=60.0,
    )  # fmt: skip
    assert fact is not None and (fact.topic, fact.locked, fact.tags) == ("well", True, ("water",))
