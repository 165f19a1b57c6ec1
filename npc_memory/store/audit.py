"""The append-only audit log of a store directory, with a checksum on every line.

Layout (inside the store directory)::

    audit/<YYYY-MM-DD>.jsonl   one file per UTC day; each line is
                               "<crc32 of the JSON, 8 hex digits> <AuditEntry JSON>"
    audit/salt                 16 random bytes keying the pseudonyms that stand for
                               players in entries (see npc_memory.rules.privacy.pseudonym)
    audit.jsonl                the log of stores written before checksums (read, never
                               written)

An entry is appended and fsynced; nothing rewrites one. Reading checks every line: a
damaged line (bad checksum, bad JSON, a torn last line) is reported with its file and
line number and skipped, and the lines after it still count. :meth:`AuditLog.repair`
rewrites a damaged file without its bad lines (keeping the damaged copy as
``<file>.broken``).
"""

from __future__ import annotations

import datetime
import os
import re
import zlib
from pathlib import Path

import msgspec

from npc_memory.store.documents import AuditEntry
from npc_memory.store.files import fsync_dir, write_atomic

AUDIT_DIR = "audit"
LEGACY_AUDIT_FILE = "audit.jsonl"
SALT_FILE = "salt"
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(AuditEntry)


class AuditProblem(msgspec.Struct, frozen=True, kw_only=True):
    """A line of the audit log that could not be read (``line`` counts from 1)."""

    file: str
    line: int
    problem: str


class AuditReadout(msgspec.Struct, kw_only=True):
    """The readable entries of an audit log, oldest first, and the lines skipped."""

    entries: list[AuditEntry] = msgspec.field(default_factory=list)
    problems: list[AuditProblem] = msgspec.field(default_factory=list)


def now_iso() -> str:
    """The wall-clock time now, UTC, ISO 8601 to the second."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def frame(entry: AuditEntry) -> bytes:
    """One line of the log for ``entry`` (newline included)."""
    data = _encoder.encode(entry)
    return f"{zlib.crc32(data):08x} ".encode("ascii") + data + b"\n"


def _unframe(line: bytes) -> AuditEntry:
    """The entry of a checksummed line; ``ValueError`` naming what is wrong."""
    head, sep, data = line.partition(b" ")
    if not sep or len(head) != 8:
        raise ValueError("no checksum")
    try:
        expected = int(head, 16)
    except ValueError:
        raise ValueError("no checksum") from None
    if zlib.crc32(data) != expected:
        raise ValueError("checksum mismatch")
    try:
        return _decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ValueError(f"invalid entry: {exc}") from None


class AuditLog:
    """The audit log of the store directory ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.directory = root / AUDIT_DIR

    def append(self, entry: AuditEntry) -> None:
        """Append ``entry`` to the file of its day (of today if it has no
        ``wall_time``) and fsync it."""
        day = entry.wall_time[:10] if _DAY.match(entry.wall_time[:10]) else now_iso()[:10]
        created = not self.directory.exists()
        self.directory.mkdir(exist_ok=True)
        path = self.directory / f"{day}.jsonl"
        new_file = not path.exists()
        with open(path, "ab") as handle:
            handle.write(frame(entry))
            handle.flush()
            os.fsync(handle.fileno())
        if new_file:
            fsync_dir(self.directory)
        if created:
            fsync_dir(self.root)

    def files(self) -> list[Path]:
        """The log's files, oldest first (the unchecksummed legacy file first)."""
        legacy = self.root / LEGACY_AUDIT_FILE
        days = sorted(self.directory.glob("*.jsonl")) if self.directory.is_dir() else []
        return ([legacy] if legacy.exists() else []) + days

    def read(self) -> AuditReadout:
        """Every readable entry, oldest first, and every line that was not."""
        readout = AuditReadout()
        for path in self.files():
            entries, problems = self._read_file(path)
            readout.entries += entries
            readout.problems += problems
        return readout

    def _read_file(self, path: Path) -> tuple[list[AuditEntry], list[AuditProblem]]:
        legacy = path.name == LEGACY_AUDIT_FILE
        raw = path.read_bytes()
        lines = raw.split(b"\n")
        entries: list[AuditEntry] = []
        problems: list[AuditProblem] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                if legacy:
                    try:
                        entries.append(_decoder.decode(line))
                    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                        raise ValueError(f"invalid entry: {exc}") from None
                else:
                    entries.append(_unframe(line))
            except ValueError as exc:
                torn = number == len(lines)  # no newline after it: the append never completed
                problem = "incomplete last line" if torn else str(exc)
                problems.append(AuditProblem(file=str(path), line=number, problem=problem))
        return entries, problems

    def repair(self) -> list[AuditProblem]:
        """Rewrite each file with unreadable lines without them (the damaged copy is
        kept beside it as ``<name>.broken``); returns the lines dropped."""
        dropped: list[AuditProblem] = []
        for path in self.files():
            entries, problems = self._read_file(path)
            if not problems:
                continue
            broken = path.with_name(path.name + ".broken")
            os.replace(path, broken)
            body = b"".join(
                _encoder.encode(e) + b"\n" if path.name == LEGACY_AUDIT_FILE else frame(e) for e in entries
            )
            write_atomic(path, body, keep_previous=False)
            dropped += problems
        return dropped

    def salt(self, *, create: bool = True) -> bytes:
        """The log's salt for pseudonyms (created, durably, on first use; without
        ``create``, ``b""`` while there is none)."""
        path = self.directory / SALT_FILE
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = b""
        if len(data) >= 16 or not create:
            return data if len(data) >= 16 else b""
        data = os.urandom(16)
        self.set_salt(data)
        return data

    def set_salt(self, salt: bytes) -> None:
        """Make ``salt`` the log's salt for pseudonyms (durably)."""
        self.directory.mkdir(exist_ok=True)
        write_atomic(self.directory / SALT_FILE, salt, keep_previous=False)


__all__ = ["AUDIT_DIR", "AuditLog", "AuditProblem", "AuditReadout", "frame", "now_iso"]
