"""Golden model and schedule toolchain of the ``sched`` family (spec 000).

Counter-timed tiles without flow control. The contract is ``docs/sched.md``; this
module implements its sections 2-8 and 10 and is the SPEC the generated RTL is checked
against, event by event. Pure Python ints (numpy only for memory images), exact.

Contents (all importable from here; the code lives in ``core.py``, ``lint.py``,
``asm.py``, ``comm.py``, ``compile.py`` and ``programs.py``):

* encoding: :data:`OPS`, :data:`PORT_NAMES`, the ``ERR_*`` bits and :data:`ERR`,
  :class:`Entry`, :func:`encode`, :func:`decode`;
* periodic blocks: :func:`expand` (with poison entries, :class:`ExpandedEntry`) and
  :func:`compress_periodic`;
* :class:`Program` (schedule and data images), :func:`execute` -> :class:`Run`;
* :func:`lint` -> list of :class:`Violation`;
* the text format: :func:`assemble`, :func:`disassemble`;
* the compiler: :func:`compile_layer`, :func:`compile_gemm` (-> :class:`Layout`),
  :func:`reference_layer`, :func:`reference_gemm`, :func:`utilisation`,
  :func:`predicted_cycles`, :func:`predicted_utilisation`, :func:`max_batch`;
* builders: :func:`random_program`, :func:`illegal_variant` (-> :class:`Expected`),
  :func:`jitter_variant`,
  :func:`fig2a_program`, :func:`schedule_c_program`, :func:`periodic6_program`.

Executor summary (section 8). Cycle ``c`` (absolute, from the first ``run = 1``
cycle) has ``count = c mod 2**cw``. In each cycle: every tile's sequencer looks at its
head entry (issue / MISSED / wait); operations in flight do their element of the cycle
(SEND reads ``mem[A+i]`` and puts it on ``out`` for ``c+1``; RECV pops; TAP and FWD
sample ``in``; the ALU reads and queues its write for the end of ``c + l_alu - 1``);
the writes of the cycle are applied (port 0, 1, 2, then ALU; WCONF on a shared
address); valid ring inputs no TAP/FWD consumed are pushed into the input buffers
(OVERFLOW when full after this cycle's pop; the bus input has no buffer and a bus word
nobody takes is lost); the bus register takes the lowest-numbered ``out[2]`` driver
(COLLISION with two or more); new error bits are latched, and a tile with an error stops
issuing.

Decisions where docs/sched.md is silent
---------------------------------------
1. **Trace cycles** are absolute cycles since the first ``run = 1`` cycle (they keep
   counting across a counter wrap); ``err_cnt``, ``bus_err_cnt`` and ``Run.halt_cnt``
   are counter values (``mod 2**cw``).
2. **No issue on an error.** An entry that raises OPCODE, BUSY or DECOMP (a poison
   entry) at its cycle is not issued: no ``issue`` event, no effect; the tile halts (as
   section 6 says for BUSY). OPCODE and BUSY are checked in parallel, so one entry can
   raise both. An entry that raises nothing issues even if an operation in flight raises
   an error in the same cycle (it stops issuing from the next cycle).
3. **Units.** SEND: ``out[PORT]``; RECV, TAP: ``in[PORT]``; FWD: ``out[PORT]`` and
   ``in[B[1:0]]``; VADD, VMUL, DOT: the ALU; each busy ``[n, n+N-1]``. A port number 3
   names no unit (the entry raises OPCODE anyway).
4. **OPCODE**: UNIT != 0 counts on *every* opcode (NOP and HALT included); PORT is
   ignored (no error) on NOP, HALT and the ALU opcodes; only ``B[1:0]`` of a FWD is
   checked (its upper bits are ignored).
5. ``halted`` (``Run.halted``) is true once a tile stops issuing: after it issued
   HALT, or after any error of its own (a bus COLLISION does not halt any tile).
6. **Fetch model.** The first expanded entry can be the head from cycle
   ``FETCH_LEAD`` (2), or ``FETCH_LEAD + 1`` if it is the first entry of a well-formed
   PERIODIC block (the header read costs one cycle). Before that the tile does nothing;
   then an entry whose T is past raises MISSED (so T = 0 or 1 as the first entry gives
   MISSED at cycle 2). Every later entry is the head the cycle after its predecessor
   issued; the header bubble of a block in mid-stream is *not* modelled: programs that
   violate HDR_GAP may behave differently on the RTL (the linter rejects them).
7. **End of the schedule memory.** After the last expanded entry of the ``sd`` words
   there is no head: the tile waits forever, without an error and without halting.
   (Zeros inside the image are NOP entries at T = 0, so a program without HALT and with
   room left gets MISSED, as section 6 says.)
8. **Truncated block.** A PERIODIC header whose ``n_body`` body words run past the last
   word of the image is a bad header (poison at ``T = base``; expansion continues with
   the next word). Spec 000 section 4.9 lists a truncated body under DECOMP.
9. **Bad body entry:** its badness does not depend on ``r``, so the poison always has
   ``r = 0``: ``T = base + d_bad``.
10. **Writes in the trace.** Every write source that writes in a cycle gives a
    ``write`` event, the losers of a WCONF included (they are the ``wr_en`` taps); the
    memory keeps the highest-priority one. A RECV pop of an empty buffer and an idle TAP
    write nothing and give no event.
11. **Bus error vector.** ``Run.bus_err`` uses the same bit numbering as the tiles:
    a collision sets ``ERR_COLLISION`` (bit 5), and the trace event is
    ``(c, "err", -1, ERR_COLLISION)``. ``Run.residual`` and ``Run.max_occupancy`` keep
    three ports per tile; the bus entry is always 0 (no buffer).
12. ``execute(program, cycles=None)`` runs until nothing can happen any more
    (every tile halted or out of entries and nothing in flight); long idle stretches are
    skipped exactly. The contract's argument order ``execute(program, params, cycles)``
    is accepted too.
13. **Linter.** ``Violation.entry`` is the index of the schedule word (a body word for
    a periodic entry; the message adds the repetition). Static rules look at the
    expanded stream up to the first HALT. FIRST also rejects a first entry that is in
    the past when fetch delivers it (``(T - FETCH_LEAD) mod 2**cw >= half``); HDR_GAP
    also applies to a block at the very start (its first entry needs
    ``T >= FETCH_LEAD + 1``); SPAN is the unwrapped distance from a tile's first to its
    last expanded entry (illegal when ``> half``). LEN is checked with word origins: a
    RECV/TAP/FWD must consume the words of exactly one SEND, as many as that SEND's N
    (a FWD forwarding idle cycles counts), no word may be left in a ring input buffer at
    the end, and every word on the bus must be taken by at least one TAP or FWD (the
    executor raises nothing for a lost bus word; the linter calls it LEN). Errors the
    executor raises that no static rule predicted are reported under their rule
    (MISSED as ORDER), so "no violation" implies ``err == 0``.
14. **Program equality** compares params, the schedule word lists and the data images
    (``meta`` is ignored); data words are reduced modulo ``2**dw`` on construction.
15. **Text format.** Mnemonic lines accept every field (port, unit, a, b, d, len; src
    for FWD); ports are names or numbers 0..3. Numbers may have leading zeros
    (``@006``). The canonical disassembly writes the explicit ``OP<n>`` form for
    reserved opcodes, UNIT != 0, PORT 3, FWD with ``B > 2``, and any PERIODIC header
    whose block the ``.periodic`` form cannot express exactly (malformed, truncated, or
    nonzero PORT/UNIT/D fields). A ``.periodic`` block must be well formed (the explicit
    form exists for the rest). A tile may appear only once; tiles not mentioned have an
    empty schedule.
16. **Issue word.** The ``issue`` event (the ``issue_entry`` tap) carries the expanded
    entry re-encoded: for a periodic body entry, its word with ``T`` replaced by the
    absolute ``(base + r*P + d) mod 2**cw``; for a plain entry, the schedule word itself.
17. **Linter run.** The dynamic rules come from one run in which a tile still halts on
    its first error, so later violations of that tile may be hidden behind it.
18. **fig2a** needs ``hop_lat = 3`` and ``nt = 3``; its patent times are shifted by
    ``offset = 1`` because FIRST forbids the patent's issue at count 1.
    **periodic6** returns ``(compressed, expanded)``; the expanded form needs
    ``sd >= 301`` and gets its own params with ``sd`` raised when necessary.
19. **Section 11 (MAC array, VPU; built; the comm interface/CHECK is not).** With
    ``k == 0`` LDW, SWPW, MATVEC, VPU and MATVR are reserved exactly as before (OPCODE,
    no units, :data:`RESERVED_OPS` unchanged). With ``k > 0``: units ``wload`` (7) and
    ``mac`` (8); LDW busy ``wload`` ``[n, n+k-1]``, SWPW busy ``wload`` and ``mac``
    ``[n, n]`` (whatever its LEN: :func:`entry_busy_len`), MATVEC and MATVR ``mac`` and VPU
    ``alu`` ``[n, n+N-1]``. LDW with ``LEN != k-1`` raises OPCODE; PORT is ignored on LDW,
    SWPW and VPU (as on the ALU opcodes); every PORT value is legal on MATVEC; MATVR with
    PORT[1] (psum_out) raises OPCODE, since it always writes memory. MATVR is MATVEC
    whose memory write goes through the VPU segment: ``max(signed_accw(y[c]) +
    signed_dw(mem[A+c]), 0) >> vpu_shift`` (exact), low ``dw`` bits, the bias read in the
    write cycle (spec 000's VPU at the foot of each MAC column). The weights and
    ``x`` are read as signed ``dw``-bit values in the read cycle; the MATVEC uses the front
    registers of its read cycle (SWPW cannot overlap it: BUSY). The back and front
    registers start at 0. The VPU sum ``a + b`` of two signed ``dw``-bit words is exact
    (no wrap) before ReLU and the shift; the result keeps its low ``dw`` bits. A psum word
    that no MATVEC samples is lost silently (no error, no lint rule: unlike the bus, the
    chain is a point-to-point wire). An idle psum_in sample raises TAP_IDLE on the
    sampling tile (lint rule TAP) and adds 0. The ``psum`` trace event
    ``(c, "psum", tile, lanes)`` carries the ``k`` lanes (each in ``[0, 2**accw)``) of a
    valid psum_out in cycle ``c``. Write sources: ports 0..2, ALU 3 (VADD/VMUL/DOT/VPU),
    MAC lane ``c`` = ``4 + c`` (MATVEC and MATVR); a higher number wins a WCONF.
20. **Text format of the MAC opcodes.** The mnemonics LDW, SWPW, MATVEC, VPU and MATVR are
    accepted whatever ``k`` (with ``k == 0`` they assemble and raise OPCODE at issue).
    LDW's ``len`` defaults to ``k`` (when ``k > 0``). MATVEC and MATVR take ``psum_in=0|1`` and
    ``psum_out=0|1`` (PORT bits 0 and 1) or ``port=``; the disassembly writes the flags.
    A MAC opcode is written in the mnemonic form whenever UNIT is 0 (PORT printed as a
    number on LDW/SWPW/VPU).
21. **Compiler** (:mod:`~lockstep.models.sched.compile`): see its module docstring for
    the memory map, the schedule and the closed-form cycle model. Results of the last
    tile are written in place over its ``x`` slices, which maximises the batch; a
    layer's last tile issues MATVR (bias, ReLU and shift in the write cycle), so a layer
    costs no more cycles than a GEMM. Utilisation is measured from the first LDW issue
    to the last memory write.
"""

