"""Generators of the host family (spec 002; contract docs/host.md).

``host_front`` (the command front end: CSRs, SQ/CQ, checks, dispatch, completions, flush,
counters) is built with the keyword ``fmt=HostParams``; its ports are ``front_ports``.
"""

# ---- the command front end (docs/host.md sections 4-7, 11)
from .front import check_host, emit_front, front_ports, host_front
