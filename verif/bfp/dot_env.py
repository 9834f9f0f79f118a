"""Testbench knowledge of the BFP dot-product unit (``bfp_dot``, spec 004 4.2(b)).

Plugs into :mod:`lockstep.verif.stream_env`: corner-biased stimulus (mantissa kinds
from random to all ``-2**(w-1)``, every exponent, bias off or with ``e6 = e5 - e3``
negative, zero, positive, huge, or on the saturation edge), a check that predicts every
transaction with :func:`lockstep.models.bfp.dot` (one call with the bias, one without),
and cover points over the bias, the ``e6`` class, ``OVF`` and its source, the
accumulator magnitude and the stimulus kinds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from lockstep.models import bfp
from lockstep.models.bfp.params import BfpFormat
from lockstep.verif.agents.stream import Beat
from lockstep.verif.coverage import Covergroup
from lockstep.verif.packing import pack_lanes, to_signed
from lockstep.verif.stream_env import StreamTest, StreamUnit
from lockstep.verif.bfp.stimulus import pick_kinds

__all__ = ["DotItem", "DotUnit", "DotTest", "MANT_KINDS", "BIAS_KINDS", "dot_items"]

#: Mantissa kinds and their default weights.
MANT_KINDS: dict[str, float] = {
    "random": 4.0,  # uniform over [-2**(w-1), 2**(w-1)-1]
    "max_mixed": 1.0,  # every element +-m_max, random signs
    "max_pos": 1.0,  # +-m_max with matching signs: acc = n * m_max**2
    "min_neg": 1.0,  # every element -2**(w-1): acc = n * 2**(2w-2), the largest sum
    "min_mix": 1.0,  # a = -2**(w-1), b = m_max: the most negative sum
    "zero": 1.0,  # a or b (or both) all zero
    "sparse": 1.0,  # random, most lanes zero
    "small": 1.0,  # magnitudes <= 3
}

#: Bias kinds (how ``e6`` and the bias mantissa are chosen) and their default weights.
BIAS_KINDS: dict[str, float] = {
    "off": 3.0,  # no bias (bias and e5 still random on the bus)
    "e6_zero": 1.0,  # e6 = 0
    "e6_pos": 2.0,  # 0 < e6, feasible range
    "e6_neg": 2.0,  # -(w+2) <= e6 < 0: rounding of the shifted-out bits
    "tie": 1.0,  # e6 in [max(-3, 2 - w), -1], bias an odd multiple of 2**(-e6-1): exact ties
    "huge_pos": 1.0,  # e6 at the largest reachable value (>= A saturates any bias)
    "huge_neg": 1.0,  # e6 at the smallest reachable value (the bias vanishes)
    "edge": 3.0,  # e6 = (A-2) - lop|b| + {-1,0,1,2}: left-saturation and sum-overflow edge
    "sum_edge": 1.0,  # e6 = A - w, bias ~ sign(acc) * 2**(w-1): aligned fits, the sum overflows
}


@dataclass
class DotItem:
    """One input transaction.

    Attributes:
        a, b: ``n`` mantissas each.
        ea, eb: their exponents.
        bias_en: the bias is added.
        bias: bias mantissa (on the bus even when disabled).
        e5: bias exponent.
        mkind, bkind: stimulus kinds (coverage and error messages).

    Testbench options: ``blocks``, ``idle``, ``backpressure``, ``mant_kinds`` /
    ``bias_kinds`` (kind -> weight).
    """

    a: np.ndarray
    ea: int
    b: np.ndarray
    eb: int
    bias_en: bool
    bias: int
    e5: int
    mkind: str = "random"
    bkind: str = "off"


def _pick(rng: np.random.Generator, table: dict[str, float], count: int, override) -> list[str]:
    kinds = dict(override) if override else table
    names = list(kinds)
    return [names[i] for i in pick_kinds(rng, kinds, count)]


def _mantissas(rng: np.random.Generator, kind: str, fmt: BfpFormat) -> tuple[np.ndarray, np.ndarray]:
    n, w, mmax = fmt.n, fmt.w, fmt.m_max
    lo = -(1 << (w - 1))
    sgn = lambda: rng.choice([-1, 1], size=n)  # noqa: E731
    if kind == "max_mixed":
        return mmax * sgn(), mmax * sgn()
    if kind == "max_pos":
        s = sgn()
        return mmax * s, mmax * s
    if kind == "min_neg":
        return np.full(n, lo), np.full(n, lo)
    if kind == "min_mix":
        return np.full(n, lo), np.full(n, mmax)
    if kind == "zero":
        a, b = rng.integers(lo, mmax + 1, size=(2, n))
        z = rng.integers(0, 3)
        return (a * 0 if z != 1 else a), (b * 0 if z != 0 else b)
    if kind == "sparse":
        a, b = rng.integers(lo, mmax + 1, size=(2, n))
        keep = rng.random(n) < 0.2
        return np.where(keep, a, 0), b
    if kind == "small":
        return rng.integers(-3, 4, size=n), rng.integers(-3, 4, size=n)
    return rng.integers(lo, mmax + 1, size=n), rng.integers(lo, mmax + 1, size=n)


def _bias_value(rng: np.random.Generator, fmt: BfpFormat) -> int:
    w, mmax = fmt.w, fmt.m_max
    r = rng.random()
    if r < 0.5:
        return int(rng.integers(-(1 << (w - 1)), mmax + 1))
    corners = [mmax, -mmax, -(1 << (w - 1)), 0, 1, -1]
    corners += [s * (1 << k) for k in range(w - 1) for s in (1, -1)]
    corners += [s * ((1 << k) - 1) for k in range(2, w) for s in (1, -1)]
    return int(corners[rng.integers(len(corners))])


def _exponents(rng: np.random.Generator, fmt: BfpFormat, e6: int | None) -> tuple[int, int, int]:
    """``(ea, eb, e5)`` uniform, or with ``e5 - ea - eb == e6`` (clipped to what is reachable)."""
    emin, emax = fmt.e_min, fmt.e_max
    if e6 is None:
        v = rng.integers(emin, emax + 1, size=3)
        corner = rng.random(3) < 0.15  # the range ends, so e3 reaches 2*e_min and 2*e_max
        v = np.where(corner, rng.choice([emin, emax], size=3), v)
        if rng.random() < 0.1 and v[0] > emin:  # e3 = 0
            v[1] = -v[0]
        return int(v[0]), int(v[1]), int(v[2])
    e6 = min(max(e6, emin - 2 * emax), emax - 2 * emin)
    e5 = int(rng.integers(max(emin, e6 + 2 * emin), min(emax, e6 + 2 * emax) + 1))
    e3 = e5 - e6
    ea = int(rng.integers(max(emin, e3 - emax), min(emax, e3 - emin) + 1))
    return ea, e3 - ea, e5


def dot_items(rng: np.random.Generator, fmt: BfpFormat, count: int, mant_kinds=None, bias_kinds=None) -> list[DotItem]:
    """``count`` reproducible transactions (one ``rng`` drives everything)."""
    A, w = fmt.acc_bits, fmt.w
    e6_lo, e6_hi = fmt.e_min - 2 * fmt.e_max, fmt.e_max - 2 * fmt.e_min
    mk = _pick(rng, MANT_KINDS, count, mant_kinds)
    bk = _pick(rng, BIAS_KINDS, count, bias_kinds)
    items = []
    for m, k in zip(mk, bk):
        a, b = _mantissas(rng, m, fmt)
        bias = _bias_value(rng, fmt)
        e6: int | None
        if k == "off":
            e6 = None
        elif k == "e6_zero":
            e6 = 0
        elif k == "e6_pos":
            e6 = int(rng.integers(1, min(e6_hi, A + 2) + 1))
        elif k == "e6_neg":
            e6 = int(rng.integers(-(w + 2), 0))
        elif k == "tie":
            # a tie needs a bias with bit -e6-1 set and fitting in w bits: e6 >= 2 - w
            e6 = int(rng.integers(max(-3, 2 - w), 0))
            odd = int(rng.integers(0, 1 << (w - 2 + e6))) * 2 + 1
            bias = int(rng.choice([-1, 1])) * (odd << (-e6 - 1))
        elif k == "huge_pos":
            e6 = e6_hi
        elif k == "huge_neg":
            e6 = e6_lo
        elif k == "sum_edge":
            e6 = A - w
            small = int(rng.integers(0, 4))
            if int(np.dot(a.astype(object), b.astype(object))) >= 0:
                bias = fmt.m_max - small
            else:
                bias = -(1 << (w - 1)) if rng.random() < 0.3 else -(fmt.m_max - small)
        else:  # edge
            if bias == 0:
                bias = int(rng.choice([-1, 1])) * int(rng.integers(1, fmt.m_max + 1))
            e6 = (A - 2) - (abs(bias).bit_length() - 1) + int(rng.integers(-1, 3))
        ea, eb, e5 = _exponents(rng, fmt, e6)
        items.append(DotItem(np.asarray(a, np.int64), ea, np.asarray(b, np.int64), eb, k != "off", bias, e5, m, k))
    return items


class DotUnit(StreamUnit):
    """The dot unit: ``in_a/ea/b/eb/bias_en/bias/e5`` -> ``out_acc/e3/flags``."""

    params_type = BfpFormat
    in_fields = ["a", "ea", "b", "eb", "bias_en", "bias", "e5"]
    out_fields = ["acc", "e3", "flags"]
    covergroup = "bfp.dot"

    def items(self, rng: np.random.Generator, count: int) -> list[DotItem]:
        return dot_items(rng, self.params, count, self.ctx.opt("mant_kinds", None), self.ctx.opt("bias_kinds", None))

    def encode(self, item: DotItem) -> dict[str, int]:
        fmt: BfpFormat = self.params
        em = (1 << fmt.e) - 1
        return {
            "a": pack_lanes(item.a, fmt.w),
            "ea": item.ea & em,
            "b": pack_lanes(item.b, fmt.w),
            "eb": item.eb & em,
            "bias_en": int(item.bias_en),
            "bias": item.bias & ((1 << fmt.w) - 1),
            "e5": item.e5 & em,
        }

    def encode_columns(self, items: list[DotItem]) -> dict[str, np.ndarray]:
        fmt: BfpFormat = self.params
        em, wm = (1 << fmt.e) - 1, (1 << fmt.w) - 1

        def col(name: str) -> np.ndarray:
            return np.array([getattr(it, name) for it in items], dtype=np.int64)

        return {
            "a": np.array([it.a for it in items], dtype=np.int64).reshape(len(items), fmt.n) & wm,
            "ea": col("ea") & em,
            "b": np.array([it.b for it in items], dtype=np.int64).reshape(len(items), fmt.n) & wm,
            "eb": col("eb") & em,
            "bias_en": col("bias_en"),
            "bias": col("bias") & wm,
            "e5": col("e5") & em,
        }

    def golden(self, items: list[DotItem], fmt: BfpFormat | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Model outputs: one :func:`bfp.dot` call with the bias, one without, picked per row."""
        fmt = fmt or self.params
        a = np.array([it.a for it in items], dtype=np.int64).reshape(len(items), fmt.n)
        b = np.array([it.b for it in items], dtype=np.int64).reshape(len(items), fmt.n)
        ea = np.array([it.ea for it in items], dtype=np.int64)
        eb = np.array([it.eb for it in items], dtype=np.int64)
        en = np.array([it.bias_en for it in items], dtype=bool)
        bias = np.array([it.bias for it in items], dtype=np.int64)
        e5 = np.array([it.e5 for it in items], dtype=np.int64)
        acc0, e3, fl0 = bfp.dot(a, ea, b, eb, fmt)
        acc1, _, fl1 = bfp.dot(a, ea, b, eb, fmt, bias=bias, e5=e5)
        return np.where(en, acc1, acc0), e3, np.where(en, fl1, fl0)

    def _decode(self, outs: list[dict[str, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        fmt: BfpFormat = self.params
        acc = np.array([to_signed(o["acc"], fmt.acc_bits) for o in outs], dtype=np.int64)
        e3 = np.array([to_signed(o["e3"], fmt.e_sum_bits) for o in outs], dtype=np.int64)
        flg = np.array([o["flags"] for o in outs], dtype=np.int64)
        return acc, e3, flg

    def check(self, items, outs):
        g_acc, g_e3, g_flg = self.golden(items)
        d_acc, d_e3, d_flg = self._decode(outs)
        bad = np.flatnonzero((d_acc != g_acc) | (d_e3 != g_e3) | (d_flg != g_flg))
        errors = []
        for i in self.shown(bad):
            it = items[i]
            bias = f"bias={it.bias} e5={it.e5} (e6={it.e5 - it.ea - it.eb})" if it.bias_en else "no bias"
            errors.append(
                f"transaction {i} ({it.mkind}/{it.bkind}): a={it.a.tolist()} ea={it.ea} "
                f"b={it.b.tolist()} eb={it.eb} {bias}\n"
                f"    DUT    acc={d_acc[i]} e3={d_e3[i]} flags={bfp.decode_flags(int(d_flg[i]))}\n"
                f"    golden acc={g_acc[i]} e3={g_e3[i]} flags={bfp.decode_flags(int(g_flg[i]))}"
            )
        errors += self.more(bad, "transactions")
        return errors, len(bad), bfp.sticky(g_flg)

    def define_coverage(self, cg: Covergroup) -> None:
        fmt: BfpFormat = self.params
        cg.point("flag_ovf", lambda t: bool(t["flags"] & bfp.FLAG_OVF), [False, True])
        # Only OVF belongs to the dot product; the other family flags must stay clear.
        cg.point("other_flags_clear", lambda t: t["flags"] & ~bfp.FLAG_OVF == 0, [True])
        cg.point("bias_en", lambda t: t["bias_en"], [False, True])
        cg.point("e6_class", lambda t: t["e6_class"], ["off", "vanish", "neg", "zero", "pos", "huge"])
        cg.point("ovf_source", lambda t: t["ovf_source"], ["none", "align", "sum"])
        cg.point("acc_class", lambda t: t["acc_class"], ["zero", "small", "mid", "near_max", "sat"])
        cg.point("e3_class", lambda t: t["e3_class"], ["min", "neg", "zero", "pos", "max"])
        cg.point("mant_kind", lambda t: t["mkind"], list(MANT_KINDS))
        cg.point("bias_kind", lambda t: t["bkind"], list(BIAS_KINDS))
        if fmt.rounding == "rne":
            cg.point("round_up", lambda t: t["round_up"], [False, True])

    def samples(self, items: list[DotItem], outs: list[Beat]) -> list[dict]:
        fmt: BfpFormat = self.params
        A, w = fmt.acc_bits, fmt.w
        lim = (1 << (A - 1)) - 1
        d_acc, d_e3, d_flg = self._decode([o.fields for o in outs])
        g_trunc = self.golden(items, dataclasses.replace(fmt, rounding="trunc"))[0]
        res = []
        for it, acc, e3, fl, at in zip(items, d_acc, d_e3, d_flg, g_trunc):
            e6 = it.e5 - it.ea - it.eb
            if not it.bias_en:
                e6c = "off"
            elif e6 >= A:
                e6c = "huge"
            elif e6 <= -(w + 1):
                e6c = "vanish"
            else:
                e6c = "neg" if e6 < 0 else "zero" if e6 == 0 else "pos"
            # Which saturation stage fired (exact Python ints, classification only).
            src = "none"
            if fl & bfp.FLAG_OVF:
                src = "align" if e6 >= 0 and not -lim - 1 <= it.bias * 2**e6 <= lim else "sum"
            mag = abs(int(acc))
            if mag == 0:
                ac = "zero"
            elif mag == lim:
                ac = "sat"
            elif mag >= 1 << (A - 2):
                ac = "near_max"
            elif mag < 1 << w:
                ac = "small"
            else:
                ac = "mid"
            e3c = (
                "min" if e3 == 2 * fmt.e_min else "max" if e3 == 2 * fmt.e_max
                else "neg" if e3 < 0 else "zero" if e3 == 0 else "pos"
            )
            res.append(
                {
                    "flags": int(fl),
                    "bias_en": it.bias_en,
                    "e6_class": e6c,
                    "ovf_source": src,
                    "acc_class": ac,
                    "e3_class": e3c,
                    "mkind": it.mkind,
                    "bkind": it.bkind,
                    # RNE changed the aligned bias (a round-up of its magnitude)
                    "round_up": bool(int(acc) != int(at)),
                }
            )
        return res


class DotTest(StreamTest):
    """Random transactions with idle cycles and back-pressure, checked against the model."""

    UNIT = DotUnit
