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
import operator
from typing import Any

__all__ = ["ParamError", "Record", "as_int", "clog2", "params_hash", "pow2", "show"]


class ParamError(ValueError):
    """A parameter value that cannot work; the message names the parameter."""


def show(v: Any) -> str:
    """``repr(v)`` for an error message, or, for an int too long for Python to print
    (more than ``sys.get_int_max_str_digits()`` decimal digits: ``repr`` raises
    ``ValueError``), its width."""
    try:
        return repr(v)
    except ValueError:
        if isinstance(v, int):
            return f"<{'negative ' if v < 0 else ''}{v.bit_length()}-bit int>"
        return f"<unprintable {type(v).__name__}>"


def as_int(v: object, what: str) -> int:
    """``v`` as a Python int (anything with ``__index__``: int, numpy integers); a
    ValueError naming ``what`` for anything else (a float is never truncated, a str never
    parsed)."""
    try:
        return operator.index(v)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{what}: {show(v)} is not an integer") from None


class Record:
    """JSON round trip shared by every parameter record."""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (JSON-safe)."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        """Inverse of :meth:`to_dict`; unknown keys, and a missing field that has no
        default, are an error (:class:`ParamError`)."""
        if not isinstance(d, dict):  # e.g. a JSON null or list where the params belong
            raise ParamError(f"{cls.__name__}: expected a mapping of field values, got {type(d).__name__}")
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        extra = set(d) - {f.name for f in fields}
        if extra:   # keys of any type (not only str): sort their reprs
            raise ParamError(f"{cls.__name__}: unknown field(s) [{', '.join(sorted(map(show, extra)))}]")
        missing = [f.name for f in fields if f.name not in d
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ParamError(f"{cls.__name__}: missing field(s) {missing}")
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
