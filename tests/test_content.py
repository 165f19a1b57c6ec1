"""Content packs: the bundled pack, validation errors with file and field path."""

from __future__ import annotations

from pathlib import Path

import pytest

import npc_memory
from npc_memory.content import bundled_packs, load_pack, parse_pack
from npc_memory.events import Event, Hostile, RelationshipThresholdCrossed

MINIMAL = '[pack]\nname = "tiny"\n'


def test_bundled_village_pack() -> None:
    assert "village" in bundled_packs()
    pack = load_pack("village")
    assert len(pack.factions) >= 4 and len(pack.archetypes) >= 8
    assert pack.attitude("guards", "thieves") == "hostile"
    # Built-in tag rules with the design's magnitudes, extended by the pack.
    assert pack.relationships.tag_rules["betrayal"] == {"trust": -0.15, "loyalty": -0.10, "friendliness": -0.08}
    assert pack.relationships.tag_rules["theft"]["trust"] == -0.10
    assert [t.name for t in pack.relationships.thresholds] == [
        "hostile", "trusted_ally", "cowed", "respected", "best_friend", "despised"]
    assert (pack.memory.episodic_cap, pack.memory.semantic_cap, pack.memory.procedural_cap) == (300, 100, 20)


def test_minimal_pack_gets_the_defaults() -> None:
    pack = parse_pack(MINIMAL)
    assert pack.factions == {} and pack.budgets.gossip_exchanges_per_tick == 3
    assert pack.relationships.attitude_modifiers["hostile"] == -0.3


def _problems(text: str) -> list[tuple[str, str]]:
    with pytest.raises(npc_memory.PackError) as info:
        parse_pack(text, source="my.toml")
    assert str(info.value).startswith("invalid content pack my.toml:")
    return info.value.problems


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ("[pack]\n", "pack.name", "required field is missing"),
        ('[pack]\nname = "Bad Name"\n', "pack.name", "String should match pattern"),
        (MINIMAL + "colour = 3\n", "pack.colour", "unknown field"),
        ("colour = 3\n" + MINIMAL, "colour", "unknown field"),
        (MINIMAL + '[factions.a]\nattitudes = { a = "besties" }\n', "factions.a.attitudes.a", "'besties'"),
        (MINIMAL + '[factions.a]\nattitudes = { b = "allied" }\n', "factions.a.attitudes.b", "unknown faction 'b'"),
        (MINIMAL + '[archetypes.x]\nfaction = "nobody"\n', "archetypes.x.faction", "unknown faction 'nobody'"),
        (MINIMAL + "[archetypes.x]\ntraits = { sociability = 1.5 }\n", "archetypes.x.traits.sociability",
         "less than or equal to 1"),
        (MINIMAL + "[archetypes.x]\ntraits = { charisma = 0.5 }\n", "archetypes.x.traits.charisma", "unknown field"),
        (MINIMAL + "[relationships.tag_rules]\nbribe = { charm = 0.1 }\n", "relationships.tag_rules.bribe.charm",
         "trust"),
        (MINIMAL + "[relationships.tag_rules]\nbribe = { trust = 2.0 }\n", "relationships.tag_rules.bribe.trust",
         "less than or equal to 1"),
        (MINIMAL + "[relationships.stages]\nfriend = 0.6\n", "relationships.stages",
         "friend < close_friend < trusted_ally"),
        (MINIMAL + "[relationships.disposition_weights]\ntrust = 0.9\n", "relationships.disposition_weights",
         "must sum to 1"),
        (MINIMAL + '[[relationships.thresholds]]\nname = "a"\ndimension = "trust"\ndirection = "below"\nvalue = 0.1\n'
         '[[relationships.thresholds]]\nname = "a"\ndimension = "fear"\ndirection = "above"\nvalue = 0.9\n',
         "relationships.thresholds", "duplicate threshold names: a"),
        (MINIMAL + "[memory]\nepisodic_cap = 0\n", "memory.episodic_cap", "greater than 0"),
        (MINIMAL + '[extraction]\ngratitude_tag = "favour"\n', "extraction",
         "gratitude_tag 'favour' is not one of the tags"),
        (MINIMAL + "[budgets]\nsnapshot_interval = nan\n", "budgets.snapshot_interval", "finite"),
    ],
)
def test_errors_name_the_field_path_and_the_problem(text: str, path: str, message: str) -> None:
    problems = _problems(text)
    assert any(p == path and message in m for p, m in problems), problems


def test_every_problem_is_reported_at_once() -> None:
    problems = _problems(MINIMAL + "[memory]\nepisodic_cap = -1\nsemantic_cap = 'many'\n")
    assert {p for p, _ in problems} == {"memory.episodic_cap", "memory.semantic_cap"}


def test_toml_syntax_errors_name_the_position() -> None:
    [(path, message)] = _problems('[pack]\nname = "x\n')
    assert path == "" and "invalid TOML" in message and "line 2" in message


def test_pack_files_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "mod.toml"
    bad.write_text(MINIMAL + "[memory]\nepisodic_cap = 0\n")
    with pytest.raises(npc_memory.PackError, match=r"mod\.toml:\n  memory\.episodic_cap"):
        load_pack(bad)
    with pytest.raises(npc_memory.PackError, match="no such pack file"):
        load_pack(tmp_path / "missing.toml")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(npc_memory.PackError, match="cannot read"):
        load_pack(binary)


def test_a_custom_pack_drives_the_plugin(tmp_path: Path) -> None:
    path = tmp_path / "keep.toml"
    path.write_text(
        MINIMAL
        + '[factions.knights]\nattitudes = { raiders = "hostile" }\n[factions.raiders]\n'
        + '[archetypes.knight]\nfaction = "knights"\ntraits = { credulity = 0.1 }\n'
        + "[relationships.tag_rules]\nheroic = {}\nchivalry = { respect = 0.5 }\n"
        + '[[relationships.thresholds]]\nname = "doomed"\ndimension = "trust"\ndirection = "below"\nvalue = 0.3\n'
        + "[memory]\nepisodic_cap = 2\n"
    )
    plugin = npc_memory.install(world="keep", pack=path)
    plugin.add_npc(key="gawain", archetype="knight")
    plugin.add_player(key="raider", faction="raiders")
    events: list[Event] = []
    plugin.on(Event, events.append)
    plugin.remember("gawain", "raider", "a heroic raider?", tags=["heroic"], importance=1.0,
                    intensity=1.0, affect_relationship=True)
    assert plugin.query.trust("gawain", "raider") == pytest.approx(0.2)  # heroic disabled
    plugin.remember("gawain", "raider", "a chivalrous act", tags=["chivalry"], importance=1.0,
                    intensity=1.0, affect_relationship=True)
    assert plugin.query.dimension("gawain", "raider", "respect") == pytest.approx(0.7)
    plugin.remember("gawain", "raider", "third memory")
    assert len(plugin.memories("gawain", "raider")) == 2
    # Only the custom threshold exists; its unknown event name gives the generic event.
    plugin.adjust_relationship("gawain", "raider", trust=0.2)
    plugin.adjust_relationship("gawain", "raider", trust=-0.2)
    crossed = [e for e in events if isinstance(e, RelationshipThresholdCrossed)]
    assert [(type(e), e.threshold) for e in crossed] == [(RelationshipThresholdCrossed, "doomed")]
    assert not any(isinstance(e, Hostile) for e in events)
