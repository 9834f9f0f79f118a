"""cocotb test module for the STU on ``stu_top`` (started by lockstep.verif.runner); the
``scenario`` option picks the jobs (verif/sparse/stu_jobs.py)."""

import pyuvm

from lockstep.verif.sparse.stu_env import StuTest


@pyuvm.test()
class StuJobs(StuTest):
    """The scenario's jobs against the golden STU model: output words, start-to-done
    cycles, counters, sticky errors and the per-cycle accumulator invariants."""
