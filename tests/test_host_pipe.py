"""Pipeline schedules of the host library (models/host/pipe.py; spec 002 sections 2.4,
2.8, 2.9, 4.2): the discrete-event model against the analytic model, the spec's worked
example and the tuner, busy fractions, the chart and the reorder buffer. Expected
numbers are worked by hand from the spec."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from lockstep.models.record import ParamError
from lockstep.models.host.lib import TaskPacket
from lockstep.models.host.pipe import (
    Event, InOrder, busy_fraction, draw_times, lockstep_model, serial_model, simulate, stamp, stream_model,
    timing_chart, tune,
)

EX = {"pre": 3, "kernel": 2, "post": 1}      # the spec's worked example: p=3, e=2, q=1, n=4


def starts(res, kind):
    return [e.start for e in sorted((e for e in res.events if e.kind == kind), key=lambda e: e.tag)]


# ------------------------------------------------------------------------------------
# the spec's worked example (spec 4.2) and the tuner (method 600)
# ------------------------------------------------------------------------------------


def test_worked_example_analytic() -> None:
    s = serial_model(3, 2, 1, 4)
    assert round(100 * s.busy) == 33 and s.total == 24          # 2/6, 4 * 6
    ls = lockstep_model(3, 2, 1, 4)
    assert round(100 * ls.busy) == 67 and ls.total == 18         # 2/3, (4 + 3 - 1) * 3
    t = tune({"pre": 3, "exec": 2, "post": 1}, {"pre": 2, "exec": 1, "post": 2})
    # work 6 and 2 on a pool of 4 host workers: one moves from post to pre, so p = 6/3 = q = 2/1 = 2
    assert t.workers == {"pre": 3, "exec": 1, "post": 1}
    assert t.times == {"pre": 2, "exec": 2, "post": 2} and t.period == 2 and t.period_before == 3
    bal = lockstep_model(t.times["pre"], t.times["exec"], t.times["post"], 4)
    assert bal.busy == 1.0 and bal.total == 12                  # 100 %, (4 + 2) * 2


def test_worked_example_des() -> None:
    ser = simulate("serial", 4, EX)
    assert ser.total == 24 and ser.busy == (pytest.approx(1 / 3),)
    assert starts(ser, "kernel") == [3, 9, 15, 21]
    ls = simulate("lockstep", 4, EX)
    # periods a..f: [0,3] [3,6] [6,9] [9,12] [12,14] [14,15]: a period lasts as long as its
    # slowest occupied stage, so the drain periods e (exec 2, post 1) and f (post 1) are short
    assert starts(ls, "pre") == [0, 3, 6, 9]
    assert starts(ls, "kernel") == [3, 6, 9, 12]
    assert starts(ls, "post") == [6, 9, 12, 14]
    assert ls.total == 15 == lockstep_model(3, 2, 1, 4).exact
    assert ls.total <= lockstep_model(3, 2, 1, 4).total
    # in the steady periods c and d the kernel is busy 2 of every 3: the analytic 67 %
    assert busy_fraction(ls.events, "kernel0", 6, 12) == pytest.approx(lockstep_model(3, 2, 1, 4).busy)
    # rebalanced: work 6 on 3 pre workers, 2 on 1 post worker -> periods of 2, total 12, 100 %
    bal = simulate("lockstep", 4, {"pre": 6, "kernel": 2, "post": 2}, workers={"pre": 3, "post": 1})
    assert bal.total == 12 and busy_fraction(bal.events, "kernel0", 4, 8) == 1.0
    # stream: one packet's latency 6, then one every 3: 6 + 3 * 3
    st = simulate("stream", 4, EX)
    assert st.total == 15 == stream_model(3, 2, 1, 4).total


def test_lockstep_balanced_ends_equal_the_spec_formula() -> None:
    # first and last stage the slowest: every period is max(p, e, q) = 3
    r = simulate("lockstep", 5, {"pre": 3, "kernel": 2, "post": 3})
    assert r.total == (5 + 3 - 1) * 3 == lockstep_model(3, 2, 3, 5).total


def test_des_equals_analytic_for_constant_times(seed: int) -> None:
    rnd = random.Random(seed)
    for _ in range(60):
        p, e, q = (rnd.randint(0, 9) for _ in range(3))
        e = max(e, 1)
        dw, dd, dr = rnd.choice([0, 0, 1, 2, 8]), rnd.choice([0, 1]), rnd.choice([0, 0, 1, 3, 10])
        n = rnd.randint(1, 12)
        w = {"pre": rnd.randint(1, 3), "post": rnd.randint(1, 3)}
        times = {"pre": p, "kernel": e, "post": q, "dma_wr": dw, "desc": dd, "dma_rd": dr}
        kw = dict(dma_wr=dw, desc=dd, dma_rd=dr)
        assert simulate("serial", n, times, workers=w).total == pytest.approx(
            serial_model(p, e, q, n, workers=w, **kw).total, rel=1e-12)
        ls, lm = simulate("lockstep", n, times, workers=w), lockstep_model(p, e, q, n, workers=w, **kw)
        assert ls.total == pytest.approx(lm.exact, rel=1e-12) and ls.total <= lm.total + 1e-9
        # stream with one server per resource: the bottleneck model is exact
        st = simulate("stream", n, times, queue_depth=rnd.randint(1, 3), sq_depth=rnd.randint(1, 4))
        assert st.total == pytest.approx(stream_model(p, e, q, n, **kw).total, rel=1e-12)


def test_stream_steady_state_matches_the_bottleneck() -> None:
    # pre is the bottleneck on paper: work 6, but 3 workers -> 2; the kernel 2: period 2
    r = simulate("stream", 300, {"pre": 6, "kernel": 2, "post": 1}, workers={"pre": 3})
    m = stream_model(6, 2, 1, 300, workers={"pre": 3})
    assert m.period == 2
    ends = sorted(e.end for e in r.events if e.kind == "post")
    assert (ends[-1] - ends[99]) / 200 == pytest.approx(m.period)
    # the kernel over the same stretch of the run (its tasks end dma_rd + post = 1 earlier)
    assert busy_fraction(r.events, "kernel0", ends[99] - 1, ends[-1] - 1) == pytest.approx(m.busy)
    # two kernels, e = 5: period 2.5, both kernels busy in steady state
    r2 = simulate("stream", 300, {"pre": 1, "kernel": 5, "post": 1, "dma_wr": 0.5, "dma_rd": 0.25}, n_kernels=2)
    m2 = stream_model(1, 5, 1, 300, n_kernels=2, dma_wr=0.5, dma_rd=0.25)
    assert m2.period == 2.5 and m2.busy == 1.0
    ends = sorted(e.end for e in r2.events if e.kind == "post")
    assert (ends[-1] - ends[99]) / 200 == pytest.approx(2.5)
    for k in (0, 1):     # kernel tasks end dma_rd + post = 1.25 before their packet leaves post
        busy = busy_fraction(r2.events, f"kernel{k}", ends[99] - 1.25, ends[-1] - 1.25)
        assert busy == pytest.approx(m2.busy, abs=0.005)


def test_stream_dma_bottlenecks() -> None:
    # the read channel is the slowest resource: one result every 4 after a latency of 1+1+4+1
    r = simulate("stream", 10, {"pre": 1, "kernel": 1, "dma_rd": 4, "post": 1})
    assert r.total == 7 + 9 * 4 == stream_model(1, 1, 1, 10, dma_rd=4).total
    # the write channel carries data and packet information: 2 + 1 per task
    r = simulate("stream", 10, {"pre": 1, "dma_wr": 2, "desc": 1, "kernel": 1, "post": 1})
    assert r.total == 6 + 9 * 3 == stream_model(1, 1, 1, 10, dma_wr=2, desc=1).total


def test_stream_lowest_idle_kernel_takes_the_task() -> None:
    # tasks arrive every 3 and take 2: kernel A (0) is always idle again, B never runs
    r = simulate("stream", 10, EX, n_kernels=2)
    assert {e.resource for e in r.events if e.kind == "kernel"} == {"kernel0"} and r.busy[1] == 0
    # kernel-bound (tasks every 1, 3 each): A takes tasks 0, 2, 4 ..., B takes 1, 3, 5 ...
    r = simulate("stream", 10, {"pre": 1, "kernel": 3}, n_kernels=2)
    on = {e.tag: e.resource for e in r.events if e.kind == "kernel"}
    assert [on[t] for t in range(4)] == ["kernel0", "kernel1", "kernel0", "kernel1"]


def test_stream_kernel_starts_the_next_task_at_once() -> None:
    # kernel-bound: with tasks queued in the SQ there is no gap between kernel tasks
    r = simulate("stream", 40, {"pre": 1, "dma_wr": 0.5, "desc": 0.25, "kernel": 4, "dma_rd": 1, "post": 2},
                 sq_depth=4, queue_depth=2)
    k = sorted((e.start, e.end) for e in r.events if e.kind == "kernel")
    assert all(b[0] == a[1] for a, b in zip(k, k[1:]))
    # the device never holds more than sq_depth tasks waiting: a descriptor is written
    # only while fewer than 4 tasks wait (written, not yet taken by the kernel)
    desc_end = {e.tag: e.end for e in r.events if e.kind == "desc"}
    kstart = {e.tag: e.start for e in r.events if e.kind == "kernel"}
    for t in desc_end:
        waiting = sum(1 for u in desc_end if desc_end[u] <= desc_end[t] and kstart[u] > desc_end[t])
        assert waiting <= 4


def test_stream_at_least_as_fast_as_lockstep_with_random_times(seed: int) -> None:
    spec = {"pre": ("exp", 3.0), "dma_wr": ("uniform", 0.1, 0.5), "kernel": ("exp", 2.0),
            "dma_rd": ("uniform", 0.1, 0.3), "post": ("uniform", 0.0, 2.0)}
    gain = []
    for s in range(60):
        ls = simulate("lockstep", 40, spec, seed=seed + s)
        st = simulate("stream", 40, spec, seed=seed + s, queue_depth=1)
        assert np.array_equal(ls.times["kernel"], st.times["kernel"])      # the same draws
        assert st.total <= ls.total + 1e-9
        gain.append(ls.total / st.total)
    # lock-step pays E[max] per period, stream about max E: clearly faster on average
    assert np.mean(gain) > 1.1


def test_random_times_are_reproducible() -> None:
    spec = {"pre": ("exp", 1.0), "kernel": ("uniform", 1.0, 2.0)}
    a, b = simulate("stream", 20, spec, seed=5), simulate("stream", 20, spec, seed=5)
    assert a.events == b.events and a.total == b.total
    assert simulate("stream", 20, spec, seed=6).total != a.total
    t = draw_times(10, spec, seed=5)
    assert np.array_equal(t["kernel"], draw_times(10, {"kernel": ("uniform", 1.0, 2.0)}, seed=5)["kernel"])
    assert (t["post"] == 0).all() and ((t["kernel"] >= 1) & (t["kernel"] <= 2)).all()


def test_bad_arguments() -> None:
    with pytest.raises(ParamError, match="mode"):
        simulate("batch", 4, EX)
    with pytest.raises(ParamError, match="host stage"):
        simulate("stream", 4, EX, workers={"exec": 2})
    with pytest.raises(ParamError, match="unknown step"):
        draw_times(4, {"prep": 1})
    with pytest.raises(ParamError):
        draw_times(4, {"pre": ("normal", 1, 2)})
    with pytest.raises(ParamError):
        draw_times(4, {"pre": [1, 2]})
    with pytest.raises(ParamError):
        tune({"pre": 1, "exec": 1, "post": 1}, {}, pool=1)


def test_tuner_is_optimal_and_deterministic() -> None:
    rnd = random.Random(11)
    for _ in range(40):
        times = {"pre": rnd.randint(1, 20), "exec": rnd.randint(1, 10), "post": rnd.randint(1, 20),
                 "io": rnd.randint(1, 10)}
        workers = {s: rnd.randint(1, 3) for s in times}
        pool = rnd.randint(3, 9)
        t = tune(times, workers, pool=pool)
        assert sum(t.workers[s] for s in ("pre", "post", "io")) == pool and t.workers["exec"] == workers["exec"]
        work = {s: times[s] * workers[s] for s in times}
        best = min(max(max(work["pre"] / a, work["post"] / b, work["io"] / c), work["exec"] / workers["exec"])
                   for a, b, c in itertools.product(range(1, pool + 1), repeat=3) if a + b + c == pool)
        assert t.period == pytest.approx(best)                  # brute force agrees
        assert tune(times, workers, pool=pool) == t


# ------------------------------------------------------------------------------------
# busy fraction, chart, stamps
# ------------------------------------------------------------------------------------


def test_busy_fraction_union_and_window() -> None:
    ev = [Event("kernel", 0, "kernel0", 0, 2), Event("kernel", 1, "kernel0", 1, 3), Event("kernel", 2, "kernel0", 5, 6),
          Event("kernel", 3, "kernel1", 0, 10), Event("pre", 4, "pre.0", 0, 1), Event("pre", 5, "pre.1", 4, 6)]
    assert busy_fraction(ev, "kernel0", 0, 10) == pytest.approx(0.4)             # [0,3] and [5,6]
    assert busy_fraction(ev, "kernel0", 2.5, 5.5) == pytest.approx(1 / 3)        # 0.5 + 0.5 of 3
    assert busy_fraction(ev, "kernel1", 0, 10) == 1.0
    assert busy_fraction(ev, "pre*", 0, 10) == pytest.approx(0.3)
    assert busy_fraction(ev, "post", 0, 10) == 0.0
    with pytest.raises(ValueError):
        busy_fraction(ev, "kernel0", 3, 3)


def test_timing_chart_writes_a_png(tmp_path) -> None:
    r = simulate("stream", 16, {"pre": 1, "dma_wr": 0.3, "desc": 0.1, "kernel": ("uniform", 1.5, 2.5),
                                "dma_rd": 0.2, "post": 0.5}, n_kernels=2, seed=1)
    assert {e.resource for e in r.events if e.kind == "kernel"} == {"kernel0", "kernel1"}
    path = timing_chart(r.events, str(tmp_path / "fig7.png"), "two kernels, stream")
    data = (tmp_path / "fig7.png").read_bytes()
    assert path.endswith("fig7.png") and data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_stamp_fills_packet_times() -> None:
    r = simulate("lockstep", 2, EX)
    pks = [TaskPacket(tag=i, m=1, k=4, n=4) for i in range(2)]
    stamp(pks, r.events)
    # periods [0,3] [3,6] [6,8] [8,9]: packet 1 is pre in b, exec in c, post in d
    assert pks[1].t_enter == {"pre": 3, "exec": 6, "post": 8} and pks[1].t_exit == {"pre": 6, "exec": 8, "post": 9}


# ------------------------------------------------------------------------------------
# results in submission order
# ------------------------------------------------------------------------------------


def test_inorder_per_stream() -> None:
    ro = InOrder()
    for t in (1, 2, 3):
        ro.submit(t, stream=0)
    for t in (10, 11):
        ro.submit(t, stream=1)
    assert ro.complete(3, "c") == []
    assert ro.complete(10, "x") == [(10, "x")]           # stream 1 does not wait for stream 0
    assert ro.complete(2, "b") == []
    assert ro.complete(1, "a") == [(1, "a"), (2, "b"), (3, "c")]
    assert ro.in_flight == 1 and ro.waiting(1) == [11]
    with pytest.raises(ValueError, match="already in flight"):
        ro.submit(11, stream=0)
    with pytest.raises(ValueError, match="not in flight"):
        ro.complete(1, "again")
    ro.submit(1)                                         # returned tags are free again
    assert ro.complete(11, "y") == [(11, "y")]
    ro.submit(4)
    assert ro.complete(4, "d") == []
    with pytest.raises(ValueError, match="twice"):
        ro.complete(4, "d")
    assert ro.complete(1, "a2") == [(1, "a2"), (4, "d")]


def test_inorder_restores_order_after_an_out_of_order_pipeline() -> None:
    r = simulate("stream", 30, {"pre": ("exp", 2.0), "kernel": 0.5, "post": ("exp", 1.0)},
                 workers={"pre": 3, "post": 2}, n_kernels=2, seed=4)
    assert r.done != sorted(r.done)                      # packets overtook each other
    ro = InOrder()
    for t in range(30):
        ro.submit(t, stream=t % 2)
    out = {0: [], 1: []}
    for t in r.done:
        out[t % 2] += [tag for tag, _ in ro.complete(t, None)]
    assert out == {0: list(range(0, 30, 2)), 1: list(range(1, 30, 2))} and ro.in_flight == 0
