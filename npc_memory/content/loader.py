"""Loading content packs: bundled by name, or TOML files by path."""

from __future__ import annotations

import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import pydantic

from npc_memory.content.schema import Pack, cross_problems
from npc_memory.errors import PackError

_BUNDLED = "npc_memory.content.packs"


def bundled_packs() -> list[str]:
    """Names of the packs shipped with the plugin."""
    return sorted(
        entry.name.removesuffix(".toml")
        for entry in resources.files(_BUNDLED).iterdir()
        if entry.name.endswith(".toml")
    )


def load_pack(source: str | Path) -> Pack:
    """Load and validate a pack: a bundled pack name (``"village"``) or a TOML path.

    Raises :class:`PackError` naming the file, every failing field path and the
    problem; a pack with any error yields nothing.
    """
    if not isinstance(source, (str, os.PathLike)):
        raise PackError(repr(source), [("", "a pack is a bundled pack name or a path to a TOML file")])
    if isinstance(source, str) and source in bundled_packs():
        text = resources.files(_BUNDLED).joinpath(f"{source}.toml").read_text("utf-8")
        return parse_pack(text, source=f"bundled pack '{source}'")
    path = Path(source)
    try:
        found = path.is_file()
    except (OSError, ValueError) as exc:  # a name too long for the file system, say
        why = getattr(exc, "strerror", None) or str(exc)
        raise PackError(_shown(str(path)), [("", f"cannot read: {why}")]) from exc
    if not found:
        hint = f"; bundled packs: {', '.join(bundled_packs())}" if path.suffix == "" else ""
        raise PackError(str(path), [("", f"no such pack file{hint}")])
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PackError(str(path), [("", f"cannot read: {exc}")]) from exc
    return parse_pack(text, source=str(path))


def parse_pack(text: str, *, source: str = "<string>") -> Pack:
    """Validate the TOML ``text`` of a pack; ``source`` names it in errors. A leading
    byte order mark (as some editors save UTF-8) is ignored."""
    if not isinstance(text, str):
        raise PackError(source, [("", f"the pack's TOML must be text (str), got {type(text).__name__}")])
    try:
        data = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise PackError(source, [("", f"invalid TOML: {exc}")]) from exc
    return validate_pack(data, source=source)


def validate_pack(data: dict[str, Any], *, source: str = "<data>") -> Pack:
    """Validate an already-parsed pack document. Every problem is reported at once: each
    field's, and those between sections (see :func:`~npc_memory.content.schema.cross_problems`)."""
    if not isinstance(data, dict):
        raise PackError(source, [("", f"a pack is a table of sections, got {type(data).__name__}")])
    try:
        return Pack.model_validate(data)
    except pydantic.ValidationError as exc:
        problems = _problems(exc)
        problems += [problem for problem in cross_problems(data) if problem not in problems]
        raise PackError(source, problems) from exc


def _problems(exc: pydantic.ValidationError) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for error in exc.errors(include_url=False):
        if not error["loc"] and error["type"] == "value_error":  # the cross-section checks
            continue  # found again, one by one, by cross_problems()
        loc = [str(part) for part in error["loc"]]
        bad_key = bool(loc) and loc[-1] == "[key]"
        path = ".".join(loc[:-1] if bad_key else loc)
        message = f"invalid key: {error['msg']}" if bad_key else error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        elif error["type"] == "missing":
            message = "required field is missing"
        elif "input" in error and error["type"] not in ("value_error", "assertion_error"):
            message = f"{message} (got {_shown(error['input'])})"
        problems.append((path, message.removeprefix("Value error, ")))
    return problems


def _shown(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to about ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
