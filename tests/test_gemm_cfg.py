"""Configuration checks (docs/gemm.md section 7): each error bit on its own and combined,
extent edge cases, and the auto-mode order (early refusal, checks on the selection).

Base job (fp32, 64 KiB flat memory): A [0, 1536), B [4096, 12288), C [16384, 19456),
buffer [32768, 33280) = ceil(32/16) * (6-2) * 16 * 4 = 512 bytes."""

from __future__ import annotations

import pytest

from lockstep.models import gemm as G
from lockstep.models.gemm.params import GemmParams
from lockstep.models.gemm import ERR

P = GemmParams()
MEM = P.mem_elems * P.eb  # 65536
BASE = G.GemmCfg(M=12, N=64, K=32, lda=32, ldb=64, ldc=64, base_a=0, base_b=4096, base_c=16384, base_buf=32768,
                 buf_len=512, m=6, z=4, keep=2, copy=True)


def bits(*names):
    out = 0
    for n in names:
        out |= ERR[n]
    return out


def chk(**kw):
    return G.check_cfg(BASE.with_(**kw), P)


def test_base_is_valid_and_extents():
    assert G.check_cfg(BASE, P) == 0
    k = G.resolve(BASE, P).kernel
    assert G.extents(BASE, k, P) == {"A": (0, 1536), "B": (4096, 12288), "C": (16384, 19456),
                                     "BUF": (32768, 33280)}
    assert G.err_names(bits("BAD_LD", "OOB")) == ["BAD_LD", "OOB"]
    assert [ERR[n] for n in P.ERR_NAMES] == [1 << i for i in range(8)]


@pytest.mark.parametrize("kw,exp", [
    (dict(M=1 << 16), ("BAD_DIM",)),                        # OOB would follow, but is not evaluated
    (dict(M=(1 << 16) - 1), ("OOB", "OVERLAP")),            # in range, but A and C run off and meet
    (dict(K=1 << 16, copy=False), ("BAD_DIM", "BAD_LD")),   # lda 32 < K too
    (dict(K=1 << 16), ("BAD_DIM", "BAD_LD", "BUF_OVF")),    # 4096 K-blocks of buffer
    (dict(N=1 << 16), ("BAD_DIM", "BAD_LD")),               # ldb, ldc < N
    (dict(lda=31), ("BAD_LD",)),
    (dict(ldb=63), ("BAD_LD",)),
    (dict(ldc=63), ("BAD_LD",)),
    (dict(lda=-32), ("BAD_LD",)),
    (dict(K=0, lda=0), ("BAD_LD",)),                        # max(K, 1): a zero stride is refused
    (dict(K=0, lda=1), ()),
    (dict(lda=1 << 30), ("BAD_LD",)),                       # stride 2**32 bytes
    (dict(lda=(1 << 30) - 1, base_a=40960), ("OOB",)),      # a legal stride; A is far too long
    (dict(base_b=4098), ("MISALIGNED",)),
    (dict(base_buf=32769), ("MISALIGNED",)),
    (dict(base_a=2, base_c=16386), ("MISALIGNED",)),
    (dict(copy=False, m=0), ("BAD_BLOCK",)),
    (dict(copy=False, m=31), ("BAD_BLOCK",)),
    (dict(copy=False, z=0), ("BAD_BLOCK",)),
    (dict(copy=False, z=3), ("BAD_BLOCK",)),
    (dict(copy=False, z=16), ("BAD_BLOCK",)),
    (dict(copy=False, m=7, z=4), ("BAD_BLOCK",)),           # (7+1)*4 + 1 = 33 > 32
    (dict(copy=False, m=14, z=2), ()),                      # 31 <= 32
    (dict(copy=False, keep=7), ("BAD_BLOCK",)),
    (dict(keep=7), ("BAD_BLOCK",)),                         # copy on: buffer max(0, m-keep) = 0, no BUF_OVF
    (dict(shift=32), ("BAD_BLOCK",)),
    (dict(shift=31), ()),
    (dict(m=31), ("BAD_BLOCK", "BUF_OVF")),                 # 2*29*16*4 = 3712 > 512
    (dict(buf_len=511), ("BUF_OVF",)),
    (dict(copy=False, buf_len=0), ()),
    (dict(keep=6, buf_len=0), ()),                          # keep = m copies nothing
    (dict(K=17, buf_len=511), ("BUF_OVF",)),                # ceil(17/16) = 2 K-blocks
    (dict(K=16, lda=16, buf_len=256), ()),
    (dict(base_c=MEM - 3072), ()),                          # C ends exactly at the end
    (dict(base_c=MEM - 3068), ("OOB",)),
    (dict(base_buf=MEM - 512), ()),
    (dict(base_buf=MEM - 508), ("OOB",)),
    (dict(base_buf=MEM - 508, copy=False), ()),             # no buffer extent without copy
    (dict(N=0, base_c=MEM), ()),                            # empty extents are never OOB
    (dict(K=0, base_buf=MEM, base_b=MEM), ()),
    (dict(base_c=1536, base_b=8192), ()),                   # C touches A's end
    (dict(base_c=1532, base_b=8192), ("OVERLAP",)),
    (dict(base_c=12288), ()),                               # C touches B's end
    (dict(base_c=12284), ("OVERLAP",)),
    (dict(base_c=4096 - 3072), ("OVERLAP",)),               # meets A
    (dict(base_c=512, base_a=3584), ()),                    # C [512, 3584) touches A [3584, 5120)
    (dict(base_b=0), ()),                                   # A and B may overlap
    (dict(base_buf=19456 - 4), ("OVERLAP",)),               # buffer meets C
    (dict(base_buf=19456), ()),
    (dict(base_buf=19456 - 4, copy=False), ()),
    (dict(base_buf=1024), ("OVERLAP",)),                    # buffer meets A
    (dict(base_buf=12288 - 512), ("OVERLAP",)),             # buffer [11776, 12288) inside B
    (dict(base_buf=12288), ()),                             # buffer touches B's end
])
def test_each_bit(kw, exp):
    assert chk(**kw) == bits(*exp), (kw, G.err_names(chk(**kw)))


