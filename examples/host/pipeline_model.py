"""The host task pipeline's schedules with the pure models only (no simulator).

Spec 002's worked example (p = 3, e = 2, q = 1, n = 4): the accelerator's busy fraction
and the total time without a pipeline, with the patent's lock-step pipeline and with
free-running bounded queues, from the analytic model and from the discrete-event model
(``lockstep.models.host.pipe``); then method 600's tuner moves a host worker from
post- to pre-processing and the pipeline balances; last, random stage times, where
lock-step pays the slowest stage of every period and the stream pipeline does not.

Run it:  ci/env.sh python examples/host/pipeline_model.py   (tests/test_examples.py runs it too)
"""

from __future__ import annotations

import numpy as np

from lockstep.models.host.pipe import (
    busy_fraction, lockstep_model, serial_model, simulate, stream_model, tune,
)

p, e, q, n = 3, 2, 1, 4
times = {"pre": p, "kernel": e, "post": q}

print(f"stage times p={p} e={e} q={q}, n={n} tasks")
print(f"{'scheme':10} {'busy (model)':>13} {'total (model)':>14} {'total (DES)':>12} "
      f"{'busy in steady state (DES)':>27}")
models = {"serial": serial_model(p, e, q, n), "lockstep": lockstep_model(p, e, q, n),
          "stream": stream_model(p, e, q, n)}
for mode, m in models.items():
    r = simulate(mode, n, times)
    # steady state: the serial run is one; the pipelines between the 2nd and the 4th kernel
    # task start (lock-step: periods c and d, where every stage holds a packet)
    k = sorted(ev.start for ev in r.events if ev.kind == "kernel")
    t0, t1 = (0, r.total) if mode == "serial" else (k[1], k[3])
    steady = busy_fraction(r.events, "kernel0", t0, t1)
    print(f"{mode:10} {m.busy:13.0%} {m.total:14g} {r.total:12g} {steady:27.0%}")
    assert abs(steady - m.busy) < 1e-9
    assert r.total == m.exact
print("  (lock-step: the spec's (n+S-1)*max = 18 counts the drain periods as full ones; a period lasts")
print("   as long as its slowest occupied stage, so the DES drains in 2 + 1: 15, lockstep_model().exact)")

# method 600: pre is slow, post is fast. Pre and post share 4 host workers (2 + 2), so
# their work is 3*2 = 6 and 1*2 = 2. The tuner moves a worker from post to pre.
t = tune({"pre": p, "exec": e, "post": q}, {"pre": 2, "exec": 1, "post": 2})
print(f"\ntuner: workers {t.workers} -> stage times {t.times} (period {t.period_before:g} -> {t.period:g})")
bal = lockstep_model(t.times["pre"], t.times["exec"], t.times["post"], n)
r = simulate("lockstep", n, {"pre": p * 2, "kernel": e, "post": q * 2}, workers={"pre": t.workers["pre"],
                                                                                 "post": t.workers["post"]})
print(f"rebalanced lock-step: busy {bal.busy:.0%}, total {bal.total:g} (DES {r.total:g})")
assert (round(100 * models["serial"].busy), models["serial"].total) == (33, 24)
assert (round(100 * models["lockstep"].busy), models["lockstep"].total) == (67, 18)
assert (bal.busy, bal.total, r.total) == (1.0, 12, 12)

# random stage times with the same means: lock-step waits for E[max] each period
spec = {"pre": ("exp", 3.0), "kernel": ("exp", 2.0), "post": ("exp", 1.0)}
tot = {mode: np.mean([simulate(mode, 50, spec, seed=s).total for s in range(20)]) for mode in ("lockstep", "stream")}
print(f"\nrandom times (exponential, means 3/2/1), 50 tasks, 20 seeds: mean total lock-step {tot['lockstep']:.1f}, "
      f"stream {tot['stream']:.1f}")
assert tot["stream"] < tot["lockstep"]
