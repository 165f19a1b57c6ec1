"""The LLM path at uninstall, with the real Anthropic SDK against the local fake Messages
API: every future resolves, calls after uninstall get a clear error, and a call already
paid for is never paid for again after a restart (its answer, when it arrived, is used)."""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import npc_memory
from npc_memory.content import load_pack, validate_pack
from npc_memory.events import MemoriesExtracted

from .conftest import tick
from .fake_anthropic import FakeMessagesAPI, Reply, memory, message
from .test_llm_extraction import tick_until
from .test_llm_gateway import wait_for

pytestmark = pytest.mark.usefixtures("no_anthropic_environment")

ANSWER = "Alice helped me drive off the bandits."


def llm_pack(**changes: Any) -> npc_memory.Pack:
    data = load_pack("village").model_dump()
    data["llm"].update({"deadline": 30.0, "max_retries": 0, "shutdown_grace": 0.0})
    for section, values in changes.items():
        data[section].update(values)
    return validate_pack(data)


def start(api: FakeMessagesAPI, store: Path, pack: npc_memory.Pack) -> npc_memory.MemoryPlugin:
    llm = npc_memory.AnthropicExtractor(api_key="test-key", base_url=api.base_url)
    plugin = npc_memory.install(world="llm", pack=pack, store=store, llm=llm, deterministic=True)
    plugin.add_npc(key="hilda", name="Hilda", archetype="blacksmith", room="forge")
    plugin.add_player(key="alice", name="Alice", faction="adventurers", room="forge")
    return plugin


def converse(plugin: npc_memory.MemoryPlugin, n: int) -> list[str]:
    ids = []
    for i in range(n):
        plugin.say("hilda", "alice", "Alice", f"I'll help you drive off the bandits! ({i})")
        plugin.say("hilda", "alice", "Hilda", "I'll get my hammer. Together we'll drive them off.")
        ended = plugin.end_conversation("hilda", "alice")
        assert ended is not None
        ids.append(ended.conversation)
    return ids


def extracted(plugin: npc_memory.MemoryPlugin) -> list[MemoriesExtracted]:
    seen: list[MemoriesExtracted] = []
    plugin.on(MemoriesExtracted, seen.append)
    return seen


def restart(api: FakeMessagesAPI, store: Path, pack: npc_memory.Pack) -> tuple[npc_memory.MemoryPlugin, list[Any]]:
    npc_memory.uninstall("llm")
    plugin = start(api, store, pack)
    return plugin, extracted(plugin)


def in_flight(plugin: npc_memory.MemoryPlugin) -> int:
    return len(plugin.extraction.in_flight)


def test_answers_that_arrived_before_uninstall_are_used_after_a_restart(api: FakeMessagesAPI, tmp_path: Path) -> None:
    api.default = Reply(body=message([memory(ANSWER)]))
    pack = llm_pack()
    plugin = start(api, tmp_path / "store", pack)
    ids = converse(plugin, 3)
    tick("llm")  # sends the three calls
    assert in_flight(plugin) == 3
    wait_for(lambda: all(f.future.done() for f in plugin.extraction.in_flight))  # answered, not yet applied
    assert len(api.requests) == 3
    paid = plugin.extraction.stats.cost_usd
    assert paid > 0

    plugin, seen = restart(api, tmp_path / "store", pack)
    tick_until(plugin, lambda: len(seen) == 3)
    assert len(api.requests) == 3  # nothing sent again
    assert plugin.extraction.stats.llm_calls == 0 and plugin.extraction.stats.cost_usd == 0
    assert sorted(e.conversation for e in seen) == sorted(ids)
    assert {e.source for e in seen} == {"llm"}
    # Three applications of the same answer: one memory, reinforced by the second and third.
    [held] = [m for m in plugin.memories("hilda", "alice") if m.content == ANSWER]
    assert held.access_count == 2


