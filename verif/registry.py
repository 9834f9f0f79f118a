"""The one registry of testbenches.

``make sim TEST=...``, pytest (``tests/test_sim.py``) and the regressions all read
:data:`TESTBENCHES`; nothing else lists testbenches. Adding a block family means adding
its entries here.

A generator is named by a ``"module:function"`` string and imported only when a build
needs it, so this module loads without MyHDL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockstep.models.formats import MX_ELEMENTS, PATENT, BfpFormat, MxParams

__all__ = ["Testbench", "TESTBENCHES", "SIMULATORS", "get", "UnknownTestbench"]

#: Simulators every testbench runs on.
SIMULATORS = ("icarus", "verilator")


class UnknownTestbench(KeyError):
    """A testbench name that is not registered; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Testbench:
    """One registered testbench.

    Attributes:
        name: unique name (``make sim TEST=<name>``).
        family: block family (``"bfp"``...).
        toplevel: Verilog module name of the DUT.
        params: the family's parameter record; the generator builds the DUT from it.
        generator: ``"module:function"`` with signature ``(params, outdir, name=...)``.
        test_module: cocotb test module run against the DUT.
        doc: one line shown by ``make list``.
        tb_params: parameters the *testbench* checks against, when they differ from the
            DUT's (negative tests: a deliberately wrong DUT must fail).
        expect_fail: the run must fail (a testbench that cannot fail proves nothing).
        opts: testbench options (``blocks``, ``idle``, ``backpressure``...).
        tier: ``"quick"`` (run by ``make test``) or ``"full"``.
        default_sim: simulator used by ``make sim`` when ``SIM`` is not given.
    """

    name: str
    family: str
    toplevel: str
    params: Any
    generator: str
    test_module: str
    doc: str
    tb_params: Any = None
    expect_fail: bool = False
    opts: dict[str, Any] = field(default_factory=dict)
    tier: str = "quick"
    default_sim: str = "verilator"


TESTBENCHES: dict[str, Testbench] = {}


def _register(tb: Testbench) -> None:
    if tb.name in TESTBENCHES:
        raise ValueError(f"testbench {tb.name!r} registered twice")
    if tb.tier not in ("quick", "full"):
        raise ValueError(f"testbench {tb.name!r}: tier {tb.tier!r} is not quick/full")
    TESTBENCHES[tb.name] = tb


def get(name: str) -> Testbench:
    """The testbench called ``name``.

    Raises:
        UnknownTestbench: listing every registered name.
    """
    try:
        return TESTBENCHES[name]
    except KeyError:
        known = "".join(f"\n  {n}" for n in sorted(TESTBENCHES))
        raise UnknownTestbench(f"unknown testbench {name!r}; known testbenches:{known}\n") from None


# ---- bfp family ---------------------------------------------------------------------
_QUANT_SETS = {
    # name suffix: (format, why)
    "w8n4_rne": (BfpFormat(w=8, e=5, n=4, rounding="rne", overflow="sat"), "RNE, saturate, tiny block"),
    "patent": (PATENT, "claim 29: W=16, E=5, saturate (the hdl/ default)"),
    "w16_wrap": (BfpFormat(w=16, e=5, n=16, rounding="trunc", overflow="wrap"), "W=16, E=5, wrap (Table 2)"),
    "w4n32_rne": (BfpFormat(w=4, e=8, n=32, rounding="rne", overflow="sat"), "W=4, MX-sized block"),
    "w16e3_trunc": (BfpFormat(w=16, e=3, n=8, rounding="trunc", overflow="sat"), "E=3: exponent clamps"),
}
for _suffix, (_fmt, _why) in _QUANT_SETS.items():
    _register(
        Testbench(
            name=f"bfp_quantize_{_suffix}",
            family="bfp",
            toplevel="bfp_quantize",
            params=_fmt,
            generator="lockstep.gen.bfp:emit_quantizer",
            test_module="lockstep.verif.bfp.test_quantizer",
            doc=f"float32 -> BFP quantizer, {_why}",
        )
    )

