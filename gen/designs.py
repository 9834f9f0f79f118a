"""The default configurations committed under ``hdl/`` for users without Python."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from lockstep.models.bfp.params import PATENT, MxParams
from lockstep.models.gemm.params import GemmParams
from lockstep.models.host.params import HostParams
from lockstep.models.sched.params import FabricParams
from lockstep.models.sparse.params import SparseParams

from .bfp import emit_dot, emit_mx_quantizer, emit_quantizer, emit_renorm, emit_stats, emit_to_float
from .common import Emitted
from .gemm import emit_kernel_select, emit_ld_detect, emit_sa_cache
from .gemm.tile import emit_tile as emit_gemm_tile
from .gemm.top import emit_top as emit_gemm_top
from .host.top import emit_top as emit_host_top
from .sched import emit_counter, emit_mesh, emit_ring, emit_tile
from .sparse import emit_cluster, emit_decoder, emit_encoder, emit_fm_mem, emit_profiler, emit_stu, emit_w_mem

__all__ = ["Design", "DEFAULT_DESIGNS"]


@dataclass(frozen=True)
class Design:
    """One default design: family folder, module name, generator and parameters."""

    family: str
    name: str
    generator: Callable[..., Emitted]
    params: Any

    def emit(self, outdir: Path) -> Emitted:
        """Generate into ``outdir``."""
        return self.generator(self.params, outdir, name=self.name)


DEFAULT_DESIGNS: list[Design] = [
    Design("bfp", "bfp_quantize", emit_quantizer, PATENT),
    Design("bfp", "bfp_dot", emit_dot, PATENT),
    Design("bfp", "bfp_renorm", emit_renorm, PATENT),
    Design("bfp", "bfp_stats", emit_stats, PATENT),
    Design("bfp", "bfp_to_float", emit_to_float, PATENT),
    Design("bfp", "bfp_mx_quantize", emit_mx_quantizer, MxParams("fp8_e4m3", 32)),
    Design("sched", "sched_counter", emit_counter, FabricParams()),
    Design("sched", "sched_tile", emit_tile, FabricParams()),
    Design("sched", "sched_ring", emit_ring, FabricParams()),
    Design("sched", "sched_mesh", emit_mesh, FabricParams(nt=4, rows=2)),
    Design("sparse", "sp_encoder", emit_encoder, SparseParams()),
    Design("sparse", "sp_decoder", emit_decoder, SparseParams()),
    Design("sparse", "nnz_profiler", emit_profiler, SparseParams()),
    Design("sparse", "fm_mem_unit", emit_fm_mem, SparseParams()),
    Design("sparse", "w_mem", emit_w_mem, SparseParams()),
    Design("sparse", "stu", emit_stu, SparseParams()),
    Design("sparse", "stc_cluster", emit_cluster, SparseParams()),
    Design("gemm", "ld_detect", emit_ld_detect, GemmParams()),
    Design("gemm", "kernel_select", emit_kernel_select, GemmParams()),
    Design("gemm", "sa_cache", emit_sa_cache, GemmParams()),
    Design("gemm", "gemm_tile", emit_gemm_tile, GemmParams(mem_aw=12)),
    Design("gemm", "gemm_top", emit_gemm_top, GemmParams(mem_aw=12)),
    Design("host", "host_top", emit_host_top, HostParams()),
]
