"""Constrained-random float32 blocks for the BFP units, biased to the corner cases.

Every generator is vectorised numpy driven by one :class:`numpy.random.Generator`, so a
seed reproduces the stimulus exactly. :func:`drawn_items` and :func:`item_columns` let a
testbench draw its transactions column by column, hand them out as item objects (built
only when read one by one), and read whole columns back without a loop per field.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from lockstep.models.bfp.params import BfpFormat
from lockstep.verif.columns import Items, item_columns

__all__ = ["KINDS", "LONE_CLASSES", "any_lane", "drawn_items", "float_blocks", "float_kind", "item_columns", "lone_bit_blocks",
           "lone_class", "pick_kinds"]

F32_INF = np.uint32(0x7F800000)
F32_QNAN = np.uint32(0x7FC00000)

#: Block kinds and their default weights in a random mix.
KINDS: dict[str, float] = {
    "normal": 1.0,  # N(0, 1), no scaling: realistic data for precision figures
    "gauss": 4.0,  # Gaussian, random power-of-two scale (exercises exponent clamping)
    "heavy": 2.0,  # Student-t with 2 degrees of freedom: heavy tails
    "wide": 2.0,  # elements spread over 2**-60 .. 2**60 (underflow to 0 within a block)
    "pow2": 2.0,  # block max exactly 2**k, 2**k - 1 ulp or 2**k + 1 ulp; every other block far above the top
    "roundup": 2.0,  # block max just below 2**(k+1): RNE rounds to 2**(w-1)
    "ties": 2.0,  # elements exactly halfway between two mantissas, or one sticky bit off it
    "zero": 1.0,  # all +-0
    "special": 1.0,  # NaN / +-Inf mixed with normal values
    "subnormal": 1.0,  # float32 subnormals (alone or with normals)
    "lone": 3.0,  # one lane of a class in LONE_CLASSES among normal values: every class in every lane
}

#: The value classes a ``lone`` block puts in one lane (the others normal, or zero for +Inf
#: and the subnormal), each class in
#: each lane once per :func:`float_kind` call of at least ``len(LONE_CLASSES) * n`` blocks:
#: a per-lane detector (NaN, Inf, subnormal) stuck or swapped shows only when its lane is
#: the only one of its class.
LONE_CLASSES = ("nan", "+inf", "-inf", "subnormal", "min_normal", "max_normal")


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def _scale(rng: np.random.Generator, count: int, lo: int, hi: int) -> np.ndarray:
    return np.ldexp(1.0, rng.integers(lo, hi + 1, size=(count, 1)))


def any_lane(rng: np.random.Generator, blocks: np.ndarray) -> np.ndarray:
    """``blocks`` (one per row) with their lanes shuffled, each row its own way: a kind
    built around its block maximum writes it in lane 0, and a per-lane overflow or
    round-up detector is only exercised in the lane that holds the maximum."""
    return rng.permuted(blocks, axis=1)


def float_kind(rng: np.random.Generator, kind: str, count: int, fmt: BfpFormat) -> np.ndarray:
    """``count`` blocks of stimulus kind ``kind`` (see :data:`KINDS`): uint32 ``(count, fmt.n)``."""
    n, w = fmt.n, fmt.w
    # exponents that stay inside the format's range, plus a margin to hit clamping
    lo, hi = fmt.e_min + w - 2 - 3, fmt.e_max + w - 2 + 3
    lo, hi = max(lo, -140), min(hi, 120)
    if kind == "normal":
        return _bits(rng.standard_normal((count, n)))
    if kind == "gauss":
        return _bits(rng.standard_normal((count, n)) * _scale(rng, count, lo, hi))
    if kind == "heavy":
        return _bits(rng.standard_t(2, (count, n)) * _scale(rng, count, lo, hi))
    if kind == "wide":
        e = rng.integers(-60, 61, size=(count, n))
        return _bits(rng.choice([-1.0, 1.0], size=(count, n)) * np.ldexp(1.0 + rng.random((count, n)), e))
    # the block maximum's lane: every lane in turn (from a random one), so each lane's
    # overflow and round-up detectors see it within n blocks of the kind (shuffled at
    # random, a lane of 32 missed the round-up in a 400-block run about one seed in three:
    # bfp_quantize@9623 m041, lane 9's overflow compare off by one, survived)
    top_lane = (np.arange(count) + rng.integers(0, n)) % n
    rows = np.arange(count)
    if kind == "pow2":
        k = rng.integers(lo, hi + 1, size=(count, 1))
        base = _bits(np.ldexp(np.ones((count, 1)), k)).astype(np.int64)
        base = base + rng.integers(-1, 2, size=(count, 1))  # 2**k - 1 ulp, 2**k, + 1 ulp
        rest = _bits(rng.uniform(-1, 1, (count, n)) * np.ldexp(1.0, k - 1)).astype(np.int64)
        rest[rows, top_lane] = base[:, 0]
        # Every other block lies far above the format's top: the shared exponent clamps at
        # e_max and every lane holds 2**k or 2**k + 1 ulp with k = e_max + 23 + s, s stepping
        # 0 .. 9 from block to block in each lane, so the quantizer's left shift (the
        # element 2**s times its 24-bit significand in steps, shift s capped at 8) shows
        # each amount alone before saturation (a shifter bit stuck at 0 that leaves
        # only low bits saturated nothing, and random data never holds a bare power of two
        # there: bfp_quantize@619a m053). Formats whose e_max + 32 passes float32's top skip them.
        half = np.arange(count) + int(rng.integers(0, 2))
        kf = fmt.e_max + 23 + (half[:, None] // 2 + np.arange(n)[None, :] + int(rng.integers(0, 10))) % 10
        far = (half % 2 == 0)[:, None] & (kf <= 127)
        far_bits = (kf.clip(-126, 127) + 127).astype(np.int64) << 23 | rng.integers(0, 2, size=(count, n))
        rest = np.where(far, far_bits, rest).astype(np.uint32)
        sign = rng.integers(0, 2, size=(count, n), dtype=np.uint32) << np.uint32(31)
        return rest | sign
    if kind == "roundup":
        k = rng.integers(lo, hi + 1, size=(count, 1))
        top = _bits(np.ldexp(np.ones((count, 1)), k + 1)).astype(np.int64) - rng.integers(1, 4, size=(count, 1))
        rest = _bits(rng.uniform(-1, 1, (count, n)) * np.ldexp(1.0, k)).astype(np.int64)
        rest[rows, top_lane] = top[:, 0]
        return rest.astype(np.uint32)
    if kind == "ties":
        # x = (m + 1/2) * 2**e exactly, with e the block exponent Eq. 4 picks when the
        # maximum is 2**(w-2) * 2**e (written in lane top_lane).
        # Each lane runs through a cycle of 30 ties blocks: above the tie (m even, where
        # RNE rounds up for the sticky bit alone) with the one sticky bit at each of the
        # element's float32 fraction bits 0 .. 21 in turn, then six exact ties (m of either
        # parity: RNE's even rule), then two one bit below. The cycle steps from block to
        # block in each lane, skipping the blocks whose maximum the lane holds, so every
        # lane sees every fraction bit decide a round-up within 30 of its ties blocks.
        # (It once stepped the sticky's weight 2**-j against m's grid instead, so the
        # fraction bit it landed on hung on m's binade, and lane 0's bit 7 never decided
        # alone: bfp_quantize@619a m048; before that, drawn at random, lane 2's bit 19 above
        # the tie was missed: @9623 m043; exact ties were the rarest turn of a longer
        # cycle, and a sticky OR of ones, or a compare with 1, survived: @9623 m001, m011.)
        e = rng.integers(lo - w + 2, hi - w + 3, size=(count, 1))
        m = rng.integers(0, 1 << (w - 2), size=(count, n))
        npos = 22
        free = np.arange(n)[None, :] != top_lane[:, None]
        turn = np.cumsum(free, axis=0) - free  # the lane's ties blocks before this one
        t = (turn + np.arange(n)[None, :] + int(rng.integers(0, npos + 8))) % (npos + 8)
        q = np.minimum(t, npos - 1)  # the sticky's fraction bit (above the tie)
        above, below = t < npos, t >= npos + 6
        # fraction bit q lies below the guard when m's leading bit is at most 21 - q
        m = np.where(above, (m % (1 << np.maximum(22 - q, 0))) & ~1, m)
        lead = np.where(m > 0, np.floor(np.log2(np.maximum(m, 1))), -1.0)  # the leading bit of m + 1/2
        j = np.where(above, 23 - q - lead, 26 - w)  # the sticky's weight 2**-j on m's grid
        off = np.where(above, np.ldexp(1.0, -j.astype(np.int64)), np.where(below, -np.ldexp(1.0, -(26 - w)), 0.0))
        x = np.ldexp(m.astype(np.float64) + 0.5 + off, e)
        x[rows, top_lane] = np.ldexp(float(1 << (w - 2)), e[:, 0])
        return _bits(x * rng.choice([-1.0, 1.0], size=(count, n)))
    if kind == "zero":
        return rng.integers(0, 2, size=(count, n), dtype=np.uint32) << np.uint32(31)
    if kind == "special":
        out = _bits(rng.standard_normal((count, n)))
        pick = rng.integers(0, 4, size=(count, n))
        out = np.where(pick == 0, F32_QNAN | rng.integers(0, 1 << 22, size=(count, n), dtype=np.uint32), out)
        out = np.where(pick == 1, F32_INF, out)
        out = np.where(pick == 2, F32_INF | np.uint32(0x80000000), out)
        return out.astype(np.uint32)
    if kind == "subnormal":
        # the leading one at fraction bit 0 .. 22 in turn in each lane, the bits below it
        # random: every lane's leading-one finder sees every position within 23 blocks of
        # the kind (drawn at random, lane 29's bits 20..21 of an MX quantizer's finder were
        # missed: bfp_mx_quantize@1f4c m031)
        lead = ((np.arange(count)[:, None] + np.arange(n)[None, :] + int(rng.integers(0, 23))) % 23).astype(np.uint32)
        out = (np.uint32(1) << lead) | (rng.integers(0, 1 << 23, size=(count, n), dtype=np.uint32)
                                        & ((np.uint32(1) << lead) - np.uint32(1)))
        out |= rng.integers(0, 2, size=(count, n), dtype=np.uint32) << np.uint32(31)
        mix = rng.random((count, 1)) < 0.3
        return np.where(mix & (rng.random((count, n)) < 0.2), _bits(np.ldexp(1.0, -120) * np.ones((count, n))), out)
    if kind == "lone":
        # normal lanes, far from both ends of float32 (none of them is of a lone class)
        out = _bits(rng.standard_normal((count, n)) * _scale(rng, count, max(lo, -90), min(hi, 90)))
        combo = np.resize(rng.permutation(len(LONE_CLASSES) * n), count)
        cls, lane = combo // n, combo % n
        sign = rng.integers(0, 2, size=count, dtype=np.uint32) << np.uint32(31)
        frac = rng.integers(1, 1 << 23, size=count, dtype=np.uint32)
        val = np.select(
            [cls == 0, cls == 1, cls == 2, cls == 3, cls == 4],
            # NaN: a quiet one with any payload, or half the time a signalling one with
            # the smallest payload (a detector written frac != 1, say, tells it apart)
            [np.where(rng.random(count) < 0.5, F32_QNAN | (frac >> np.uint32(1)), F32_INF | np.uint32(1)), F32_INF, F32_INF | np.uint32(0x80000000), sign | frac,
             sign | np.uint32(1 << 23) | frac],
            # the largest exponent: in each lane's first turn the fraction's top seven bits
            # set (any element format of up to six mantissa bits saturates, a wider one
            # rounds up), later any fraction (a lane's saturation detector that misses
            # exponent 254 showed only so: bfp_mx_quantize@1f4c m056)
            sign | np.uint32(254 << 23) | np.where(np.arange(count) < len(LONE_CLASSES) * n,
                                                   np.uint32(0x7F0000) | (frac & np.uint32(0xFFFF)), frac),
        ).astype(np.uint32)
        # +Inf and the subnormal stand among zeros: then the lane is the block's only
        # nonzero value, and what the max tree makes of it (an Inf lane's key is 0, a
        # subnormal's is the block maximum) is the whole answer
        out[(cls == 1) | (cls == 3)] = 0
        out[np.arange(count), lane] = val
        return out
    raise ValueError(f"unknown stimulus kind {kind!r}; known: {sorted(KINDS)}")


def lone_bit_blocks(rng: np.random.Generator, start: int, count: int, n: int) -> np.ndarray:
    """``count`` blocks of the lone-bit sweep from its step ``start``: block ``j`` holds +-0
    in every lane but lane ``(start + j) % n``, which holds the float32 subnormal whose one
    fraction bit set is bit ``(start + j) // n % 23`` (random sign). ``23 * n`` steps put
    every fraction bit of every lane alone in a block. A fraction bit below the rounding
    point of a truncating unit shows nowhere but there: stuck at 0 in that lane, it turns
    the block's one nonzero value into a zero and its flags from subnormal to zero
    (bfp_quantize@84d6 m073, lane 5's bit 1, survived the random kinds, whose subnormals
    carry random bits below their leading one)."""
    step = start + np.arange(count)
    out = np.zeros((count, n), dtype=np.uint32)
    out |= rng.integers(0, 2, size=(count, n), dtype=np.uint32) << np.uint32(31)
    out[np.arange(count), step % n] |= np.uint32(1) << (step // n % 23).astype(np.uint32)
    return out


def lone_class(bits: np.ndarray) -> np.ndarray:
    """Per block ``(count, n)`` of float32 bits: ``"<class>@<lane>"`` when exactly one
    lane holds a value of a :data:`LONE_CLASSES` class (NaN, +-Inf, subnormal, the
    smallest or the largest normal exponent), else ``""``."""
    b = np.asarray(bits, dtype=np.uint32)
    be, frac, neg = (b >> np.uint32(23)) & np.uint32(0xFF), b & np.uint32(0x7FFFFF), (b >> np.uint32(31)) == 1
    cls = np.select([(be == 255) & (frac != 0), (be == 255) & ~neg, be == 255, (be == 0) & (frac != 0), be == 1,
                     be == 254], list(range(len(LONE_CLASSES))), -1)
    one = (cls >= 0).sum(axis=1) == 1
    lane = np.argmax(cls >= 0, axis=1)
    names = np.array([f"{c}@" for c in LONE_CLASSES], dtype=object)
    got = names[cls[np.arange(len(b)), lane].clip(0)] + lane.astype(str).astype(object)
    return np.where(one, got, "").astype(str)


def pick_kinds(rng: np.random.Generator, weights: dict[str, float], count: int) -> np.ndarray:
    """Draw ``count`` stimulus kinds from a weight table.

    Args:
        rng: the test's generator.
        weights: kind -> relative weight (non-negative, positive sum).
        count: how many.

    Returns:
        Indices into ``list(weights)``.

    Raises:
        ValueError: on a negative weight or a zero sum.
    """
    names = list(weights)
    p = np.array([float(weights[k]) for k in names], dtype=np.float64)
    if (p < 0).any() or p.sum() <= 0:
        raise ValueError(f"weights {weights} must be non-negative with a positive sum")
    return rng.choice(len(names), size=count, p=p / p.sum())


def float_blocks(
    rng: np.random.Generator,
    fmt: BfpFormat,
    count: int,
    weights: dict[str, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Random float32 blocks for a quantizer of format ``fmt``.

    Args:
        rng: the generator (seeded by the test).
        fmt: block format; blocks have ``fmt.n`` elements.
        count: number of blocks.
        weights: kind -> relative weight (default :data:`KINDS`).

    Returns:
        ``(bits, kinds)``: uint32 array ``(count, n)`` of float32 bit patterns and the
        kind index of each block (into ``list(weights)``).
    """
    if count < 0:
        raise ValueError(f"count={count} must be >= 0")
    weights = dict(weights or KINDS)
    names = list(weights)
    kinds = pick_kinds(rng, weights, count)
    out = np.zeros((count, fmt.n), dtype=np.uint32)
    for i, name in enumerate(names):
        sel = np.flatnonzero(kinds == i)
        if sel.size:
            out[sel] = float_kind(rng, name, sel.size, fmt)
    return out, kinds


def drawn_items(make: Callable[..., Any], cols: dict[str, np.ndarray], fields: list[str]) -> Items:
    """The draw ``cols`` as :class:`~lockstep.verif.columns.Items` of ``make``: item ``i``
    is ``make(**{f: cols[f][i] for f in fields})`` (a 1-D column's cell as a Python
    scalar, a 2-D column's row as a view), built only when it is read one by one (the
    per-edge sequence); the throughput mode reads the columns.

    Args:
        make: the item type.
        cols: field -> ``(N, ...)`` column.
        fields: the columns that are ``make``'s fields.
    """
    return Items(make, **{f: cols[f] for f in fields})
