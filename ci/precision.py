"""`make precision`: SQNR of BFP versus float32, from the golden model, checked on RTL.

For W = 4..16 and N = 4..64, on Gaussian and heavy-tailed (Student-t, 3 degrees of
freedom) data, it quantizes with Eq. 4's exponent (E = 8 bits, so no clamping) using
TRUNC and RNE, and reports:

* SQNR = 10 log10(sum x^2 / sum (x - m 2^e)^2) in dB, exact dequantization;
* the RNE gain over truncation (dB);
* storage bits per element, W + E/N (versus 32 for float32).

A subset is cross-checked against the RTL quantizer: the testbench dumps the DUT's
mantissas and exponents for N(0,1) blocks, and the SQNR computed from them must equal
the model's to the last bit (it is the same numbers, or the report fails).

Writes build/reports/precision/{precision.md, precision.json, precision.png}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from lockstep.models import bfp
from lockstep.models.bfp.params import BfpFormat

WIDTHS = list(range(4, 17))
BLOCKS = [4, 8, 16, 32, 64]
E_BITS = 8
OUT = Path(__file__).resolve().parent.parent / "build" / "reports" / "precision"


def data(kind: str, rng: np.random.Generator, size: int) -> np.ndarray:
    """float32 test data: ``gauss`` (N(0,1)) or ``heavy`` (Student-t, 3 dof)."""
    if kind == "gauss":
        return rng.standard_normal(size).astype(np.float32)
    return rng.standard_t(3, size).astype(np.float32)


def sqnr_db(x: np.ndarray, fmt: BfpFormat) -> float:
    """SQNR (dB) of quantizing ``x`` (flat float32, a multiple of fmt.n) with ``fmt``."""
    blocks = x.reshape(-1, fmt.n)
    e, m, _ = bfp.quantize(blocks, fmt)
    return sqnr_from(blocks, e, m)


def sqnr_from(blocks: np.ndarray, e: np.ndarray, m: np.ndarray) -> float:
    """SQNR (dB) of blocks against their BFP representation (exact dequantization)."""
    xq = bfp.dequantize(e, m)
    x = blocks.astype(np.float64)
    noise = np.sum((x - xq) ** 2)
    return float("inf") if noise == 0 else float(10 * np.log10(np.sum(x**2) / noise))


def sweep(samples: int, seed: int) -> dict:
    """The whole table: kind -> rounding -> W -> N -> SQNR dB."""
    rng = np.random.default_rng(seed)
    out: dict = {}
    for kind in ("gauss", "heavy"):
        x = data(kind, rng, samples)
        for rounding in ("trunc", "rne"):
            for w in WIDTHS:
                for n in BLOCKS:
                    fmt = BfpFormat(w=w, e=E_BITS, n=n, rounding=rounding, overflow="sat")
                    out.setdefault(kind, {}).setdefault(rounding, {}).setdefault(w, {})[n] = sqnr_db(x, fmt)
    return out


def rtl_crosscheck(sims: list[str], blocks: int, seed: int) -> list[dict]:
    """Run the RTL quantizer on Gaussian blocks and compare SQNR with the model's."""
    from lockstep.verif.registry import get
    from lockstep.verif.runner import run

    rows = []
    for name in ("bfp_quantize_w8n4_rne", "bfp_quantize_patent", "bfp_quantize_w4n32_rne"):
        fmt: BfpFormat = get(name).params
        for sim in sims:
            res = run(name, sim, seed=seed, opts={"blocks": blocks, "kinds": {"normal": 1}, "dump": True,
                                                   "force_rate": 0.0, "idle": 0.0, "backpressure": 0.0})
            dump = np.load(res.results / "outputs.npz")
            blk = dump["bits"].view(np.float32)
            ge, gm, _ = bfp.quantize(dump["bits"], fmt)
            rtl, model = sqnr_from(blk, dump["exp"], dump["man"]), sqnr_from(blk, ge, gm)
            rows.append({"test": name, "sim": sim, "w": fmt.w, "n": fmt.n, "rounding": fmt.rounding,
                         "blocks": int(len(blk)), "sqnr_rtl": rtl, "sqnr_model": model,
                         "equal": rtl == model and res.ok})
    return rows


