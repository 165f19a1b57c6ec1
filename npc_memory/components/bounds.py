"""Value ranges of stored fields, as msgspec constraints: a document whose values lie
outside them is refused when it is decoded from a store (never when a component is
built in code, so they cost nothing at run time)."""

from __future__ import annotations

from typing import Annotated

import msgspec

Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
"""A value in [0, 1]."""
Signed = Annotated[float, msgspec.Meta(ge=-1.0, le=1.0)]
"""A value in [-1, 1]."""
Count = Annotated[int, msgspec.Meta(ge=0)]
"""A count, never negative."""
Serial = Annotated[int, msgspec.Meta(ge=1)]
"""The next number of a sequence that starts at 1."""
