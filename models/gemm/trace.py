"""The access trace of the address generator (docs/gemm.md section 4; block ``gemm_agu``).

:func:`build_trace` writes the loop nest of section 4 with numpy index arithmetic: a
request's address is affine in the block origin ``(m0, n0)`` and in the K-block index,
so each kind of block (full or tail rows, first / middle / tail N-block) is built once
as a template and broadcast over all its blocks. No Python loop runs per request.

Decisions where the contract is silent (written into docs/gemm.md section 4):

* :func:`~lockstep.models.gemm.run.gen_trace` (the trace of a whole job, beside the
  configuration checks it applies) of a configuration that the tile refuses (section 7) is the empty
  trace: the AGU issues nothing.
* ``keep`` and ``m`` in ``slot(k0, r)`` are the kernel's (not the tail block's): a tail
  M-block with ``mb <= keep`` copies nothing; one with ``keep < mb < m`` uses the first
  ``mb - keep`` slots of each K-block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .params import GemmParams

__all__ = ["A_LD", "BUF_LD", "B_LD", "COPY_RD", "COPY_WR", "C_WR", "Trace", "build_trace"]

A_LD, B_LD, BUF_LD, COPY_RD, COPY_WR, C_WR = range(len(GemmParams.KINDS))


@dataclass(frozen=True)
class Trace:
    """A request trace: three equal-length numpy arrays.

    Attributes:
        kind: request kinds (``GemmParams.KINDS`` codes), int8.
        addr: byte address of each request's first element, int64.
        nbytes: bytes of each request, int64.
    """

    kind: np.ndarray
    addr: np.ndarray
    nbytes: np.ndarray

    @classmethod
    def empty(cls) -> Trace:
        return cls(np.zeros(0, np.int8), np.zeros(0, np.int64), np.zeros(0, np.int64))

    @classmethod
    def from_list(cls, reqs) -> Trace:
        """From ``(kind, addr, nbytes)`` tuples."""
        a = np.asarray(list(reqs), dtype=np.int64).reshape(-1, 3)
        return cls(a[:, 0].astype(np.int8), a[:, 1].copy(), a[:, 2].copy())

    def __len__(self) -> int:
        return len(self.kind)

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self) -> list[tuple[int, int, int]]:
        """The requests as ``(kind, addr, nbytes)`` tuples."""
        return list(zip(self.kind.tolist(), self.addr.tolist(), self.nbytes.tolist()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trace):
            return NotImplemented
        return (len(self) == len(other) and bool(np.array_equal(self.kind, other.kind))
                and bool(np.array_equal(self.addr, other.addr)) and bool(np.array_equal(self.nbytes, other.nbytes)))

    __hash__ = None  # type: ignore[assignment]

    def count(self, kind: int) -> int:
        """Requests of one kind."""
        return int(np.count_nonzero(self.kind == kind))

    def lookups(self, line: int) -> tuple[np.ndarray, np.ndarray]:
        """The cache lookups in order: ``(lines, kinds)``, one entry per line a request
        touches (``addr // line .. (addr + nbytes - 1) // line``)."""
        lo = self.addr // line
        n = (self.addr + self.nbytes - 1) // line - lo + 1
        total = int(n.sum())
        starts = np.repeat(np.cumsum(n) - n, n)
        lines = np.repeat(lo, n) + (np.arange(total, dtype=np.int64) - starts)
        return lines, np.repeat(self.kind, n)


def _kblock(q: np.ndarray, kb: int, mb: int, zb: int, nbs: np.ndarray, kp: int, copy_here: bool,
            g: dict) -> tuple[np.ndarray, ...]:
    """The requests of one K-block (inline copy, then ``kb`` steps of B vectors and A
    rows) for the K-block indices ``q``, at block origin ``m0 = n0 = 0``.

    Returns ``(kind, addr, nbytes, mcoef, ncoef)``, each ``(len(q), n)`` or ``(n,)``; the
    address of a request of the block at ``(m0, n0)`` is ``addr + mcoef*m0 + ncoef*n0``.
    """
    eb, V, lda, ldb = g["eb"], g["v"], g["lda"], g["ldb"]
    ncopy = g["m"] - g["keep"]  # buffer rows per K-block
    parts = []  # (kind, c0, c1, nbytes, mcoef, ncoef) per position; address = c0 + c1*q
    if copy_here and mb > kp:
        r = np.arange(kp, mb)
        nc = len(r)
        kind = np.tile(np.array([COPY_RD, COPY_WR]), nc)
        c0 = np.empty(2 * nc, np.int64)
        c1 = np.empty(2 * nc, np.int64)
        c0[0::2] = g["base_a"] + r * lda * eb
        c1[0::2] = V * eb
        c0[1::2] = g["base_buf"] + (r - g["keep"]) * V * eb
        c1[1::2] = ncopy * V * eb
        mco = np.zeros(2 * nc, np.int64)
        mco[0::2] = lda * eb
        parts.append((kind, c0, c1, np.full(2 * nc, kb * eb, np.int64), mco, np.zeros(2 * nc, np.int64)))
    # one step kk: zb B vectors, then mb rows
    j = np.arange(zb)
    r = np.arange(mb)
    inplace = r < kp
    step_kind = np.concatenate([np.full(zb, B_LD), np.where(inplace, A_LD, BUF_LD)])
    step_c0 = np.concatenate([g["base_b"] + j * V * eb,
                              np.where(inplace, g["base_a"] + r * lda * eb,
                                       g["base_buf"] + (r - g["keep"]) * V * eb)])
    step_c1 = np.concatenate([np.full(zb, V * ldb * eb), np.where(inplace, V * eb, ncopy * V * eb)])
    step_dk = np.concatenate([np.full(zb, ldb * eb), np.full(mb, eb)])  # address step per kk
    step_nb = np.concatenate([nbs * eb, np.full(mb, eb)])
    step_m = np.concatenate([np.zeros(zb, np.int64), np.where(inplace, lda * eb, 0)])
    step_n = np.concatenate([np.full(zb, eb), np.zeros(mb, np.int64)])
    kk = np.arange(kb)[:, None]
    w = zb + mb
    parts.append((np.tile(step_kind, kb), (step_c0 + kk * step_dk).ravel(), np.tile(step_c1, kb),
                  np.tile(step_nb, kb), np.tile(step_m, kb), np.tile(step_n, kb)))
    assert all(len(p[0]) == len(p[1]) for p in parts) and len(parts[-1][0]) == kb * w
    kind, c0, c1, nb, mco, nco = (np.concatenate(x) for x in zip(*parts))
    addr = c0[None, :] + c1[None, :] * q[:, None]
    return kind, addr, nb, mco, nco


def _template(mb: int, zb: int, nbs: np.ndarray, kp: int, copy_here: bool, g: dict) -> tuple[np.ndarray, ...]:
    """One (m0, n0) block at origin 0: ``(kind, addr, nbytes, mcoef, ncoef)``, 1-D."""
    V, K, eb = g["v"], g["K"], g["eb"]
    out = []
    nfull, tail = divmod(K, V)
    if nfull:
        kind, addr, nb, mco, nco = _kblock(np.arange(nfull, dtype=np.int64), V, mb, zb, nbs, kp, copy_here, g)
        n = addr.shape[0]
        out.append((np.tile(kind, n), addr.ravel(), np.tile(nb, n), np.tile(mco, n), np.tile(nco, n)))
    if tail:
        kind, addr, nb, mco, nco = _kblock(np.array([nfull], np.int64), tail, mb, zb, nbs, kp, copy_here, g)
        out.append((kind, addr.ravel(), nb, mco, nco))
    r = np.repeat(np.arange(mb), zb)
    j = np.tile(np.arange(zb), mb)
    out.append((np.full(mb * zb, C_WR), g["base_c"] + (r * g["ldc"] + j * V) * eb, np.tile(nbs * eb, mb),
                np.full(mb * zb, g["ldc"] * eb), np.full(mb * zb, eb)))
    return tuple(np.concatenate([np.asarray(o[i], np.int64) for o in out]) for i in range(5))


def build_trace(M: int, N: int, K: int, lda: int, ldb: int, ldc: int, base_a: int, base_b: int, base_c: int,
                base_buf: int, m: int, z: int, keep: int, copy: bool, params: GemmParams) -> Trace:
    """The loop nest of section 4 for a kernel ``(m, z, keep, copy)``; no checks (the
    block must be usable: ``m, z >= 1``, ``0 <= keep <= m``)."""
    if m < 1 or z < 1 or not 0 <= keep <= m:
        raise ValueError(f"build_trace: bad kernel m={m} z={z} keep={keep}")
    if M <= 0 or N <= 0:
        return Trace.empty()
    V = params.v
    zv = z * V
    g = dict(eb=params.eb, v=V, K=K, lda=lda, ldb=ldb, ldc=ldc, base_a=base_a, base_b=base_b, base_c=base_c,
             base_buf=base_buf, m=m, keep=keep)
    m0s = np.arange(0, M, m, dtype=np.int64)
    n0s = np.arange(0, N, zv, dtype=np.int64)
    nm, nn = len(m0s), len(n0s)
    mbs = np.minimum(m, M - m0s)
    widths = np.minimum(zv, N - n0s)
    # block types: (rows mb) x (N-block width, first N-block with copy); at most 2 x 3
    first = np.zeros(nn, np.int64)
    first[0] = int(bool(copy))
    mb_vals, mb_inv = np.unique(mbs, return_inverse=True)
    n_vals, n_inv = np.unique(widths * 2 + first, return_inverse=True)
    btype = mb_inv.reshape(-1, 1) * len(n_vals) + n_inv.reshape(1, -1)
    templates = []
    for mb in mb_vals.tolist():
        kp = min(keep, mb) if copy else mb
        for nk in n_vals.tolist():
            width, cp = divmod(nk, 2)
            zb = -(-width // V)
            nbs = np.minimum(V, width - np.arange(zb) * V).astype(np.int64)
            templates.append(_template(mb, zb, nbs, kp, bool(cp), g))
    lens = np.array([len(t[0]) for t in templates], np.int64)
    bt = btype.ravel()
    blen = lens[bt]
    starts = np.cumsum(blen) - blen
    bm0 = np.repeat(m0s, nn)
    bn0 = np.tile(n0s, nm)
    total = int(blen.sum())
    kind = np.empty(total, np.int8)
    addr = np.empty(total, np.int64)
    nbytes = np.empty(total, np.int64)
    for t, (tk, ta, tn, tm, tnc) in enumerate(templates):
        sel = np.nonzero(bt == t)[0]
        if not len(sel) or not len(tk):
            continue
        pos = starts[sel][:, None] + np.arange(len(tk))[None, :]
        kind[pos] = tk[None, :]
        addr[pos] = ta[None, :] + tm[None, :] * bm0[sel][:, None] + tnc[None, :] * bn0[sel][:, None]
        nbytes[pos] = tn[None, :]
    return Trace(kind, addr, nbytes)
