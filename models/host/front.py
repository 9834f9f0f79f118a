"""The front end of the ``host`` family without cycles (docs/host.md sections 5-7): which
status each descriptor completes with, what each OK task leaves in device memory, the
sequence-number rule, and the order rules a CQ must obey.

Written from docs/host.md. The order in which two kernels finish is timing; the model
gives each task's outcome, and :func:`order_problems` checks a CQ against the rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .params import HostParams
from .desc import FE_KERNEL, MAGIC, MATMUL, ST, Completion, Descriptor, Limits, check, checksum
from .kernel import exec_cycles, kernel_ref, read_mat, task_ranges, task_words, write_mat

__all__ = ["Outcome", "FrontModel", "order_problems"]


@dataclass(frozen=True)
class Outcome:
    """What one descriptor must complete with.

    Attributes:
        tag: the descriptor's tag.
        status: the status code.
        on_kernel: dispatched to a kernel (an OK MATMUL, also when it then fails MEM_ERR).
        cycles: exec_cycles with no stalls (OK MATMUL), else None: the task's whole
            duration.
        out: the result range ``(lo, hi)`` of a dispatched task, else None.
        result: the expected result matrix of an OK task, else None.
        rd_words, wr_words: memory beats of an OK task.
        cq_cycles: what the completion's cycles word reads for ``cycles`` (the kernel's
            exec-cycles counter is ``cnt_bits`` wide: ``cycles mod 2**cnt_bits``), else None.
    """

    tag: int
    status: int
    on_kernel: bool
    cycles: int | None = None
    out: tuple[int, int] | None = None
    result: np.ndarray | None = None
    rd_words: int = 0
    wr_words: int = 0
    cq_cycles: int | None = None


@dataclass
class FrontModel:
    """The front end and kernels, task by task in SQ order.

    Attributes:
        p: the parameters.
        mem: the device memory image (uint8, ``p.mem_bytes``); OK tasks write into it.
        wgt_base, wgt_size, mem_limit: the CSRs the checks read.
        exp_seq: EXP_SEQ.
        err_window: the test top's error window as a word range ``[lo, hi)`` or None.
    """

    p: HostParams
    mem: np.ndarray
    wgt_base: int = 0
    wgt_size: int = 0
    mem_limit: int | None = None
    exp_seq: int = 0
    err_window: tuple[int, int] | None = None
    outcomes: list[Outcome] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mem_limit is None:
            self.mem_limit = self.p.mem_bytes
        self.mem_limit = min(self.mem_limit, self.p.mem_bytes)
        if self.mem.dtype != np.uint8 or self.mem.size != self.p.mem_bytes:
            raise ValueError(f"FrontModel.mem must be {self.p.mem_bytes} uint8 bytes")

    @property
    def limits(self) -> Limits:
        """The CSR state the next check reads."""
        return Limits(self.exp_seq, self.wgt_base, self.wgt_size, int(self.mem_limit))

    def _advance_seq(self, words: list[int]) -> None:
        d = Descriptor.unpack(words)
        trusted = d.magic == MAGIC and d.chk == checksum(words)
        self.exp_seq = ((d.seq if trusted else self.exp_seq) + 1) & 0xFFFF

    def _hits_window(self, d: Descriptor) -> bool:
        if self.err_window is None:
            return False
        lo, hi = self.err_window
        return any(r0 // 4 < hi and lo < (r1 + 3) // 4 and r0 < r1 for r0, r1 in task_ranges(d, self.wgt_base).values())

    def submit(self, words: list[int]) -> Outcome:
        """The outcome of the next descriptor in SQ order; applies an OK task to
        :attr:`mem` and advances EXP_SEQ."""
        st = check(words, self.limits, self.p)
        d = Descriptor.unpack(words)
        self._advance_seq(words)
        if st != ST["OK"] or d.opcode != MATMUL:
            out = Outcome(d.tag, st, False)
        elif self._hits_window(d):
            out = Outcome(d.tag, ST["MEM_ERR"], True, out=task_ranges(d, self.wgt_base)["out"])
        else:
            a = read_mat(self.mem, d.act_addr, d.m, d.k, d.dtype)
            w = read_mat(self.mem, self.wgt_base + d.wgt_off, d.k, d.n, d.dtype)
            res = kernel_ref(a, w, d)
            write_mat(self.mem, d.out_addr, res, d.dtype)
            ww, wa, wo = task_words(d)
            dur = exec_cycles(d, self.p)
            out = Outcome(d.tag, ST["OK"], True, dur, task_ranges(d, self.wgt_base)["out"], res,
                          ww + d.m * wa, res.shape[0] * wo, dur & self.p.cnt_mask)  # the counter wraps, not dur
        self.outcomes.append(out)
        return out

    def flush(self, words: list[int]) -> Outcome:
        """A descriptor flushed by a soft reset before dispatch: ABORTED, one sequence
        number used."""
        self.exp_seq = (self.exp_seq + 1) & 0xFFFF
        out = Outcome(Descriptor.unpack(words).tag, ST["ABORTED"], False)
        self.outcomes.append(out)
        return out


def order_problems(sq_tags: list[int], cq: list[Completion], n_kernels: int) -> list[str]:
    """The ways ``cq`` (in CQ order) breaks the rules of docs/host.md section 6 for the
    submissions ``sq_tags`` (in SQ order): every submission completes exactly once; each
    kernel's completions come in SQ order; a front-end completion comes after every older
    task's; kernel ids are valid. Tags may repeat: a completion matches the oldest
    unmatched submission with its tag. Empty list = all rules hold."""
    probs: list[str] = []
    pending: dict[int, list[int]] = {}
    for i, t in enumerate(sq_tags):
        pending.setdefault(t, []).append(i)
    done = [False] * len(sq_tags)
    last_on: dict[int, int] = {}
    for pos, c in enumerate(cq):
        idx = pending.get(c.tag, [])
        if not idx:
            probs.append(f"CQ entry {pos}: tag {c.tag:#06x} was not submitted (or completed twice)")
            continue
        i = idx.pop(0)
        if c.kernel != FE_KERNEL and not 0 <= c.kernel < n_kernels:
            probs.append(f"CQ entry {pos} (tag {c.tag:#06x}): kernel id {c.kernel} does not exist")
        if c.kernel == FE_KERNEL:
            older = [j for j in range(i) if not done[j]]
            if older:
                probs.append(f"CQ entry {pos} (tag {c.tag:#06x}, front end): written before the older submission(s) "
                             f"{older[:4]}")
        elif last_on.get(c.kernel, -1) > i:
            probs.append(f"CQ entry {pos} (tag {c.tag:#06x}): kernel {c.kernel} completed submission {i} after "
                         f"submission {last_on[c.kernel]}")
        last_on[c.kernel] = max(last_on.get(c.kernel, -1), i)
        done[i] = True
    missing = [i for i, ok in enumerate(done) if not ok]
    if missing:
        probs.append(f"{len(missing)} submission(s) never completed: SQ positions {missing[:8]}")
    return probs
