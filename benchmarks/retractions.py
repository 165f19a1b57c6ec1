"""What players take back, measured over two sessions on dialogue the reader was not written beside.

    python benchmarks/retractions.py [--data ../shared/data/dialogue/dialogues_dev.json]

The set's ``update`` talks are single sessions in which the player takes back what they
said *before* ("Dunmere, you said last night?"). Each is played as the second of two
sessions through the real plugin, offline (the rule reader extracts), three game days
after a first in which the player says what the talk recalls, in a line or two written
here from the talk's own words (:data:`FIRST_SESSIONS`; the two talks that take back a
line of their own, ``update-002`` and ``-003``, are not among them). Then, through
``context()`` as a game would prompt its model:

- **taken back, still told as true**: of the first session's lines, the share that a
  line of the context still tells without saying it was taken back or changed (target
  ≤ 0.1; issue 48's second figure);
- **taken back where nothing was said before**: every talk of the set is played after
  the talk before it in the file (its lines given to this talk's NPC and player: nothing
  in it is what this talk refers back to), and the share of talks in which a memory was
  marked taken back (the false ones: target 0).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import esper

import npc_memory
from benchmarks.actor_source import archetype, play
from npc_memory.content import load_pack

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "dialogue" / "dialogues_dev.json"
WORLD = "retractions-bench"
DAYS_BETWEEN = 3.0
FIRST_SESSIONS: dict[str, list[str]] = {
    "update-001": ["I'm from Dunmere, since you ask."],
    "update-004": ["No kin at all. Just me."],
    "update-005": ["I killed a boar in your turnips last night."],
    "update-006": ["I'll be gone by Thursday.", "I can't stand your mutton, to be frank."],
    "update-007": ["I'm a coast man."],
    "update-008": ["I've two brothers."],
    "update-009": ["I pulled the cobbler's boy out of the millrace!"],
    "update-010": ["I want a sword made."],
}
"""What the player says in the first session, by talk: what the talk says they said."""
GREETING = "Evening. What brings you in?"
"""The NPC's line that opens each first session."""


def _talk(plugin: npc_memory.MemoryPlugin, npc: str, player: str, turns: list[list[str]]) -> None:
    play(plugin, npc, player, turns)
    plugin.clock.advance(DAYS_BETWEEN * 86_400)


def measure(data: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of the module docstring over ``data`` (the set's schema), with the
    lines still told as true and the talks with a false retraction."""
    pack = load_pack("village")
    plugin = npc_memory.install(world=WORLD, pack=pack, seed=7, deterministic=True)
    esper.switch_world(WORLD)
    told: list[str] = []
    false: list[str] = []
    lines = 0
    try:
        for number, talk in enumerate(data):
            if talk["id"] in FIRST_SESSIONS:
                npc, player = _pair(plugin, pack, talk, f"u{number:03d}")
                first = [[talk["npc"], GREETING], *([talk["player"], line] for line in FIRST_SESSIONS[talk["id"]])]
                _talk(plugin, npc, player, first)
                _talk(plugin, npc, player, talk["turns"])
                text = plugin.context(npc, player, message=talk["turns"][-1][1]).text
                for line in FIRST_SESSIONS[talk["id"]]:
                    lines += 1
                    if any(line in shown and "once said" not in shown for shown in text.splitlines()):
                        told.append(f"{talk['id']}: {line}")
            before = data[number - 1]
            npc, player = _pair(plugin, pack, talk, f"f{number:03d}")
            renamed = {before["npc"]: talk["npc"], before["player"]: talk["player"]}
            _talk(plugin, npc, player, [[renamed[speaker], text] for speaker, text in before["turns"]])
            _talk(plugin, npc, player, talk["turns"])
            if any(m.retracted for m in plugin.memories(npc, player)):
                false.append(talk["id"])
    finally:
        npc_memory.uninstall(WORLD)
    return {
        "lines": lines,
        "told": len(told) / max(1, lines),
        "still_told": told,
        "talks": len(data),
        "false": len(false) / max(1, len(data)),
        "false_talks": false,
    }


def _pair(plugin: npc_memory.MemoryPlugin, pack: Any, talk: dict[str, Any], key: str) -> tuple[str, str]:
    npc, player = f"n{key}", f"p{key}"
    plugin.add_npc(key=npc, name=talk["npc"], archetype=archetype(pack, talk["npc_role"]), room=key)
    plugin.add_player(key=player, name=talk["player"], room=key, consent=True)
    return npc, player


def report(figures: dict[str, Any]) -> str:
    """The figures as the table in benchmarks/README.md."""
    rows = [
        ("what the player took back, still told as true (target ≤ 0.1)", figures["told"], figures["lines"]),
        ("talks taking back what was never said (target 0)", figures["false"], figures["talks"]),
    ]
    lines = ["| figure | share | of |", "|---|---:|---:|"]
    lines += [f"| {name} | {share:.2f} | {n} |" for name, share, n in rows]
    if figures["still_told"]:
        lines.append(f"\nstill told as true: {'; '.join(figures['still_told'])}")
    if figures["false_talks"]:
        lines.append(f"\nfalse retractions: {', '.join(figures['false_talks'])}")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    print(report(measure(json.loads(args.data.read_text("utf-8")))))


if __name__ == "__main__":
    main(sys.argv[1:])
