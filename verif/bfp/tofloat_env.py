"""Testbench knowledge of the BFP -> float32 converter (mantissas + exponent -> float32).

Plugs into :mod:`lockstep.verif.stream_env`: corner-biased stimulus (special mantissas,
exponents concentrated at the float32 overflow, normal/subnormal and underflow edges,
exact rounding ties), a check that predicts every block with
:func:`lockstep.models.bfp.to_float32` in one vectorised call, and cover points over the
flags, result classes x sign, ties and stimulus kinds. Bins a format cannot reach (for
example +-Inf with a 5-bit exponent) are left out, so 100 % coverage is attainable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lockstep.models import bfp
from lockstep.models.bfp.params import BfpFormat
from lockstep.verif.agents.stream import Beat
from lockstep.verif.columns import ints, lanes
from lockstep.verif.coverage import Covergroup
from lockstep.verif.packing import pack_lanes
from lockstep.verif.stream_env import GoldenFlagsQuiet, StreamTest, StreamUnit
from lockstep.verif.bfp.stimulus import drawn_items, item_columns, pick_kinds

__all__ = ["TF_KINDS", "TfItem", "ToFloatUnit", "ToFloatTest", "reachable", "result_classes", "tf_blocks"]

#: Stimulus kinds and their weights.
TF_KINDS: dict[str, float] = {
    "uniform": 2.0,  # uniform mantissas, uniform exponent over the whole e-bit range
    "special": 2.0,  # 0, +-1, +-m_max, -2**(w-1), +-2**k; uniform exponent
    "overflow": 2.0,  # exponent + lop(m) near 127/128 (largest normal, +-Inf)
    "normal_edge": 2.0,  # exponent + lop(m) near -126 (normal / subnormal boundary)
    "subnormal": 2.0,  # exponent in [-149 - (w-1), -127]: exact subnormals and rounding
    "underflow": 2.0,  # exponent near -149/-150 and below (rounding to 0 / min subnormal)
    "ties": 2.0,  # magnitudes exactly halfway between two subnormals (+-1 lsb)
    "lone": 1.0,  # one nonzero lane that overflows or rounds (tf_lone), the other lanes 0
}

_CLASSES = ("zero", "subnormal", "normal", "inf")


def _lop(mag: np.ndarray) -> np.ndarray:
    """floor(log2 mag) of non-negative int64 values, -1 for 0 (exact for mag < 2**53)."""
    out = np.full(mag.shape, -1, dtype=np.int64)
    nz = mag > 0
    out[nz] = np.frexp(mag[nz].astype(np.float64))[1] - 1
    return out


def _special_mantissas(rng: np.random.Generator, shape: tuple[int, ...], w: int) -> np.ndarray:
    """Mantissas drawn from 0, +-1, +-m_max, -2**(w-1) and +-2**k."""
    m_max = (1 << (w - 1)) - 1
    pick = rng.integers(0, 6, size=shape)
    pow2 = np.left_shift(1, rng.integers(0, w - 1, size=shape)).astype(np.int64)
    sign = rng.choice([-1, 1], size=shape)
    # pick 0..5: 0, +-1, +-m_max, -2**(w-1), +-2**k, +-2**k
    mag = np.where(pick >= 4, pow2, np.array([0, 1, m_max, -(1 << (w - 1)), 0, 0], dtype=np.int64)[pick])
    return mag * np.where(pick == 3, 1, sign)


def lone_outcomes(fmt: BfpFormat) -> list[str]:
    """The flag-raising outcomes a ``lone`` lane can have in ``fmt`` (:func:`reachable`):
    ``ovf`` (rounded to +-Inf: ovf, inexact) and ``round`` (a subnormal that drops bits:
    unf, inexact)."""
    r = reachable(fmt)
    return [o for o, k in (("ovf", "ovf"), ("round", "rounding")) if r[k]]


def tf_lone(rng: np.random.Generator, fmt: BfpFormat, lane: np.ndarray, outcome: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Blocks with one nonzero lane, ``lane[i]``, whose value has outcome
    ``lone_outcomes(fmt)[outcome[i]]``; the other lanes are 0, which raises no flag, so the
    block's flags are that one lane's (a lane's flag stuck at 0 cannot hide behind a
    neighbour's). Returns ``(mantissas (c, n), exponents (c,))``."""
    n, w = fmt.n, fmt.w
    c = len(lane)
    outs = lone_outcomes(fmt)
    m = np.zeros((c, n), np.int64)
    x = rng.integers(fmt.e_min, fmt.e_max + 1, size=c).astype(np.int64)
    sign = rng.choice([-1, 1], size=c)
    mag = rng.integers(1, 1 << (w - 1), size=c)
    for i in range(c):
        o = outs[outcome[i]] if outs else None
        if o == "ovf":   # lop + x >= 128; lop at least 128 - e_max (-2**(w-1): lop w-1)
            lop = int(rng.integers(max(0, 128 - fmt.e_max), w))
            v = -(1 << lop) if lop == w - 1 else sign[i] * int(rng.integers(1 << lop, 1 << (lop + 1)))
            m[i, lane[i]], x[i] = v, min(128 - lop + int(rng.integers(0, 2)), fmt.e_max)
        elif o == "round":   # an odd magnitude times 2**(-149 - r): its lowest bit falls below 2**-149
            r = int(rng.integers(1, min(w - 1, -149 - fmt.e_min) + 1))
            m[i, lane[i]], x[i] = sign[i] * (mag[i] | 1), -149 - r
        else:
            m[i, lane[i]] = sign[i] * mag[i]
    return m, x


