"""What every family's parameter record shares: the error type, the JSON round trip, the
stable hash that keys builds, and two integer helpers.

Each block family keeps its own frozen parameter dataclass beside its golden models
(``lockstep.models.<family>.params``); a change to one family's record touches no other
family. Only the standard library is imported: this module loads in a user's testbench
that has neither cocotb nor a simulator installed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

__all__ = ["ParamError", "Record", "clog2", "params_hash", "pow2"]


class ParamError(ValueError):
    """A parameter value that cannot work; the message names the parameter."""


class Record:
    """JSON round trip shared by every parameter record."""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (JSON-safe)."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        extra = set(d) - names
        if extra:
            raise ParamError(f"{cls.__name__}: unknown field(s) {sorted(extra)}")
        return cls(**d)


def clog2(v: int) -> int:
    """Smallest k with 2**k >= v (0 for v <= 1)."""
    return max(0, (v - 1).bit_length())


def pow2(v: int) -> bool:
    """True when ``v`` is a positive power of two."""
    return v >= 1 and v & (v - 1) == 0


def params_hash(obj: Any) -> str:
    """Stable short hash of a parameter record (or any JSON-able value)."""
    d = obj.to_dict() if hasattr(obj, "to_dict") else obj
    blob = json.dumps({"type": type(obj).__name__, "fields": d}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]
