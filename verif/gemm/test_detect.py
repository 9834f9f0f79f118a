"""cocotb test module for ``ld_detect`` (started by lockstep.verif.runner)."""

import pyuvm

from lockstep.verif.gemm.block_env import BlockTest
from lockstep.verif.gemm.detect_env import DetectUnit


@pyuvm.test()
class DetectJobs(BlockTest):
    """Directed and random (base, ld, m) starts against ld_conflict and closed_form: the
    walk's outputs at done, done's cycle, busy, err, the closed form in every cycle,
    refusals, starts while busy, inputs changing after the start, rst in a walk."""

    UNIT = DetectUnit
