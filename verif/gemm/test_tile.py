"""cocotb test module for the GEMM tile on ``gemm_top`` (started by lockstep.verif.runner);
the ``scenario`` option picks the jobs (verif/gemm/jobs.py)."""

import pyuvm

from lockstep.verif.gemm.tile_env import GemmTest


@pyuvm.test()
class GemmJobs(GemmTest):
    """The scenario's jobs against the golden model: C and the buffer, A and B untouched,
    the trace, every counter, the registers, the sticky errors and done's cycle."""
