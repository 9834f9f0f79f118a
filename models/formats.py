"""The parameter records under their former common path (``lockstep.models.formats``).

Each family now keeps its record beside its models (``lockstep.models.bfp.BfpFormat``,
``lockstep.models.sched.FabricParams``, ...) and the shared parts are in
:mod:`lockstep.models.record`. This module re-exports them so code written against the
old path keeps working; nothing inside lockstep imports it.
"""

from __future__ import annotations

from .bfp.params import MX_ELEMENTS, PATENT, BfpFormat, MxElement, MxParams
from .gemm.params import GemmParams
from .host.params import HostParams
from .record import ParamError, params_hash
from .sched.params import FabricParams
from .sparse.params import SparseParams

__all__ = ["BfpFormat", "FabricParams", "GemmParams", "HostParams", "MX_ELEMENTS", "MxElement", "MxParams",
           "PATENT", "ParamError", "SparseParams", "params_hash"]
