"""Mending a data file whose values break the schema: each out-of-range number is
clamped to the nearest allowed value, a ``next_id`` that would reuse an id moves past
the highest id, a damaged random state is dropped (the generator restarts from the
store's seed) and a missing game clock becomes the newest ``saved_at`` of the store's
documents. Anything else (wrong types, broken JSON) cannot be mended: the file keeps
its problem, for ``repair --quarantine``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from npc_memory.errors import StoreCorruptError
from npc_memory.store.checks import RNG_FIELDS, rng_state_problem

MAX_MENDS = 100_000
"""Values mended in one file before giving up (each costs one decode)."""
_BOUND = re.compile(
    r"Expected `(float|int)` (>=|<=) (-?[0-9.e+-]+) - at `\$((?:\.[^.`\[]+|\[\d+\]|\[\.\.\.\])*)`"
)
_NULL_CLOCK = re.compile(r"Expected `float`, got `null` - at `\$\.meta(?:\[\.\.\.\]|\.[^.]+)\.clock`")
_PART = re.compile(r"\.([^.`\[]+)|\[(\d+|\.\.\.)\]")
_ANY = "[...]"
"""A path step msgspec writes for "some entry of this object" (it does not name keys)."""


def mend(
    raw: bytes, check: Callable[[bytes], None], *, clock: float = 0.0
) -> tuple[bytes, list[str]] | None:
    """``raw`` mended so that ``check`` (which raises :class:`StoreCorruptError`)
    passes, with a sentence per change; ``None`` if it cannot be mended. ``clock``
    replaces a missing game clock."""
    try:
        data: Any = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    changes: list[str] = []
    current = raw
    for _ in range(MAX_MENDS):
        try:
            check(current)
        except StoreCorruptError as exc:
            change = _mend_one(data, exc.problem, clock)
            if change is None:
                return None
            changes.append(change)
            current = msgspec.json.encode(data)
            continue
        return (current, changes) if changes else None
    return None


def _mend_one(data: Any, problem: str, clock: float) -> str | None:
    bound = _BOUND.search(problem)
    if bound is not None:
        kind, op, limit, path = bound.groups()
        value = float(limit) if kind == "float" else int(float(limit))
        changed = []
        for parent, last in _locate(data, path):
            old = parent[last]
            if not isinstance(old, (int, float)) or isinstance(old, bool):
                continue
            if (old < value) if op == ">=" else (old > value):
                parent[last] = value
                changed.append(f"{old}")
        if not changed:
            return None
        return f"${path} was {', '.join(changed)}, out of range: set to {value}"
    if _NULL_CLOCK.search(problem):
        meta = _only_entry(data.get("meta"))
        if meta is None:
            return None
        meta["clock"] = clock
        return f"the game clock was missing: set to {clock} (the newest document's save time)"
    found = re.search(rf"\b({'|'.join(RNG_FIELDS)})\b", problem)
    if found is not None:
        field = found.group(1)
        meta = _only_entry(data.get("meta"))
        if meta is None or meta.get(field) is None or rng_state_problem(meta[field], field) is None:
            return None
        meta[field] = None
        meta[field.replace("_state", "_gauss")] = None
        return f"the random generator state was damaged ({field}): dropped (it restarts from the seed)"
    twice = re.search(r"(memory|fact) ids used twice", problem)
    if twice is not None:
        document = _only_entry(data.get("npcs"))
        return None if document is None else _renumber(document, twice.group(1))
    counter = re.search(r"(bank|knowledge)\.next_id is (\d+) but \w+ [mf](\d+) exists", problem)
    if counter is not None:
        document = _only_entry(data.get("npcs"))
        if document is None:
            return None
        part, old, top = counter.group(1), counter.group(2), int(counter.group(3))
        document.setdefault(part, {})["next_id"] = top + 1
        return f"{part}.next_id was {old}, would reuse an id: set to {top + 1}"
    return None


def _renumber(document: dict[str, Any], what: str) -> str | None:
    """Give each memory (or fact) whose id an earlier one already has a new id."""
    part, prefix = ("bank", "m") if what == "memory" else ("knowledge", "f")
    holder = document.get(part)
    if not isinstance(holder, dict):
        return None
    if what == "memory":
        pairs = [holder.get("world", {}), *holder.get("players", {}).values()]
        kinds = ("episodic", "semantic", "procedural")
        records = [r for pair in pairs for kind in kinds for r in pair.get(kind, [])]
    else:
        records = list(holder.get("facts", []))
    if not all(isinstance(r, dict) and isinstance(r.get("id"), str) for r in records):
        return None
    numbers = [int(r["id"][1:]) for r in records if r["id"][:1] == prefix and r["id"][1:].isdigit()]
    next_id = max(int(holder.get("next_id", 1)), max(numbers, default=0) + 1)
    seen: set[str] = set()
    renamed = []
    for record in records:
        if record["id"] in seen:
            renamed.append(f"{record['id']} → {prefix}{next_id}")
            record["id"] = f"{prefix}{next_id}"
            next_id += 1
        seen.add(record["id"])
    holder["next_id"] = next_id
    return f"{what} ids used twice: renumbered {', '.join(renamed[:5])}" if renamed else None


def _only_entry(table: Any) -> dict[str, Any] | None:
    if not isinstance(table, dict) or len(table) != 1:
        return None
    [entry] = table.values()
    return entry if isinstance(entry, dict) else None


def _locate(data: Any, path: str) -> list[tuple[Any, Any]]:
    """Each container holding a value at ``path`` (``.name``, ``[index]`` and
    ``[...]``, any entry of an object) with the value's key or index there."""
    steps: list[str | int] = [
        name if name else (_ANY if index == "..." else int(index)) for name, index in _PART.findall(path)
    ]
    if not steps:
        return []
    nodes = [data]
    for step in steps[:-1]:
        following = []
        for node in nodes:
            if step == _ANY:
                following += list(node.values()) if isinstance(node, dict) else []
            else:
                following += [node[parent] for parent, _ in _entries(node, step)]
        nodes = following
    last = steps[-1]
    found: list[tuple[Any, Any]] = []
    for node in nodes:
        if last == _ANY:
            found += [(node, key) for key in node] if isinstance(node, dict) else []
        else:
            found += [(node, key) for _, key in _entries(node, last)]
    return found


def _entries(node: Any, step: str | int) -> list[tuple[Any, Any]]:
    """``[(step, step)]`` if ``node`` has an entry ``step`` (a key or an index), else ``[]``."""
    if isinstance(node, dict) and step in node:
        return [(step, step)]
    if isinstance(node, list) and isinstance(step, int) and step < len(node):
        return [(step, step)]
    return []