def tf_blocks(
    rng: np.random.Generator, fmt: BfpFormat, count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random converter input blocks, biased to the float32 range edges.

    Args:
        rng: the generator (seeded by the test).
        fmt: block format (``w``, ``e``, ``n``).
        count: number of blocks.

    Returns:
        ``(mantissas (count, n) int64, exponents (count,) int64, kinds (count,))``;
        ``kinds`` indexes ``list(TF_KINDS)``. Exponents are clipped to
        ``[e_min, e_max]`` (a format that cannot reach an edge gets its extreme
        exponent instead).
    """
    if count < 0:
        raise ValueError(f"count={count} must be >= 0")
    n, w = fmt.n, fmt.w
    lo_m, hi_m = -(1 << (w - 1)), 1 << (w - 1)
    names = list(TF_KINDS)
    kinds = pick_kinds(rng, TF_KINDS, count)
    m = rng.integers(lo_m, hi_m, size=(count, n)).astype(np.int64)
    # a quarter of the lanes of every block are special values
    spec = rng.random((count, n)) < 0.25
    m = np.where(spec, _special_mantissas(rng, (count, n), w), m)
    x = rng.integers(fmt.e_min, fmt.e_max + 1, size=count).astype(np.int64)
    lop0 = _lop(np.abs(m[:, 0]))
    lop0 = np.where(lop0 < 0, 0, lop0)
    for ki, name in enumerate(names):
        sel = kinds == ki
        c = int(sel.sum())
        if not c:
            continue
        if name == "special":
            m[sel] = _special_mantissas(rng, (c, n), w)
        elif name == "overflow":
            x[sel] = 127 - lop0[sel] + rng.integers(-2, 3, size=c)
        elif name == "normal_edge":
            x[sel] = -126 - lop0[sel] + rng.integers(-2, 2, size=c)
        elif name == "subnormal":
            xs = np.clip(rng.integers(-149 - (w - 1), -126, size=c), fmt.e_min, fmt.e_max)
            x[sel] = xs
            # half the lanes below 2**(-126 - x): a subnormal result in every lane, also
            # where the format's exponents stop short of -149 (x clipped to e_min = -128)
            room = np.clip(-126 - xs, 0, w - 1)
            small = rng.integers(0, 1 << 30, size=(c, n)) % (np.left_shift(1, room)[:, None])
            small = small * rng.choice([-1, 1], size=(c, n))
            m[sel] = np.where((rng.random((c, n)) < 0.5) & (room[:, None] > 0), small, m[sel])
        elif name == "underflow":
            x[sel] = rng.integers(-152 - w, -147, size=c)
        elif name == "lone":
            m[sel], x[sel] = tf_lone(rng, fmt, rng.integers(0, n, size=c),
                                     rng.integers(0, max(len(lone_outcomes(fmt)), 1), size=c))
        elif name == "ties":
            # r = -149 - x >= 1 bits are rounded off; |m| = (2q + 1) * 2**(r - 1) is a tie
            r = rng.integers(1, w, size=c)
            qmax = ((1 << (w - r)) - 1) // 2
            q = (rng.random((c, n)) * (qmax[:, None] + 1)).astype(np.int64)
            mag = (2 * q + 1) << (r[:, None] - 1)
            mag = mag + rng.choice([-1, 0, 0, 0, 1], size=(c, n))  # some +-1 lsb off the tie
            mag = np.clip(mag, 0, hi_m)
            sign = rng.choice([-1, 1], size=(c, n))
            m[sel] = np.clip(sign * mag, lo_m, hi_m - 1)
            x[sel] = -149 - r
    x = np.clip(x, fmt.e_min, fmt.e_max)
    return m, x, kinds


def result_classes(bits: np.ndarray) -> np.ndarray:
    """Class index into ``("zero", "subnormal", "normal", "inf")`` of float32 bit patterns."""
    b = np.asarray(bits, dtype=np.int64)
    be = (b >> 23) & 0xFF
    frac = b & 0x7FFFFF
    return np.select([(be == 0) & (frac == 0), be == 0, be < 255], [0, 1, 2], default=3)


def reachable(fmt: BfpFormat) -> dict[str, bool]:
    """Which outcomes a format can produce (``|m| <= 2**(w-1)``, ``x`` in its range).

    Returns:
        ``ovf`` (+-Inf, flags ``ovf`` and ``inexact``), ``subnormal`` (a nonzero
        subnormal result) and ``rounding`` (a finite inexact result: flags ``unf`` and
        ``inexact``, and a negative value rounded to -0.0).
    """
    return {
        "ovf": fmt.e_max + fmt.w - 1 >= 128,  # lop + x >= 128
        "subnormal": fmt.e_min <= -127,  # 1 * 2**x below 2**-126
        "rounding": fmt.e_min <= -150,  # 1 * 2**-150 rounds (to zero)
    }


@dataclass
class TfItem:
    """One input block.

    Attributes:
        m: ``n`` mantissas (signed ints).
        exp: the shared exponent.
        kind: stimulus kind (coverage and error messages).
    """

    m: np.ndarray
    exp: int
    kind: str = "uniform"


_FIELDS = ["m", "exp", "kind"]


class ToFloatUnit(GoldenFlagsQuiet, StreamUnit):
    """The converter: ``in_data/in_exp`` -> ``out_data/out_flags``."""

    params_type = BfpFormat
    in_fields = ["data", "exp"]
    out_fields = ["data", "flags"]
    covergroup = "bfp.to_float"
    default_count = 600

    #: the run's opening sweep of ``lone`` blocks is drawn (the stimulus comes chunk by chunk)
    _lone_swept = False

    def items(self, rng: np.random.Generator, count: int) -> list[TfItem]:
        """Random blocks of :data:`TF_KINDS`; the run opens with a ``lone`` block for each
        outcome in each lane (:func:`tf_lone`), so even a short run sees every lane's
        flags alone."""
        fmt: BfpFormat = self.params
        m, x, kinds = tf_blocks(rng, fmt, count)
        if not self._lone_swept:
            self._lone_swept = True
            k = min(count, fmt.n * len(lone_outcomes(fmt)))
            i = np.arange(k)
            m[:k], x[:k] = tf_lone(rng, fmt, i % fmt.n, i // fmt.n)
            kinds[:k] = list(TF_KINDS).index("lone")
        return drawn_items(TfItem, {"m": m, "exp": x, "kind": np.array(list(TF_KINDS))[kinds]}, _FIELDS)

    def columns(self, items: list[TfItem]) -> dict[str, np.ndarray]:
        """The fields of ``items``, column by column (``m`` as ``(N, n)`` int64)."""
        c = item_columns(items, _FIELDS)
        c["m"] = c["m"].astype(np.int64, copy=False).reshape(len(items), self.params.n)
        c["exp"] = c["exp"].astype(np.int64, copy=False)
        return c

    def encode(self, item: TfItem) -> dict[str, int]:
        fmt: BfpFormat = self.params
        return {"data": pack_lanes(item.m, fmt.w), "exp": int(item.exp) & ((1 << fmt.e) - 1)}

    def encode_columns(self, items: list[TfItem]) -> dict[str, np.ndarray]:
        fmt: BfpFormat = self.params
        c = self.columns(items)
        return {"data": c["m"] & ((1 << fmt.w) - 1), "exp": c["exp"] & ((1 << fmt.e) - 1)}

    def golden(self, items: list[TfItem]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Model outputs: ``(bits (T, n), lane flags (T, n), block flags (T,))``."""
        c = self.columns(items)
        bits, ff = bfp.to_float32(c["m"], c["exp"])
        return bits.astype(np.int64), ff, np.bitwise_or.reduce(ff, axis=-1)

    def _decode(self, outs: list[dict[str, int]]) -> tuple[np.ndarray, np.ndarray]:
        fmt: BfpFormat = self.params
        bits = lanes(outs, "data", 32, fmt.n)
        flg = ints(outs, "flags")
        return bits, flg

    def check(self, items, outs):
        g_bits, g_lane, g_flg = self.golden(items)
        d_bits, d_flg = self._decode(outs)
        bad = np.flatnonzero((d_flg != g_flg) | (d_bits != g_bits).any(axis=1))
        names = bfp.FFLAG_NAMES
        errors = []
        for i in self.shown(bad):
            lanes = np.flatnonzero(d_bits[i] != g_bits[i])
            detail = "".join(
                f"\n    lane {k}: m={int(items[i].m[k])} -> DUT {int(d_bits[i, k]):#010x} "
                f"golden {int(g_bits[i, k]):#010x} (golden lane flags "
                f"{bfp.decode_flags(int(g_lane[i, k]), names)})"
                for k in lanes[:4]
            )
            errors.append(
                f"block {i} ({items[i].kind}): exp={items[i].exp} m={items[i].m.tolist()}\n"
                f"    DUT flags={bfp.decode_flags(int(d_flg[i]), names)} "
                f"golden flags={bfp.decode_flags(int(g_flg[i]), names)}; "
                f"{len(lanes)} lane(s) differ{detail}"
            )
        errors += self.more(bad, "blocks")
        return errors, len(bad), bfp.sticky(g_flg)

    def _results(self) -> list[tuple[str, str]]:
        """The ``(sign, class)`` results the format can produce: one cover point each."""
        reach = reachable(self.params)
        ok_cls = {"zero": True, "subnormal": reach["subnormal"], "normal": True, "inf": reach["ovf"]}
        # -0.0 only comes from a negative value rounding to zero
        return [
            (sign, cls) for cls in _CLASSES for sign in ("pos", "neg")
            if ok_cls[cls] and not (cls == "zero" and sign == "neg" and not reach["rounding"])
        ]

    def define_coverage(self, cg: Covergroup) -> None:
        reach = reachable(self.params)
        need = {"ovf": reach["ovf"], "unf": reach["rounding"], "inexact": reach["rounding"] or reach["ovf"]}
        for name, bit in bfp.FFLAG_NAMES.items():
            bins = [False, True] if need[name] else [False]
            cg.point(f"flag_{name}", lambda t, b=bit: bool(t["flags"] & b), bins)
        for sign, cls in self._results():  # some lane of the block has this result
            cg.point(f"result_{sign}_{cls}", lambda t, k=f"{sign}_{cls}": t[k], [True])
        if reach["rounding"]:
            cg.point("tie", lambda t: t["tie"], [False, True])
        cg.point("kind", lambda t: t["kind"], list(TF_KINDS))
        outs = lone_outcomes(self.params)
        if outs:   # each lane's flags alone: a lone block's one nonzero lane, by outcome
            cg.point("lone", lambda t: t["lone"], [f"{o}@{lane}" for o in outs for lane in range(self.params.n)])

    def sample_columns(self, items: list[TfItem], outs: list[Beat]) -> dict[str, np.ndarray]:
        d_bits, d_flg = self._decode(outs)
        c = self.columns(items)
        cls = result_classes(d_bits)
        neg = ((d_bits >> 31) & 1).astype(bool)
        cols = {"flags": d_flg, "kind": c["kind"]}
        nz = c["m"] != 0
        one = (c["kind"] == "lone") & (nz.sum(axis=1) == 1) & ((d_flg & bfp.FFLAG_INEXACT) != 0)
        outcome = np.where(d_flg & bfp.FFLAG_OVF, "ovf", "round")
        cols["lone"] = np.where(one, np.char.add(np.char.add(outcome, "@"), nz.argmax(axis=1).astype(str)), "")
        for sign, name in self._results():
            cols[f"{sign}_{name}"] = ((cls == _CLASSES.index(name)) & (neg == (sign == "neg"))).any(axis=1)
        if reachable(self.params)["rounding"]:
            # an exact tie in the subnormal rounding: r = -149 - x bits dropped, r >= 1
            r = np.clip(-149 - c["exp"], 0, 62)[:, None]
            low = np.abs(c["m"]) & ((np.int64(1) << r) - 1)
            cols["tie"] = ((r >= 1) & (low == (np.int64(1) << np.maximum(r - 1, 0)))).any(axis=1)
        return cols


class ToFloatTest(StreamTest):
    """Random blocks with idle cycles and back-pressure, checked against the model."""

    UNIT = ToFloatUnit
