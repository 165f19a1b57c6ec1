"""One background thread that applies write batches to a store, in order.

The tick only encodes documents and submits batches; file writes and fsyncs happen
here, so a slow disk never stalls a frame. Failed batches are reported back to the
tick (:meth:`StoreWriter.take_failures`) rather than raised on this thread.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field

from npc_memory.store.base import Store
from npc_memory.store.documents import AuditEntry, EncodedDocument, StoreMeta


@dataclass
class WriteBatch:
    """Deletions, then documents, then metadata, then audit entries, written in that order."""

    documents: list[EncodedDocument] = field(default_factory=list)
    deletions: list[str] = field(default_factory=list)
    meta: StoreMeta | None = None
    audit: list[AuditEntry] = field(default_factory=list)


class StoreWriter:
    """Applies :class:`WriteBatch` es to ``store`` on a daemon thread."""

    def __init__(self, store: Store, name: str = "npc-memory") -> None:
        self.store = store
        self._queue: queue.Queue[WriteBatch | None] = queue.Queue()
        self._failures: queue.SimpleQueue[tuple[WriteBatch, Exception]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"{name}-store-writer", daemon=True)
        self._thread.start()

    @property
    def in_flight(self) -> int:
        """Batches submitted and not yet written."""
        return self._queue.unfinished_tasks

    def submit(self, batch: WriteBatch) -> None:
        """Queue ``batch``; returns at once."""
        if not self._thread.is_alive():
            raise RuntimeError("the store writer is closed")
        self._queue.put(batch)

    def drain(self) -> None:
        """Wait until every submitted batch has been written (or has failed)."""
        self._queue.join()

    def take_failures(self) -> list[tuple[WriteBatch, Exception]]:
        """Batches that failed since the last call, with their errors."""
        failures = []
        while True:
            try:
                failures.append(self._failures.get_nowait())
            except queue.Empty:
                return failures

    def close(self) -> None:
        """Write what is queued, then stop the thread (idempotent)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def _run(self) -> None:
        while True:
            batch = self._queue.get()
            if batch is None:
                self._queue.task_done()
                return
            try:
                if batch.deletions:
                    self.store.delete(batch.deletions)
                if batch.documents or batch.meta is not None:
                    self.store.write(batch.documents, batch.meta)
                for entry in batch.audit:
                    self.store.append_audit(entry)
            except Exception as exc:  # reported to the tick thread, which retries
                self._failures.put((batch, exc))
            finally:
                self._queue.task_done()
