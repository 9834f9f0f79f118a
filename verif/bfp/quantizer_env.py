"""Testbench knowledge of the BFP quantizer (float32 block -> exponent, mantissas, flags).

Plugs into :mod:`lockstep.verif.stream_env`: stimulus from :mod:`.stimulus` (corner
biased, plus forced-exponent blocks, the patent's Table 2 mode), a check that predicts
every block with :func:`lockstep.models.bfp.quantize` in one vectorised call, and cover
points over flags, exponent range, stimulus kinds, forcing and RNE round-ups.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from lockstep.models import bfp
from lockstep.models.bfp.params import BfpFormat
from lockstep.verif.agents.stream import Beat
from lockstep.verif.columns import col, ints, lanes, signed
from lockstep.verif.coverage import Covergroup
from lockstep.verif.packing import pack_lanes
from lockstep.verif.stream_env import GoldenFlagsQuiet, StreamTest, StreamUnit
from lockstep.verif.bfp.bins import EXP_BINS, exp_class

from .stimulus import KINDS, LONE_CLASSES, drawn_items, float_blocks, float_kind, lone_bit_blocks, lone_class

__all__ = ["PATENT_VECTORS", "QuantItem", "QuantUnit", "QuantTest", "QuantPatentTest"]

#: The patent's own numbers, typed in from spec 004 (not computed by any model here):
#: (inputs, forced exponent or None, expected exponent, expected mantissas of the inputs)
#: for a W=16, E=5, TRUNC, WRAP quantizer. Table 2 ([0064]-[0068]): exponents +3 and -3,
#: the -3 row wrapping 131072 to 0; the 255 row of Table 3 ([0079]); 11.5 -> -11 from the
#: mean + 3 sigma example ([0088]-[0091]); and section 2.2's table of Eq. 4 vectors.
PATENT_VECTORS: list[tuple[list[float], int | None, int, list[int]]] = [
    ([131072, 256, 1, 0.5, 0.125], 3, 3, [0x4000, 0x0020, 0x0000, 0x0000, 0x0000]),
    ([131072, 256, 1, 0.5, 0.125], -3, -3, [0x0000, 0x0800, 0x0008, 0x0004, 0x0001]),
    ([131072, 256, 1, 0.5, 0.125], None, 3, [0x4000, 0x0020, 0x0000, 0x0000, 0x0000]),
    ([255.0], None, -7, [0x7F80]),
    ([11.5], None, -11, [0x5C00]),
    ([1.0], None, -14, [0x4000]),
    ([0.5], None, -15, [0x4000]),
    ([131072.0], None, 3, [0x4000]),
    ([1 / 3], None, -16, [0x5555]),
    ([3.141592653589793], None, -13, [0x6487]),
]


@dataclass
class QuantItem:
    """One input block.

    Attributes:
        bits: ``n`` float32 bit patterns.
        force: use ``exp`` instead of Eq. 4.
        exp: forced exponent.
        kind: stimulus kind (for coverage and error messages).
        expect: a directed vector's (exponent, leading mantissas) from the patent text.

    Testbench options (``--opt`` / registry ``opts``): ``blocks``, ``idle``,
    ``backpressure``, ``force_rate``, ``kinds`` (kind -> weight, see
    :data:`.stimulus.KINDS`) and ``dump`` (write the DUT's outputs to ``outputs.npz``).
    """

    bits: np.ndarray
    force: bool = False
    exp: int = 0
    kind: str = "gauss"
    expect: tuple[int, list[int]] | None = None


class QuantUnit(GoldenFlagsQuiet, StreamUnit):
    """The quantizer: ``in_data/in_force/in_exp`` -> ``out_data/out_exp/out_flags``."""

    params_type = BfpFormat
    in_fields = ["data", "force", "exp"]
    out_fields = ["data", "exp", "flags"]
    covergroup = "bfp.quantizer"

    #: the run's opening sweep of ``lone`` blocks is drawn (the stimulus comes chunk by chunk)
    _lone_swept = False

    def items(self, rng: np.random.Generator, count: int) -> list[QuantItem]:
        """Random blocks of the ``kinds`` mix; a mix with ``lone`` blocks opens the run
        with one of each class in each lane (:data:`~.stimulus.LONE_CLASSES`), so even a
        short run sees every lane's detectors alone. Forced blocks sweep the shifters
        (:meth:`_pow2_sweep`), and some unforced ones sweep every lane's fraction bits
        (:func:`~.stimulus.lone_bit_blocks`)."""
        fmt: BfpFormat = self.params
        mix = self.ctx.opt("kinds", None) or KINDS
        bits, kinds = float_blocks(rng, fmt, count, mix)
        lone = 0
        if mix.get("lone", 0) > 0 and not self._lone_swept:
            lone = min(count, len(LONE_CLASSES) * fmt.n)
            bits[:lone], kinds[:lone] = float_kind(rng, "lone", lone, fmt), list(mix).index("lone")
            self._lone_swept = True
        force = rng.random(count) < float(self.ctx.opt("force_rate", 0.1))
        exps = rng.integers(fmt.e_min, fmt.e_max + 1, size=count)
        edge = rng.random(count) < 0.25   # a quarter of the forced exponents at the range's ends
        exps[edge] = np.where(rng.random(int(edge.sum())) < 0.5, fmt.e_min, fmt.e_max)
        labels = np.array(list(mix), dtype=object)[kinds]
        # two forced blocks in three sweep the shifters (never over the opening lone blocks)
        sweep = force & (rng.random(count) < 2 / 3)
        sweep[:lone] = False
        idx = np.flatnonzero(sweep)
        if idx.size:
            bits[idx], exps[idx] = self._pow2_sweep(rng, idx.size)
            labels[idx] = "forced_pow2"
        # n unforced blocks in 128 (at most a quarter) go on with the lone-bit sweep (every
        # fraction bit of every lane the block's only one set, in 23 * n such blocks:
        # lone_bit_blocks): a 4096-block run sweeps every pair up to n = 32
        idx = np.flatnonzero(~force & (rng.random(count) < min(0.25, fmt.n / 128)) & (np.arange(count) >= lone))
        if idx.size:
            bits[idx] = lone_bit_blocks(rng, self._bit_at, idx.size, fmt.n)
            self._bit_at += idx.size
            labels[idx] = "lone_bit"
        return drawn_items(QuantItem, {"bits": bits, "force": force, "exp": exps, "kind": labels},
                           ["bits", "force", "exp", "kind"])

    _sweep_at = 0   # forced power-of-two blocks sent so far (the sweep goes on from there)
    _bit_at = 0     # lone-bit blocks sent so far (likewise)

    def _pow2_sweep(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``count`` blocks of powers of two against a forced exponent: lane ``i`` of the
        ``j``-th such block holds ``+-2**(exp + k)`` with ``k`` the ``(j + i)``-th of
        ``-26 .. 24 + w`` (cyclically), so its mantissa before rounding is the one bit
        ``2**k``: below the rounding position (round and sticky), at each position of the
        24-bit significand's integer part, and past it into overflow. Over one cycle of
        ``k`` every lane puts its one bit at every position of its shifter: a bit stuck at
        0 anywhere on that path shows (bfp_quantize@9623 m078, bit 11 of the integer part
        under a forced exponent, survived 1000 random blocks)."""
        fmt: BfpFormat = self.params
        ks = np.arange(-26, 25 + fmt.w)
        j = self._sweep_at + np.arange(count)
        self._sweep_at += count
        k = ks[(j[:, None] + np.arange(fmt.n)[None, :]) % ks.size]
        # every 2**(exp + k) a normal float32: biased exponent exp + k + 127 in 1 .. 254
        lo, hi = max(fmt.e_min, 1 - 127 - int(ks[0])), min(fmt.e_max, 254 - 127 - int(ks[-1]))
        ex = rng.integers(lo, hi + 1, size=count)
        sign = rng.integers(0, 2, size=(count, fmt.n)).astype(np.uint32) << np.uint32(31)
        bits = sign | ((ex[:, None] + k + 127).astype(np.uint32) << np.uint32(23))
        return bits, ex

    def encode(self, item: QuantItem) -> dict[str, int]:
        return {
            "data": pack_lanes(item.bits, 32),
            "force": int(item.force),
            "exp": int(item.exp) & ((1 << self.params.e) - 1),
        }

    def encode_columns(self, items: list[QuantItem]) -> dict[str, np.ndarray]:
        fmt: BfpFormat = self.params
        return {
            "data": col(items, "bits", np.uint32).reshape(len(items), fmt.n),
            "force": col(items, "force", np.int64),
            "exp": col(items, "exp", np.int64) & ((1 << fmt.e) - 1),
        }

    def golden(self, items: list[QuantItem]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Model outputs for ``items`` (forced blocks use the forced exponent)."""
        fmt: BfpFormat = self.params
        bits = col(items, "bits", np.uint32).reshape(len(items), fmt.n)
        force = col(items, "force", bool)
        g_exp, g_man, g_flg = bfp.quantize(bits, fmt)
        if force.any():
            forced = col(items, "exp", np.int64)[force]
            g_exp[force], g_man[force], g_flg[force] = bfp.quantize(bits[force], fmt, exp=forced)
        return g_exp, g_man, g_flg

    def _decode(self, outs: list[dict[str, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        fmt: BfpFormat = self.params
        man = lanes(outs, "data", fmt.w, fmt.n, signed=True)
        exp = signed(outs, "exp", fmt.e)
        flg = ints(outs, "flags")
        return exp, man, flg

    def check(self, items, outs):
        g_exp, g_man, g_flg = self.golden(items)
        d_exp, d_man, d_flg = self._decode(outs)
        if self.ctx.opt("dump", False):  # raw DUT outputs, e.g. for the precision report
            np.savez(
                self.ctx.results / "outputs.npz",
                bits=col(items, "bits", np.uint32),
                force=col(items, "force"),
                exp=d_exp,
                man=d_man,
                flags=d_flg,
            )
        bad = np.flatnonzero((d_exp != g_exp) | (d_flg != g_flg) | (d_man != g_man).any(axis=1))
        errors = []
        for i in self.shown(bad):
            forced = f", forced exp {items[i].exp}" if items[i].force else ""
            errors.append(
                f"block {i} ({items[i].kind}{forced}): input {[hex(v) for v in items[i].bits]}\n"
                f"    DUT    exp={d_exp[i]} flags={bfp.decode_flags(int(d_flg[i]))} m={d_man[i].tolist()}\n"
                f"    golden exp={g_exp[i]} flags={bfp.decode_flags(int(g_flg[i]))} m={g_man[i].tolist()}"
            )
        errors += self.more(bad, "blocks")
        return errors, len(bad), bfp.sticky(g_flg)

    def define_coverage(self, cg: Covergroup) -> None:
        fmt: BfpFormat = self.params
        for name, bit in bfp.FLAG_NAMES.items():
            cg.point(f"flag_{name}", lambda t, b=bit: bool(t["flags"] & b), [False, True])

        cg.point("exponent", lambda t: exp_class(t["exp"], fmt), EXP_BINS)
        cg.point("forced", lambda t: t["force"], [False, True])
        mix = self.ctx.opt("kinds", None) or KINDS
        cg.point("kind", lambda t: t["kind"], [k for k, wgt in mix.items() if wgt > 0])
        if mix.get("lone", 0) > 0:   # each detector of each lane alone: a class in one lane, the rest normal
            cg.point("lone", lambda t: t["lone"], [f"{c}@{lane}" for c in LONE_CLASSES for lane in range(fmt.n)])
        if fmt.rounding == "rne":
            cg.point("round_up", lambda t: t["round_up"], [False, True])

    def sample_columns(self, items: list[QuantItem], outs: list[Beat]) -> dict[str, np.ndarray]:
        fmt: BfpFormat = self.params
        d_exp, d_man, d_flg = self._decode(outs)
        # A round-up: an element whose RNE magnitude exceeds its truncated magnitude.
        _, m_t, _ = bfp.quantize(col(items, "bits", np.uint32), dataclasses.replace(fmt, rounding="trunc"))
        return {
            "flags": d_flg,
            "exp": d_exp,
            "force": col(items, "force", bool),
            "kind": col(items, "kind"),
            "lone": lone_class(col(items, "bits", np.uint32)),
            "round_up": (np.abs(d_man) > np.abs(m_t)).any(axis=1),
        }


class QuantTest(StreamTest):
    """Random blocks with idle cycles and back-pressure, checked against the model."""

    UNIT = QuantUnit


class QuantPatentUnit(QuantUnit):
    """Directed: the patent's numbers (:data:`PATENT_VECTORS`), each sent several times
    among idle cycles and back-pressure; checked against the model *and* the literal
    values from the patent text."""

    def items(self, rng: np.random.Generator, count: int) -> list[QuantItem]:
        fmt: BfpFormat = self.params
        want = BfpFormat(w=16, e=5, n=fmt.n, rounding="trunc", overflow="wrap")
        if fmt != want:
            raise ValueError(f"the patent vectors need {want}, the testbench was given {fmt}")
        nv = len(PATENT_VECTORS)
        blocks = np.zeros((nv, fmt.n), dtype=np.float32)
        for v, (xs, _, _, _) in enumerate(PATENT_VECTORS):
            blocks[v, : len(xs)] = xs
        vec = np.arange(count) % nv
        expect = np.empty(nv, dtype=object)
        for v, (_, _, exp, mant) in enumerate(PATENT_VECTORS):
            expect[v] = (exp, mant)
        return drawn_items(QuantItem, {
            "bits": blocks.view(np.uint32)[vec],
            "force": np.array([f is not None for _, f, _, _ in PATENT_VECTORS])[vec],
            "exp": np.array([f or 0 for _, f, _, _ in PATENT_VECTORS], dtype=np.int64)[vec],
            "kind": np.full(count, "patent"),
            "expect": expect[vec],
        }, ["bits", "force", "exp", "kind", "expect"])

    def check(self, items, outs):
        errors, bad, sticky = super().check(items, outs)
        d_exp, d_man, _ = self._decode(outs)
        vec = self._vectors(items)
        for v in np.unique(vec).tolist():   # each vector: its rows at once
            exp, mant = PATENT_VECTORS[v][2:]
            rows = np.flatnonzero(vec == v)
            got = d_man[rows, : len(mant)] & 0xFFFF
            wrong = rows[(d_exp[rows] != exp) | (got != np.array(mant)).any(axis=1)]
            for i in wrong[: self.report_limit]:
                it = items[i]
                errors.append(
                    f"patent vector {i}: inputs {it.bits.view(np.float32)[: len(mant)].tolist()}"
                    f"{' forced exp %d' % it.exp if it.force else ''}: DUT exponent {d_exp[i]}, "
                    f"mantissas {[hex(int(v) & 0xFFFF) for v in d_man[i][: len(mant)]]}; the patent says {exp}, "
                    f"{[hex(v) for v in mant]}"
                )
        return errors, bad, sticky

    def define_coverage(self, cg: Covergroup) -> None:
        cg.point("vector", lambda t: t["vector"], list(range(len(PATENT_VECTORS))))

    @staticmethod
    def _vectors(items) -> np.ndarray:
        """Which of :data:`PATENT_VECTORS` each item is (by its forced exponent and its
        expectation: vectors 0 and 2 expect the same, one forced, and keyed by the
        expectation alone vector 0's cover bin was never hit)."""
        index = {(f, exp, tuple(mant)): v for v, (_, f, exp, mant) in enumerate(PATENT_VECTORS)}
        forced = np.where(col(items, "force", bool), col(items, "exp", np.int64), None).tolist()
        return np.array([index[(f, e, tuple(m))] for f, (e, m) in zip(forced, col(items, "expect", object).tolist())],
                        dtype=np.int64)

    def sample_columns(self, items, outs):
        return {"vector": self._vectors(items)}


class QuantPatentTest(StreamTest):
    """The patent's directed vectors through the RTL."""

    UNIT = QuantPatentUnit