def test_extents_are_strided_not_footprints():
    """C with ldc = 128 spans its row gaps: a buffer in a gap still overlaps."""
    assert chk(ldc=128) == 0
    assert chk(ldc=128, base_buf=16384 + 256) == bits("OVERLAP")


def test_empty_extents_never_meet():
    assert chk(N=0, base_c=0) == 0            # C (empty) inside A
    assert chk(M=0, base_c=4096) == 0         # C empty, A empty; B is not met
    assert chk(K=0, lda=1, base_buf=16384) == 0   # buffer empty (no K-block) inside C


def test_combined_bits():
    assert chk(lda=31, base_b=4098, z=3, copy=False) == bits("BAD_LD", "MISALIGNED", "BAD_BLOCK")
    assert chk(M=1 << 16, ldb=1, base_a=1, shift=40, buf_len=0) == bits(
        "BAD_DIM", "BAD_LD", "MISALIGNED", "BAD_BLOCK", "BUF_OVF")
    assert chk(buf_len=0, base_c=1532) == bits("BUF_OVF", "OVERLAP")
    assert chk(base_c=MEM - 3068, base_buf=19456 - 4 + (MEM - 3068 - 16384)) == bits("OOB", "OVERLAP")
    # BAD_LD switches off OOB and OVERLAP (their extents are undefined)
    assert chk(ldb=-5, base_c=1532, base_buf=MEM) == bits("BAD_LD")
    assert G.check_cfg(BASE, P) & ERR["START_BUSY"] == 0


# ---- auto mode ---------------------------------------------------------------------------
# lda = 1024 (a way), N = 64: only z = 1 is balanced -> (30, 1) conflicts -> OVERFLOW_COPY keep 6;
# its buffer is ceil(32/16) * 24 * 16 * 4 = 3072 bytes.
AUTO = G.GemmCfg(M=12, N=64, K=32, lda=1024, ldb=64, ldc=64, base_a=0, base_b=49152, base_c=57344,
                 base_buf=61440, buf_len=3072, auto=True, m=0, z=0, keep=9, copy=False)


def test_auto_checks_the_selection():
    r = G.resolve(AUTO, P)
    assert r.err == 0 and r.kernel == G.Kernel(G.OVERFLOW_COPY, 30, 1, 6, True)
    assert r.sel == r.selection.sel_cycles == 30 + 4 + 1
    r = G.resolve(AUTO.with_(buf_len=3071), P)
    assert r.err == bits("BUF_OVF") and r.sel == 35
    assert G.check_cfg(AUTO.with_(shift=32), P) == bits("BAD_BLOCK")
    assert G.check_cfg(AUTO.with_(base_buf=57344 + 2048), P) == bits("OVERLAP")   # meets C
    assert G.check_cfg(AUTO.with_(base_buf=MEM - 3068), P) == bits("OOB")
    # limit_m: pick(6) -> (6, 4) vs (2, 8): neither balanced (1 N-block each): (2, 8), NO_COPY
    r = G.resolve(AUTO.with_(limit_m=True, buf_len=0), P)
    assert r.err == 0 and r.kernel == G.Kernel(G.NO_COPY, 2, 8, 2, False)


def test_auto_early_refusal_skips_the_selection():
    r = G.resolve(AUTO.with_(lda=31, base_b=49154, shift=40, buf_len=0), P)
    assert r.err == bits("BAD_LD", "MISALIGNED") and r.sel == 0 and r.selection is None and r.kernel is None
    assert G.resolve(AUTO.with_(M=1 << 16), P).err == bits("BAD_DIM")


@pytest.mark.parametrize("kw", [dict(M=-1), dict(lda=1 << 31), dict(ldb=-(1 << 31) - 1), dict(base_a=-4),
                                dict(base_c=1 << 32), dict(shift=-1), dict(buf_len=1 << 32)])
def test_values_no_register_holds(kw):
    with pytest.raises(ValueError):
        G.check_cfg(BASE.with_(**kw), P)
