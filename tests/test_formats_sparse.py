"""SparseParams: ranges, the accumulator bound and the derived widths (docs/sparse.md section 1)."""

import pytest

from lockstep.models.record import ParamError
from lockstep.models.sparse.params import SparseParams


def test_defaults_and_derived():
    p = SparseParams()
    # int8 x int8, 16 channels of 3x3: 15 + clog2(144) = 15 + 8
    assert p.acc_min == 8 + 8 - 1 + 8
    assert (p.fh_max, p.fw_max, p.rb, p.cb, p.kb, p.fifo_d) == (10, 10, 4, 4, 2, 3)
    assert (p.data_bits, p.weight_bits, p.out_bits) == (1 + 4 + 4 + 8, 1 + 2 + 2 + 8, 1 + 4 + 4 + 8)
    assert sum(w for _, w in SparseParams.DESC_FIELDS) == 64


@pytest.mark.parametrize("kw", [{"p": 0}, {"kmax": 8}, {"u": 3}, {"accw": 20}, {"ow": 35}, {"dw": True},
                                {"hmax": 250, "kmax": 7}])
def test_refused(kw):
    with pytest.raises(ParamError):
        SparseParams(**kw)


def test_accw_floor_is_acc_min():
    """docs/sparse.md section 1: accw ranges over acc_min..64, also below 8 (2-bit operands,
    one product: acc_min = 4); one bit less is refused, naming accw."""
    kw = dict(p=1, kmax=1, hmax=1, wmax=1, dw=2, ww=2, cmax=1, ow=2)
    tiny = SparseParams(**kw, accw=SparseParams(**kw).acc_min)
    assert tiny.accw == tiny.acc_min == 4
    with pytest.raises(ParamError, match=r"SparseParams\.accw=3"):
        SparseParams(**kw, accw=3)


def test_ow_at_most_64():
    """ow = accw + 2 up to 64 bits (int64 outputs): accw = 62 takes 64, accw = 64 refuses 65."""
    assert SparseParams(accw=62, ow=64).ow == 64
    with pytest.raises(ParamError, match=r"SparseParams\.ow=65"):
        SparseParams(accw=64, ow=65)


def test_round_trip():
    p = SparseParams(p=8, u=2, m=2)
    assert SparseParams.from_dict(p.to_dict()) == p
