"""Content packs are strict: a value of the wrong kind is an error, never converted;
every problem of a pack is reported at once; limits and references are checked like
the API checks its arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

import npc_memory
from npc_memory.cli import main
from npc_memory.content import parse_pack

MINIMAL = '[pack]\nname = "tiny"\n'


def problems_of(text: str) -> list[tuple[str, str]]:
    with pytest.raises(npc_memory.PackError) as info:
        parse_pack(text, source="my.toml")
    return info.value.problems


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("[archetypes.x]\ntraits = { sociability = true }\n", "archetypes.x.traits.sociability"),
        ('[archetypes.x]\ntraits = { credulity = "0.5" }\n', "archetypes.x.traits.credulity"),
        ('[memory]\nepisodic_cap = "200"\n', "memory.episodic_cap"),
        ("[memory]\nepisodic_cap = 200.0\n", "memory.episodic_cap"),
        ("[budgets]\ngossip_exchanges_per_tick = true\n", "budgets.gossip_exchanges_per_tick"),
        ('[extraction.tags.trade]\nhabitual = "no"\n', "extraction.tags.trade.habitual"),
        ("[extraction.tags.trade]\nhabitual = 0\n", "extraction.tags.trade.habitual"),
        ("[pack]\nversion = 2\n", "pack.version"),
    ],
)
def test_values_of_the_wrong_kind_are_not_converted(text: str, path: str) -> None:
    text = text if text.startswith("[pack]") else MINIMAL + text
    text = text.replace('[pack]\nversion = 2\n', '[pack]\nname = "tiny"\nversion = 2\n')
    assert path in [p for p, _ in problems_of(text)]


def test_integers_are_numbers() -> None:
    pack = parse_pack(MINIMAL + "[archetypes.x]\ntraits = { sociability = 1, credulity = 0 }\n")
    assert pack.archetypes["x"].traits.sociability == 1.0


def test_every_problem_is_reported_at_once_references_and_fields_together() -> None:
    found = problems_of(
        MINIMAL
        + '[archetypes.x]\nfaction = "ghosts"\ntraits = { sociability = true }\n'
        + '[factions.a]\nattitudes = { b = "allied" }\n'
        + "[context]\nrecall_k = 1000000000\nshares = { quests = 0.1 }\n"
        + '[[knowledge.facts]]\ncontent = ""\narchetypes = ["nobody"]\ntopic = " "\n'
    )
    paths = [p for p, _ in found]
    assert set(paths) == {
        "archetypes.x.faction", "archetypes.x.traits.sociability", "factions.a.attitudes.b",
        "context.recall_k", "context.shares", "knowledge.facts.0.content", "knowledge.facts.0.archetypes",
        "knowledge.facts.0.topic",
    }, found
    assert len(paths) == len(set(paths))  # each once


def test_a_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes("\ufeff".encode() + MINIMAL.encode())
    assert npc_memory.load_pack(path).pack.name == "tiny"
    assert parse_pack("\ufeff" + MINIMAL).pack.name == "tiny"


@pytest.mark.parametrize(
    ("fact", "path", "message"),
    [
        ('content = "x"\nsubject = "' + "s" * 10_000 + '"\n', "knowledge.facts.0.subject", "at most 128 characters"),
        ('content = "x"\ntopic = ""\n', "knowledge.facts.0.topic", "at least 1 character"),
        ('content = "x"\ntopic = "   "\n', "knowledge.facts.0.topic", "at least 1 character"),
        ('content = "   "\n', "knowledge.facts.0.content", "at least 1 character"),
        ('content = "' + "c" * 2001 + '"\n', "knowledge.facts.0.content", "2001 characters; the limit is 2000"),
        ('content = "x"\ntags = ["game-only"]\n', "knowledge.facts.0.tags", "game clues"),
        ('content = "x"\ntags = [' + ", ".join(f'"t{i}"' for i in range(33)) + "]\n",
         "knowledge.facts.0.tags", "33 tags; the limit is 32"),
    ],
)
def test_authored_facts_are_checked_like_learn_fact(fact: str, path: str, message: str) -> None:
    found = problems_of(MINIMAL + "[[knowledge.facts]]\n" + fact)
    assert any(p == path and message in m for p, m in found), found


def test_authored_facts_follow_the_packs_own_limits() -> None:
    text = MINIMAL + '[limits]\ncontent_chars = 5\ntag_chars = 3\n[[knowledge.facts]]\ncontent = "123456"\ntags = ["abcd"]\n'
    found = problems_of(text)
    assert ("knowledge.facts.0.content", "6 characters; the limit is 5 (limits.content_chars)") in found
    assert any(p == "knowledge.facts.0.tags" and "limits.tag_chars" in m for p, m in found), found


def test_shares_must_name_a_provider() -> None:
    found = problems_of(MINIMAL + "[context]\nshares = { memries = 0.5 }\n")
    assert found[0][0] == "context.shares" and "unknown providers: memries" in found[0][1]
    pack = parse_pack(MINIMAL + '[context]\ncustom_providers = ["quests"]\nshares = { quests = 0.2 }\n')
    assert pack.context.shares == {"quests": 0.2}


def test_the_built_in_provider_names_match_the_providers() -> None:
    from npc_memory.content.schema import BUILTIN_PROVIDERS
    from npc_memory.context.providers import DEFAULT_PROVIDERS

    assert tuple(p.name for p in DEFAULT_PROVIDERS) == BUILTIN_PROVIDERS


def test_recall_k_is_bounded_so_every_context_works() -> None:
    assert any(p == "context.recall_k" for p, _ in problems_of(MINIMAL + "[context]\nrecall_k = 1000000000\n"))
    pack = parse_pack(MINIMAL + "[context]\nrecall_k = 1000\n")
    plugin = npc_memory.install(world="strict", pack=pack)
    plugin.add_npc(key="hilda")
    plugin.add_player(key="alice")
    plugin.remember("hilda", "alice", "Alice sold me a sword")
    assert "sword" in plugin.context("hilda", "alice", "the sword").text


@pytest.mark.parametrize(
    ("limits", "path"),
    [
        ("tags_per_memory = 0", "limits.tags_per_memory"),
        ("tag_chars = 65", "limits.tag_chars"),
        ("content_chars = 10000000", "limits.content_chars"),
        ('query_chars = "many"', "limits.query_chars"),
        ("size = 1", "limits.size"),
    ],
)
def test_limits_are_checked(limits: str, path: str) -> None:
    assert path in [p for p, _ in problems_of(MINIMAL + f"[limits]\n{limits}\n")]


def test_pack_validate_reports_every_problem_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '\ufeff[pack]\nname = "bad"\n[archetypes.x]\nfaction = "ghosts"\ntraits = { gossip_drive = "high" }\n'
        "[memory]\nsemantic_cap = -1\n",
        encoding="utf-8",
    )
    assert main(["pack", "validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "archetypes.x.faction: unknown faction 'ghosts'" in err
    assert "archetypes.x.traits.gossip_drive: Input should be a valid number (got 'high')" in err
    assert "memory.semantic_cap" in err and f"{bad}: 3 problems" in err


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("x" * 10_000, "cannot read: File name too long"),
        (b"village", "a bundled pack name or a path"),
        (5, "a bundled pack name or a path"),
    ],
)
def test_a_pack_source_of_the_wrong_kind_is_a_pack_error(source: object, message: str) -> None:
    with pytest.raises(npc_memory.PackError, match=message):
        npc_memory.load_pack(source)  # type: ignore[arg-type]


def test_pack_text_must_be_text() -> None:
    with pytest.raises(npc_memory.PackError, match="must be text"):
        parse_pack(MINIMAL.encode())  # type: ignore[arg-type]
