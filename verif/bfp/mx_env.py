"""Testbench knowledge of the OCP MX v1.0 quantizer (float32 block -> E8M0 scale, codes).

Plugs into :mod:`lockstep.verif.stream_env`: stimulus from :func:`.stimulus.float_kind`
(the BFP corner kinds) mixed with MX-specific corners (:data:`MX_KINDS`), a check that
predicts every block with :func:`lockstep.models.bfp.mx.mx_quantize_flags` in one vectorised
call, and cover points over every flag, the scale classes, the element-code classes and
the stimulus kinds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lockstep.models.bfp import mx
from lockstep.models.bfp import decode_flags
from lockstep.models.bfp.params import BfpFormat, MxElement, MxParams
from lockstep.models.bfp.mx import MX_FLAG_NAMES
from lockstep.verif.agents.stream import Beat
from lockstep.verif.columns import ints, lanes
from lockstep.verif.coverage import Covergroup
from lockstep.verif.packing import pack_lanes
from lockstep.verif.stream_env import GoldenFlagsQuiet, StreamTest, StreamUnit

from .stimulus import F32_INF, F32_QNAN, KINDS, LONE_CLASSES, drawn_items, float_kind, item_columns, lone_class, pick_kinds

__all__ = ["MX_KINDS", "MxItem", "MxUnit", "MxTest", "mx_blocks"]

#: MX-specific block kinds and their default weights (mixed with :data:`.stimulus.KINDS`).
MX_KINDS: dict[str, float] = {
    "mx_sat": 3.0,  # block max in [1.5, 2) * 2**k, RNE ties at max_normal: saturation
    "mx_tiny": 2.0,  # a normal max and tiny (mostly negative) elements: +-0 codes, half-ulp ties
    "mx_subn": 3.0,  # elements on the half-step element-subnormal grid: subnormal codes, ties
    "mx_ties": 2.0,  # elements exactly halfway between two normal element codes
    "mx_poison": 1.0,  # zeros / small values with one NaN or +-Inf
    "mx_scale_lo": 2.0,  # max below 2**(-127 + emax): the scale clamps at E8M0 code 0
}

def _f32(x: np.ndarray) -> np.ndarray:
    """float64 values -> float32 bit patterns (one rounding; stimulus only)."""
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def _grid(el: MxElement) -> tuple[int, int]:
    """``(log2 of the smallest element step at X = 0, top significand)``."""
    if el.ebits == 0:  # MXINT8: step 2**-6, largest code 127
        return -6, (1 << (el.bits - 1)) - 1
    return el.emin - el.mbits, int(el.max_normal * 2.0 ** (el.mbits - el.emax))


def _mx_kind(rng: np.random.Generator, kind: str, count: int, el: MxElement, n: int) -> np.ndarray:
    """``count`` blocks of MX kind ``kind`` as float32 bit patterns ``(count, n)``."""
    sign = np.where(rng.random((count, n)) < 0.5, -1.0, 1.0)
    step0, n_max = _grid(el)
    mb = 6 if el.ebits == 0 else el.mbits
    if kind == "mx_scale_lo":
        k = rng.integers(-149, -100, size=(count, 1))
        x = np.ldexp(1.0 + rng.random((count, n)), k - rng.integers(0, 30, size=(count, n)))
        x[:, :1] = np.ldexp(1.0 + rng.random((count, 1)), k)
        return _f32(sign * x)
    # k = floor(log2) of the block maximum, so X = k - emax
    k = rng.integers(-90, 121, size=(count, 1))
    xs = k - el.emax
    if kind == "mx_sat":
        x = np.ldexp(2.0 - rng.random((count, n)) ** 3 * 0.5, k)
        tie = np.ldexp(n_max + 0.5, k - mb)  # halfway between max_normal and the next step
        x = np.where(rng.random((count, n)) < 0.15, tie, x)
        out = _f32(sign * x)
        below = _f32(np.ldexp(np.ones((count, 1)), k + 1)).astype(np.int64)
        below -= rng.integers(1, 4, size=(count, 1))  # 1..3 ulp below 2**(k+1)
        out[:, :1] = below.astype(np.uint32) | (out[:, :1] & np.uint32(0x80000000))
        return out
    if kind == "mx_tiny":
        s = np.ldexp(1.0, xs + step0)  # smallest element step (subnormal or int8 lsb)
        f = np.where(rng.random((count, n)) < 0.5, rng.random((count, n)) * 0.5, 0.5)
        f = np.where(rng.random((count, n)) < 0.2, 0.5 + np.ldexp(1.0, -20), f)
        f = np.where(rng.random((count, n)) < 0.2, np.ldexp(rng.random((count, n)), -20), f)
        sign = np.where(rng.random((count, n)) < 0.8, -1.0, 1.0)
        x = sign * s * f
        x[:, :1] = np.ldexp(1.0 + rng.random((count, 1)), k) * np.where(rng.random((count, 1)) < 0.5, -1.0, 1.0)
        return _f32(x)
    if kind == "mx_subn":
        # integer multiples of half the smallest step below the smallest normal (2**emin)
        top = 1 << (el.bits if el.ebits == 0 else mb + 2)
        m = rng.integers(0, top, size=(count, n)).astype(np.float64)
        x = sign * np.ldexp(m, xs + step0 - 1)
        x[:, :1] = np.ldexp(1.0, k)
        return _f32(x)
    if kind == "mx_ties":
        if el.ebits == 0:
            m = rng.integers(0, n_max + 1, size=(count, n)).astype(np.float64)
            x = np.ldexp(m + 0.5, xs - 6)
        else:
            e = rng.integers(el.emin, el.emax + 1, size=(count, n))
            m = rng.integers(1 << mb, 1 << (mb + 1), size=(count, n)).astype(np.float64)
            x = np.ldexp(m + 0.5, xs + e - mb)
        x = sign * x
        x[:, :1] = np.ldexp(1.0, k)
        return _f32(x)
    if kind == "mx_poison":
        base = np.where(rng.random((count, 1)) < 0.4, 0.0, rng.standard_normal((count, n)))
        out = _f32(sign * base)
        pick = rng.integers(0, 3, size=count)
        lane = rng.integers(0, n, size=count)
        special = np.where(pick == 0, F32_QNAN, np.where(pick == 1, F32_INF, F32_INF | np.uint32(0x80000000)))
        out[np.arange(count), lane] = special.astype(np.uint32)
        return out
    raise ValueError(f"unknown MX stimulus kind {kind!r}; known: {sorted(MX_KINDS)}")


def _rotated(rng: np.random.Generator, blocks: np.ndarray) -> np.ndarray:
    """``blocks`` with each one's lanes rotated one further than the block before's (from
    a random first): the lane an MX kind writes its maximum to (lane 0) is every lane in
    turn. (Left in lane 0, a stuck bit of lane 27's max-search key and of lane 29's
    leading-one index survived: bfp_mx_quantize@1f4c m043, m031.)"""
    count, n = blocks.shape
    shift = (np.arange(count) + int(rng.integers(0, n))) % n
    return blocks[np.arange(count)[:, None], (np.arange(n)[None, :] - shift[:, None]) % n]


def _bfp_like(n: int) -> BfpFormat:
    """The BFP kinds need a BfpFormat only for ``n`` and the exponent ranges they draw from."""
    return BfpFormat(w=8, e=8, n=n)


def mx_blocks(
    rng: np.random.Generator, params: MxParams, count: int, weights: dict[str, float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Random float32 blocks for an MX quantizer: BFP corner kinds plus MX corners.

    Args:
        rng: the generator (seeded by the test).
        params: the quantizer's parameters (block size and element type).
        count: number of blocks.
        weights: kind -> relative weight (default: :data:`.stimulus.KINDS` and
            :data:`MX_KINDS`).

    Returns:
        ``(bits, kinds)``: uint32 array ``(count, block)`` and each block's kind name
        (a string array).
    """
    weights = dict(weights or {**KINDS, **MX_KINDS})
    names = list(weights)
    pick = pick_kinds(rng, weights, count)
    n = params.block
    bfmt = _bfp_like(n)
    out = np.zeros((count, n), dtype=np.uint32)
    for i, name in enumerate(names):
        sel = np.flatnonzero(pick == i)
        if not sel.size:
            continue
        if name in KINDS:
            out[sel] = float_kind(rng, name, sel.size, bfmt)
        else:
            out[sel] = _rotated(rng, _mx_kind(rng, name, sel.size, params.element, n))
    return out, np.array(names)[pick]


