"""Parameter record of the OCP Microscaling (MX) v1.0 quantizer.

Imports only the standard library and :mod:`lockstep.models.formats`, so the class can
move verbatim into ``models/formats.py`` (which is where every other family's record
lives).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from lockstep.models.formats import MX_ELEMENTS, MxElement, ParamError

__all__ = ["MxParams"]


@dataclass(frozen=True)
class MxParams:
    """OCP MX v1.0 block parameters: element type and block size.

    A block holds ``block`` elements sharing one E8M0 scale; each element is a code of
    the type ``MX_ELEMENTS[elem]``. The semantics are :mod:`lockstep.models.mx`'s.

    Attributes:
        elem: element type, a key of :data:`~lockstep.models.formats.MX_ELEMENTS`
            (``"int8"``, ``"fp8_e4m3"``, ``"fp8_e5m2"``, ``"fp6_e2m3"``, ``"fp6_e3m2"``,
            ``"fp4_e2m1"``).
        block: elements per block (OCP uses 32); one block per clock on the streaming
            units, so the range is kept to ``[1, 64]``.

    Raises:
        ParamError: on a value that cannot work, naming the field.
    """

    elem: str
    block: int = 32

    BLOCK_MAX: ClassVar[int] = 64

    def __post_init__(self) -> None:
        def bad(field: str, why: str) -> ParamError:
            return ParamError(f"MxParams.{field}={getattr(self, field)!r}: {why}")

        if not isinstance(self.elem, str) or self.elem not in MX_ELEMENTS:
            raise bad("elem", f"unknown MX element type; expected one of {sorted(MX_ELEMENTS)}")
        if not isinstance(self.block, int) or isinstance(self.block, bool):
            raise bad("block", "must be an int")
        if not 1 <= self.block <= self.BLOCK_MAX:
            raise bad("block", f"block size must be in [1, {self.BLOCK_MAX}]")

    @property
    def element(self) -> MxElement:
        """The element type's record (bits, ebits, mbits, emax, max_normal, ...)."""
        return MX_ELEMENTS[self.elem]

    @property
    def bits_per_element(self) -> float:
        """Storage cost: ``bits + 8 / block`` bits per element."""
        return self.element.bits + 8 / self.block

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (JSON-safe)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MxParams":
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        names = {f.name for f in dataclasses.fields(cls)}
        extra = set(d) - names
        if extra:
            raise ParamError(f"MxParams: unknown field(s) {sorted(extra)}")
        return cls(**d)
