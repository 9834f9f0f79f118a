"""Every sched ring testbench can build its program for any seed (no simulator): the
directed ones lint clean, the random ones are legal, the illegal ones come with a
prediction the golden run confirms. A seed that cannot produce a program would make a
regression fail for a reason unrelated to the hardware."""

import pytest

from lockstep.models import sched
from lockstep.verif.registry import TESTBENCHES
import numpy as np

from lockstep.verif.sched.env import Compiled, make_program

RING = sorted(n for n, tb in TESTBENCHES.items() if tb.family == "sched" and tb.toplevel == "sched_ring")


@pytest.mark.parametrize("name", RING)
def test_program_for_every_seed(name, seed):
    tb = TESTBENCHES[name]
    params = tb.tb_params or tb.params
    for k in range(12 if "gemm" not in name and "layer" not in name else 3):
        program, expected = make_program(tb.opts["program"], params, seed + 7919 * k)
        run = sched.execute(program)
        if expected is None or isinstance(expected, Compiled):
            assert sched.lint(program) == [] and run.ok, name
            if expected is not None:  # the executor computes what numpy does
                assert np.array_equal(expected.layout.result(run), expected.reference), name
        else:
            first = next(e for e in run.trace if e[1] == "err")
            assert (first[0], first[2], first[3]) == (expected.cycle, expected.tile, expected.bits), name
            assert expected.rule in {v.rule for v in sched.lint(program)}, name  # the linter rejects it
