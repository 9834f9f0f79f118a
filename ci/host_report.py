"""`make host-report`: the host family's measured claims (docs/host.md section 12),
measured in simulation on ``host_top``.

1. The accelerator's busy fraction and total time for a stream of 24 fixed tasks (int8
   16 x 32 @ 32 x 16, exec_cycles 899) in the serial, lock-step and stream modes, with one
   and two kernels, host stages of 400 cycles (not the bottleneck): the testbenches
   ``host_measure_<mode>_k<n>`` (every result checked bit-exact). Next to each: the
   analytic model (``lockstep.models.host.pipe``: ``serial_model``, ``lockstep_model``,
   ``stream_model``) and the discrete-event model (``simulate``), both fed with the step
   times measured in the same run (mean DMA, packet write and kernel cycles), so the table
   shows what the hardware and the coroutine pipeline add to the model.
2. The rebalancing example (spec 4.2 scaled by 450 cycles): pre-processing the bottleneck
   (2 workers of 2700 cycles per packet), post-processing idle (2 of 900); method 600's
   tuner (``tune``) reads the measured stage times and moves workers; the same stream is
   run again with its answer.

The claim checked: busy >= 95 % in steady state (from the 3rd task's kernel start to the
end of the 3rd-last one) in stream mode, for one and for two kernels, when the host
stages are not the bottleneck. Writes build/reports/host/{host_report.md,
host_report.json, timing_<run>.png}.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from lockstep.models.host.pipe import lockstep_model, serial_model, simulate, stream_model, tune
from lockstep.verif.registry import HOST_MEASURE_TASKS, get
from lockstep.verif.runner import run

OUT = Path(__file__).resolve().parent.parent / "build" / "reports" / "host"
GOAL = 0.95
MODELS = {"serial": serial_model, "lockstep": lockstep_model, "stream": stream_model}


def _run(name: str, sim: str, seed: int, opts: dict[str, Any] | None = None, tag: str = "") -> dict[str, Any]:
    res = run(name, sim, seed=seed, opts=opts or {})
    print(f"[host-report] {res.line()}", flush=True)
    if not res.ok:
        raise SystemExit(f"host-report: {name} on {sim} failed; see {res.results}/sim.log ({res.repro()})")
    png = Path(res.results) / "timing.png"
    if png.exists():
        shutil.copy(png, OUT / f"timing_{tag or name}.png")
    return res.summary


def _models(s: dict[str, Any], mode: str, nk: int, workers: dict[str, int] | None = None,
            times: dict[str, float] | None = None) -> dict[str, float]:
    """Analytic and DES predictions from the run's measured step means."""
    m = s["mean"]
    p, q = (times or {}).get("pre", m["pre"]), (times or {}).get("post", m["post"])
    steps = {"dma_wr": m["dma_wr"], "desc": m["desc"], "dma_rd": m["dma_rd"]}
    kw = {"workers": workers} if workers else {}
    if mode == "stream":
        an = stream_model(p, m["kernel"], q, s["tasks"], n_kernels=nk, **steps, **kw)
    else:  # one task in the exec stage at a time: n kernels share its busy time
        an = MODELS[mode](p, m["kernel"], q, s["tasks"], **steps, **kw)
        an = an._replace(busy=an.busy / nk)
    des = simulate(mode, s["tasks"], {"pre": p, "post": q, "kernel": m["kernel"], **steps}, workers=workers,
                   n_kernels=nk, sq_depth=8)
    return {"model_busy": an.busy, "model_total": an.exact, "des_total": des.total,
            "des_busy": sum(des.busy) / len(des.busy)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", default="verilator", help="simulator (the measurement testbenches are Verilator only)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    sim = args.sims.split(",")[0]
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for mode in ("serial", "lockstep", "stream"):
        for nk in (1, 2):
            name = f"host_measure_{mode}_k{nk}"
            s = _run(name, sim, args.seed, tag=f"{mode}_k{nk}")
            rows.append({"mode": mode, "kernels": nk, "tasks": s["tasks"], "cycles": s["cycles"],
                         "busy": s["busy_mean"], "busy_steady": s["busy_steady"], "mean": s["mean"],
                         "sq_wait": s["sq_wait"], **_models(s, mode, nk)})
    # the rebalancing example: measure, tune, run again with the tuner's workers
    tb = get("host_rebalance")
    w0 = dict(tb.opts["workers"])
    before = _run("host_rebalance", sim, args.seed, tag="rebalance_before")
    # stream workers take whole packets: a stage's time per packet is its mean over workers
    stage = {"pre": before["mean"]["pre"] / w0["pre"], "exec": before["mean"]["kernel"],
             "post": before["mean"]["post"] / w0["post"]}
    tuned = tune(stage, {**w0, "exec": 1})
    w1 = {"pre": tuned.workers["pre"], "post": tuned.workers["post"]}
    after = _run("host_rebalance", sim, args.seed, opts={"workers": w1}, tag="rebalance_after")
    reb = []
    for label, s, w in (("before", before, w0), ("after (tuner)", after, w1)):
        reb.append({"run": label, "workers": w, "cycles": s["cycles"], "busy": s["busy_mean"],
                    "busy_steady": s["busy_steady"], **_models(s, "stream", 1, workers=w,
                                                                  times=tb.opts["times"])})
    # the claim
    bad = [r for r in rows if r["mode"] == "stream" and r["busy_steady"] < GOAL]
    lines = ["# Host task pipeline: measured busy fraction (make host-report)", "",
             f"{HOST_MEASURE_TASKS} tasks, int8 16x32 @ 32x16 (exec_cycles 899, mem_lat 2), pre = post = 400 cycles; "
             f"simulator {sim}, seed {args.seed}. Busy = kernel busy cycles / cycles of the run (mean over kernels); "
             "steady = from the 3rd task's kernel start to the 3rd-last one's end. Model = the analytic model, DES "
             "= the discrete-event model, both with the step times measured in the run.", "",
             "| mode | kernels | cycles | DES cycles | model cycles | busy | steady busy | DES busy | model busy |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['kernels']} | {r['cycles']} | {r['des_total']:.0f} | {r['model_total']:.0f} "
                     f"| {r['busy']:.1%} | {r['busy_steady']:.1%} | {r['des_busy']:.1%} | {r['model_busy']:.1%} |")
    lines += ["", "Mean step cycles (stream, 1 kernel): " + ", ".join(
        f"{k} {v:.1f}" for k, v in next(r for r in rows if r["mode"] == "stream" and r["kernels"] == 1)["mean"].items()),
        "", "## Rebalancing (spec 4.2 scaled by 450 cycles; method 600's tuner)", "",
        f"Tuner: stage times {({k: round(v, 1) for k, v in stage.items()})} with workers {w0} -> workers {w1}, "
        f"period {tuned.period_before:.0f} -> {tuned.period:.0f}.", "",
        "| run | workers | cycles | DES cycles | busy | steady busy | model busy |", "|---|---|---|---|---|---|---|"]
    for r in reb:
        lines.append(f"| {r['run']} | pre {r['workers']['pre']}, post {r['workers']['post']} | {r['cycles']} | "
                     f"{r['des_total']:.0f} | {r['busy']:.1%} | {r['busy_steady']:.1%} | {r['model_busy']:.1%} |")
    lines += ["", f"Claim: stream mode, host not the bottleneck: steady busy >= {GOAL:.0%} with 1 and 2 kernels: "
              + ("**met**" if not bad else "**NOT met**: " + ", ".join(f"{r['kernels']} kernel(s) "
                                                                      f"{r['busy_steady']:.1%}" for r in bad))]
    (OUT / "host_report.md").write_text("\n".join(lines) + "\n")
    (OUT / "host_report.json").write_text(json.dumps({"rows": rows, "rebalance": reb, "tuner": {
        "stage": stage, "before": w0, "after": w1}}, indent=2) + "\n")
    print("\n".join(lines))
    print(f"[host-report] {OUT / 'host_report.md'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
