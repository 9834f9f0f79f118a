"""cocotb test module for ``kernel_select`` (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.gemm.block_env import BlockTest
from lockstep.verif.gemm.detect_env import SelectUnit


@pyuvm.test()
class SelectJobs(BlockTest):
    """Directed and random (N, lda, base_a, limit_m) starts against select_kernel: program,
    kernel, keep, the detector's outputs and flags, sel_cycles and done's cycle, busy, err,
    refusals, starts while busy, inputs changing after the start, rst in a selection."""

    UNIT = SelectUnit
