"""What loading checks beyond the schema's types and ranges (which the typed decode
enforces, see :mod:`npc_memory.components.bounds`): values that depend on each other
inside a document, the metadata's random state, and files that disagree.

Each check returns problems as sentences; an empty list means sound. They walk ids
with C-level iteration only (``map``/``zip``/``set``), so a load of a large world
pays little for them.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from pathlib import Path

from npc_memory.store.documents import Document, NpcDocument, StoreMeta
from npc_memory.store.files import PREVIOUS_SUFFIX

RNG_WORDS = 625
"""32-bit words in the state of Python's Mersenne Twister (plus the position)."""
_id = attrgetter("id")


def _highest(ids: list[str], prefix: str) -> int:
    """The highest number among the ids of the form ``<prefix><number>`` (0: none).
    Longer numbers are larger, so the longest id, ties broken alphabetically, holds it:
    found without converting each id (other ids only cost a slower second look)."""
    if not ids:
        return 0
    _, top = max(zip(map(len, ids), ids, strict=True))
    number = top[len(prefix) :]
    if top.startswith(prefix) and number.isdigit():
        return int(number)
    cut = len(prefix)
    return max((int(i[cut:]) for i in ids if i.startswith(prefix) and i[cut:].isdigit()), default=0)


def document_problems(document: Document) -> list[str]:
    """Problems inside one decoded document: duplicate memory or fact ids, and
    ``next_id`` counters that would hand out an id already in use."""
    if not isinstance(document, NpcDocument):
        return []
    problems: list[str] = []
    bank = document.bank
    ids: list[str] = []
    for pair in (bank.world, *bank.players.values()):
        ids += map(_id, pair.episodic)
        ids += map(_id, pair.semantic)
        ids += map(_id, pair.procedural)
    problems += _counter_problems(ids, "m", bank.next_id, "memory", "bank.next_id")
    facts = list(map(_id, document.knowledge.facts))
    problems += _counter_problems(facts, "f", document.knowledge.next_id, "fact", "knowledge.next_id")
    return problems


def _counter_problems(ids: list[str], prefix: str, next_id: int, what: str, field: str) -> list[str]:
    problems = []
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        twice = sorted({i for i in ids if i in seen or seen.add(i)})  # type: ignore[func-returns-value]
        problems.append(f"{what} ids used twice: {', '.join(twice[:5])}")
    top = _highest(ids, prefix)
    if next_id <= top:
        problems.append(f"{field} is {next_id} but {what} {prefix}{top} exists: an id would be reused")
    return problems


def meta_problems(meta: StoreMeta) -> list[str]:
    """Problems in the store metadata's values."""
    problems = []
    if not math.isfinite(meta.clock):
        problems.append(f"clock is {meta.clock}, not a finite game time")
    if meta.snapshots < 0:
        problems.append(f"snapshots is {meta.snapshots}, below 0")
    for name, state, gauss in (
        ("rng", meta.rng_state, meta.rng_gauss),
        ("gossip_rng", meta.gossip_rng_state, meta.gossip_rng_gauss),
    ):
        if state is not None:
            problem = rng_state_problem(state, f"{name}_state")
            if problem is not None:
                problems.append(problem)
        if gauss is not None and not math.isfinite(gauss):
            problems.append(f"{name}_gauss is {gauss}, not a finite number")
    return problems


RNG_FIELDS = ("rng_state", "gossip_rng_state")
"""The store metadata's fields that hold a random generator's state."""


def rng_state_problem(state: str, field: str = "rng_state") -> str | None:
    """Why ``state`` (metadata field ``field``) is not a saved random generator state,
    if it is not."""
    try:
        raw = base64.b64decode(state, validate=True)
    except (binascii.Error, ValueError) as exc:
        return f"{field} is not base64 ({exc})"
    if len(raw) != RNG_WORDS * 4:
        return f"{field} holds {len(raw)} bytes, not the {RNG_WORDS * 4} of a random generator state"
    position = int.from_bytes(raw[-4:], "little")
    if position > RNG_WORDS - 1:
        return f"{field} position is {position}, beyond the generator's {RNG_WORDS - 1} words"
    return None


def consistency_problems(
    store: Path,
    documents: Mapping[str, Document],
    meta: StoreMeta | None,
    *,
    folded: bool,
    read: Callable[[Path], str | None],
    forgotten: Callable[[], set[str]],
) -> list[tuple[str, str]]:
    """Files of the store at ``store`` that disagree with what loading found:
    a previous generation whose document is missing and not in the journal either
    (``read`` gives the key a previous generation holds), and metadata missing from a
    store whose documents a finished checkpoint wrote (``folded``; a checkpoint
    writes the metadata file last). A previous generation left by deleting a
    document (``forgotten``: the keys the audit log says were forgotten, asked only
    if needed) is not damage."""
    found: list[tuple[str, str]] = []
    docs = store / "docs"
    orphans = _orphans(docs.glob(f"*.json{PREVIOUS_SUFFIX}")) if docs.is_dir() else []
    for previous in orphans:
        key = read(previous)
        if key is not None and key not in documents and key in forgotten():
            continue
        if key is None or key not in documents:
            current = previous.with_name(previous.name.removesuffix(PREVIOUS_SUFFIX))
            who = "a document" if key is None else f"the document of {key!r}"
            found.append((str(current), f"missing while its previous generation remains: {who} would vanish"))
    meta_file = store / "meta.json"
    if meta is None and not meta_file.exists() and documents:
        previous = meta_file.with_name(meta_file.name + PREVIOUS_SUFFIX)
        if previous.exists() or folded:
            found.append(
                (str(meta_file), "missing: the game clock, random state and pending extractions would reset")
            )
    return found


def _orphans(previous: Iterable[Path]) -> list[Path]:
    return [p for p in previous if not p.with_name(p.name.removesuffix(PREVIOUS_SUFFIX)).exists()]
