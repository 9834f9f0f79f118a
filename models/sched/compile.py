"""Compiler of dense layers and GEMMs onto the ``sched`` MAC array (docs/sched.md section 11).

Import through :mod:`lockstep.models.sched`.

The weight-stationary mapping: the input dimension ``Kin = k * nt_used`` is split over
tiles ``0 .. nt_used-1``; tile ``t`` holds the ``k x k`` block ``front[r][c] =
Bmat[t*k + r][c]`` (``Bmat = W^T`` for a layer, ``B`` for a GEMM) and the slice
``x_i[t*k .. t*k+k-1]`` of every streamed vector. One MATVEC of ``N`` vectors per tile;
the partial sums run along the psum chain tile 0 -> 1 -> ... -> last, each MATVEC issued
``hop_lat + 1`` after its predecessor; the last tile writes ``y`` to memory (in place
over its own ``x`` slices, which is legal: vector ``i`` is written at the end of
``n+i+1``, after it was read in ``n+i`` and before nothing else reads it). For a layer
the last tile issues MATVR instead of MATVEC: the same product and psum add, written
through the VPU segment (bias ``mem[A+c]``, ReLU, shift) in the same cycle, so bias and
ReLU cost no cycle and the layer runs at the GEMM's utilisation.

Schedule of every used tile (``L = nt_used - 1``, ``h = hop_lat``):

=========  ==================================  =========================================
cycle      entry                               notes
=========  ==================================  =========================================
2          ``LDW a=0``                         rows of the weight block at ``r*k``
2+k        ``SWPW``                            front <- back
3+k+t(h+1) ``MATVEC b=k*k d=.. len=N``         PORT: tile 0 psum_out, middle in+out,
                                               last psum_in (memory); a layer's last
                                               tile: ``MATVR a=k*k+k*N`` (bias)
last+1     ``HALT``                            (an unused tile: ``HALT`` at 2)
=========  ==================================  =========================================

Cycle model (closed form; :func:`predicted_cycles`): the utilisation window runs from
the first LDW issue (cycle 2) to the last memory write, inclusive: the last vector of
the last tile's MATVEC (MATVR), at ``M_L + N``. Each used tile reads one vector per cycle
for ``N`` cycles, so ``utilisation = N / predicted_cycles``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..record import ParamError
from .params import FabricParams
from .core import MAC_OPS, MV_OPS, OPS, Entry, Program, Run, decode, encode, to_signed

__all__ = [
    "Layout",
    "compile_gemm",
    "compile_layer",
    "max_batch",
    "predicted_cycles",
    "predicted_utilisation",
    "reference_gemm",
    "reference_layer",
    "utilisation",
]

_LDW, _SWPW, _MATVEC, _MATVR = MAC_OPS["LDW"], MAC_OPS["SWPW"], MAC_OPS["MATVEC"], MAC_OPS["MATVR"]
_HALT = OPS["HALT"]
_T0 = FabricParams.FETCH_LEAD


@dataclass(frozen=True)
class Layout:
    """Where a compiled program leaves its results, and its timing.

    Attributes:
        kind: ``"layer"`` or ``"gemm"``.
        params: the fabric parameters.
        k: MAC array size (rows of a layer's output, columns of a GEMM's C).
        n: batch: vectors streamed (columns of X, rows of A).
        tiles: tiles used (``Kin / k``); the chain is ``0 -> 1 -> ... -> tiles-1``.
        tile: the tile holding the results (``tiles - 1``).
        base: address of result ``(j, c)`` is ``base + j*k + c`` on ``tile``.
        x_base: address of the streamed vectors on every tile.
        bias_base: layer only: the ``k`` bias words on ``tile`` (else None).
        t_ldw: LDW issue cycle (every tile); ``t_swpw``: SWPW issue cycle.
        t_matvec: MATVEC (the layer's last tile: MATVR) issue cycle per used tile.
        t_halt: HALT issue cycle per used tile.
        last_write: absolute cycle of the last memory write.
    """

    kind: str
    params: FabricParams
    k: int
    n: int
    tiles: int
    tile: int
    base: int
    x_base: int
    bias_base: int | None
    t_ldw: int
    t_swpw: int
    t_matvec: tuple[int, ...]
    t_halt: tuple[int, ...]
    last_write: int

    def addr(self, j: int, c: int) -> int:
        """Memory address of result ``(vector j, lane c)`` on :attr:`tile`."""
        return self.base + j * self.k + c

    def result(self, run: Run | list) -> np.ndarray:
        """The results read from ``run.mems`` (or a list of memories), as memory stores
        them (low ``dw`` bits, unsigned): a layer gives ``Y`` (``k x n``, column j =
        ``y_j``), a GEMM ``C`` (``n x k``)."""
        mems = run.mems if isinstance(run, Run) else run
        m = np.asarray(mems[self.tile], dtype=np.int64)
        c = m[self.base:self.base + self.n * self.k].reshape(self.n, self.k)
        return c.T.copy() if self.kind == "layer" else c.copy()


def _p(params: Any) -> FabricParams:
    if not isinstance(params, FabricParams):
        raise ParamError(f"params: expected a FabricParams, got {type(params).__name__}")
    if not params.k:
        raise ParamError("params.k = 0: the fabric has no MAC array (section 11)")
    return params


def _ints(a: Any, what: str, ndim: int) -> np.ndarray:
    arr = np.asarray(a, dtype=object)
    if arr.ndim != ndim:
        raise ParamError(f"{what}: expected a {ndim}-d array, got shape {arr.shape}")
    for v in arr.ravel():
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
            raise ParamError(f"{what}: element {v!r} is not an int")
    return np.vectorize(int, otypes=[object])(arr) if arr.size else arr


def max_batch(params: FabricParams, tiles: int = 1, layer: bool = False) -> int:
    """The largest batch one compiled MATVEC can stream: ``N <= 256`` (LEN) and the last
    tile's memory holds ``k*k`` weights, ``k*N`` vector words (results in place) and, for a
    layer, ``k`` bias words."""
    p = _p(params)
    k = p.k
    return max(0, min(256, (p.words - k * k - (k if layer else 0)) // k))


def _build(kind: str, bmat: np.ndarray, vecs: np.ndarray, bias: np.ndarray | None,
           p: FabricParams) -> tuple[Program, Layout]:
    """``bmat``: Kin x k stationary matrix; ``vecs``: N x Kin streamed vectors."""
    k = p.k
    kin = bmat.shape[0]
    n = vecs.shape[0]
    if bmat.shape[1] != k:
        raise ParamError(f"{kind}: the output dimension is {bmat.shape[1]}, must equal k = {k} (one block)")
    if kin == 0 or kin % k or not 1 <= kin // k <= p.cols:   # a psum chain: the ring, or one mesh row
        raise ParamError(f"{kind}: the input dimension {kin} must be k * tiles = {k} * (1..{p.cols}, the tiles "
                         "of one psum chain: nt on the ring, nt // rows on a mesh)")
    if vecs.shape[1] != kin:
        raise ParamError(f"{kind}: the vectors have {vecs.shape[1]} elements, expected {kin}")
    nb = max_batch(p, layer=bias is not None)
    if not 1 <= n <= nb:
        raise ParamError(f"{kind}: batch {n} outside [1, {nb}] (LEN <= 256, memory 2**aw = {p.words} words)")
    tiles = kin // k
    last = tiles - 1
    hop = p.hop_lat
    x_base = k * k
    t_ldw, t_swpw = _T0, _T0 + k
    t_mv = tuple(t_swpw + 1 + t * (hop + 1) for t in range(tiles))
    last_write = t_mv[last] + n - 1 + FabricParams.L_MM - 1  # the last tile's last vector
    scheds: list[list[int]] = [[] for _ in range(p.nt)]
    data: list[dict[int, int]] = [{} for _ in range(p.nt)]
    t_halt = []
    bias_base = x_base + k * n if bias is not None else None
    for t in range(tiles):
        d = data[t]
        for r in range(k):
            for c in range(k):
                d[r * k + c] = int(bmat[t * k + r, c])
        for i in range(n):
            for r in range(k):
                d[x_base + i * k + r] = int(vecs[i, t * k + r])
        port = (1 if t > 0 else 0) | (2 if t < last else 0)
        mv = Entry(t=t_mv[t], op=_MATVEC, port=port, b=x_base, d=x_base if t == last else 0, len=n - 1)
        if t == last and bias_base is not None:
            mv = mv.replace(op=_MATVR, a=bias_base)
            for c in range(k):
                d[bias_base + c] = int(bias[c])
        ents = [Entry(t=t_ldw, op=_LDW, a=0, len=k - 1), Entry(t=t_swpw, op=_SWPW), mv]
        th = ents[-1].t + 1
        ents.append(Entry(t=th, op=_HALT))
        t_halt.append(th)
        if len(ents) > p.sd:
            raise ParamError(f"{kind}: tile {t} needs {len(ents)} schedule words, more than sd = {p.sd}")
        if th - t_ldw > p.half:
            raise ParamError(f"{kind}: the schedule spans {th - t_ldw} cycles, more than half the counter "
                             f"range ({p.half}; rule SPAN): raise cw")
        scheds[t] = [encode(e.replace(t=e.t & ((1 << p.cw) - 1)), p) for e in ents]
    for t in range(tiles, p.nt):      # unused tiles only halt
        scheds[t] = [encode(Entry(t=_T0, op=_HALT), p)]
    lay = Layout(kind, p, k, n, tiles, last, x_base, x_base, bias_base, t_ldw, t_swpw, t_mv,
                 tuple(t_halt), last_write)
    prog = Program(p, scheds, data, {"generator": f"compile_{kind}", "layout": lay})
    return prog, lay


def compile_layer(W: Any, X: Any, b: Any, params: FabricParams) -> tuple[Program, Layout]:
    """Compile ``y_j = ReLU(W @ x_j + b) >> vpu_shift`` for the columns ``x_j`` of ``X``.

    Args:
        W: ``k x Kin`` ints (signed ``dw``-bit values; any int is taken modulo ``2**dw``),
            ``Kin = k * tiles`` with ``1 <= tiles <= nt`` (a mesh: ``nt // rows``, one row).
        X: ``Kin x N`` ints, the batch (``1 <= N <= max_batch(params, layer=True)``).
        b: ``k`` ints, the bias.
        params: fabric parameters with ``k > 0``.

    Returns:
        ``(program, layout)``; ``layout.result(execute(program))`` is ``Y`` (``k x N``),
        equal to :func:`reference_layer`.

    Raises:
        ParamError: shapes, a batch too large for LEN or memory, too many schedule words,
            or a span beyond half the counter range.
    """
    p = _p(params)
    w = _ints(W, "W", 2)
    x = _ints(X, "X", 2)
    bb = _ints(b, "b", 1)
    if w.shape[0] != p.k:
        raise ParamError(f"compile_layer: W has {w.shape[0]} rows, must equal k = {p.k} (one output block)")
    if bb.shape[0] != p.k:
        raise ParamError(f"compile_layer: b has {bb.shape[0]} elements, expected k = {p.k}")
    if x.shape[0] != w.shape[1]:
        raise ParamError(f"compile_layer: X has {x.shape[0]} rows, W has {w.shape[1]} columns")
    return _build("layer", w.T, x.T, bb, p)


def compile_gemm(A: Any, B: Any, params: FabricParams) -> tuple[Program, Layout]:
    """Compile ``C = A @ B`` (low ``dw`` bits) with ``B`` stationary.

    Args:
        A: ``N x Kin`` ints, streamed row by row (``1 <= N <= max_batch(params)``).
        B: ``Kin x k`` ints, ``Kin = k * tiles`` with ``1 <= tiles <= nt`` (a mesh: ``nt // rows``, one row).
        params: fabric parameters with ``k > 0``.

    Returns:
        ``(program, layout)``; ``layout.result(execute(program))`` is ``C`` (``N x k``),
        equal to :func:`reference_gemm`.
    """
    p = _p(params)
    a = _ints(A, "A", 2)
    bm = _ints(B, "B", 2)
    if a.shape[1] != bm.shape[0]:
        raise ParamError(f"compile_gemm: A has {a.shape[1]} columns, B has {bm.shape[0]} rows")
    return _build("gemm", bm, a, None, p)


def _signed(arr: np.ndarray, dw: int) -> np.ndarray:
    return np.vectorize(lambda v: to_signed(int(v), dw), otypes=[object])(arr)


def _accumulate(A: Any, B: Any, p: FabricParams) -> np.ndarray:
    """``A @ B`` with signed ``dw``-bit operands, as the signed ``accw``-bit value the
    MAC array's sum is (modulo ``2**accw``); exact Python ints (object array)."""
    a = _signed(_ints(A, "A", 2), p.dw)
    b = _signed(_ints(B, "B", 2), p.dw)
    return _signed(a.dot(b), p.accw)


def reference_gemm(A: Any, B: Any, params: FabricParams) -> np.ndarray:
    """``C = A @ B`` as the MAC array computes it: operands signed ``dw``-bit, sums modulo
    ``2**accw``, stored as the low ``dw`` bits (``N x k``, int64, values in
    ``[0, 2**dw)``). Exact Python ints, no floats."""
    return (_accumulate(A, B, params) % (1 << params.dw)).astype(np.int64)


def reference_layer(W: Any, X: Any, b: Any, params: FabricParams) -> np.ndarray:
    """``Y[:, j] = ReLU(W @ x_j + b) >> vpu_shift`` as the program computes it: ``z =
    W @ x_j`` as the signed ``accw``-bit sum, plus the signed ``dw``-bit bias (exact),
    ReLU, the right shift, then the low ``dw`` bits (``k x N``, int64)."""
    p = params
    z = _accumulate(W, X, p)                       # k x N, signed accw-bit
    bb = _signed(_ints(b, "b", 1), p.dw)
    v = z + bb.reshape(-1, 1)
    v = np.where(v > 0, v, 0)
    return ((v >> p.vpu_shift) % (1 << p.dw)).astype(np.int64)


def predicted_cycles(layout: Layout) -> int:
    """The golden cycle model: cycles from the first LDW issue to the last memory write,
    inclusive (closed form, see the module docstring)."""
    lay = layout
    p = lay.params
    return lay.n + p.k + FabricParams.L_MM + (lay.tiles - 1) * (p.hop_lat + 1)


def predicted_utilisation(layout: Layout) -> float:
    """``N / predicted_cycles(layout)``: every used tile reads one vector per cycle."""
    return layout.n / predicted_cycles(layout)


def utilisation(run: Run, tile: int | None = None) -> float:
    """MAC utilisation measured from a run's trace.

    The window runs from the first LDW issue (any tile) to the last memory write (any
    tile), inclusive. A tile's MAC busy cycles are the cycles in the window in which one
    of its MATVECs reads a vector (``[n, n+N-1]`` per issued MATVEC). With ``tile=None``
    the result is the mean over the tiles that issued a MATVEC.

    Returns:
        The busy fraction (0.0 when the run has no LDW, no write or no MATVEC).
    """
    p = run.params
    first = None
    busy: dict[int, set[int]] = {}
    for e in run.trace:
        if e[1] != "issue":
            continue
        ent = decode(e[3], p)
        if ent.op == _LDW and first is None:
            first = e[0]
        elif ent.op in MV_OPS:
            busy.setdefault(e[2], set()).update(range(e[0], e[0] + ent.n))
    writes = [e[0] for e in run.trace if e[1] == "write"]
    if first is None or not writes or not busy:
        return 0.0
    last = max(writes)
    total = last - first + 1
    if total <= 0:
        return 0.0

    def one(t: int) -> float:
        return sum(1 for c in busy.get(t, ()) if first <= c <= last) / total

    if tile is not None:
        return one(tile)
    return sum(one(t) for t in busy) / len(busy)
