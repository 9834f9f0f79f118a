"""OCP MX quantizer: checks specific to this unit (the rest: tests/test_gen.py)."""

import json

import numpy as np
import pytest

from lockstep.gen.bfp.mx import MX_FLAGS, MX_LATENCY, emit_mx_quantizer
from lockstep.models.bfp.mx import MX_FLAG_NAMES
from lockstep.models.bfp import mx
from lockstep.models.bfp.params import MX_ELEMENTS, MxParams
from lockstep.models.record import ParamError, params_hash


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"elem": "fp8"}, "elem"),
        ({"elem": "FP8_E4M3"}, "elem"),
        ({"elem": 8}, "elem"),
        ({"elem": "fp4_e2m1", "block": 0}, "block"),
        ({"elem": "fp4_e2m1", "block": 65}, "block"),
        ({"elem": "fp4_e2m1", "block": 32.0}, "block"),
        ({"elem": "fp4_e2m1", "block": True}, "block"),
    ],
)
def test_bad_params_name_the_field(kwargs, field):
    """A parameter that cannot work is refused with a message naming it."""
    with pytest.raises(ParamError, match=rf"MxParams\.{field}="):
        MxParams(**kwargs)


def test_params_round_trip_and_hash():
    p = MxParams("fp6_e3m2", 16)
    assert MxParams.from_dict(p.to_dict()) == p
    assert p.to_dict() == {"elem": "fp6_e3m2", "block": 16}
    assert MxParams("fp8_e4m3").block == 32
    assert params_hash(p) != params_hash(MxParams("fp6_e2m3", 16))
    assert p.element is MX_ELEMENTS["fp6_e3m2"]
    with pytest.raises(ParamError, match="unknown field"):
        MxParams.from_dict({"elem": "int8", "block": 32, "rounding": "rne"})


def test_flag_layout_matches_model():
    """Bit i of out_flags is the golden model's MX_FLAG_* of the same name; bit 3 unused."""
    assert len(MX_FLAGS) == 7 and MX_FLAGS[3] == "unused"
    for i, name in enumerate(MX_FLAGS):
        if name != "unused":
            assert MX_FLAG_NAMES[name] == 1 << i
    model = {
        mx.MX_FLAG_ZERO,
        mx.MX_FLAG_NAN,
        mx.MX_FLAG_INF,
        mx.MX_FLAG_SCALE_LO,
        mx.MX_FLAG_SAT,
        mx.MX_FLAG_SUBN,
    }
    assert set(MX_FLAG_NAMES.values()) == model


def test_record(tmp_path):
    """The record carries the MX parameters, the element-sized ports and the latency."""
    p = MxParams("fp6_e2m3", 4)
    a = emit_mx_quantizer(p, tmp_path / "a")
    rec = json.loads(a.sidecar.read_text())
    assert rec["params_type"] == "MxParams" and MxParams.from_dict(rec["params"]) == p
    assert rec["timing"]["latency"] == MX_LATENCY == 1
    ports = rec["ports"]
    assert ports["in_data"]["width"] == 32 * 4
    assert ports["out_data"]["width"] == 6 * 4
    assert ports["out_scale"]["width"] == 8
    assert ports["out_flags"]["width"] == ports["err"]["width"] == 7
    text = a.verilog.read_text()
    assert "input [127:0] in_data;" in text and "output [23:0] out_data;" in text


def test_block_one_lints_clean(tmp_path, lint):
    """A one-element block (degenerate max tree) lints clean; registered sets: test_gen.py."""
    em = emit_mx_quantizer(MxParams("int8", 1), tmp_path)
    assert lint(em.verilog) == []


def test_n_max_matches_model():
    """The RTL's saturation significand is the model's max_normal, for every type."""
    from lockstep.gen.bfp.mx import _n_max

    for el in MX_ELEMENTS.values():
        if el.ebits:
            v = np.array([_n_max(el) * 2.0 ** (el.emax - el.mbits)])
            assert mx.decode_element(mx.encode_element(v, el.name), el.name)[0] == el.max_normal
