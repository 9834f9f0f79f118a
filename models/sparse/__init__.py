"""Golden models of the ``sparse`` family: a zero-skipping sparse CNN engine (spec 001).

The contract is ``docs/sparse.md``; this module is the SPEC the generated RTL is checked
against. numpy and the standard library only; every value is an exact integer (int64,
or Python ints where ``accw + 2`` bits exceed 64). Every size comes from
:class:`~lockstep.models.sparse.params.SparseParams`.

Contents (all importable from here; the code lives in ``format.py``,
``mem.py``, ``stu.py``, ``partition.py`` and ``combine.py``):

* formats (section 2): :class:`SubFM`, :class:`Desc`, :func:`encode`, :func:`decode`,
  :func:`encode_weights`, :func:`pack_desc` / :func:`unpack_desc`, :func:`pack_data` /
  :func:`unpack_data`, :func:`pack_weights` / :func:`unpack_weights`,
  :func:`pack_out` / :func:`unpack_out`;
* the memories' write side (section 7): :func:`load_data`, :func:`load_weights` ->
  :class:`Load`; the error masks :data:`MEM_ERR`, :data:`W_ERR`, :data:`STU_ERR` and
  :func:`err_names`;
* the partitioner (section 3): :func:`balance_1d`, :func:`equal_split`,
  :func:`partition` -> :class:`Partition`;
* the STU (sections 4, 5, 8): :class:`Cfg`, :func:`correlate_full`,
  :func:`stu_schedule`, :func:`stu_job` -> :class:`Job`, :func:`drain`,
  :func:`drain_entries`, :func:`footprint`, :func:`cfg_error`, :func:`cycles`, :func:`counter_reads`;
* combination and the cluster (section 6): :func:`valid`, :func:`same`,
  :func:`overlap_add`, :func:`halo_stitch`, :func:`combine`, :func:`route_units`,
  :func:`cluster_run` -> :class:`ClusterRun`, :func:`makespan`,
  :func:`depthwise_separable`.

Where the contract is silent, each submodule's docstring lists the decision it takes;
docs/sparse.md records the same decisions.
"""

from __future__ import annotations

from .combine import (
    ClusterRun, cluster_run, combine, depthwise_separable, halo_stitch, makespan, overlap_add, route_units,
    same, valid,
)
from .format import (
    Desc, SubFM, decode, encode, encode_weights, pack_data, pack_desc, pack_out, pack_weights, signed_range,
    unpack_data, unpack_desc, unpack_out, unpack_weights,
)
from .mem import MEM_ERR, STU_ERR, W_ERR, Load, err_names, load_data, load_weights
from .partition import Partition, balance_1d, equal_split, partition
from .stu import (
    CONV, FC, Cfg, Job, cfg_error, correlate_full, counter_reads, cycles, drain, drain_entries, footprint, stu_job,
    stu_schedule,
)
from .params import SparseParams

__all__ = [
    "SparseParams",
    "CONV",
    "FC",
    "MEM_ERR",
    "STU_ERR",
    "W_ERR",
    "Cfg",
    "ClusterRun",
    "Desc",
    "Job",
    "Load",
    "Partition",
    "SubFM",
    "balance_1d",
    "cfg_error",
    "cluster_run",
    "combine",
    "correlate_full",
    "counter_reads",
    "cycles",
    "decode",
    "depthwise_separable",
    "drain",
    "drain_entries",
    "encode",
    "encode_weights",
    "equal_split",
    "err_names",
    "footprint",
    "halo_stitch",
    "load_data",
    "load_weights",
    "makespan",
    "overlap_add",
    "pack_data",
    "pack_desc",
    "pack_out",
    "pack_weights",
    "partition",
    "route_units",
    "same",
    "signed_range",
    "stu_job",
    "stu_schedule",
    "unpack_data",
    "unpack_desc",
    "unpack_out",
    "unpack_weights",
    "valid",
]
