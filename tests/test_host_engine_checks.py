"""The host engine testbench's stimulus and checks that run without a simulator
(verif/host/engine_env.py): the error steps of the ``bp`` scenario, the chained flush's
expected statuses, and the rule that no request issues after a flush before the
completion, at the cycle boundaries the rule names."""

from __future__ import annotations

import numpy as np
import pytest

from lockstep.models.host.params import HostParams
from lockstep.verif.context import CLOCK_NS
from lockstep.verif.host.engine_env import ABORTED, OK, Golden, TaskObs, expected_status, make_steps

P = HostParams(m_max=4, k_max=8, n_max=8, mem_aw=12, mem_lat=5, mem_q=2, cnt_bits=8)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bp_meets_every_error_kind(seed):
    steps = make_steps("bp", P, np.random.default_rng(seed), 60)
    tags = {s.tag.split("_")[0] if s.tag.startswith("mem_err") else s.tag for s in steps}
    assert {"mem", "flush", "rst_in_task", "flush_chain"} <= tags


@pytest.mark.parametrize("scenario", ["bp", "errors"])
def test_flush_chain_aborts_only_the_flushed_task(scenario):
    steps = [s for seed in range(4) for s in make_steps(scenario, P, np.random.default_rng(seed), 48)
             if s.tag == "flush_chain"]
    assert steps
    for s in steps:
        first, second = s.tasks
        assert s.chain and first.kernel == second.kernel
        assert first.flush_len == 1 and first.cpl_wait == 0 and second.flush_at is None
        assert expected_status(s, first) == ABORTED and expected_status(s, second) == OK
        assert 8 <= s.tp["lat_rate"] < 16  # responses held (16: all of them), the flushed task's in flight


def _flush_errors(flush_at: int, spans: list[tuple[int, int]], busy_cycles: int = 20) -> list[str]:
    step = next(s for s in make_steps("errors", P, np.random.default_rng(5), 12) if s.tag == "flush")
    t = step.tasks[0]
    t.flush_at = flush_at
    take = 100 * CLOCK_NS
    fall = take + busy_cycles * CLOCK_NS
    o = TaskObs(take=take, status=ABORTED, cycles=busy_cycles, busy=[(take, 1), (fall, 0)],
                cpl=[(fall, 1), (fall + CLOCK_NS, 0)], cpl_take=fall + CLOCK_NS)
    return [e for e in Golden(P).timing(step, t, o, ABORTED, spans) if "after the flush" in e]


def test_a_request_after_the_flush_fails():
    take, ra = 100 * CLOCK_NS, 100 * CLOCK_NS + 3 * CLOCK_NS  # k_abort first seen at edge ra
    # a beat rising at edge ra is first sampled at ra + 1 cycle: after the flush
    assert _flush_errors(3, [(ra, ra + CLOCK_NS)])
    # a beat that falls half a cycle after ra was sampled at ra only: allowed
    assert not _flush_errors(3, [(ra - CLOCK_NS, ra + CLOCK_NS // 2)])
    # a request in the abort's own cycle, and every one before it: allowed
    assert not _flush_errors(3, [(take, ra)])
    # a beat long after, still before the completion: fails; one after the completion: not ours
    assert _flush_errors(3, [(ra + 10 * CLOCK_NS, ra + 12 * CLOCK_NS)])
    assert not _flush_errors(3, [(take + 20 * CLOCK_NS, take + 22 * CLOCK_NS)])
