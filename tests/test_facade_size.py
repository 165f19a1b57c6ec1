"""The facade stays small (issue 49, step 4): MemoryPlugin's public surface is at most
40 members, the rest is reached through its parts by subject — ``plugin.query``,
``plugin.privacy``, ``plugin.storage``, ``plugin.llm`` — and each part's public
methods are documented."""

from __future__ import annotations

import inspect

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
