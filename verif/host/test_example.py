"""Submit your own tasks through the host library: a plain cocotb test a user copies
(``make sim TEST=host_example``; the README walks through it).

The application has float32 activations and one weight matrix per layer. The library
quantises them (8-bit fixed point here), uploads every layer's weights once, cuts tasks
larger than the hardware's limits into hardware tasks, streams them through
pre-processing, the accelerator and post-processing, and returns one result per task in
submission order. Route ``both`` also runs each task on the host CPU and
fails it if the two differ by one bit.
"""

import cocotb
import numpy as np

from lockstep.models.host.params import HostParams
from lockstep.verif.context import TbContext, start
from lockstep.verif.host.driver import HostDriver
from lockstep.verif.host.pipeline import HostLibrary, Task


@cocotb.test()
async def submit_my_tasks(dut):
    """Nine tasks over three layers, stream mode, every result compared with the host;
    the last is larger than one hardware task and comes back joined."""
    ctx = TbContext.from_env()                               # what the runner passes in
    p = HostParams.from_dict(ctx.params)                     # the DUT's parameters
    await start(dut)                                         # clock and reset
    rng = np.random.default_rng(2026)
    layers = {"fc1": rng.standard_normal((16, 8)).astype(np.float32),
              "fc2": rng.standard_normal((8, 8)).astype(np.float32),
              "fc3": rng.standard_normal((12, 20)).astype(np.float32)}  # N = 20 > n_max: cut
    lib = HostLibrary(HostDriver(dut, p), p, layers, dtype=0, frac=3, wfrac=4, ofrac=2, mode="stream",
                      times={"pre": 40, "post": 40})        # host stage costs in cycles
    await lib.start()                                        # weights uploaded once, device enabled
    tasks = [Task(rng.standard_normal((4, 16)).astype(np.float32), "fc1", relu=True, route="both")
             for _ in range(4)]
    tasks += [Task(rng.standard_normal((8, 8)).astype(np.float32), "fc2", pool=True, route="both")
              for _ in range(4)]
    tasks.append(Task(rng.standard_normal((10, 12)).astype(np.float32), "fc3", route="both"))  # 2 x 3 hardware tasks
    results = await lib.run(tasks)                           # one result per task, in order
    for r in results:
        dut._log.info(f"task {r.tag}: {r.status}, {r.data.shape} float32, first row {r.data[0]}")
        assert r.status == "OK", r.error
    assert [r.tag for r in results] == list(range(len(tasks)))
    dut._log.info(f"weights moved once: {lib.img.nbytes} bytes; activations {lib.map.h2d_bytes} bytes")
    ctx.summary.update(blocks=len(results), cycles=lib.t_end - lib.t_start)  # for the regression's report
    ctx.write_summary()
