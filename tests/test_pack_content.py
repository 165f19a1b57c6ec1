"""Content lives in the pack: the rule extractor's tags and cues, consolidation wording,
context wording levels and gossip constants are pack fields whose defaults are the
behaviour the plugin had when they were constants."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pytest

import npc_memory
from npc_memory.cli import main
from npc_memory.components.memory import EpisodicMemory
from npc_memory.content import load_pack, parse_pack
from npc_memory.extraction.model import ExtractedMemory, ExtractionJob, Turn
from npc_memory.extraction.rules import RuleBasedExtractor
from npc_memory.rules import consolidation
from npc_memory.rules import relationships as relationship_rules

from .extraction_cases import GOLDEN, cases, encode

MINIMAL = '[pack]\nname = "tiny"\n'


@pytest.mark.parametrize(
    "extractor",
    [
        pytest.param(lambda: RuleBasedExtractor(), id="no-rules"),
        pytest.param(lambda: RuleBasedExtractor(load_pack("village").extraction), id="village-pack"),
        pytest.param(lambda: RuleBasedExtractor(parse_pack(MINIMAL).extraction), id="minimal-pack"),
    ],
)
def test_default_rules_reproduce_the_recorded_output_byte_for_byte(
    extractor: Callable[[], RuleBasedExtractor],
) -> None:
    # The reader's output on tests/extraction_cases.py, the same with the built-in cues, the
    # village pack's and a minimal pack's. A change to the reader meant to change it re-records
    # tests/fixtures/rule_extractor_golden.json, and its diff shows what the change did.
    golden: dict[str, str] = json.loads(GOLDEN.read_text("utf-8"))
    rules = extractor()
    output = {case: encode(rules.extract(job)) for case, job in cases()}
    assert output.keys() == golden.keys()
    differing = [case for case in golden if output[case] != golden[case]]
    assert not differing, (differing[:5], [output[c] for c in differing[:2]])
    assert sum(value != "[]" for value in golden.values()) > 150  # the cases do produce memories


# --- A pack that adds a tag -------------------------------------------------------------

SMUGGLING = MINIMAL + '''
[extraction.tags.smuggling]
description = "moving goods past the watch without paying the toll"
group = "deeds"
importance = 0.7
valence = "negative"
label = "smuggled goods"
cues = [
  { who = "player", words = ["smuggl\\\\w*", "past the (?:gate|watch)", "no questions asked"] },
  { who = "npc", words = ["contraband"] },
]

[relationships.tag_rules]
smuggling = { trust = -0.05, respect = 0.02 }

[memory.consolidation.summaries]
smuggling = "{player} runs contraband through the village"

[memory.consolidation.habits]
smuggling = "{player} brings the contraband in the {time}"
'''


def talk(extractor: RuleBasedExtractor, *turns: tuple[str, str]) -> tuple[ExtractedMemory, ...]:
    return extractor.extract(ExtractionJob(
        conversation="c", npc="vesna", npc_name="Vesna", player="alice", player_name="Alice",
        turns=tuple(Turn(*t) for t in turns)))


def test_a_pack_tag_is_extracted_by_its_cues() -> None:
    pack = parse_pack(SMUGGLING)
    extractor = RuleBasedExtractor(pack.extraction)
    assert "smuggling" in extractor.tags and "smuggling" not in RuleBasedExtractor().tags
    [memory] = talk(extractor, ("Vesna", "What's in the crates?"),
                    ("Alice", "Wine I smuggled past the watch. No questions asked."))
    assert memory.tags == ("smuggling",) and memory.kind == "episodic"
    assert memory.importance == 0.7 and memory.valence == "negative"
    # her own account of it: a claim
    assert memory.content == 'Alice told me they smuggled goods (Alice: "Wine I smuggled past the watch. No questions asked.")'
    # Who says it matters, and negations still cancel a cue.
    assert talk(extractor, ("Vesna", "I smuggle nothing.")) == ()
    assert talk(extractor, ("Alice", "I would never smuggle anything.")) == ()
    assert [m.tags for m in talk(extractor, ("Vesna", "You hid contraband under my floor."))] == [("smuggling",)]
    assert talk(extractor, ("Vesna", "Is that contraband?")) == ()  # a question tells of no deed
    # The default rules know nothing of it.
    assert talk(RuleBasedExtractor(), ("Alice", "I smuggled it past the gate.")) == ()


def test_a_pack_tag_joins_its_group_and_can_be_a_habit() -> None:
    extractor = RuleBasedExtractor(parse_pack(SMUGGLING).extraction)
    # In the deeds group with theft (0.65): smuggling (0.7) leads, one memory for both.
    [memory] = talk(extractor, ("Alice", "I stole the crates and smuggled them past the gate."))
    assert memory.tags == ("smuggling", "theft")
    [habit] = talk(extractor, ("Alice", "Every night I smuggle wine past the watch."))
    assert habit.kind == "procedural" and habit.content.startswith("Alice told me they habitually smuggled goods")


def test_a_pack_tag_moves_relationships_and_is_worded_by_consolidation() -> None:
    pack = parse_pack(SMUGGLING)
    [memory] = talk(RuleBasedExtractor(pack.extraction), ("Alice", "I smuggled it in."))
    deltas = relationship_rules.memory_deltas(memory.tags, memory.importance, memory.intensity,
                                              memory.valence, pack.relationships)
    assert deltas["trust"] < 0 < deltas["respect"]
    cluster = consolidation.Cluster(tag="smuggling", episodes=episodes(3), habit_time="night")
    templates = pack.memory.consolidation
    assert consolidation.summary(cluster, "Alice", templates) == "Alice runs contraband through the village (3 times)"
    assert consolidation.habit(cluster, "Alice", templates) == "Alice brings the contraband in the night"
    # Without the pack's templates the tag gets the generic wording.
    assert consolidation.summary(cluster, "Alice") == "Alice and I keep dealing with smuggling (3 times)"
    assert consolidation.habit(cluster, "Alice") == "Alice usually shows up for smuggling in the night"


def test_the_vocabulary_lists_every_tag_with_its_description() -> None:
    default = parse_pack(MINIMAL).extraction.vocabulary()
    assert [tag for tag, _ in default] == [
        "heroic", "combat", "helpful", "quest", "theft", "trade", "gift", "threat", "insult", "betrayal",
        "secret", "personal"]
    assert all(description for _, description in default)
    assert parse_pack(SMUGGLING).extraction.vocabulary() == [
        *default, ("smuggling", "moving goods past the watch without paying the toll")]


def test_a_pack_can_change_one_field_of_a_built_in_tag_or_turn_it_off() -> None:
    pack = parse_pack(MINIMAL + "[extraction.tags.trade]\nimportance = 0.4\n[extraction.tags.insult]\ncues = []\n")
    built_in = parse_pack(MINIMAL).extraction.tags
    assert pack.extraction.tags["trade"] == built_in["trade"].model_copy(update={"importance": 0.4})
    extractor = RuleBasedExtractor(pack.extraction)
    assert [(m.tags, m.importance) for m in talk(extractor, ("Alice", "The rope for ten silver. Done."))] == [
        (("trade",), 0.4)]
    assert talk(extractor, ("Alice", "You useless idiot.")) == ()
    assert "insult" in extractor.tags  # still in the vocabulary, for the LLM


def test_wording_and_weights_of_the_extraction_section() -> None:
    pack = parse_pack(MINIMAL + '''
[extraction]
template = "{player} {habitually}{label}, said {speaker}"
habitually = "often "
habit_markers = ["again"]
negations = ["hardly"]
[extraction.intensity]
base = 0.1
heat_words = []
''')
    extractor = RuleBasedExtractor(pack.extraction)
    [memory] = talk(extractor, ("Alice", "I paid you again!"))
    assert memory.content == "Alice often traded with me, said Alice"
    assert memory.kind == "procedural" and memory.intensity == pytest.approx(0.2)
    assert talk(extractor, ("Alice", "I hardly paid.")) == ()
    assert [m.tags for m in talk(extractor, ("Alice", "I did not pay you."), ("Vesna", "Done."))] == [("trade",)]  # "not" is no longer one


def episodes(count: int) -> tuple[EpisodicMemory, ...]:
    return tuple(EpisodicMemory(id=f"e{i}", content="x", tags=("smuggling",)) for i in range(count))


def test_consolidation_defaults_are_the_old_wording() -> None:
    def cluster(tag: str, habit: str | None = None) -> consolidation.Cluster:
        return consolidation.Cluster(tag=tag, episodes=episodes(4), habit_time=habit)

    assert consolidation.summary(cluster("trade"), "Cora") == "Cora is a regular customer (4 times)"
    assert consolidation.habit(cluster("trade", "morning"), "Cora") == "Cora usually comes to trade in the morning"
    assert consolidation.habit(cluster("trade"), "Cora") is None
    templates = parse_pack(MINIMAL + '[memory.consolidation]\ntimes_suffix = ""\n'
                           '[memory.consolidation.summaries]\ntrade = "{player} buys from me"\n').memory.consolidation
    assert consolidation.summary(cluster("trade"), "Cora", templates) == "Cora buys from me"
    assert consolidation.summary(cluster("theft"), "Cora", templates) == "Cora is a thief"  # merged over the defaults


# --- Constants used elsewhere, with today's values ---------------------------------------

def test_context_and_knowledge_constants_default_to_todays_values() -> None:
    pack = load_pack("village")
    wording = pack.context.wording
    assert (wording.warmly_above, wording.positively_above, wording.negatively_below, wording.hostility_below) == (
        0.5, 0.15, -0.15, -0.5)
    assert (wording.trustworthy_above, wording.untrustworthy_below, wording.intimidating_above,
            wording.respectable_above, wording.stranger_within) == (0.7, 0.3, 0.5, 0.7, 0.15)
    knowledge = pack.knowledge
    assert (knowledge.gossip_trust_base, knowledge.gossip_trust_credulity, knowledge.gossip_weight_floor,
            knowledge.gossip_candidates_per_exchange, knowledge.hearsay_intensity) == (0.5, 0.5, 0.01, 4, 0.5)


def test_the_village_pack_keeps_the_default_content() -> None:
    village, minimal = load_pack("village"), parse_pack(MINIMAL)
    assert village.extraction == minimal.extraction
    assert village.memory.consolidation == minimal.memory.consolidation
    assert village.context.wording == minimal.context.wording


def test_the_commented_examples_in_the_village_pack_are_valid() -> None:
    # Lines commented as "#key = ..." (no space) are examples a designer can uncomment.
    text = resources.files("npc_memory.content.packs").joinpath("village.toml").read_text("utf-8")
    uncommented = re.sub(r"(?m)^#(?=[^\s#])", "", text)
    assert uncommented != text
    pack = parse_pack(uncommented, source="village.toml, uncommented")
    assert "smuggling" in pack.extraction.tags and "smuggling" in pack.relationships.tag_rules
    [memory] = talk(RuleBasedExtractor(pack.extraction), ("Alice", "I smuggled the brandy past the gate."))
    assert memory.tags == ("smuggling",)
    assert pack.memory.consolidation.summary_template("smuggling") != pack.memory.consolidation.summary_fallback
    # The other examples spell out the defaults.
    village = load_pack("village")
    built_in_tags = {tag: rules for tag, rules in pack.extraction.tags.items() if tag != "smuggling"}
    assert pack.extraction.model_copy(update={"tags": built_in_tags}) == village.extraction
    assert pack.context == village.context and pack.knowledge == village.knowledge and pack.safety == village.safety
    consolidation_defaults = village.memory.consolidation
    assert pack.memory.consolidation.model_copy(
        update={"summaries": consolidation_defaults.summaries, "habits": consolidation_defaults.habits}
    ) == consolidation_defaults


# --- Precise errors ------------------------------------------------------------------------

TAG = MINIMAL + '[extraction.tags.smuggling]\ndescription = "d"\nimportance = 0.5\nlabel = "smuggled"\n'


def problems(text: str) -> list[tuple[str, str]]:
    with pytest.raises(npc_memory.PackError) as info:
        parse_pack(text, source="my.toml")
    return info.value.problems


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        # Cue words are regular expressions, checked when the pack loads.
        (TAG + 'cues = [{ words = ["ok", "smuggl(ing"] }]\n', "extraction.tags.smuggling.cues.0.words.1",
         "invalid regular expression 'smuggl(ing': missing ), unterminated subpattern at position 6"),
        (TAG + 'cues = [{ words = ["a)|(b"] }]\n', "extraction.tags.smuggling.cues.0.words.0",
         "invalid regular expression 'a)|(b': unbalanced parenthesis"),
        (TAG + 'cues = [{ words = ["x", "(?i)y"] }]\n', "extraction.tags.smuggling.cues.0.words.1",
         "'(?i)y' cannot be one of a cue's words: global flags not at the start of the expression"),
        (TAG + 'cues = [{ words = ["a*"] }]\n', "extraction.tags.smuggling.cues.0.words.0",
         "matches the empty string"),
        (TAG + 'cues = [{ words = [""] }]\n', "extraction.tags.smuggling.cues.0.words.0", "at least 1 character"),
        (TAG + "cues = [{ words = [] }]\n", "extraction.tags.smuggling.cues.0.words", "at least 1 item"),
        (TAG + 'cues = [{ who = "guard", words = ["x"] }]\n', "extraction.tags.smuggling.cues.0.who",
         "'player', 'npc' or 'any'"),
        (TAG + 'cues = [{ word = ["x"] }]\n', "extraction.tags.smuggling.cues.0.word", "unknown field"),
        (MINIMAL + '[extraction]\nnegations = ["no", "[a-"]\n', "extraction.negations.1",
         "invalid regular expression '[a-'"),
        (MINIMAL + '[extraction]\nhabit_markers = ["(always"]\n', "extraction.habit_markers.0", "missing )"),
        (MINIMAL + '[extraction.intensity]\nheat_words = ["+"]\n', "extraction.intensity.heat_words.0",
         "nothing to repeat"),
        # Tags: a new one needs a description, importance and label; values in range.
        (MINIMAL + '[extraction.tags.smuggling]\nimportance = 0.5\nlabel = "x"\n',
         "extraction.tags.smuggling.description", "required field is missing"),
        (MINIMAL + '[extraction.tags.smuggling]\ndescription = "d"\nlabel = "x"\n',
         "extraction.tags.smuggling.importance", "required field is missing"),
        (MINIMAL + '[extraction.tags.smuggling]\ndescription = "d"\nimportance = 1.5\nlabel = "x"\n',
         "extraction.tags.smuggling.importance", "less than or equal to 1"),
        (MINIMAL + "[extraction.tags.trade]\nimportance = 1.5\n", "extraction.tags.trade.importance",
         "less than or equal to 1"),
        (MINIMAL + '[extraction.tags.trade]\nvalence = "sour"\n', "extraction.tags.trade.valence", "'sour'"),
        (MINIMAL + '[extraction.tags.trade]\nkind = "procedural"\n', "extraction.tags.trade.kind",
         "'episodic' or 'semantic'"),
        (MINIMAL + '[extraction.tags.trade]\ncolour = "red"\n', "extraction.tags.trade.colour", "unknown field"),
        (MINIMAL + '[extraction.tags.Smuggling]\ndescription = "d"\nimportance = 0.5\nlabel = "x"\n',
         "extraction.tags.Smuggling", "invalid key"),
        (MINIMAL + '[extraction.tags.trade]\ngroup = "Big Deals"\n', "extraction.tags.trade.group",
         "String should match pattern"),
        # Wording templates may use only their placeholders.
        (MINIMAL + '[extraction]\ntemplate = "{name} {label}"\n', "extraction.template",
         "unknown placeholder name in '{name} {label}'; use {player}, {habitually}, {label}, {speaker}, {quote}"),
        (MINIMAL + '[extraction]\ntemplate = "{player"\n', "extraction.template", "invalid template '{player'"),
        (MINIMAL + '[extraction]\ntemplate = "{player:d}"\n', "extraction.template", "invalid template"),
        (MINIMAL + '[extraction]\ntemplate = "{} {label}"\n', "extraction.template", "unknown placeholder {}"),
        (MINIMAL + "[extraction]\nnegation_reach = 9\n", "extraction.negation_reach", "less than or equal to 5"),
        (MINIMAL + "[extraction]\nquote_limit = 5\n", "extraction.quote_limit", "greater than or equal to 20"),
        (MINIMAL + "[extraction.intensity]\nbase = 2\n", "extraction.intensity.base", "less than or equal to 1"),
        (MINIMAL + "[extraction.intensity]\nmax_heat_words = -1\n", "extraction.intensity.max_heat_words",
         "greater than or equal to 0"),
        (MINIMAL + '[memory.consolidation.summaries]\nsmuggling = "{player} at {time}"\n',
         "memory.consolidation.summaries.smuggling", "unknown placeholder time"),
        (MINIMAL + '[memory.consolidation.habits]\nsmuggling = "{player} {when}"\n',
         "memory.consolidation.habits.smuggling", "use {player}, {tag}, {time}"),
        (MINIMAL + '[memory.consolidation]\nsummary_fallback = ""\n', "memory.consolidation.summary_fallback",
         "at least 1 character"),
        (MINIMAL + '[memory.consolidation]\ntimes_suffix = " ({n})"\n', "memory.consolidation.times_suffix",
         "unknown placeholder n"),
        # Context wording levels.
        (MINIMAL + "[context.wording]\nwarmly_above = 1.5\n", "context.wording.warmly_above",
         "less than or equal to 1"),
        (MINIMAL + "[context.wording]\npositively_above = 0.6\n", "context.wording",
         "need hostility_below <= negatively_below <= 0 <= positively_above <= warmly_above"),
        (MINIMAL + "[context.wording]\nnegatively_below = 0.1\n", "context.wording", "negatively_below <= 0"),
        (MINIMAL + "[context.wording]\nuntrustworthy_below = 0.8\n", "context.wording",
         "need untrustworthy_below <= trustworthy_above"),
        (MINIMAL + "[context.wording]\nstranger_within = -0.1\n", "context.wording.stranger_within",
         "greater than or equal to 0"),
        (MINIMAL + "[context.wording]\nwarmly = 0.5\n", "context.wording.warmly", "unknown field"),
        # Gossip constants.
        (MINIMAL + "[knowledge]\ngossip_trust_base = -0.1\n", "knowledge.gossip_trust_base",
         "greater than or equal to 0"),
        (MINIMAL + "[knowledge]\ngossip_trust_credulity = 2\n", "knowledge.gossip_trust_credulity",
         "less than or equal to 1"),
        (MINIMAL + "[knowledge]\ngossip_weight_floor = 0\n", "knowledge.gossip_weight_floor", "greater than 0"),
        (MINIMAL + "[knowledge]\ngossip_candidates_per_exchange = 0\n", "knowledge.gossip_candidates_per_exchange",
         "greater than or equal to 1"),
        (MINIMAL + "[knowledge]\nhearsay_intensity = nan\n", "knowledge.hearsay_intensity", "finite"),
    ],
)
def test_errors_name_the_field_path_and_the_problem(text: str, path: str, message: str) -> None:
    found = problems(text)
    assert any(p == path and message in m for p, m in found), found


def test_a_bad_cue_fails_the_whole_pack_with_every_problem() -> None:
    found = problems(TAG + 'cues = [{ words = ["(a"] }, { who = "npc", words = ["b["] }]\n'
                     '[context.wording]\nrespectable_above = 7\n')
    assert sorted(p for p, _ in found) == ["context.wording.respectable_above",
                                           "extraction.tags.smuggling.cues.0.words.0",
                                           "extraction.tags.smuggling.cues.1.words.0"]


def test_pack_validate_names_a_bad_cue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(TAG + 'cues = [{ words = ["smuggl(ing"] }]\n')
    assert main(["pack", "validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "extraction.tags.smuggling.cues.0.words.0: invalid regular expression 'smuggl(ing'" in err
    good = tmp_path / "good.toml"
    good.write_text(SMUGGLING)
    assert main(["pack", "validate", str(good)]) == 0


def test_a_pack_round_trips_through_its_dump() -> None:
    # Merging over the built-in entries must be idempotent: a dumped pack reloads equal.
    pack = parse_pack(SMUGGLING + "[extraction.tags.trade]\nimportance = 0.4\n")
    assert type(pack).model_validate(pack.model_dump()) == pack
