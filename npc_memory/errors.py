"""The plugin's exceptions. Every error names what is wrong and where."""

from __future__ import annotations


class NpcMemoryError(Exception):
    """Base class of every error raised by npc_memory."""


class PackError(NpcMemoryError):
    """A content pack could not be loaded; nothing from it was applied.

    ``problems`` lists each ``(field path, message)`` found in ``source``.
    """

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        lines = [f"{path}: {message}" if path else message for path, message in problems]
        super().__init__(f"invalid content pack {source}:\n  " + "\n  ".join(lines))


class AlreadyInstalledError(NpcMemoryError):
    """The plugin is already installed in that esper world."""


class NotInstalledError(NpcMemoryError):
    """No plugin is installed in that esper world."""


class UnknownEntityError(NpcMemoryError, LookupError):
    """An entity or key does not name an NPC or player known to the plugin."""


class DuplicateKeyError(NpcMemoryError, ValueError):
    """A stable key or entity is already registered with the plugin."""


class UnknownContentError(NpcMemoryError, LookupError):
    """A faction or archetype is not defined by the installed content pack."""


class InvalidArgumentError(NpcMemoryError, ValueError):
    """An argument is out of range, of the wrong kind, or not allowed."""


class PrivacyError(NpcMemoryError, ValueError):
    """A write would break the privacy model (scope, consent, game-only data)."""


class MemoryCapacityError(NpcMemoryError):
    """A memory cannot be stored: every slot of its kind holds a locked memory."""


class VersionConflictError(NpcMemoryError):
    """An optimistic-concurrency update saw a different relationship version."""


class EventHandlerError(ExceptionGroup, NpcMemoryError):
    """One or more event handlers raised; every handler still ran, every event was
    delivered and every change stayed applied.

    An ``ExceptionGroup``: ``exceptions`` (also ``errors``) holds what the handlers
    raised, in delivery order, so ``except* SomeError`` works; the first is the
    ``__cause__``.
    """

    def __new__(cls, errors: list[Exception]) -> EventHandlerError:
        first = errors[0]
        return super().__new__(cls, f"{len(errors)} event handler(s) raised; first: {first!r}", errors)

    def __init__(self, errors: list[Exception]) -> None:
        super().__init__(f"{len(errors)} event handler(s) raised; first: {errors[0]!r}", errors)

    result: object = None
    """What the facade call that raised this returned (the call itself succeeded)."""

    @property
    def errors(self) -> tuple[Exception, ...]:
        """What the handlers raised, in delivery order."""
        return tuple(self.exceptions)


class StoreError(NpcMemoryError):
    """A store could not be opened, read or written."""


class StoreCorruptError(StoreError):
    """A store file is damaged. ``path`` names the file, ``problem`` what is wrong,
    ``store`` the store directory (once known).

    ``npc-memory repair --db STORE`` mends it (restores the previous good generation,
    or with ``--quarantine`` moves an unmendable document aside).
    """

    def __init__(self, path: str, problem: str, store: str | None = None) -> None:
        self.path = path
        self.problem = problem
        self.store = store
        self.found: list[tuple[str, str]] = [(path, problem)]
        """Every ``(file, problem)`` found, when a whole store was checked."""
        super().__init__(path, problem)

    def __str__(self) -> str:
        hint = f"run 'npc-memory repair --db {self.store or '<store>'}' to mend it"
        if len(self.found) > 1:
            listed = "; ".join(f"{path}: {problem}" for path, problem in self.found)
            return f"store {self.store} is damaged in {len(self.found)} places: {listed}; {hint}"
        return f"store file {self.path} is damaged: {self.problem}; {hint}"


class StoreLockedError(StoreError):
    """Another process (or another open in this one) owns the store; ``owner`` is its
    process id when known."""

    def __init__(self, message: str, owner: int | None = None) -> None:
        self.owner = owner
        super().__init__(message)


class StoreLostError(StoreError):
    """The store no longer holds what this process wrote to it (its directory was
    removed): everything in memory is written again."""


class StoreOwnershipError(StoreError):
    """This process no longer owns the store (its lock file was removed or replaced):
    it stops writing, so another owner's data is never overwritten."""


class StoreVersionError(StoreError):
    """The store was written by a newer, unknown schema version."""


class StoreConflictError(StoreError):
    """A write was refused because another game server changed, created, deleted or
    owns the document (``key``) since this one read it; nothing of that write applied."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"stored document {key!r}: {problem}")


class StoreOwnedError(StoreConflictError):
    """The document is owned by another live game server sharing the store."""
