"""Generators of the gemm family (spec 003; contract docs/gemm.md).

The blocks a tile instantiates keep their interfaces: ``kernel_select`` and ``sa_cache``
(ports in ``kernel_select_ports`` / ``sa_cache_ports`` and docs/gemm.md section 9), both
built with the keyword ``fmt=GemmParams``.
"""

# ---- conflict detection, kernel selection, the cache model (docs/gemm.md sections 2, 3, 5)
from .cache import CacheWidths, cache_widths, emit_sa_cache, sa_cache, sa_cache_ports
from .detect import DetectWidths, check_gemm, detect_widths, emit_ld_detect, ld_detect, ld_detect_ports
from .select import SelectWidths, emit_kernel_select, kernel_select, kernel_select_ports, select_widths

# ---- the address generator, the tile and its test top (sections 4, 6, 7, 9)
from .agu import agu_ports, emit_agu, gemm_agu
from .tile import emit_tile, gemm_tile, tile_ports
from .top import emit_top, gemm_top, top_ports
