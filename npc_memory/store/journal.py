"""The append-only journal of a store: numbered segment files of CRC-framed records.

Each record is framed as ``magic (4 bytes) | payload length (u32 LE) | crc (u32 LE)``
then the payload, where the CRC-32 covers the frame's byte offset in its segment and
the payload, so a frame-like byte run inside a payload never validates where it is.
A batch of records is written with as few ``write`` calls as its size needs and made
durable with one ``fsync``.

A crash during an append leaves a *torn tail*: complete records, then part of one.
Reading drops the torn tail (CRC or length mismatch, with no valid record after it).
Damage followed by a valid record is not a torn tail and is reported as damage.
A process never appends to a segment it did not create, so every segment's tail is
the tail of one append.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from npc_memory.errors import StoreCorruptError
from npc_memory.store.files import fsync_dir

log = logging.getLogger("npc_memory.store")

MAGIC = b"NMJ\x01"
_FRAME = struct.Struct("<4sII")
_OFFSET = struct.Struct("<Q")
FRAME_SIZE = _FRAME.size
SEGMENT_SUFFIX = ".log"
WRITE_CHUNK = 1 << 20
"""Bytes gathered before a ``write`` call (each call releases the GIL)."""
READ_BUFFER = 1 << 20
"""Bytes read at a time when a segment is read a record at a time."""


def segment_name(number: int) -> str:
    """The file name of segment ``number``."""
    return f"{number:010d}{SEGMENT_SUFFIX}"


def _crc(offset: int, payload: bytes | memoryview) -> int:
    return zlib.crc32(payload, zlib.crc32(_OFFSET.pack(offset)))


def frame(offset: int, payload: bytes) -> bytes:
    """``payload`` framed for position ``offset`` of its segment."""
    return _FRAME.pack(MAGIC, len(payload), _crc(offset, payload)) + payload


def _valid_at(data: bytes, offset: int, position: int | None = None) -> bool:
    """Whether a whole record is framed at ``offset`` of ``data``, which holds the
    segment from byte ``offset - position`` on (``None``: from its start)."""
    if offset + FRAME_SIZE > len(data):
        return False
    magic: bytes
    length: int
    crc: int
    magic, length, crc = _FRAME.unpack_from(data, offset)
    end = offset + FRAME_SIZE + length
    if magic != MAGIC or end > len(data):
        return False
    return _crc(offset if position is None else position, memoryview(data)[offset + FRAME_SIZE : end]) == crc


def frames(
    data: bytes, source: str, *, skip_damage: bool = False, start: int = 0
) -> Iterator[tuple[int, memoryview]]:
    """``(offset, payload)`` of every complete record in a segment's bytes (from byte
    ``start``, where a record begins); a torn tail is dropped (and logged), damage
    before a valid record raises :class:`StoreCorruptError` (``skip_damage``: logs it
    and goes on at that record)."""
    view = memoryview(data)
    size = len(data)
    offset = start
    while offset < size:
        if _valid_at(data, offset):
            length = _FRAME.unpack_from(data, offset)[1]
            start = offset + FRAME_SIZE
            yield offset, view[start : start + length]
            offset = start + length
            continue
        later = data.find(MAGIC, offset + 1)
        while later != -1:
            if _valid_at(data, later):
                break
            later = data.find(MAGIC, later + 1)
        if later != -1:
            problem = f"damaged journal record at byte {offset} (valid records follow at byte {later})"
            if not skip_damage:
                raise StoreCorruptError(source, problem)
            log.error("%s: %s; skipped %d bytes", source, problem, later - offset)
            offset = later
            continue
        log.warning("%s: dropped a torn last record (%d bytes at byte %d)", source, size - offset, offset)
        return


class Journal:
    """The segment files in ``directory``; appends go to a segment this object created."""

    def __init__(self, directory: Path, *, create: bool = True) -> None:
        self.directory = directory
        if create:
            directory.mkdir(exist_ok=True)
        self._fd: int | None = None
        self._current = 0
        self._size = 0
        self._readers: dict[int, BinaryIO] = {}
        """Segments open for :meth:`read_record`, closed as they are removed."""

    # ------------------------------------------------------------------ reading

    def segments(self) -> list[int]:
        """Numbers of the segments on disk, oldest first."""
        if not self.directory.is_dir():
            return []
        numbers = []
        for path in self.directory.glob(f"*{SEGMENT_SUFFIX}"):
            with contextlib.suppress(ValueError):
                numbers.append(int(path.name.removesuffix(SEGMENT_SUFFIX)))
        return sorted(numbers)

    def path(self, number: int) -> Path:
        """The file of segment ``number``."""
        return self.directory / segment_name(number)

    def records(self, number: int, *, skip_damage: bool = False) -> Iterator[tuple[int, memoryview]]:
        """:func:`frames` of segment ``number``, read from the file a record at a time
        rather than whole (a checkpoint scans a 64 MB journal): only where a record does
        not check out (a torn tail, damage) is the segment read whole to tell which.
        :class:`FileNotFoundError` at once if the segment is gone."""
        path = self.path(number)
        handle = open(path, "rb", buffering=READ_BUFFER)  # noqa: SIM115 (closed by the generator)
        return self._records(handle, str(path), skip_damage)

    @staticmethod
    def _records(handle: BinaryIO, source: str, skip_damage: bool) -> Iterator[tuple[int, memoryview]]:
        with handle:
            size = os.fstat(handle.fileno()).st_size
            offset = 0
            while header := handle.read(FRAME_SIZE):
                if len(header) == FRAME_SIZE:
                    magic, length, crc = _FRAME.unpack(header)
                    # (a damaged length is not read: it would allocate up to 4 GB)
                    if magic == MAGIC and offset + FRAME_SIZE + length <= size:
                        payload = handle.read(length)
                        if len(payload) == length and _crc(offset, payload) == crc:
                            yield offset, memoryview(payload)
                            offset += FRAME_SIZE + length
                            continue
                handle.seek(0)
                yield from frames(handle.read(), source, skip_damage=skip_damage, start=offset)
                return

    def read_record(self, number: int, offset: int, length: int) -> bytes:
        """The payload (``length`` bytes) of the record framed at ``offset`` of segment
        ``number``, read from the file and checked again (magic, length, CRC): a
        checkpoint reads each record when it folds it rather than holding every segment
        in memory. :class:`StoreCorruptError` if the record is not there intact."""
        reader = self._readers.get(number)
        if reader is None:
            reader = self._readers[number] = open(self.path(number), "rb", buffering=0)  # noqa: SIM115
        reader.seek(offset)
        data = reader.read(FRAME_SIZE + length)
        if not _valid_at(data, 0, offset) or _FRAME.unpack_from(data)[1] != length:
            problem = "journal record changed since it was first read"
            raise StoreCorruptError(f"{self.path(number)}@{offset}", problem)
        return data[FRAME_SIZE:]

    def bytes_on_disk(self) -> int:
        """Total size of the segment files."""
        total = 0
        for number in self.segments():
            with contextlib.suppress(FileNotFoundError):
                total += self.path(number).stat().st_size
        return total

    # ------------------------------------------------------------------ appending

    @property
    def current(self) -> int:
        """The segment appends go to (0: none open yet)."""
        return self._current

    @property
    def size(self) -> int:
        """Bytes in the current segment."""
        return self._size

    def open_segment(self, header: bytes) -> int:
        """Start a new segment whose first record is ``header``; returns its number."""
        self.seal()
        number = max(self.segments(), default=0) + 1
        path = self.path(number)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644)
        try:
            data = frame(0, header)
            _write_all(fd, data)
            os.fsync(fd)
            fsync_dir(self.directory)
        except BaseException:  # a full disk: leave no segment without its header behind
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        self._fd, self._current, self._size = fd, number, len(data)
        return number

    def write(self, payloads: Iterable[bytes]) -> int:
        """Append ``payloads`` as records (not yet durable: see :meth:`sync`); returns
        the bytes written. Needs an open segment."""
        if self._fd is None:
            raise RuntimeError("no journal segment is open")
        chunk: list[bytes] = []
        pending = 0
        written = 0
        for payload in payloads:
            framed = frame(self._size + pending, payload)
            chunk.append(framed)
            pending += len(framed)
            if pending >= WRITE_CHUNK:
                _write_all(self._fd, b"".join(chunk))
                self._size += pending
                written += pending
                chunk, pending = [], 0
        if chunk:
            _write_all(self._fd, b"".join(chunk))
            self._size += pending
            written += pending
        return written

    def sync(self) -> None:
        """Make everything written to the current segment durable."""
        if self._fd is not None:
            os.fsync(self._fd)

    def seal(self) -> None:
        """Stop appending to the current segment (the next append needs a new one)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.close(fd)
        self._current, self._size = 0, 0

    def remove(self, numbers: Iterable[int]) -> None:
        """Delete segments ``numbers`` (durably)."""
        for number in numbers:
            self._close_reader(number)
            with contextlib.suppress(FileNotFoundError):
                self.path(number).unlink()
        fsync_dir(self.directory)

    def close(self) -> None:
        """Seal the current segment and close the ones open for reading (idempotent)."""
        self.seal()
        self.close_readers()

    def close_readers(self) -> None:
        """Close the segments open for :meth:`read_record` (a checkpoint dropped or
        done: on Windows an open file cannot be deleted by another process)."""
        for number in list(self._readers):
            self._close_reader(number)

    def _close_reader(self, number: int) -> None:
        reader = self._readers.pop(number, None)
        if reader is not None:
            reader.close()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
