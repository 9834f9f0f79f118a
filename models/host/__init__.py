"""Golden models of the ``host`` family: the command queue and kernel of a host task
pipeline (spec 002). The contract is ``docs/host.md``; this facade is what testbenches
and users import. numpy and the standard library only; integers are exact.

* the command interface (sections 4, 5): :data:`CSR`, :class:`Descriptor`,
  :class:`Completion`, :class:`Limits`, :func:`check`, :data:`ST`;
* the kernel (sections 2, 3, 8): :func:`read_mat`, :func:`write_mat`, :func:`scale`,
  :func:`kernel_ref`, :func:`exec_cycles`;
* the front end without cycles (sections 5-7): :class:`FrontModel`,
  :func:`order_problems`.
"""

from __future__ import annotations

from .desc import (
    CQ_BASE, CSR, FE_KERNEL, ID_VALUE, MAGIC, MATMUL, NOP, SQ_BASE, ST, Completion, Descriptor, Limits,
    check, checksum, esize, hw_cfg, out_rows,
)
from .front import FrontModel, Outcome, order_problems
from .kernel import (
    DTYPES, burst_cycles, exec_cycles, kernel_ref, read_mat, sat_range, scale, task_ranges, task_words,
    write_mat,
)
from .params import HostParams

__all__ = [
    "HostParams",
    "CQ_BASE", "CSR", "DTYPES", "FE_KERNEL", "ID_VALUE", "MAGIC", "MATMUL", "NOP", "SQ_BASE", "ST", "Completion",
    "Descriptor", "FrontModel", "burst_cycles", "Limits", "Outcome", "check", "checksum", "esize", "exec_cycles", "hw_cfg",
    "kernel_ref", "order_problems", "out_rows", "read_mat", "sat_range", "scale", "task_ranges", "task_words",
    "write_mat",
]
