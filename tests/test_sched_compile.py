"""Tests of the sched compiler (compile_layer, compile_gemm), its numpy references and
the utilisation / cycle model (docs/sched.md section 11)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lockstep.models import sched as S
from lockstep.models.record import ParamError
from lockstep.models.sched.params import FabricParams

BASE = FabricParams(dw=8, aw=8, accw=24)


def _p(**kw) -> FabricParams:
    return dataclasses.replace(BASE, **kw)


def _rand(rng, shape, dw):
    lo = -(1 << (dw - 1))
    return rng.integers(lo, -lo, shape)


CASES = [(nt, k, hop, tu) for nt in (2, 3, 4) for k in (2, 3, 4) for hop in (1, 2) for tu in (1, nt)]


@pytest.mark.parametrize("nt,k,hop,tu", CASES)
def test_compile_layer_matches_reference(nt, k, hop, tu):
    rng = np.random.default_rng(nt * 100 + k * 10 + hop + tu)
    p = _p(nt=nt, k=k, hop_lat=hop, vpu_shift=(k + hop) % 4)
    n = int(rng.integers(1, S.max_batch(p, layer=True) + 1))
    Wm, X, b = _rand(rng, (k, k * tu), 8), _rand(rng, (k * tu, n), 8), _rand(rng, k, 8)
    prog, lay = S.compile_layer(Wm, X, b, p)
    assert S.lint(prog) == []
    run = S.execute(prog)
    assert run.ok
    ref = S.reference_layer(Wm, X, b, p)
    assert ref.shape == (k, n)
    assert (lay.result(run) == ref).all()
    # independent check with plain numpy int64 (no accw overflow at these sizes): the
    # bias is added to the full sum, before any truncation to dw bits
    z = Wm @ X + b[:, None]
    assert (ref == (np.maximum(z, 0) >> p.vpu_shift) & 0xFF).all()
    assert S.utilisation(run) == pytest.approx(S.predicted_utilisation(lay), abs=1e-12)
    assert max(e[0] for e in run.events("write")) == lay.last_write


@pytest.mark.parametrize("nt,k,hop,tu", CASES)
def test_compile_gemm_matches_reference(nt, k, hop, tu):
    rng = np.random.default_rng(7 + nt * 100 + k * 10 + hop + tu)
    p = _p(nt=nt, k=k, hop_lat=hop)
    n = int(rng.integers(1, S.max_batch(p) + 1))
    A, B = _rand(rng, (n, k * tu), 8), _rand(rng, (k * tu, k), 8)
    prog, lay = S.compile_gemm(A, B, p)
    assert S.lint(prog) == []
    run = S.execute(prog)
    assert run.ok
    ref = S.reference_gemm(A, B, p)
    assert (ref == (A @ B) % 256).all()
    assert (lay.result(run) == ref).all()
    assert run.mems[lay.tile][lay.addr(n - 1, k - 1)] == ref[n - 1, k - 1]
    assert S.utilisation(run) == pytest.approx(S.predicted_utilisation(lay), abs=1e-12)
    for t in range(tu):
        assert S.utilisation(run, t) == pytest.approx(n / S.predicted_cycles(lay), abs=1e-12)


def test_accw_wrap_in_the_chain():
    # accw = 16 = 2*dw: sums wrap mod 2**16 in the chain; memory keeps the low dw bits,
    # which the wrap does not change
    p = _p(nt=3, k=2, dw=8, accw=16)
    A = np.full((4, 6), -128)
    B = np.full((6, 2), -128)
    prog, lay = S.compile_gemm(A, B, p)
    run = S.execute(prog)
    assert (lay.result(run) == (6 * 128 * 128) % 256).all()
    assert all(max(e[3]) < (1 << 16) for e in run.events("psum"))


def test_chain_timing_of_compiled_program():
    p = _p(nt=3, k=2, hop_lat=2)
    prog, lay = S.compile_gemm(np.ones((5, 6), dtype=int), np.ones((6, 2), dtype=int), p)
    assert lay.t_ldw == 2 and lay.t_swpw == 4
    assert lay.t_matvec == (5, 8, 11)
    run = S.execute(prog)
    psum = run.events("psum")
    assert [e[0] for e in psum if e[2] == 0] == [7, 8, 9, 10, 11]
    assert [e[0] for e in psum if e[2] == 1] == [10, 11, 12, 13, 14]
    assert lay.last_write == 11 + 5 and S.predicted_cycles(lay) == 16 - 2 + 1


@pytest.mark.parametrize("k,nt,n", [(2, 2, 128), (2, 2, 256), (2, 3, 256), (2, 4, 256), (3, 2, 256)])
def test_utilisation_large_batch(k, nt, n):
    p = _p(nt=nt, k=k, aw=10, cw=16)
    rng = np.random.default_rng(n + k)
    A, B = _rand(rng, (n, k * nt), 8), _rand(rng, (k * nt, k), 8)
    prog, lay = S.compile_gemm(A, B, p)
    run = S.execute(prog)
    assert (lay.result(run) == S.reference_gemm(A, B, p)).all()
    u = S.utilisation(run)
    assert u == pytest.approx(S.predicted_utilisation(lay), abs=1e-12)
    assert u >= 0.95


@pytest.mark.parametrize("k,nt,n", [(2, 2, 256), (2, 3, 256), (4, 2, 200)])
def test_layer_utilisation_equals_the_gemm(k, nt, n):
    # MATVR applies bias, ReLU and shift in the write cycle: a layer costs the GEMM's
    # cycles, and the MAC arrays stay busy >= 95% of the window for a large batch
    p = _p(nt=nt, k=k, aw=10, cw=16, vpu_shift=1)
    rng = np.random.default_rng(3 + k + nt)
    Wm, X, b = _rand(rng, (k, k * nt), 8), _rand(rng, (k * nt, n), 8), _rand(rng, k, 8)
    prog, lay = S.compile_layer(Wm, X, b, p)
    run = S.execute(prog)
    assert run.ok and S.lint(prog) == []
    assert (lay.result(run) == S.reference_layer(Wm, X, b, p)).all()
    _, glay = S.compile_gemm(X.T, Wm.T, p)
    assert S.predicted_cycles(lay) == S.predicted_cycles(glay) == n + k + 2 + (nt - 1) * 2
    u = S.utilisation(run)
    assert u == pytest.approx(S.predicted_utilisation(lay), abs=1e-12)
    assert u >= 0.95


def test_layer_bias_is_added_before_truncation():
    # W x = (300, -300) does not fit dw = 8 bits. Bias (-100, 50) on the full sum:
    # (200, -250) -> ReLU -> (200, 0). Truncating first (300 -> 44, -300 -> -44) would
    # give (0, 6).
    p = _p(nt=2, k=2, dw=8, accw=24)
    Wm = np.array([[100, 0, 0, 0], [-100, 0, 0, 0]])
    X = np.array([[3], [0], [0], [0]])
    b = np.array([-100, 50])
    prog, lay = S.compile_layer(Wm, X, b, p)
    run = S.execute(prog)
    assert lay.result(run)[:, 0].tolist() == [200, 0]
    assert S.reference_layer(Wm, X, b, p)[:, 0].tolist() == [200, 0]


def test_compile_errors():
    p = _p(nt=2, k=2)
    with pytest.raises(ParamError):
        S.compile_gemm(np.ones((3, 4), int), np.ones((4, 2), int), BASE)          # k = 0
    with pytest.raises(ParamError):
        S.compile_gemm(np.ones((3, 6), int), np.ones((6, 2), int), p)             # 3 tiles > nt
    with pytest.raises(ParamError):
        S.compile_gemm(np.ones((3, 3), int), np.ones((3, 2), int), p)             # Kin not k * tiles
    with pytest.raises(ParamError):
        S.compile_layer(np.ones((3, 4), int), np.ones((4, 2), int), np.ones(3, int), p)   # M != k
    with pytest.raises(ParamError):
        S.compile_gemm(np.ones((S.max_batch(p) + 1, 4), int), np.ones((4, 2), int), p)
    with pytest.raises(ParamError):
        S.compile_gemm(np.ones((3, 4)), np.ones((4, 2)), p)                       # floats


def test_utilisation_of_a_program_without_mac_is_zero():
    run = S.execute(S.random_program(1, FabricParams(), n_txn=4))
    assert S.utilisation(run) == 0.0
