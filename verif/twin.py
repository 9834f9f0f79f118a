"""The Python twins of the throughput harness (:mod:`lockstep.gen.harness`): its pause
generators, cycle for cycle, and the transaction stream as both modes record it.

The per-edge environment (:mod:`.stream_env`) with ``pauses="cycle"`` draws its idle
cycles and back-pressure from :class:`CyclePauses`, so it drives exactly the stream the
harness drives; ``dump_stream=1`` writes :func:`stream_record` to ``stream.json`` in
either mode, and a test compares the two files.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

__all__ = ["CyclePauses", "xs32", "pause_threshold", "pause_seeds", "stream_record"]

_M32 = 0xFFFFFFFF


def xs32(x: int) -> int:
    """One step of the harness's xorshift32 (13, 17, 5)."""
    x ^= (x << 13) & _M32
    x ^= x >> 17
    return x ^ ((x << 5) & _M32)


def pause_threshold(p: float) -> int:
    """The harness's threshold for a pause probability ``p`` in [0, 1): a cycle pauses
    when the top 16 bits of its generator's state are below it."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"pause probability {p} must be in [0, 1)")
    return int(round(p * 65536))


def pause_seeds(seed: int) -> tuple[int, int]:
    """The idle and back-pressure generator seeds of a run (nonzero 32-bit)."""
    return ((seed * 2654435761 + 1) & _M32) or 1, ((seed * 2246822519 + 2) & _M32) or 2


class CyclePauses:
    """Pauses by cycle, as the harness makes them: cycle ``c`` (0 = the first edge with
    ``rst`` low) pauses when ``xs32^c(seed) >> 16 < threshold``.

    An iterator for the per-edge agents (:mod:`.agents.stream`): each ``next()`` answers
    for the cycle the shared counter is on. The per-edge test holds ``rst`` for
    ``reset_cycles`` edges (:func:`.context.start`), so cycle 0 is edge
    ``reset_cycles + 1`` of the counter; it is fixed, not read from ``rst`` (on
    Verilator a coroutine woken by an edge can already see the write another one made
    on that edge). Earlier calls answer "no pause" (the sink calls none: it holds
    ``ready`` low through reset, as the harness holds ``out_ready``).

    Args:
        counter: the per-edge environment's cycle counter.
        seed: generator seed.
        p: pause probability.
        reset_cycles: edges with ``rst`` high before cycle 0.
    """

    def __init__(self, counter: Any, seed: int, p: float, reset_cycles: int = 2) -> None:
        self.counter, self.thr = counter, pause_threshold(p)
        self.origin = reset_cycles + 1
        self.state, self.at = seed, 0

    def __iter__(self) -> Iterator[bool]:
        return self

    def __next__(self) -> bool:
        c = self.counter.cycle - self.origin
        if c < 0:
            return False
        while self.at < c:
            self.state, self.at = xs32(self.state), self.at + 1
        return (self.state >> 16) < self.thr


def stream_record(accepted: np.ndarray, outs: list[dict[str, int]], cycles: np.ndarray, first_valid: np.ndarray,
                  items: list[dict[str, int]]) -> list[dict[str, Any]]:
    """The transaction stream as plain data (``stream.json``), for comparing two runs."""
    return [{"in": w, "accepted": int(a), "out": o, "cycle": int(c), "first_valid": int(f)}
            for w, a, o, c, f in zip(items, accepted, outs, cycles, first_valid)]