from __future__ import annotations

from .asm import AsmError, assemble, disassemble, format_entry
from .core import (
    ALU_OPS, ERR, ERR_BUSY, ERR_COLLISION, ERR_DECOMP, ERR_DESYNC, ERR_LATE_SCHED, ERR_MISSED, ERR_OPCODE,
    ERR_OVERFLOW, ERR_TAP_IDLE, ERR_FIFO_OVF, COMM_TILE, P_FIFO, comm_tile, ERR_UNDERFLOW, ERR_WCONF,
    MAC_OPS, N_UNITS, OP_NAMES, OPS, PORT_NAMES, PORT_OPS, RESERVED_OPS, SRC_ALU, SRC_MAC, EncodeError,
    Entry, ErrorCause, ExpandedEntry, Program, ProgramError, Run, compress_periodic, decode, decode_err,
    encode, entry_busy_len, entry_units, execute, expand, opcode_problem, to_signed, unwrap_times,
)
from .comm import COMM_SCENARIOS, comm_program, ext_schedule
from .compile import (
    Layout, compile_gemm, compile_layer, max_batch, predicted_cycles, predicted_utilisation, reference_gemm,
    reference_layer, utilisation,
)
from .programs import (
    DECOMP_KINDS, ILLEGAL_RULES, Expected, fig2a_program, illegal_kinds, illegal_round, illegal_step,
    illegal_variant, jitter_variant, periodic6_program, random_program, schedule_c_program,
)
from .lint import LINT_RULES, Violation, lint
from .params import FabricParams