def plot(table: dict, path: Path) -> None:
    """SQNR versus W, one line per N; Gaussian and heavy-tailed panels; RNE solid."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, kind in zip(axes, ("gauss", "heavy")):
        for i, n in enumerate(BLOCKS):
            color = f"C{i}"
            for rounding, style in (("rne", "-"), ("trunc", "--")):
                ys = [table[kind][rounding][w][n] for w in WIDTHS]
                ax.plot(WIDTHS, ys, style, color=color, marker="o" if rounding == "rne" else None,
                        ms=3, label=f"N={n} {rounding.upper()}" if kind == "gauss" else None)
        ax.set_title({"gauss": "Gaussian N(0,1)", "heavy": "heavy-tailed (Student-t, 3 dof)"}[kind])
        ax.set_xlabel("mantissa width W (bits, sign included)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("SQNR vs float32 (dB)")
    fig.legend(loc="lower center", ncol=5, fontsize=8, frameon=False)
    fig.suptitle(f"Block floating point: SQNR by mantissa width and block size (E={E_BITS})")
    fig.tight_layout(rect=(0, 0.12, 1, 0.95))
    fig.savefig(path, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=1 << 16, help="values per data kind")
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--rtl", default="icarus,verilator", help="simulators for the cross-check ('' for none)")
    ap.add_argument("--rtl-blocks", type=int, default=500)
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    table = sweep(a.samples, a.seed)
    lines = [f"# BFP precision (model, {a.samples} values per kind, E={E_BITS}, seed {a.seed})", ""]
    for kind in ("gauss", "heavy"):
        lines += [f"## SQNR (dB), {kind}, RNE [TRUNC]", "",
                  "| W | " + " | ".join(f"N={n}" for n in BLOCKS) + " | RNE gain (N=16) |",
                  "|---" * (len(BLOCKS) + 2) + "|"]
        for w in WIDTHS:
            cells = [f"{table[kind]['rne'][w][n]:.1f} [{table[kind]['trunc'][w][n]:.1f}]" for n in BLOCKS]
            gain = table[kind]["rne"][w][16] - table[kind]["trunc"][w][16]
            lines.append(f"| {w} | " + " | ".join(cells) + f" | {gain:+.1f} |")
        lines.append("")
    lines += ["## Storage, bits per element (W + E/N; float32 = 32)", "",
              "| W | " + " | ".join(f"N={n}" for n in BLOCKS) + " |", "|---" * (len(BLOCKS) + 1) + "|"]
    for w in (4, 8, 16):
        lines.append(f"| {w} | " + " | ".join(f"{BfpFormat(w=w, e=E_BITS, n=n).bits_per_element:.3f}"
                                               for n in BLOCKS) + " |")
    rows = rtl_crosscheck([s for s in a.rtl.split(",") if s], a.rtl_blocks, a.seed) if a.rtl else []
    if rows:
        lines += ["", "## RTL cross-check (N(0,1) blocks through the generated quantizer)", "",
                  "| testbench | sim | W | N | rounding | blocks | SQNR RTL | SQNR model | identical |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['test']} | {r['sim']} | {r['w']} | {r['n']} | {r['rounding']} | {r['blocks']} | "
                         f"{r['sqnr_rtl']:.3f} | {r['sqnr_model']:.3f} | {'yes' if r['equal'] else 'NO'} |")
    (OUT / "precision.md").write_text("\n".join(lines) + "\n")
    (OUT / "precision.json").write_text(json.dumps({"table": table, "rtl": rows}, indent=1))
    plot(table, OUT / "precision.png")
    print("\n".join(lines))
    print(f"\nprecision: wrote {OUT}/precision.md, precision.json, precision.png")
    bad = [r for r in rows if not r["equal"]]
    if bad:
        print(f"precision: RTL and model disagree on {len(bad)} cross-check(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