def test_answers_waiting_to_be_applied_are_kept_too(api: FakeMessagesAPI, tmp_path: Path) -> None:
    api.default = Reply(body=message([memory(ANSWER)]))
    pack = llm_pack(budgets={"extraction_apply_per_tick": 1})
    plugin = start(api, tmp_path / "store", pack)
    converse(plugin, 3)
    tick("llm")
    wait_for(lambda: all(f.future.done() for f in plugin.extraction.in_flight))
    tick("llm")  # collects all three answers, applies one
    assert len(plugin.extraction.ready) == 2 and in_flight(plugin) == 0

    plugin, seen = restart(api, tmp_path / "store", pack)
    tick_until(plugin, lambda: len(seen) == 2)
    assert len(api.requests) == 3 and {e.source for e in seen} == {"llm"}
    # Three applications of the same answer: one memory, reinforced by the second and third.
    [held] = [m for m in plugin.memories("hilda", "alice") if m.content == ANSWER]
    assert held.access_count == 2


def test_calls_cut_off_by_uninstall_are_recorded_as_paid_and_never_sent_again(
    api: FakeMessagesAPI, tmp_path: Path
) -> None:
    gate = threading.Event()
    api.default = Reply(gate=gate, body=message([memory(ANSWER)]))
    pack = llm_pack()
    try:
        plugin = start(api, tmp_path / "store", pack)
        ids = converse(plugin, 3)
        tick("llm")
        wait_for(lambda: len(api.requests) == 3)  # sent: the API may bill them
        plugin, seen = restart(api, tmp_path / "store", pack)
    finally:
        gate.set()
    jobs = plugin.storage.store.load().meta.pending_extractions if plugin.storage.store is not None else []
    assert [job.paid is not None and job.paid.failure == "shut down" for job in jobs] == [True] * 3
    assert all(job.paid is not None and job.paid.usage is not None for job in jobs)
    tick_until(plugin, lambda: len(seen) == 3)
    assert len(api.requests) == 3  # the rules extracted them: no second bill
    assert sorted(e.conversation for e in seen) == sorted(ids)
    assert {(e.source, e.reason) for e in seen} == {("rules", "fallback: shut down")}


def test_calls_never_sent_are_sent_after_the_restart(api: FakeMessagesAPI, tmp_path: Path) -> None:
    api.default = Reply(body=message([memory(ANSWER)]))
    pack = llm_pack()
    plugin = start(api, tmp_path / "store", pack)
    ids = converse(plugin, 2)  # queued, no tick: nothing sent, nothing paid
    plugin, seen = restart(api, tmp_path / "store", pack)
    tick_until(plugin, lambda: len(seen) == 2)
    assert len(api.requests) == 2 and {e.source for e in seen} == {"llm"}
    assert sorted(e.conversation for e in seen) == sorted(ids)


def test_the_grace_lets_answers_on_their_way_arrive(api: FakeMessagesAPI, tmp_path: Path) -> None:
    api.default = Reply(delay=0.3, body=message([memory(ANSWER)]))
    pack = llm_pack(llm={"shutdown_grace": 20.0})
    plugin = start(api, tmp_path / "store", pack)
    converse(plugin, 2)
    tick("llm")
    assert in_flight(plugin) == 2
    plugin, seen = restart(api, tmp_path / "store", pack)
    tick_until(plugin, lambda: len(seen) == 2)
    assert len(api.requests) == 2 and {e.source for e in seen} == {"llm"}


def test_a_reply_waiting_at_uninstall_resolves_and_later_replies_get_a_clear_error(
    api: FakeMessagesAPI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gate = threading.Event()
    api.default = Reply(gate=gate, body=message(text="Hello, Alice."))
    try:
        plugin = start(api, tmp_path / "store", llm_pack())
        sent = plugin.llm.reply("hilda", "alice", "Hello there")
        wait_for(lambda: len(api.requests) == 1)
        unsent = plugin.llm.reply("hilda", "alice", "Are you there?")  # submitted just before uninstall
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            npc_memory.uninstall("llm")
            gc.collect()
    finally:
        gate.set()
    assert sent.done() and unsent.done()
    assert sent.result().failure == "shut down" and sent.result().usage is not None  # sent: charged
    assert unsent.result().failure == "shut down"
    assert not [r for r in caplog.records if "destroyed but it is pending" in r.getMessage()]
    calls: list[Callable[[], Any]] = [
        lambda: plugin.llm.reply("hilda", "alice", "Hello?"),
        lambda: plugin.say("hilda", "alice", "Alice", "Hello?"),
        lambda: plugin.remember("hilda", "alice", "x"),
    ]
    for call in calls:
        with pytest.raises(npc_memory.NotInstalledError, match="uninstalled"):
            call()
