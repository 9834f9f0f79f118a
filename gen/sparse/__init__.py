"""Generators of the sparse family (spec 001; contract docs/sparse.md)."""

# ---- stream blocks (sp_encoder, sp_decoder, nnz_profiler) and memories (fm_mem_unit, w_mem)
from .memory import emit_fm_mem, emit_w_mem, fm_mem_ports, fm_mem_unit, w_mem, w_mem_ports
from .stream import (
    decoder_ports,
    emit_decoder,
    emit_encoder,
    emit_profiler,
    encoder_ports,
    nnz_profiler,
    profiler_ports,
    sp_decoder,
    sp_encoder,
)

# ---- compute: the sparse tensor compute unit (stu), its unit-test top (stu_top) and the cluster (stc_cluster)
from .cluster import cluster_ports, emit_cluster, stc_cluster
from .stu import emit_stu, stu, stu_ports
from .stu_top import emit_stu_top, stu_top, stu_top_ports