_register(
    Testbench(
        name="bfp_quantize_mutant",
        family="bfp",
        toplevel="bfp_quantize",
        params=BfpFormat(w=8, e=5, n=4, rounding="rne", overflow="sat"),
        tb_params=BfpFormat(w=8, e=5, n=4, rounding="trunc", overflow="sat"),
        generator="lockstep.gen.bfp:emit_quantizer",
        test_module="lockstep.verif.bfp.test_quantizer",
        doc="negative: an RNE quantizer checked as TRUNC must fail the scoreboard",
        expect_fail=True,
        opts={"blocks": 100},
    )
)

_TOFLOAT_SETS = {
    "patent": (PATENT, "claim 29 W=16 E=5 (always exact, normal)"),
    "w8e8n4": (BfpFormat(w=8, e=8, n=4), "E=8: +-Inf and exact subnormals"),
    "w24e10n2": (BfpFormat(w=24, e=10, n=2), "E=10: overflow, subnormal rounding, underflow, ties"),
    "w4e8n32": (BfpFormat(w=4, e=8, n=32), "W=4, 32 lanes"),
}
for _suffix, (_fmt, _why) in _TOFLOAT_SETS.items():
    _register(
        Testbench(
            name=f"bfp_to_float_{_suffix}",
            family="bfp",
            toplevel="bfp_to_float",
            params=_fmt,
            generator="lockstep.gen.bfp:emit_to_float",
            test_module="lockstep.verif.bfp.test_tofloat",
            doc=f"BFP -> float32, {_why}",
        )
    )
_register(
    Testbench(
        name="bfp_to_float_mutant",
        family="bfp",
        toplevel="bfp_to_float",
        params=BfpFormat(w=24, e=10, n=2),
        tb_params=BfpFormat(w=24, e=9, n=2),
        generator="lockstep.gen.bfp:emit_to_float",
        test_module="lockstep.verif.bfp.test_tofloat",
        doc="negative: a 10-bit-exponent converter checked as 9-bit must fail the scoreboard",
        expect_fail=True,
        opts={"blocks": 100},
    )
)

_DOT_SETS = {
    "w8n4_rne": (BfpFormat(w=8, e=5, n=4, rounding="rne"), "RNE bias alignment, tiny block"),
    "patent": (PATENT, "claim 29: W=16, E=5, n=16, TRUNC"),
    "w4n32_acc20": (BfpFormat(w=4, e=8, n=32, rounding="rne", acc=20), "W=4, n=32, non-default acc=20"),
    "w24n5_acc64": (BfpFormat(w=24, e=10, n=5, rounding="rne", acc=64), "W=24, E=10, odd n=5, acc=64"),
}
for _suffix, (_fmt, _why) in _DOT_SETS.items():
    _register(
        Testbench(
            name=f"bfp_dot_{_suffix}",
            family="bfp",
            toplevel="bfp_dot",
            params=_fmt,
            generator="lockstep.gen.bfp:emit_dot",
            test_module="lockstep.verif.bfp.test_dot",
            doc=f"BFP dot product + bias, {_why}",
        )
    )
_register(
    Testbench(
        name="bfp_dot_mutant",
        family="bfp",
        toplevel="bfp_dot",
        params=BfpFormat(w=8, e=5, n=4, rounding="rne"),
        tb_params=BfpFormat(w=8, e=5, n=4, rounding="trunc"),
        generator="lockstep.gen.bfp:emit_dot",
        test_module="lockstep.verif.bfp.test_dot",
        doc="negative: an RNE dot unit checked as TRUNC must fail the scoreboard",
        expect_fail=True,
        opts={"blocks": 200},
    )
)

_RENORM_SETS = {
    "patent": (PATENT, "claim 29: W=16, E=5, n=16 (the hdl/ default)"),
    "w8n4_rne": (BfpFormat(w=8, e=5, n=4, rounding="rne"), "RNE, saturate, tiny block"),
    "w16n16_wrap": (BfpFormat(w=16, e=5, n=16, overflow="wrap"), "claim 29 widths, wrap"),
    "w4e8n8_rne": (BfpFormat(w=4, e=8, n=8, rounding="rne"), "W=4, E=8"),
    "w16e6_acc64": (BfpFormat(w=16, e=6, n=8, acc=64, rounding="rne", overflow="wrap"), "64-bit acc, RNE+wrap"),
}
for _suffix, (_fmt, _why) in _RENORM_SETS.items():
    _register(
        Testbench(
            name=f"bfp_renorm_{_suffix}",
            family="bfp",
            toplevel="bfp_renorm",
            params=_fmt,
            generator="lockstep.gen.bfp:emit_renorm",
            test_module="lockstep.verif.bfp.test_renorm",
            doc=f"renormaliser (max/fixed e4 + mantissa shifter), {_why}",
        )
    )
