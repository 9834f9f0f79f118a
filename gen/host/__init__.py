"""Generators of the host family (spec 002; contract docs/host.md).

Kernels and device memory (sections 2, 3, 8, 9, 11): ``host_kernel``, ``mem_arb``,
``dev_mem`` and ``host_engine`` (everything behind the front end).
"""

# ---- kernels, arbiter, device memory, the engine (docs/host.md sections 2, 3, 8, 9, 11)
from .engine import emit_engine, engine_ports, host_engine
from .kernel import emit_kernel, host_kernel, kernel_ports
from .mem import arb_ports, dev_mem, dev_mem_ports, emit_dev_mem, emit_mem_arb, mem_arb