__all__ = [
    "FabricParams",
    "COMM_SCENARIOS",
    "comm_program",
    "ext_schedule",
    "ALU_OPS",
    "AsmError",
    "ERR",
    "ERR_BUSY",
    "ERR_COLLISION",
    "ERR_DECOMP",
    "ERR_DESYNC",
    "ERR_LATE_SCHED",
    "ERR_MISSED",
    "ERR_OPCODE",
    "ERR_OVERFLOW",
    "ERR_TAP_IDLE",
    "ERR_FIFO_OVF",
    "COMM_TILE",
    "P_FIFO",
    "comm_tile",
    "ERR_UNDERFLOW",
    "ERR_WCONF",
    "EncodeError",
    "DECOMP_KINDS",
    "Entry",
    "ErrorCause",
    "ExpandedEntry",
    "Expected",
    "ILLEGAL_RULES",
    "LINT_RULES",
    "Layout",
    "MAC_OPS",
    "N_UNITS",
    "OPS",
    "OP_NAMES",
    "PORT_NAMES",
    "PORT_OPS",
    "Program",
    "ProgramError",
    "RESERVED_OPS",
    "Run",
    "SRC_ALU",
    "SRC_MAC",
    "Violation",
    "assemble",
    "compile_gemm",
    "compile_layer",
    "max_batch",
    "predicted_cycles",
    "predicted_utilisation",
    "reference_gemm",
    "reference_layer",
    "utilisation",
    "compress_periodic",
    "decode",
    "decode_err",
    "disassemble",
    "encode",
    "entry_busy_len",
    "entry_units",
    "execute",
    "expand",
    "fig2a_program",
    "format_entry",
    "illegal_kinds",
    "illegal_round",
    "illegal_step",
    "illegal_variant",
    "jitter_variant",
    "lint",
    "opcode_problem",
    "periodic6_program",
    "random_program",
    "schedule_c_program",
    "to_signed",
    "unwrap_times",
]
