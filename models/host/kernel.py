"""The kernel of the ``host`` family (docs/host.md sections 2, 3 and 8): the device
memory layout, the value model ``pool(relu(scale(A @ W)))`` and the cycle model.

Written from docs/host.md; integers throughout (int64 numpy, exact).
"""

from __future__ import annotations

import numpy as np

from .params import HostParams
from .desc import Descriptor, esize, out_rows

__all__ = ["DTYPES", "sat_range", "read_mat", "write_mat", "scale", "kernel_ref", "burst_cycles", "exec_cycles",
           "task_words", "task_ranges"]

#: numpy storage type per descriptor dtype code.
DTYPES = {0: np.int8, 1: np.int16}


def sat_range(dtype: int) -> tuple[int, int]:
    """The element range of ``dtype``."""
    b = 8 * esize(dtype)
    return -(1 << (b - 1)), (1 << (b - 1)) - 1


def read_mat(mem: np.ndarray, addr: int, rows: int, cols: int, dtype: int) -> np.ndarray:
    """The ``rows x cols`` matrix stored row-major at byte ``addr`` of ``mem`` (a uint8
    array), as int64."""
    es = esize(dtype)
    raw = np.asarray(mem[addr:addr + rows * cols * es], dtype=np.uint8)
    if raw.size != rows * cols * es:
        raise ValueError(f"read_mat: [{addr}, {addr + rows * cols * es}) is outside the memory of {mem.size} bytes")
    return raw.view(DTYPES[dtype].__name__ if es == 1 else "<i2").astype(np.int64).reshape(rows, cols)


def write_mat(mem: np.ndarray, addr: int, mat: np.ndarray, dtype: int) -> None:
    """Store ``mat`` row-major at byte ``addr`` of ``mem`` (wrapping each value to the
    element width, as the memory would)."""
    es = esize(dtype)
    a = np.asarray(mat, dtype=np.int64)
    raw = (a & ((1 << (8 * es)) - 1)).astype("<u2" if es == 2 else np.uint8).reshape(-1).view(np.uint8)
    if addr + raw.size > mem.size:
        raise ValueError(f"write_mat: [{addr}, {addr + raw.size}) is outside the memory of {mem.size} bytes")
    mem[addr:addr + raw.size] = raw


def scale(acc: np.ndarray, mult: int, shift: int, dtype: int, saturate: bool = True) -> np.ndarray:
    """The scaler: ``sat((acc * mult + r) >> shift)``, ``r = 2**(shift-1)`` when ``shift``
    > 0 (round half up), arithmetic shift, saturation to ``dtype`` (``saturate=False``:
    the value before it, to see which end a task clamps to)."""
    acc = np.asarray(acc, dtype=np.int64)
    r = (1 << (shift - 1)) if shift > 0 else 0
    # |acc| < 2**38 and mult < 2**16: the product fits int64 exactly
    y = (acc * int(mult) + r) >> shift
    if not saturate:
        return y
    lo, hi = sat_range(dtype)
    return np.clip(y, lo, hi)


def kernel_ref(a: np.ndarray, w: np.ndarray, d: Descriptor) -> np.ndarray:
    """``pool(relu(scale(a @ w)))`` for the descriptor's flags (docs/host.md section 3):
    ``a`` is M x K, ``w`` K x N; the result is M' x N int64."""
    a = np.asarray(a, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    if a.shape != (d.m, d.k) or w.shape != (d.k, d.n):
        raise ValueError(f"kernel_ref: A {a.shape} and W {w.shape} do not match M, K, N = {d.m}, {d.k}, {d.n}")
    y = scale(a @ w, d.mult, d.shift, d.dtype)
    if d.relu:
        y = np.maximum(y, 0)
    if d.pool:
        y = np.maximum(y[0::2], y[1::2])
    return y


def task_words(d: Descriptor) -> tuple[int, int, int]:
    """Words per burst: the weight matrix, one activation row, one result row."""
    es = d.es
    return d.k * d.n * es // 4, d.k * es // 4, d.n * es // 4


def burst_cycles(words: int, p: HostParams) -> int:
    """Cycles of a burst of ``words`` requests on a memory that never refuses for any
    other reason (docs/host.md section 8): request ``j`` issues in cycle
    ``max(j, issue(j-1) + 1, issue(j - mem_q) + mem_lat)`` (the memory holds ``mem_q`` in
    flight, a slot frees in the cycle its response leaves); the phase ends in the cycle
    the last response arrives. ``words + mem_lat`` when ``mem_q >= mem_lat``."""
    q, lat = p.mem_q, p.mem_lat
    if q >= lat:
        return words + lat
    iss: list[int] = []
    for j in range(words):
        iss.append(j if j < q else max(iss[-1] + 1, iss[j - q] + lat))
    return iss[-1] + lat + 1


def exec_cycles(d: Descriptor, p: HostParams) -> int:
    """Busy cycles of an OK MATMUL with no back-pressure, fixed latency and no other
    kernel on the port (docs/host.md section 8):
    ``1 + B(wW) + M (B(wA) + K) + M' B(wO)`` with ``B`` = :func:`burst_cycles`
    (``B(w) = w + L`` when ``mem_q >= mem_lat``)."""
    ww, wa, wo = task_words(d)
    b = lambda w: burst_cycles(w, p)  # noqa: E731
    return 1 + b(ww) + d.m * (b(wa) + d.k) + out_rows(d) * b(wo)


def task_ranges(d: Descriptor, wgt_base: int) -> dict[str, tuple[int, int]]:
    """Half-open byte ranges a MATMUL reads (``act``, ``wgt``) and writes (``out``)."""
    es = d.es
    w0 = wgt_base + d.wgt_off
    return {"act": (d.act_addr, d.act_addr + d.m * d.k * es), "wgt": (w0, w0 + d.k * d.n * es),
            "out": (d.out_addr, d.out_addr + out_rows(d) * d.n * es)}