_register(
    Testbench(
        name="bfp_renorm_mutant",
        family="bfp",
        toplevel="bfp_renorm",
        params=BfpFormat(w=8, e=5, n=4, rounding="rne"),
        tb_params=BfpFormat(w=8, e=5, n=4, rounding="trunc"),
        generator="lockstep.gen.bfp:emit_renorm",
        test_module="lockstep.verif.bfp.test_renorm",
        doc="negative: an RNE renormaliser checked as TRUNC must fail the scoreboard",
        expect_fail=True,
        opts={"blocks": 100},
    )
)

_STATS_SETS = {
    "patent": (PATENT, "claim 29 widths, window 1024 values, k=3, sat (the hdl/ default)"),
    "w8n4_rne": (BfpFormat(w=8, e=5, n=4, rounding="rne", stat_log2_win=4), "window 16, RNE"),
    "w16n16_reshift": (
        BfpFormat(w=16, e=5, n=16, overflow="wrap", stat_log2_win=5, k_sigma=2, stat_policy="reshift"),
        "window 32, k=2, reshift + clear (claims 30-31)",
    ),
    "w4e8n8_reshift": (
        BfpFormat(w=4, e=8, n=8, rounding="rne", stat_log2_win=3, k_sigma=0, stat_policy="reshift"),
        "one vector per window, k=0, reshift",
    ),
    "w12e6n4_wrap_sat": (
        BfpFormat(w=12, e=6, n=4, overflow="wrap", stat_log2_win=4, k_sigma=4),
        "window 16, k=4, wrap with saturating guard",
    ),
}
for _suffix, (_fmt, _why) in _STATS_SETS.items():
    _register(
        Testbench(
            name=f"bfp_stats_{_suffix}",
            family="bfp",
            toplevel="bfp_stats",
            params=_fmt,
            generator="lockstep.gen.bfp:emit_stats",
            test_module="lockstep.verif.bfp.test_stats",
            doc=f"statistics-mode exponent (mean + k*sigma), {_why}",
        )
    )
_register(
    Testbench(
        name="bfp_stats_mutant",
        family="bfp",
        toplevel="bfp_stats",
        params=BfpFormat(w=12, e=6, n=4, overflow="wrap", stat_log2_win=4, k_sigma=4),
        tb_params=BfpFormat(w=12, e=6, n=4, overflow="wrap", stat_log2_win=4, k_sigma=3),
        generator="lockstep.gen.bfp:emit_stats",
        test_module="lockstep.verif.bfp.test_stats",
        doc="negative: a k=4 statistics unit checked as k=3 must fail the scoreboard",
        expect_fail=True,
        opts={"blocks": 100},
    )
)

for _elem in MX_ELEMENTS:
    _register(
        Testbench(
            name=f"bfp_mx_{_elem}",
            family="bfp",
            toplevel="bfp_mx_quantize",
            params=MxParams(_elem, 32),
            generator="lockstep.gen.bfp:emit_mx_quantizer",
            test_module="lockstep.verif.bfp.test_mx",
            doc=f"float32 -> OCP MX v1.0 quantizer, {_elem}, block 32",
        )
    )
_register(
    Testbench(
        name="bfp_mx_fp8_e4m3_b4",
        family="bfp",
        toplevel="bfp_mx_quantize",
        params=MxParams("fp8_e4m3", 4),
        generator="lockstep.gen.bfp:emit_mx_quantizer",
        test_module="lockstep.verif.bfp.test_mx",
        doc="float32 -> OCP MX quantizer, fp8_e4m3, tiny block of 4",
    )
)
_register(
    Testbench(
        name="bfp_mx_mutant",
        family="bfp",
        toplevel="bfp_mx_quantize",
        params=MxParams("fp8_e4m3", 4),
        tb_params=MxParams("fp8_e5m2", 4),
        generator="lockstep.gen.bfp:emit_mx_quantizer",
        test_module="lockstep.verif.bfp.test_mx",
        doc="negative: an E4M3 quantizer checked as E5M2 must fail the scoreboard",
        expect_fail=True,
        opts={"blocks": 100},
    )
)