@dataclass
class MxItem:
    """One input block.

    Attributes:
        bits: ``block`` float32 bit patterns.
        kind: stimulus kind (for coverage and error messages).
    """

    bits: np.ndarray
    kind: str = "gauss"


class MxUnit(GoldenFlagsQuiet, StreamUnit):
    """The MX quantizer: ``in_data`` -> ``out_scale/out_data/out_flags``."""

    params_type = MxParams
    in_fields = ["data"]
    out_fields = ["scale", "data", "flags"]
    covergroup = "bfp.mx_quantizer"

    #: the run's opening sweep of ``lone`` blocks is drawn (the stimulus comes chunk by chunk)
    _lone_swept = False

    def items(self, rng: np.random.Generator, count: int) -> list[MxItem]:
        """Random blocks of every kind; the run opens with a ``lone`` block for each class
        in each lane, as the quantizer's does (a lane's NaN or Inf detector stuck shows
        only when its lane is the only one of its class)."""
        n = self.params.block
        bits, kinds = mx_blocks(rng, self.params, count)
        if not self._lone_swept:
            self._lone_swept = True
            k = min(count, len(LONE_CLASSES) * n)
            bits[:k], kinds[:k] = float_kind(rng, "lone", k, _bfp_like(n)), "lone"
        return drawn_items(MxItem, {"bits": bits, "kind": kinds}, ["bits", "kind"])

    def columns(self, items: list[MxItem]) -> dict[str, np.ndarray]:
        """``bits`` ``(N, block)`` uint32 and ``kind`` of ``items``."""
        c = item_columns(items, ["bits", "kind"])
        c["bits"] = c["bits"].astype(np.uint32, copy=False).reshape(len(items), self.params.block)
        return c

    def encode(self, item: MxItem) -> dict[str, int]:
        return {"data": pack_lanes(item.bits, 32)}

    def encode_columns(self, items: list[MxItem]) -> dict[str, np.ndarray]:
        return {"data": self.columns(items)["bits"]}

    def golden(self, items: list[MxItem]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Model ``(scales, codes, flags)`` for ``items``: shapes (T,), (T, block), (T,)."""
        p: MxParams = self.params
        s, c, f = mx.mx_quantize_flags(self.columns(items)["bits"], p.elem, p.block)
        return s[:, 0].astype(np.int64), c.astype(np.int64), f[:, 0].astype(np.int64)

    def _decode(self, outs: list[dict[str, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p: MxParams = self.params
        scale = ints(outs, "scale")
        codes = lanes(outs, "data", p.element.bits, p.block)
        flags = ints(outs, "flags")
        return scale, codes, flags

    def check(self, items, outs):
        g_s, g_c, g_f = self.golden(items)
        d_s, d_c, d_f = self._decode(outs)
        bad = np.flatnonzero((d_s != g_s) | (d_f != g_f) | (d_c != g_c).any(axis=1))
        w = (self.params.element.bits + 3) // 4
        errors = []
        for i in self.shown(bad):
            errors.append(
                f"block {i} ({items[i].kind}, {self.params.elem}): input {[hex(v) for v in items[i].bits]}\n"
                f"    DUT    scale={d_s[i]:#04x} flags={decode_flags(int(d_f[i]), MX_FLAG_NAMES)} "
                f"codes={[f'{v:0{w}x}' for v in d_c[i]]}\n"
                f"    golden scale={g_s[i]:#04x} flags={decode_flags(int(g_f[i]), MX_FLAG_NAMES)} "
                f"codes={[f'{v:0{w}x}' for v in g_c[i]]}"
            )
        errors += self.more(bad, "blocks")
        sticky = int(np.bitwise_or.reduce(g_f)) if len(g_f) else 0
        return errors, len(bad), sticky

    # ---- coverage ------------------------------------------------------------------
    def _code_classes(self) -> list[str]:
        return ["zero", "normal", "max"] if self.params.element.ebits == 0 else [
            "zero", "neg_zero", "subnormal", "normal", "max"
        ]

    def _lane_classes(self, codes: np.ndarray) -> dict[str, np.ndarray]:
        """Per element code: whether it falls in each class (bool arrays of ``codes``' shape)."""
        el = self.params.element
        if el.ebits == 0:
            mag = np.where(codes >= 128, 256 - codes, codes)
            return {"zero": mag == 0, "normal": (mag > 0) & (mag < 127), "max": mag == 127}
        sbit = 1 << (el.bits - 1)
        mag = codes & (sbit - 1)
        top = int(mx.encode_element(np.array([el.max_normal]), el.name)[0])
        efield = mag >> el.mbits
        return {
            "zero": mag == 0,
            "neg_zero": codes == sbit,
            "subnormal": (efield == 0) & (mag != 0),
            "normal": (efield != 0) & (mag != top),
            "max": mag == top,
        }

    def _classes(self, codes: np.ndarray) -> dict[str, np.ndarray]:
        """Per block: whether any lane's code falls in each class (T, ) bool arrays."""
        table = getattr(self, "_class_table", None)
        if table is None:  # class i -> bit i, for every code of the element
            per = self._lane_classes(np.arange(1 << self.params.element.bits, dtype=np.int64))
            table = sum(v.astype(np.uint8) << np.uint8(i) for i, v in enumerate(per.values()))
            self._class_table = table
        hit = np.bitwise_or.reduce(table[codes], axis=1)
        return {c: (hit >> np.uint8(i)) & 1 != 0 for i, c in enumerate(self._code_classes())}

    def define_coverage(self, cg: Covergroup) -> None:
        for name, bit in MX_FLAG_NAMES.items():
            cg.point(f"flag_{name}", lambda t, b=bit: bool(t["flags"] & b), [False, True])

        def scale_bin(s: int) -> str:
            if s == mx.E8M0_NAN:
                return "nan"
            if s == 0:
                return "min"
            return "neg" if s < mx.E8M0_BIAS else "pos"

        cg.point("scale", lambda t: scale_bin(t["scale"]), ["nan", "min", "neg", "pos"])
        for c in self._code_classes():
            cg.point(f"code_{c}", lambda t, c=c: bool(t[f"code_{c}"]), [False, True])
        cg.point("kind", lambda t: t["kind"], list({**KINDS, **MX_KINDS}))
        n = self.params.block
        cg.point("lone", lambda t: t["lone"], [f"{c}@{lane}" for c in LONE_CLASSES for lane in range(n)])

    def sample_columns(self, items: list[MxItem], outs: list[Beat]) -> dict[str, np.ndarray]:
        d_s, d_c, d_f = self._decode(outs)
        return {
            "flags": d_f,
            "scale": d_s,
            "kind": self.columns(items)["kind"],
            "lone": lone_class(self.columns(items)["bits"]),
            **{f"code_{c}": np.asarray(v, dtype=bool) for c, v in self._classes(d_c).items()},
        }


class MxTest(StreamTest):
    """Random MX blocks with idle cycles and back-pressure, checked against the model."""

    UNIT = MxUnit
