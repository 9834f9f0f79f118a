"""Generators of the host family (spec 002; contract docs/host.md).

``host_front`` (the command front end: CSRs, SQ/CQ, checks, dispatch, completions, flush,
counters; its ports are ``front_ports``), the kernels and device memory (sections 2, 3,
8, 9, 11: ``host_kernel``, ``mem_arb``, ``dev_mem`` and ``host_engine``, everything behind
the front end), and ``host_top`` (both, joined by port name). Each is built with the
keyword ``fmt=HostParams``.
"""

# ---- the command front end (docs/host.md sections 4-7, 11)
from .front import check_host, emit_front, front_ports, host_front

# ---- kernels, arbiter, device memory, the engine (docs/host.md sections 2, 3, 8, 9, 11)
from .engine import emit_engine, engine_ports, host_engine
from .kernel import emit_kernel, host_kernel, kernel_ports
from .mem import arb_ports, dev_mem, dev_mem_ports, emit_dev_mem, emit_mem_arb, mem_arb

# ---- the test top
from .top import emit_top, host_top, top_ports
