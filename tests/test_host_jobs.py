"""The host queue testbenches' stimulus (verif/host/jobs.py): every scenario builds for
several parameter sets and seeds, each error step aims at the status its label names
(replayed through the golden model in SQ order, as the testbench does), regions never
overlap, and the MEM_ERR window hits exactly two tasks."""

from __future__ import annotations

import numpy as np
import pytest

from lockstep.models import host as hm
from lockstep.models.host.params import HostParams
from lockstep.verif.host.jobs import ERROR_KINDS, SCENARIOS, make_scenario

PARAMS = [HostParams(m_max=8, k_max=16, n_max=8, mem_aw=14), HostParams(n_kernels=2, depth=4, m_max=6, k_max=8,
                                                                         n_max=4, mem_aw=13)]


def _replay(sc, p):
    fm = hm.FrontModel(p, np.zeros(p.mem_bytes, np.uint8), sc.wgt_base, sc.wgt_size, sc.mem_limit, 0, sc.err_window)
    seq = 0
    out = []
    for st in sc.steps:
        if st.kind != "task":
            continue
        words = st.desc.with_(seq=seq).words()
        if st.mutate is not None:
            words = st.mutate[1](words, seq)
        if st.mutate is None or st.mutate[0] != "BAD_SEQ":
            seq = (seq + 1) & 0xFFFF
        out.append((st, fm.submit(words)))
    return out


@pytest.mark.parametrize("p", PARAMS)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scenarios_aim_where_their_labels_say(name, p, seed):
    sc = make_scenario(name, p, seed)
    res = _replay(sc, p)
    assert len(res) >= 8
    for st, o in res:
        if sc.err_window is None:
            assert HostParams.STATUS[o.status] == st.label, (st.label, st.desc)
    tags = [st.desc.tag for st, _ in res]
    assert len(set(tags)) == len(tags)
    # regions of the OK tasks never overlap each other
    spans = sorted(r for st, o in res if o.on_kernel for r in (hm.task_ranges(st.desc, sc.wgt_base)["act"], o.out))
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        assert a1 <= b0
    if name == "errors":
        assert {st.label for st, _ in res} >= {"BAD_MAGIC", "BAD_CHECKSUM", "BAD_SEQ", "BAD_OPCODE", "BAD_DTYPE",
                                               "RSVD_NONZERO", "BAD_DIMS", "ADDR_RANGE", "WGT_RANGE", "OK"}
        assert {s.kind for s in sc.steps} >= {"doorbell_overflow", "owned_write", "cq_overflow"}
    if name == "memerr":
        assert [HostParams.STATUS[o.status] for _, o in res].count("MEM_ERR") == 2


@pytest.mark.parametrize("p", PARAMS)
def test_every_error_kind_is_generated(p):
    """The kinds are distinct, and the errors scenario has room for each of them (every
    second task is the next kind: a scenario whose layout filled up early dropped the
    last ones, NOPs among them)."""
    assert len(ERROR_KINDS) == len(set(ERROR_KINDS))
    nops = {k for k in ERROR_KINDS if k.startswith("nop")}
    for seed in (1, 2, 3):
        tasks = [st for st in make_scenario("errors", p, seed).steps if st.kind == "task"]
        assert len(tasks) >= 2 * len(ERROR_KINDS), (seed, len(tasks))
        assert sum(st.desc.opcode == hm.NOP for st in tasks) == len(nops), seed
    with pytest.raises(ValueError, match="unknown host scenario"):
        make_scenario("nope", PARAMS[0], 1)


@pytest.mark.parametrize("p", PARAMS)
def test_a_result_ending_exactly_at_mem_limit_is_generated_and_in_range(p):
    """The errors scenario's ``out_top`` step: a good task whose result's last byte is the
    one below MEM_LIMIT (the range check's boundary), free memory, not the weights; and
    its ``wgt_top``: weights that end exactly at the weight region's end."""
    sc = make_scenario("errors", p, 3)
    lim = hm.Limits(0, sc.wgt_base, sc.wgt_size, sc.mem_limit)
    ends_at = [(st, hm.task_ranges(st.desc, sc.wgt_base)) for st in sc.steps if st.kind == "task"]
    tops = [st for st, r in ends_at if r["out"][1] == sc.mem_limit]
    assert tops and all(hm.check(st.desc.words(), lim, p) == hm.ST["OK"] and st.label == "OK" for st in tops)
    ends = [st for st, r in ends_at if st.label == "OK" and r["wgt"][1] == sc.wgt_base + sc.wgt_size]
    assert ends and all(hm.check(st.desc.words(), lim, p) == hm.ST["OK"] for st in ends)
    assert sc.wgt_base + sc.wgt_size < sc.mem_limit <= p.mem_bytes
