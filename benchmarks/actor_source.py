"""Who did it and how the NPC knows, measured on dialogue the reader was not written beside.

    python benchmarks/actor_source.py [--data ../shared/data/dialogue/dialogues_dev.json]

Every conversation of the set goes through the real plugin, offline (no API key: the rule
reader extracts): ``say`` per line, ``end_conversation``, ticks until its memories are
applied. Then, through the query API as a game would ask it (default counting):

- **own story or third party counted against the player**: of the conversations in which
  the NPC tells its own deeds (``npc_self``) or someone else's deed is told (the ``trap``
  conversations labelled hearsay or false accusations, and every conversation with a
  forbidden tag said by no one as the player's own deed), the share in which
  ``count_memories_by_tag(npc, player, tag)`` counts one of its forbidden tags (target 0);
- **witnessed deed counted for the witness**: for every labelled player deed, a witness in
  the room when the game reports it with ``observe(subject=player, tags=...)``: the share
  of deeds whose tag ``count_memories_by_tag(witness, player, tag)`` then counts (target 1);
- **boast stored as claimed**: of the conversations labelled ``claim``, the share in which
  the NPC holds a memory about the player with source ``claimed`` (target ≥ 0.9), and of
  those in which the reader found the boasted deed at all, the share stored as a claim;
- and, for the record, the share of ``claim`` conversations in which a claimed deed counts
  by default (it should not: a claim counts only with ``include=["claimed"]``), and of the
  other conversations, the share in which the NPC holds an untagged claim: a story of
  something the player did elsewhere that names no known deed (listed as ``story``, to be
  read: each should be such a story, not a thought, a feeling or words).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import esper

import npc_memory
from npc_memory.content import load_pack

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "dialogue" / "dialogues_dev.json"
WORLD = "actor-source-bench"
MAX_TICKS = 50


def archetype(pack: Any, role: str) -> str | None:
    """The key of the pack's archetype of ``role`` (the set's ``npc_role``)."""
    return next((key for key, a in pack.archetypes.items() if a.role == role), None)


def play(plugin: npc_memory.MemoryPlugin, npc: str, player: str, turns: list[list[str]]) -> None:
    """Say ``turns``, end the conversation and tick until its memories are applied."""
    for speaker, text in turns:
        plugin.say(npc, player, speaker, text)
    plugin.end_conversation(npc, player)
    for _ in range(MAX_TICKS):
        esper.process(1.0)
        if not plugin.npc(npc).working.pending:
            return
    raise RuntimeError(f"{npc}'s conversation with {player} was not applied in {MAX_TICKS} ticks")


def measure(data: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of the module docstring over ``data`` (the set's schema), with counts
    and the conversations that missed."""
    pack = load_pack("village")
    plugin = npc_memory.install(world=WORLD, pack=pack, seed=7, deterministic=True)
    esper.switch_world(WORLD)
    counts: Counter[str] = Counter()
    misses: dict[str, list[str]] = {
        "counted_against": [], "witness": [], "claim": [], "claim_counted": [], "story": []
    }
    try:
        for number, talk in enumerate(data):
            npc, player = f"n{number:03d}", f"p{number:03d}"
            room = f"room{number:03d}"
            plugin.add_npc(key=npc, name=talk["npc"], archetype=archetype(pack, talk["npc_role"]), room=room)
            plugin.add_player(key=player, name=talk["player"], room=room, consent=True)
            play(plugin, npc, player, talk["turns"])
            forbidden = set(talk["forbidden_tags"])
            others = talk["category"] == "npc_self" or any(e["actor"] == "npc" for e in talk["expected"])
            if others and forbidden:
                counts["others"] += 1
                if any(plugin.query.count_memories_by_tag(npc, player, tag) for tag in forbidden):
                    counts["counted_against"] += 1
                    misses["counted_against"].append(talk["id"])
            if talk["claim"]:
                counts["claims"] += 1
                held = plugin.memories(npc, player)
                if any(m.source == "claimed" for m in held):
                    counts["claimed"] += 1
                else:
                    misses["claim"].append(talk["id"])
                claimed_tags = {t for e in talk["expected"] if e["actor"] == "player" for t in e["tags"]}
                found = [m for m in held if m.actor == player and set(m.tags) & (claimed_tags - {"personal"})]
                counts["boasts_found"] += bool(found)
                counts["boasts_found_claimed"] += bool(found) and all(m.source == "claimed" for m in found)
                if any(plugin.query.count_memories_by_tag(npc, player, t) for t in claimed_tags - {"personal"}):
                    counts["claim_counted"] += 1
                    misses["claim_counted"].append(talk["id"])
            else:
                counts["unlabelled"] += 1
                stories = [m for m in plugin.memories(npc, player) if m.source == "claimed" and not m.tags]
                if stories:
                    counts["stories"] += 1
                    misses["story"].append(talk["id"])
            for deed in (e for e in talk["expected"] if e["actor"] == "player" and not talk["claim"]):
                tag = deed["tags"][0]
                if tag == "personal":
                    continue
                witness = f"w{number:03d}-{counts['deeds']}"
                plugin.add_npc(key=witness, name=f"Witness {counts['deeds']}", room=room)
                plugin.observe(room=room, subject=player, content=deed["about"], tags=deed["tags"])
                counts["deeds"] += 1
                if plugin.query.count_memories_by_tag(witness, player, tag) >= 1:
                    counts["witnessed"] += 1
                else:
                    misses["witness"].append(talk["id"])
                plugin.remove(witness)
            plugin.remove(npc)
            plugin.remove(player)
    finally:
        npc_memory.uninstall(WORLD)
    return {
        "conversations": len(data),
        "counted_against": counts["counted_against"] / max(1, counts["others"]),
        "others": counts["others"],
        "witnessed": counts["witnessed"] / max(1, counts["deeds"]),
        "deeds": counts["deeds"],
        "claimed": counts["claimed"] / max(1, counts["claims"]),
        "claim_counted": counts["claim_counted"] / max(1, counts["claims"]),
        "claims": counts["claims"],
        "found_claimed": counts["boasts_found_claimed"] / max(1, counts["boasts_found"]),
        "found": counts["boasts_found"],
        "stories": counts["stories"] / max(1, counts["unlabelled"]),
        "unlabelled": counts["unlabelled"],
        "misses": misses,
    }


def report(figures: dict[str, Any]) -> str:
    """The figures as the table in benchmarks/README.md."""
    rows = [
        ("NPC's own story or another's deed counted against the player (target 0)",
         figures["counted_against"], figures["others"]),
        ("witnessed deed counted for the witness (target 1.0)", figures["witnessed"], figures["deeds"]),
        ("boast stored as `claimed` (target ≥ 0.9)", figures["claimed"], figures["claims"]),
        ("of the boasts the reader finds, stored as `claimed`", figures["found_claimed"], figures["found"]),
        ("claim counted as a deed by default (should be 0)", figures["claim_counted"], figures["claims"]),
        ("talks not labelled `claim` holding an untagged claim (read them: stories of the player's own deeds)",
         figures["stories"], figures["unlabelled"]),
    ]
    lines = ["| figure | share | of |", "|---|---:|---:|"]
    lines += [f"| {name} | {share:.2f} | {n} |" for name, share, n in rows]
    for name, ids in figures["misses"].items():
        if ids:
            lines.append(f"\nmisses, {name}: {', '.join(ids)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the dialogue set (JSON)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"no dialogue set at {args.data}", file=sys.stderr)
        return 2
    data = json.loads(args.data.read_text("utf-8"))[: args.limit]
    print(report(measure(data)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
