"""Fuzzed inputs that a user or an upstream tool hands the project (Hypothesis).

* The host family (spec 002; docs/host.md sections 5 and 10): descriptor and completion
  words of any length and value, ``check`` and the front-end model on every 256-bit
  pattern, and the host library's entry points (task splitting, blocking, the device
  allocator, the memory map) with bad sizes.
* The sparse family (spec 001; docs/sparse.md section 2): dense maps to the compressed
  format and back, maps of the wrong shape, dtype or range, and the stream and
  descriptor words of any value.

Expected values never come from the models: the word layouts, the checksum, the check
order, the kernel arithmetic, the allocator's placement rule and the stream words are
read off the two contracts and written again below (``spec_*``), and the rest are
properties (round trips, documented errors only).

Every test draws a bounded number of examples (``max_examples`` in its decorator) with no
deadline (the machine may be loaded) and no example database (nothing is written into the
repository); Hypothesis prints the falsifying example, and ``--hypothesis-seed`` replays a
run.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lockstep.models import host as H
from lockstep.models import sparse as S
from lockstep.models.host import lib as L
from lockstep.models.host.params import HostParams
from lockstep.models.record import ParamError
from lockstep.models.sparse.params import SparseParams


def fuzz(n: int) -> settings:
    """Hypothesis settings of these tests: ``n`` examples, no deadline, no database."""
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


M32 = (1 << 32) - 1
#: Any 8 words of 32 bits.
ANY_WORDS = st.lists(st.integers(0, M32), min_size=8, max_size=8)
#: Integers well outside any word: negative, 32 bits and more, 64 bits and more.
WILD = st.one_of(st.integers(-(1 << 70), -1), st.integers(1 << 32, 1 << 40), st.integers(1 << 64, 1 << 70))


def mostly(good: st.SearchStrategy, other: st.SearchStrategy, weight: int = 3) -> st.SearchStrategy:
    """``good`` about ``weight`` times as often as ``other`` (``st.one_of`` does not weight
    a repeated branch: a weighted pick, then the branch)."""
    return st.sampled_from([False] * weight + [True]).flatmap(lambda odd: other if odd else good)


# =====================================================================================
# host: the descriptor and completion of docs/host.md section 5, written again
# =====================================================================================

#: Descriptor field -> (word, lowest bit, bits), from the layout of docs/host.md section 5.
#: The reserved fields are named as ``Descriptor`` names them.
DESC_LAYOUT: dict[str, tuple[int, int, int]] = {
    "opcode": (0, 0, 4), "relu": (0, 4, 1), "pool": (0, 5, 1), "irq": (0, 6, 1), "rsvd0_7": (0, 7, 1),
    "dtype": (0, 8, 2), "rsvd0_hi": (0, 10, 6), "tag": (0, 16, 16),
    "m": (1, 0, 16), "n": (1, 16, 16),
    "k": (2, 0, 16), "shift": (2, 16, 5), "rsvd2": (2, 21, 11),
    "act_addr": (3, 0, 32), "wgt_off": (4, 0, 32), "out_addr": (5, 0, 32),
    "mult": (6, 0, 16), "rsvd6": (6, 16, 16),
    "magic": (7, 0, 8), "chk": (7, 8, 8), "seq": (7, 16, 16),
}
RESERVED = ("rsvd0_7", "rsvd0_hi", "rsvd2", "rsvd6")
#: Status codes of docs/host.md section 5, by code.
STATUS = ("OK", "BAD_MAGIC", "BAD_CHECKSUM", "BAD_SEQ", "BAD_OPCODE", "BAD_DTYPE", "RSVD_NONZERO", "BAD_DIMS",
          "ADDR_RANGE", "WGT_RANGE", "MEM_ERR", "ABORTED")
MAGIC = 0xA5


def spec_fields(words: list[int]) -> dict[str, int]:
    """The descriptor's fields, read bit by bit from the contract's layout."""
    return {f: words[w] >> lo & ((1 << n) - 1) for f, (w, lo, n) in DESC_LAYOUT.items()}


def spec_words(fields: dict[str, int]) -> list[int]:
    """The 8 words of a field dict (every field within its width)."""
    w = [0] * 8
    for f, (i, lo, n) in DESC_LAYOUT.items():
        assert 0 <= fields[f] < 1 << n, f
        w[i] |= fields[f] << lo
    return w


def spec_checksum(words: list[int]) -> int:
    """W7.chk: XOR of bytes 0..27 and bytes 30, 31 of the little-endian descriptor."""
    b = b"".join(w.to_bytes(4, "little") for w in words)
    x = 0
    for i in [*range(28), 30, 31]:
        x ^= b[i]
    return x


def with_checksum(words: list[int]) -> list[int]:
    """``words`` with W7.chk set to the right value."""
    w = list(words)
    w[7] = (w[7] & ~0xFF00) | spec_checksum(w) << 8
    return w


def spec_status(words: list[int], lim: H.Limits, p: HostParams) -> str:
    """The first failing check of the table in docs/host.md section 5 (sums exact,
    half-open ranges, empty ranges overlap nothing)."""
    f = spec_fields(words)
    if f["magic"] != MAGIC:
        return "BAD_MAGIC"
    if f["chk"] != spec_checksum(words):
        return "BAD_CHECKSUM"
    if f["seq"] != lim.exp_seq:
        return "BAD_SEQ"
    if f["opcode"] not in (0, 1):
        return "BAD_OPCODE"
    if f["dtype"] > 1:
        return "BAD_DTYPE"
    if any(f[r] for r in RESERVED):
        return "RSVD_NONZERO"
    if f["opcode"] == 0:
        return "OK"
    m, n, k, es = f["m"], f["n"], f["k"], 2 if f["dtype"] == 1 else 1
    epw = 4 // es
    if not (1 <= m <= p.m_max and 1 <= n <= p.n_max and 1 <= k <= p.k_max) or k % epw or n % epw \
            or (f["pool"] and m % 2):
        return "BAD_DIMS"
    mo = m // 2 if f["pool"] else m

    def overlap(a0: int, a1: int, b0: int, b1: int) -> bool:
        return a0 < a1 and b0 < b1 and a0 < b1 and b0 < a1

    act0, act1 = f["act_addr"], f["act_addr"] + m * k * es
    out0, out1 = f["out_addr"], f["out_addr"] + mo * n * es
    if act0 % 4 or out0 % 4 or act1 > lim.mem_limit or out1 > lim.mem_limit or overlap(out0, out1, act0, act1) \
            or overlap(out0, out1, lim.wgt_base, lim.wgt_base + lim.wgt_size):
        return "ADDR_RANGE"
    if f["wgt_off"] % 4 or f["wgt_off"] + k * n * es > lim.wgt_size or lim.wgt_base + lim.wgt_size > lim.mem_limit:
        return "WGT_RANGE"
    return "OK"


# ---- strategies ---------------------------------------------------------------------

#: Small and default records: the small ones make every status reachable.
HOST_PARAMS = [HostParams(), HostParams(m_max=4, k_max=8, n_max=4, mem_aw=8), HostParams(m_max=1, mem_aw=8),
               HostParams(m_max=5, k_max=12, n_max=8, mem_aw=10)]


@st.composite
def host_setups(draw: st.DrawFn) -> tuple[HostParams, H.Limits]:
    """A record and the CSR state the checks read (MEM_LIMIT at most ``mem_bytes``,
    WGT_BASE word-aligned: its bits [1:0] read 0)."""
    p = draw(st.sampled_from(HOST_PARAMS))
    mb = p.mem_bytes
    mem_limit = draw(mostly(st.just(mb), st.integers(0, mb), 2))
    wgt_base = 4 * draw(st.integers(0, mb // 4))
    wgt_size = draw(mostly(st.integers(0, mb // 8), st.one_of(st.integers(0, mb - wgt_base), st.integers(0, M32)), 2))
    return p, H.Limits(exp_seq=draw(st.integers(0, 0xFFFF)), wgt_base=wgt_base, wgt_size=wgt_size,
                       mem_limit=mem_limit)


@st.composite
def descriptor_words(draw: st.DrawFn, p: HostParams, lim: H.Limits) -> list[int]:
    """8 words that reach every check: each field mostly plausible, sometimes anything
    its width holds; magic, checksum and seq mostly right."""
    mb, u32 = p.mem_bytes, st.integers(0, M32)

    def dim(mx: int, step: int) -> st.SearchStrategy:
        return mostly(st.integers(1, max(1, mx // step)).map(lambda v: v * step),
                      st.one_of(st.integers(0, mx + 2), st.integers(0, 0xFFFF)), 4)

    def aligned(hi: int) -> st.SearchStrategy:
        return st.integers(0, max(0, hi) // 4).map(lambda v: 4 * v)

    addr = mostly(aligned(mb - 4), st.one_of(st.integers(0, mb + 8), u32), 4)
    f = {
        "opcode": draw(mostly(st.sampled_from([0, 1, 1, 1]), st.integers(0, 15), 6)),
        "relu": draw(st.integers(0, 1)), "pool": draw(st.integers(0, 1)), "irq": draw(st.integers(0, 1)),
        "dtype": draw(mostly(st.integers(0, 1), st.integers(0, 3), 6)), "tag": draw(st.integers(0, 0xFFFF)),
        "m": draw(dim(p.m_max, 2)), "n": draw(dim(p.n_max, 4)), "k": draw(dim(p.k_max, 4)),
        "shift": draw(st.integers(0, 31)), "mult": draw(st.integers(0, 0xFFFF)),
        "act_addr": draw(addr), "wgt_off": draw(mostly(aligned(min(lim.wgt_size, mb) // 2), addr, 3)),
        "out_addr": draw(addr), "magic": draw(mostly(st.just(MAGIC), st.integers(0, 0xFF), 6)),
        "seq": draw(mostly(st.just(lim.exp_seq), st.integers(0, 0xFFFF), 5)), "chk": draw(st.integers(0, 0xFF)),
    }
    rsvd_set = draw(mostly(st.just(False), st.just(True), 6))
    for r in RESERVED:
        f[r] = draw(st.integers(0, (1 << DESC_LAYOUT[r][2]) - 1)) if rsvd_set else 0
    w = spec_words(f)
    return with_checksum(w) if draw(mostly(st.just(True), st.just(False), 4)) else w


@st.composite
def planned_cases(draw: st.DrawFn, change: bool = True) -> tuple[HostParams, H.Limits, list[int]]:
    """A well-formed MATMUL (but, sometimes, a pool with odd M) and the CSR state it fits: A, the result and the weight
    region back to back in any order with gaps of 0 to 12 bytes (touching ranges
    included), MEM_LIMIT at the end or a few bytes off; then mostly one thing changed: an
    address, size or limit nudged by a few bytes (the checks' boundaries), the weight
    region moved (often empty), pool with an odd M, or a header field (opcode, dtype, a reserved field, seq,
    magic, chk) set to any value. ``change=False``: the MATMUL as planned (status OK)."""
    p = draw(st.sampled_from(HOST_PARAMS))
    dtype = draw(st.integers(0, 1))
    es, epw = 1 + dtype, 4 // (1 + dtype)
    pool = draw(st.integers(0, 1)) if p.m_max >= 2 else 0
    even = st.integers(1, p.m_max // 2).map(lambda v: 2 * v)
    if pool:  # with change, sometimes an odd M (BAD_DIMS)
        m = draw(mostly(even, st.integers(1, p.m_max), 3) if change else even)
    else:
        m = draw(st.integers(1, p.m_max))
    n, k = epw * draw(st.integers(1, p.n_max // epw)), epw * draw(st.integers(1, p.k_max // epw))
    size = {"act": m * k * es, "out": (m // 2 if pool else m) * n * es}
    wgt_off = 4 * draw(st.integers(0, 3))
    size["wgt"] = wgt_off + k * n * es + draw(st.integers(0, 5))
    at, pos = {}, 0
    for r in draw(st.permutations(["act", "out", "wgt"])):
        pos += 4 * draw(st.integers(0, 3))
        at[r] = pos
        pos += -(-size[r] // 4) * 4
    assume(pos <= p.mem_bytes)
    f = {"opcode": 1, "relu": draw(st.integers(0, 1)), "pool": pool, "irq": draw(st.integers(0, 1)),
         "dtype": dtype, "tag": draw(st.integers(0, 0xFFFF)), "m": m, "n": n, "k": k,
         "shift": draw(st.integers(0, 31)), "mult": draw(st.integers(0, 0xFFFF)), "act_addr": at["act"],
         "wgt_off": wgt_off, "out_addr": at["out"], "magic": MAGIC, "seq": draw(st.integers(0, 0xFFFF)), "chk": 0,
         **{r: 0 for r in RESERVED}}
    lim = {"exp_seq": f["seq"], "wgt_base": at["wgt"], "wgt_size": size["wgt"],
           "mem_limit": min(p.mem_bytes, pos + draw(mostly(st.just(0), st.integers(-3, 8), 1)))}
    nudge = None
    if change:
        nudge = draw(st.sampled_from([None, None, "act_addr", "out_addr", "wgt_off", "m", "n", "k", "wgt_size",
                                      "mem_limit", "wgt_region", "wgt_region", "pool_odd", "opcode", "dtype", "rsvd",
                                      "seq", "magic", "chk"]))
    else:  # as planned: MEM_LIMIT not below the end
        lim["mem_limit"] = max(lim["mem_limit"], pos)
    if nudge in ("act_addr", "out_addr", "wgt_off", "m", "n", "k"):
        f[nudge] = min(max(0, f[nudge] + draw(st.integers(-6, 6))), (1 << DESC_LAYOUT[nudge][2]) - 1)
    elif nudge in ("wgt_size", "mem_limit"):
        lim[nudge] = min(max(0, lim[nudge] + draw(st.integers(-6, 6))), p.mem_bytes)
    elif nudge in ("opcode", "dtype", "seq", "magic"):
        f[nudge] = draw(st.integers(0, (1 << DESC_LAYOUT[nudge][2]) - 1))
    elif nudge == "wgt_region":  # often inside the result, often empty (an empty range overlaps nothing)
        inside = 4 * draw(st.integers(at["out"] // 4, (at["out"] + size["out"]) // 4))
        lim["wgt_base"] = draw(mostly(st.just(inside), st.integers(0, pos // 4).map(lambda v: 4 * v), 1))
        lim["wgt_size"] = draw(mostly(st.just(0), st.integers(1, 16), 1))
    elif nudge == "pool_odd":  # fewer rows than planned: A and the result still fit
        f["pool"], f["m"] = 1, m if m % 2 else m - 1
    elif nudge == "rsvd":
        r = draw(st.sampled_from(RESERVED))
        f[r] = draw(st.integers(1, (1 << DESC_LAYOUT[r][2]) - 1))
    words = with_checksum(spec_words(f))
    if nudge == "chk":
        words[7] ^= draw(st.integers(1, 0xFF)) << 8
    return p, H.Limits(**lim), words


@st.composite
def host_cases(draw: st.DrawFn) -> tuple[HostParams, H.Limits, list[int]]:
    """A record, CSR state and 8 words: planned MATMULs near the boundaries, structured
    descriptors, or any 256 bits."""
    kind = draw(st.sampled_from(["planned", "planned", "structured", "structured", "any"]))
    if kind == "planned":
        return draw(planned_cases())
    p, lim = draw(host_setups())
    words = draw(descriptor_words(p, lim) if kind == "structured" else ANY_WORDS)
    return p, lim, words


DESCRIPTORS = st.builds(
    H.Descriptor,
    **{f: st.integers(0, (1 << n) - 1) for f, (_, _, n) in DESC_LAYOUT.items() if f != "chk"},
    chk=st.one_of(st.none(), st.integers(0, 0xFF)),
)


# ---- descriptor words ----------------------------------------------------------------

def word_lists(n: int, good: st.SearchStrategy) -> st.SearchStrategy:
    """Lists of ints: mostly ``n`` of them, each mostly drawn from ``good``; else any
    length up to 12 and ints far outside a word."""
    word = mostly(good, st.one_of(st.integers(0, M32), WILD), 12)
    return mostly(st.lists(word, min_size=n, max_size=n), st.lists(word, max_size=12), 2)


def _refuses_bad_shape(unpack: Any, words: list[int], n: int) -> bool:
    """When ``words`` is not ``n`` 32-bit words, check that ``unpack`` refuses it with a
    ValueError naming the length or the first bad word, and say so (True)."""
    bad = [i for i, w in enumerate(words) if not 0 <= w <= M32]
    if len(words) != n:
        with pytest.raises(ValueError, match=rf"{n} words, got {len(words)}\b"):
            unpack(words)
    elif bad:
        with pytest.raises(ValueError, match=rf"\bword {bad[0]}\b"):
            unpack(words)
    return len(words) != n or bool(bad)


@fuzz(200)
@given(words=word_lists(8, st.integers(0, M32)))
def test_descriptor_unpack_any_word_list(words: list[int]) -> None:
    """Any list of ints: a Descriptor whose words are exactly the input (no silent
    wrap), or a ValueError naming the length or the first word that is not 32 bits."""
    if not _refuses_bad_shape(H.Descriptor.unpack, words, 8):
        d = H.Descriptor.unpack(words)
        assert d.words() == words
        assert {f: getattr(d, f) for f in DESC_LAYOUT} == spec_fields(words)


@fuzz(150)
@given(words=st.lists(st.integers(0, M32), min_size=8, max_size=8), i=st.integers(0, 7),
       bad=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["1", None, 1j, b"\x01"])))
def test_descriptor_unpack_refuses_non_integers(words: list[int], i: int, bad: Any) -> None:
    """A word that is not an integer (1.5, 3.0, NaN, a string) is refused with a
    ValueError naming it, never truncated to a neighbouring integer."""
    words[i] = bad
    with pytest.raises(ValueError, match=rf"\bword {i}\b"):
        H.Descriptor.unpack(words)


@fuzz(200)
@given(d=DESCRIPTORS)
def test_descriptor_words_round_trip(d: H.Descriptor) -> None:
    """Every field within its width: ``words()`` is the contract's layout (``chk=None``
    packs the contract's checksum) and ``unpack`` gives the descriptor back."""
    fields = {f: getattr(d, f) for f in DESC_LAYOUT if f != "chk"}
    want = spec_words({**fields, "chk": d.chk or 0})
    if d.chk is None:
        want = with_checksum(want)
    words = d.words()
    assert words == want
    back = H.Descriptor.unpack(words)
    if d.chk is None:
        assert back.chk == spec_checksum(words) and back.with_(chk=None) == d
    else:
        assert back == d
    assert H.checksum(words) == spec_checksum(words)


@fuzz(150)
@given(case=host_cases())
def test_check_any_descriptor(case: tuple[HostParams, H.Limits, list[int]]) -> None:
    """Any 256 bits: ``check`` returns a status code of the table (never raises), the one
    the contract's check order gives."""
    p, lim, words = case
    st_ = H.check(words, lim, p)
    assert isinstance(st_, int) and 0 <= st_ < len(STATUS)
    assert STATUS[st_] == spec_status(words, lim, p)


@fuzz(200)
@given(case=st.tuples(st.sampled_from(HOST_PARAMS), st.builds(H.Limits, st.integers(0, 0xFFFF))), words=ANY_WORDS,
       bit=st.integers(0, 255))
def test_one_flipped_bit_fails_magic_or_checksum(case: tuple[HostParams, H.Limits], words: list[int],
                                                 bit: int) -> None:
    """A well-formed descriptor (magic and checksum right) with one bit flipped: BAD_MAGIC
    when the bit is in the magic byte, else BAD_CHECKSUM (the checksum covers every other
    byte, and a flipped chk bit is a wrong checksum), whatever the other fields hold."""
    p, lim = case
    w = list(words)
    w[7] = (w[7] & ~0xFF) | MAGIC
    w = with_checksum(w)
    w[bit // 32] ^= 1 << (bit % 32)
    want = "BAD_MAGIC" if bit // 32 == 7 and bit % 32 < 8 else "BAD_CHECKSUM"
    assert STATUS[H.check(w, lim, p)] == want


@fuzz(200)
@given(case=st.tuples(st.sampled_from(HOST_PARAMS), st.builds(H.Limits, st.integers(0, 0xFFFF))), words=ANY_WORDS,
       chk=st.integers(0, 0xFF))
def test_wrong_checksum_is_bad_checksum(case: tuple[HostParams, H.Limits], words: list[int], chk: int) -> None:
    """Magic right, any other bits, a chk byte that is not the XOR: BAD_CHECKSUM."""
    p, lim = case
    w = list(words)
    w[7] = (w[7] & ~0xFFFF) | chk << 8 | MAGIC
    if chk == spec_checksum(w):
        w[7] ^= 0x100
    assert STATUS[H.check(w, lim, p)] == "BAD_CHECKSUM"


@fuzz(150)
@given(case=planned_cases(change=False), wgt_off=st.integers(0, 256), data=st.data())
def test_empty_weight_region_overlaps_nothing(case: tuple[HostParams, H.Limits, list[int]], wgt_off: int,
                                              data: st.DataObject) -> None:
    """A planned MATMUL (OK as it is) with WGT_SIZE = 0 anywhere, also inside the result
    or A: the empty region overlaps nothing, so only the weight check fails, WGT_RANGE
    (K N es bytes of weights never fit in 0 bytes)."""
    p, lim, words = case
    assert STATUS[H.check(words, lim, p)] == "OK"
    f = spec_fields(words)
    ends = {"act": f["act_addr"] + f["m"] * f["k"] * (1 + f["dtype"]),
            "out": f["out_addr"] + (f["m"] // (1 + f["pool"])) * f["n"] * (1 + f["dtype"])}
    inside = st.one_of(st.integers(f["act_addr"] // 4, ends["act"] // 4),
                       st.integers(f["out_addr"] // 4, ends["out"] // 4))
    base = 4 * data.draw(mostly(inside, st.one_of(st.integers(0, lim.mem_limit // 4), st.integers(0, M32 // 4)), 2),
                         label="base")
    w = list(words)
    w[4] = wgt_off
    lim = H.Limits(lim.exp_seq, base, 0, lim.mem_limit)
    assert STATUS[H.check(with_checksum(w), lim, p)] == "WGT_RANGE"


DIMS_RULES = ["pool_odd", "m_zero", "n_zero", "k_zero", "m_over", "n_over", "k_over", "n_part", "k_part"]


@fuzz(150)
@given(case=planned_cases(change=False), rule=st.sampled_from(DIMS_RULES), data=st.data())
def test_one_dims_rule_broken(case: tuple[HostParams, H.Limits, list[int]], rule: str,
                              data: st.DataObject) -> None:
    """A planned MATMUL (OK as it is) with one BAD_DIMS rule of the table broken: pool
    with an odd M, M, N or K zero or above its max, K or N not whole words (a multiple
    of 4 / es): BAD_DIMS, whatever the addresses then say (dims are checked first)."""
    p, lim, words = case
    assert STATUS[H.check(words, lim, p)] == "OK"
    f = spec_fields(words)
    epw = 4 // (1 + f["dtype"])
    top = {"m": p.m_max, "n": p.n_max, "k": p.k_max}
    if rule == "pool_odd":
        f["pool"], f["m"] = 1, f["m"] if f["m"] % 2 else f["m"] - 1
    elif rule.endswith("_zero"):
        f[rule[0]] = 0
    elif rule.endswith("_over"):
        f[rule[0]] = data.draw(mostly(st.just(top[rule[0]] + 1), st.integers(top[rule[0]] + 1, 0xFFFF), 1),
                               label=rule)
    else:  # part of a word less (epw is 2 or 4, the planned value at least epw)
        f[rule[0]] -= data.draw(st.integers(1, epw - 1), label=rule)
    assert STATUS[H.check(with_checksum(spec_words(f)), lim, p)] == "BAD_DIMS"


def spec_kernel(mem: np.ndarray, f: dict[str, int], wgt_base: int) -> np.ndarray:
    """docs/host.md sections 2 and 3: A and W row-major little-endian at act_addr and
    WGT_BASE + wgt_off, exact product, scaler (round half up, arithmetic shift),
    saturation, ReLU, 2x1 max-pool."""
    es = 2 if f["dtype"] == 1 else 1
    dt = np.dtype("<i2" if es == 2 else "i1")

    def mat(addr: int, r: int, c: int) -> np.ndarray:
        return np.frombuffer(mem[addr:addr + r * c * es].tobytes(), dtype=dt).astype(np.int64).reshape(r, c)

    m, n, k, sh = f["m"], f["n"], f["k"], f["shift"]
    acc = [[sum(int(a) * int(b) for a, b in zip(row, col)) for col in mat(wgt_base + f["wgt_off"], k, n).T]
           for row in mat(f["act_addr"], m, k)]
    lo, hi = -(1 << (8 * es - 1)), (1 << (8 * es - 1)) - 1
    y = np.array([[min(hi, max(lo, (v * f["mult"] + (1 << (sh - 1) if sh else 0)) >> sh)) for v in row]
                  for row in acc], dtype=np.int64)
    if f["relu"]:
        y = np.maximum(y, 0)
    if f["pool"]:
        y = np.maximum(y[0::2], y[1::2])
    return y


@fuzz(150)
@given(case=host_cases(), seed=st.integers(0, 2**32 - 1))
def test_front_model_any_descriptor(case: tuple[HostParams, H.Limits, list[int]], seed: int) -> None:
    """The front end's golden model takes any 256 bits: the outcome's status and tag are
    the contract's, EXP_SEQ moves as section 5 says, an OK MATMUL writes the section 3
    result at out_addr and nothing else, any other descriptor writes nothing."""
    p, lim, words = case
    mem = np.random.default_rng(seed).integers(0, 256, p.mem_bytes, dtype=np.uint8)
    fm = H.FrontModel(p, mem.copy(), wgt_base=lim.wgt_base, wgt_size=lim.wgt_size, mem_limit=lim.mem_limit,
                      exp_seq=lim.exp_seq)
    out = fm.submit(words)
    f, want = spec_fields(words), spec_status(words, lim, p)
    assert (STATUS[out.status], out.tag) == (want, f["tag"])
    trusted = f["magic"] == MAGIC and f["chk"] == spec_checksum(words)
    assert fm.exp_seq == ((f["seq"] if trusted else lim.exp_seq) + 1) & 0xFFFF
    if want == "OK" and f["opcode"] == 1:
        y = spec_kernel(mem, f, lim.wgt_base)
        b = y.astype("<i2" if f["dtype"] == 1 else "i1").reshape(-1).view(np.uint8)
        mem[f["out_addr"]:f["out_addr"] + b.size] = b
    assert np.array_equal(fm.mem, mem)


# ---- completions ---------------------------------------------------------------------

@fuzz(200)
@given(words=word_lists(2, mostly(st.integers(0, (1 << 24) - 1), st.integers(0, M32), 2)))
def test_completion_unpack_any_word_list(words: list[int]) -> None:
    """Any list of ints: the contract's fields of a 64-bit CQ entry (and ``words()`` gives
    the input back), or a ValueError naming the length, the word that is not 32 bits, or
    the nonzero W0[31:24]."""
    if _refuses_bad_shape(H.Completion.unpack, words, 2):
        return
    if words[0] >> 24:
        with pytest.raises(ValueError, match=re.escape("[31:24]")):
            H.Completion.unpack(words)
    else:
        c = H.Completion.unpack(words)
        w0 = words[0]
        assert (c.tag, c.status, c.kernel, c.cycles) == (w0 & 0xFFFF, w0 >> 16 & 0xF, w0 >> 20 & 0xF, words[1])
        assert c.words() == words
        assert c.status_name == (STATUS[c.status] if c.status < len(STATUS) else f"RESERVED{c.status}")


# =====================================================================================
# host library: splitting, blocking, the allocator and the memory map with bad sizes
# =====================================================================================

SIZE = mostly(st.integers(1, 150), st.integers(-3, 3))


@fuzz(200)
@given(m=SIZE, k=mostly(st.integers(1, 80), st.one_of(st.integers(-3, 3), st.integers(81, 300))), n=SIZE,
       dtype=st.integers(0, 1), pool=st.booleans(), p=st.sampled_from(HOST_PARAMS))
def test_split_task_any_size(m: int, k: int, n: int, dtype: int, pool: bool, p: HostParams) -> None:
    """Any M, K, N: a SplitError for what docs/host.md section 10 refuses (a size below 1,
    K padded above k_max, odd M or m_max = 1 with pool), else tasks that tile the problem
    and that BAD_DIMS accepts."""
    epw = 2 if dtype else 4
    kp, np_ = -(-k // epw) * epw, -(-n // epw) * epw
    refused = min(m, k, n) < 1 or kp > p.k_max or (pool and (m % 2 or p.m_max < 2))
    if refused:
        with pytest.raises(L.SplitError):
            L.split_task(m, k, n, p, dtype, pool)
        return
    s = L.split_task(m, k, n, p, dtype, pool)
    assert (s.kp, s.np_) == (kp, np_)
    rows = [r for rb in s.row_blocks for r in range(*rb)]
    cols = [c for cb in s.col_blocks for c in range(*cb)]
    assert rows == list(range(m)) and cols == list(range(np_))
    assert s.count == len(s.row_blocks) * len(s.col_blocks) == len(list(s.tasks()))
    for rb, cb, _ in s.tasks():
        tm, tk, tn = s.dims(rb, cb)
        assert 1 <= tm <= p.m_max and 1 <= tn <= p.n_max and 1 <= tk <= p.k_max
        assert tk % epw == 0 and tn % epw == 0 and not (pool and tm % 2)


@fuzz(150)
@given(x=hnp.arrays(np.int16, st.tuples(st.integers(1, 40), st.integers(1, 70))),
       rows=st.integers(-2, 50), cols=st.integers(-2, 80), data=st.data())
def test_tile_untile_any_block_size(x: np.ndarray, rows: int, cols: int, data: st.DataObject) -> None:
    """Blocking with any block size and any crop: a ValueError naming the size for a
    block size below 1 or a negative or too large crop, else the zero-padded blocks and
    the exact crop back."""
    if rows < 1 or cols < 1:
        with pytest.raises(ValueError, match=r"rows|cols"):
            L.tile(x, rows, cols)
        return
    t = L.tile(x, rows, cols)
    r, c = x.shape
    br, bc = -(-r // rows), -(-c // cols)
    assert t.shape == (br, bc, rows, cols)
    pad = np.zeros((br * rows, bc * cols), x.dtype)
    pad[:r, :c] = x
    for i in range(br):
        for j in range(bc):
            assert np.array_equal(t[i, j], pad[i * rows:(i + 1) * rows, j * cols:(j + 1) * cols])
    shape = data.draw(st.tuples(st.integers(-3, br * rows + 3), st.integers(-3, bc * cols + 3)), label="shape")
    if not (0 <= shape[0] <= br * rows and 0 <= shape[1] <= bc * cols):
        with pytest.raises(ValueError, match=re.escape(str(shape))):
            L.untile(t, shape)
    else:
        assert np.array_equal(L.untile(t, shape), pad[:shape[0], :shape[1]])


def spec_gaps(live: dict[int, int], base: int, size: int) -> tuple[list[tuple[int, int]], int]:
    """The free blocks below fresh memory and the start of fresh memory, from the live
    blocks alone (docs/host.md section 10: freed blocks merge with free neighbours, and a
    free block that reaches fresh memory becomes fresh memory)."""
    gaps, pos = [], base
    for a in sorted(live):
        if a > pos:
            gaps.append((pos, a - pos))
        pos = a + live[a]
    return gaps, pos


@fuzz(200)
@given(size=st.integers(0, 2048), align=st.sampled_from([1, 4, 64]), base_units=st.integers(0, 3),
       ops=st.lists(st.tuples(st.sampled_from(["alloc", "alloc", "alloc", "free", "free", "free_any"]),
                              # sizes: mostly 1..200, some below 1, some far too large (up to 2**30)
                              st.integers(-3, 220).map(lambda v: v if v <= 200 else 1 << (v - 190))),
                    min_size=20, max_size=60))
def test_allocator_any_sizes(size: int, align: int, base_units: int, ops: list[tuple[str, int]]) -> None:
    """Any sequence of allocations (sizes below 1 and far too large included) and frees
    (live, freed, inside a block, never allocated): a documented error or the block
    docs/host.md section 10 places (the smallest free block that fits, lowest address
    on a tie, then fresh memory); the free set is always the gaps between live blocks."""
    base = base_units * align
    a = L.DeviceAllocator(size, base=base, align=align)
    live: dict[int, int] = {}
    history: list[int] = []
    for op, v in ops:
        if op == "alloc":
            if v < 1:
                with pytest.raises(ParamError, match=rf"alloc\({v}\)"):
                    a.alloc(v)
                continue
            need = -(-v // align) * align
            gaps, top = spec_gaps(live, base, size)
            fit = [g for g in gaps if g[1] >= need]
            if fit:
                want = min(fit, key=lambda g: (g[1], g[0]))[0]
            elif base + size - top >= need:
                want = top
            else:
                with pytest.raises(L.OutOfDeviceMemory):
                    a.alloc(v)
                continue
            assert a.alloc(v) == want
            live[want] = need
            history.append(want)
        else:
            if op == "free" and live:
                addr = sorted(live)[v % len(live)]
            elif history and v % 2:
                addr = history[v % len(history)] + (v % 3) * min(align, 8) // 2
            else:
                addr = base + v - 50
            if addr in live:
                a.free(addr)
                del live[addr]
            else:
                with pytest.raises(L.AllocError, match=re.escape(f"{addr:#x}")):
                    a.free(addr)
        gaps, top = spec_gaps(live, base, size)
        assert a.used == live and a.unused == gaps and a.fresh == top
    for addr in list(live):
        a.free(addr)
    assert (a.used, a.unused, a.fresh) == ({}, [], base)


@fuzz(150)
@given(size=mostly(st.integers(0, 1024), st.integers(-64, -1)),
       align=mostly(st.sampled_from([1, 2, 4, 8, 64, 128]), st.integers(-2, 130)),
       base=st.integers(0, 256), aligned=st.booleans())
def test_allocator_any_geometry(size: int, align: int, base: int, aligned: bool) -> None:
    """The allocator's range and alignment: ParamError unless the alignment is a power of
    two, the base aligned and the size at least 0."""
    if aligned and align >= 1:
        base -= base % align
    ok = align >= 1 and align & (align - 1) == 0 and base % align == 0 and size >= 0
    if not ok:
        with pytest.raises(ParamError):
            L.DeviceAllocator(size, base=base, align=align)
    else:
        a = L.DeviceAllocator(size, base=base, align=align)
        assert (a.fresh, a.unused, a.used) == (base, [], {})


@fuzz(200)
@given(nblk=st.integers(1, 200), offset=st.integers(-3, 210), nbytes=st.one_of(st.none(), st.integers(-3, 210)),
       probes=st.lists(st.integers(-8, 600), max_size=12),
       pushes=st.lists(st.tuples(st.integers(-3, 205), st.one_of(st.none(), st.integers(-3, 205))), max_size=6))
def test_memory_map_any_range(nblk: int, offset: int, nbytes: int | None, probes: list[int],
                              pushes: list[tuple[int, int | None]]) -> None:
    """Map any range of a host block, then translate, reverse and push any offsets,
    addresses and ranges: ValueError for a range outside the block, OutOfDeviceMemory
    when the device is too small, UnmappedAddress where nothing is mapped, and otherwise
    the right address and exactly the bytes not yet transferred."""
    alloc = L.DeviceAllocator(128)  # 64-byte alignment: two blocks
    dev = L.ArrayDevice(np.zeros(128, np.uint8))
    mm = L.MemoryMap(alloc, dev)
    host = np.arange(nblk, dtype=np.uint8) ^ 0x5A
    mm.add_block("b", host)
    n = nblk - offset if nbytes is None else nbytes
    if n < 1 or offset < 0 or offset + n > nblk:
        with pytest.raises(ValueError, match=r"not inside block"):
            mm.map("b", offset, nbytes)
        return
    if -(-n // 64) * 64 > 128:
        with pytest.raises(L.OutOfDeviceMemory):
            mm.map("b", offset, nbytes)
        assert alloc.used == {}
        return
    d = mm.map("b", offset, nbytes)
    assert alloc.used == {d: -(-n // 64) * 64}
    for o in probes:
        if offset <= o < offset + n:
            assert mm.translate("b", o) == d + o - offset
        else:
            with pytest.raises(L.UnmappedAddress):
                mm.translate("b", o)
        if d <= o < d + n:
            assert mm.reverse(o) == ("b", offset + o - d)
        else:
            with pytest.raises(L.UnmappedAddress):
                mm.reverse(o)
    with pytest.raises(L.UnmappedAddress):
        mm.translate("other", 0)
    done = np.zeros(nblk, bool)
    for lo, hi in pushes:
        h = nblk if hi is None else hi
        before = mm.h2d_bytes
        if not 0 <= lo <= h <= nblk:
            with pytest.raises(ValueError, match=r"not inside block"):
                mm.push("b", lo, hi)
            continue
        if lo < h and (lo < offset or h > offset + n):
            with pytest.raises(L.UnmappedAddress):
                mm.push("b", lo, hi)
            assert mm.h2d_bytes == before
            continue
        mm.push("b", lo, hi)
        assert mm.h2d_bytes - before == int(np.count_nonzero(~done[lo:h]))
        done[lo:h] = True
        assert mm.is_transferred("b", lo, h)
    sent = np.flatnonzero(done)
    assert np.array_equal(dev.mem[d + sent - offset], host[sent])


# =====================================================================================
# sparse: maps, stream words and descriptors (docs/sparse.md section 2)
# =====================================================================================

def clog2(v: int) -> int:
    """Smallest k with 2**k >= v."""
    return max(0, (v - 1).bit_length())


def spec_layout(kind: str, p: SparseParams) -> list[tuple[str, int, bool]]:
    """``(field, bits, signed)`` MSB first after LAST, from docs/sparse.md sections 1-2:
    ``rb = clog2(hmax + kmax - 1)``, ``cb = clog2(wmax + kmax - 1)``, ``kb = clog2(kmax)``,
    each at least 1."""
    rb, cb, kb = max(1, clog2(p.hmax + p.kmax - 1)), max(1, clog2(p.wmax + p.kmax - 1)), max(1, clog2(p.kmax))
    return {"data": [("row", rb, False), ("col", cb, False), ("val", p.dw, True)],
            "weights": [("a", kb, False), ("b", kb, False), ("w", p.ww, True)],
            "out": [("row", rb, False), ("col", cb, False), ("val", p.ow, True)]}[kind]


def fits(v: int, bits: int, signed: bool) -> bool:
    """``v`` is a ``bits``-bit (two's complement when ``signed``) value."""
    return -(1 << (bits - 1)) <= v < 1 << (bits - 1) if signed else 0 <= v < 1 << bits


def spec_word(fields: tuple[int, ...], last: bool, lay: list[tuple[str, int, bool]]) -> int:
    """``{LAST, f0, f1, f2}``, LAST the MSB, signed fields in two's complement."""
    w = int(last)
    for v, (_, bits, _) in zip(fields, lay):
        w = w << bits | (v & ((1 << bits) - 1))
    return w


def spec_entry(word: int, lay: list[tuple[str, int, bool]]) -> tuple[int, int, int, bool]:
    """The inverse of :func:`spec_word`."""
    out = []
    for _, bits, signed in reversed(lay):
        v = word & ((1 << bits) - 1)
        word >>= bits
        out.append(v - (1 << bits) if signed and v >> (bits - 1) else v)
    x, y, v = out[::-1]
    return x, y, v, bool(word)


SPARSE_PARAMS = st.builds(SparseParams, kmax=st.integers(1, 7), hmax=st.integers(1, 64), wmax=st.integers(1, 64),
                          dw=st.integers(2, 16), ww=st.integers(2, 16), ow=st.integers(2, 64), accw=st.just(64))
KINDS = ["data", "weights", "out"]
CODECS = {k: (getattr(S, f"pack_{k}"), getattr(S, f"unpack_{k}")) for k in KINDS}
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
SHAPES = st.one_of(st.tuples(st.just(1), st.integers(1, 40)), st.tuples(st.integers(1, 40), st.just(1)),
                   st.tuples(st.integers(1, 12), st.integers(1, 12)))


@st.composite
def int_maps(draw: st.DrawFn, lo: int | None = None, hi: int | None = None,
             shapes: st.SearchStrategy = SHAPES) -> np.ndarray:
    """A 2-D integer (or bool) map of a shape from ``shapes`` (1 x N, N x 1 or general);
    all zeros, all non-zero or mixed; values in the dtype, within int64, and in
    ``[lo, hi]`` when given."""
    dtype = np.dtype(draw(st.sampled_from(INT_DTYPES + [np.bool_])))
    shape = draw(shapes)
    if dtype == np.bool_:
        vals, zero = st.booleans(), False
    else:
        info = np.iinfo(dtype)
        vlo = max(int(info.min), -(1 << 63) if lo is None else lo)
        vhi = min(int(info.max), (1 << 63) - 1 if hi is None else hi)
        vals, zero = st.integers(vlo, vhi), 0
    fill = draw(st.sampled_from(["zeros", "nonzero", "mixed"]))
    if fill == "zeros":
        return np.zeros(shape, dtype)
    elems = vals.filter(bool) if fill == "nonzero" else st.one_of(st.just(zero), vals)
    return draw(hnp.arrays(dtype, shape, elements=elems))


def as_ints(X: np.ndarray) -> list[list[int]]:
    """The map's values as Python ints (no dtype promotion in the comparison)."""
    return [[int(v) for v in row] for row in X.tolist()]


@fuzz(150)
@given(X=int_maps(), org=st.tuples(st.integers(0, 4095), st.integers(0, 4095)))
def test_encode_decode_round_trip(X: np.ndarray, org: tuple[int, int]) -> None:
    """Any integer map within int64: the non-zeros in strict raster order with local
    indices, ``decode`` gives the map back exactly; dense mode lists every position."""
    h, w = X.shape
    sf = S.encode(X, org=org)
    assert (sf.org_row, sf.org_col, sf.h, sf.w) == (*org, h, w)
    want = as_ints(X)
    assert sf.entries == [(r, c, want[r][c]) for r in range(h) for c in range(w) if want[r][c]]
    assert sf.nnz == np.count_nonzero(X) and sf.desc == S.Desc(*org, h, w, sf.nnz)
    back = S.decode(sf)
    assert back.dtype == np.int64 and as_ints(back) == want
    dense = S.encode(X, org=org, dense=True)
    assert dense.entries == [(r, c, want[r][c]) for r in range(h) for c in range(w)]
    assert as_ints(S.decode(dense)) == want


@fuzz(150)
@given(p=SPARSE_PARAMS, data=st.data())
def test_map_through_the_stream(p: SparseParams, data: st.DataObject) -> None:
    """A map that fits the record (``H <= hmax``, ``W <= wmax``, values in ``dw`` bits)
    through the whole stream: descriptor and data words, LAST on entry NNZ-1 only, and
    back to the same map."""
    lo, hi = -(1 << (p.dw - 1)), (1 << (p.dw - 1)) - 1
    h, w = min(p.hmax, 40), min(p.wmax, 40)
    shapes = st.one_of(st.tuples(st.just(1), st.integers(1, w)), st.tuples(st.integers(1, h), st.just(1)),
                       st.tuples(st.integers(1, min(h, 12)), st.integers(1, min(w, 12))))
    X = data.draw(int_maps(lo, hi, shapes), label="X")
    org = data.draw(st.tuples(st.integers(0, 4095), st.integers(0, 4095)), label="org")
    sf = S.encode(X, org)
    lay = spec_layout("data", p)
    words = S.pack_data(sf.entries, p)
    assert words == [spec_word(e, i == len(sf.entries) - 1, lay) for i, e in enumerate(sf.entries)]
    ents = S.unpack_data(words, p)
    assert [e[3] for e in ents] == [i == len(words) - 1 for i in range(len(words))]
    d = S.unpack_desc(S.pack_desc(sf))
    assert d == S.Desc(*org, *X.shape, len(words), 0)
    back = S.SubFM(d.org_row, d.org_col, d.h, d.w, [e[:3] for e in ents])
    assert as_ints(S.decode(back)) == as_ints(X)


BAD_NDIM = st.one_of(
    st.integers(-5, 5).map(np.array),
    hnp.arrays(np.int64, st.integers(1, 6)),
    hnp.arrays(np.int32, st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3))),
    st.sampled_from([(0, 3), (3, 0), (0, 0)]).map(lambda s: np.zeros(s, np.int64)),
)
BAD_DTYPE = st.one_of(
    hnp.arrays(st.sampled_from([np.float16, np.float32, np.float64, np.complex128]), SHAPES,
               elements=st.integers(-100, 100)),
    SHAPES.map(lambda s: np.full(s, "7")),
    SHAPES.map(lambda s: np.full(s, 3, dtype=object)),
    SHAPES.map(lambda s: np.full(s, np.datetime64(5, "s"))),
)


@st.composite
def beyond_int64(draw: st.DrawFn) -> np.ndarray:
    """A uint64 map with at least one value above the int64 range."""
    X = draw(hnp.arrays(np.uint64, SHAPES, elements=st.integers(0, (1 << 64) - 1)))
    X.flat[draw(st.integers(0, X.size - 1))] = draw(st.integers(1 << 63, (1 << 64) - 1))
    return X


BAD_MAPS = {"ndim": BAD_NDIM, "dtype": BAD_DTYPE, "range": beyond_int64()}


@fuzz(200)
@given(kind=st.sampled_from(sorted(BAD_MAPS)), weights=st.booleans(), data=st.data())
def test_encode_refuses_bad_maps(kind: str, weights: bool, data: st.DataObject) -> None:
    """``encode`` and ``encode_weights`` refuse a map that is not 2-D and non-empty, not of
    an integer dtype, or with values beyond int64 (uint64): a ValueError naming the shape,
    the dtype or the value, never a silently wrapped map."""
    X = data.draw(BAD_MAPS[kind], label="X")
    what = str(X.shape) if kind == "ndim" else str(X.dtype) if kind == "dtype" else str(int(X.max()))
    with pytest.raises(ValueError, match=re.escape(what)):
        (S.encode_weights if weights else S.encode)(X)


@fuzz(150)
@given(h=st.integers(1, 8), w=st.integers(1, 8), data=st.data())
def test_decode_any_entries(h: int, w: int, data: st.DataObject) -> None:
    """A sub-FM with any entries: the map (absent positions zero), or a ValueError for an
    index outside ``h x w``, a position given twice or a value beyond the int64 map."""
    val = mostly(st.one_of(st.integers(-200, 200), st.integers(-(1 << 63), (1 << 63) - 1)),
                 st.one_of(st.integers(1 << 63, 1 << 80), st.integers(-(1 << 80), -(1 << 63) - 1)), 6)
    inside = st.tuples(st.integers(0, h - 1), st.integers(0, w - 1), val)
    anywhere = st.tuples(st.integers(-2, 9), st.integers(-2, 9), val)
    entries = data.draw(mostly(st.lists(inside, max_size=12, unique_by=lambda e: e[:2]),
                               st.lists(mostly(inside, anywhere, 4), max_size=12), 2), label="entries")
    sf = S.SubFM(0, 0, h, w, entries)
    outside = any(not (0 <= r < h and 0 <= c < w) for r, c, _ in entries)
    twice = len({(r, c) for r, c, _ in entries}) != len(entries)
    wide = any(not -(1 << 63) <= v < 1 << 63 for _, _, v in entries)
    if outside or twice or wide:
        with pytest.raises(ValueError, match=r"decode"):
            S.decode(sf)
        return
    want = [[0] * w for _ in range(h)]
    for r, c, v in entries:
        want[r][c] = v
    assert as_ints(S.decode(sf)) == want


@fuzz(200)
@given(kind=st.sampled_from(KINDS), p=SPARSE_PARAMS, data=st.data())
def test_unpack_any_words(kind: str, p: SparseParams, data: st.DataObject) -> None:
    """Any ints as stream words: the contract's fields of every word and ``pack`` gives the
    words back, or a ValueError naming the first word that is negative or wider than the
    stream."""
    lay = spec_layout(kind, p)
    bits = 1 + sum(b for _, b, _ in lay)
    words = data.draw(st.lists(mostly(st.integers(0, (1 << bits) - 1), st.one_of(WILD, st.integers(1 << bits,
                                                                                                  1 << (bits + 8)))),
                               max_size=12), label="words")
    pack, unpack = CODECS[kind]
    bad = [i for i, wd in enumerate(words) if not 0 <= wd < 1 << bits]
    if bad:
        with pytest.raises(ValueError, match=rf"word {bad[0]}\b.*{bits} bits"):
            unpack(words, p)
        return
    ents = unpack(words, p)
    assert ents == [spec_entry(wd, lay) for wd in words]
    assert pack(ents, p) == words


@fuzz(200)
@given(kind=st.sampled_from(KINDS), p=SPARSE_PARAMS, i=st.integers(0, 3),
       bad=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["3", None, 2j])))
def test_stream_words_and_fields_must_be_integers(kind: str, p: SparseParams, i: int, bad: Any) -> None:
    """A word, or an entry's field, that is not an integer (2.5, 3.0, NaN, a string) is
    refused with a ValueError naming it, never truncated to a neighbouring integer."""
    pack, unpack = CODECS[kind]
    words = [0, 1, 2, 3]
    words[i] = bad
    with pytest.raises(ValueError, match=rf"word {i}\b"):
        unpack(words, p)
    entries: list[tuple[Any, ...]] = [(0, 0, 1)] * 4
    e = [0, 0, 1]
    e[i % 3] = bad
    entries[i] = tuple(e)
    with pytest.raises(ValueError, match=rf"entry {i}\b.*{spec_layout(kind, p)[i % 3][0]}"):
        pack(entries, p)


@fuzz(150)
@given(kind=st.sampled_from(KINDS), p=SPARSE_PARAMS, j=st.integers(0, 2))
def test_pack_field_edges(kind: str, p: SparseParams, j: int) -> None:
    """Field ``j`` at the ends of its range packs and comes back; one step beyond either
    end is a ValueError naming the field and the value."""
    lay = spec_layout(kind, p)
    pack, unpack = CODECS[kind]
    name, bits, signed = lay[j]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    for v in (lo, hi):
        e = tuple(v if i == j else 0 for i in range(3))
        assert unpack(pack([e], p), p) == [(*e, True)]
    for v in (lo - 1, hi + 1):
        with pytest.raises(ValueError, match=rf"entry 0\b.*{name}={v}\b"):
            pack([tuple(v if i == j else 0 for i in range(3))], p)


@fuzz(150)
@given(kind=st.sampled_from(KINDS), p=SPARSE_PARAMS, data=st.data())
def test_pack_any_entries(kind: str, p: SparseParams, data: st.DataObject) -> None:
    """Entries with any int fields, with or without LAST: the contract's words (LAST on the
    final entry when not given), or a ValueError naming the entry and the field that does
    not fit."""
    lay = spec_layout(kind, p)

    def field(bits: int, signed: bool) -> st.SearchStrategy:
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        edge = st.sampled_from([lo, hi, hi + 1, lo - 1])
        return mostly(st.integers(lo, hi), st.one_of(edge, st.integers(hi + 1, hi + 4), st.integers(lo - 4, lo - 1),
                                                     WILD), 8)

    entry = st.tuples(*(field(b, s) for _, b, s in lay))
    entries = data.draw(st.lists(st.one_of(entry, st.tuples(*(field(b, s) for _, b, s in lay), st.booleans())),
                                 max_size=6), label="entries")
    pack, unpack = CODECS[kind]
    bad = [(i, j) for i, e in enumerate(entries) for j, (_, b, s) in enumerate(lay) if not fits(e[j], b, s)]
    if bad:
        i, j = bad[0]
        with pytest.raises(ValueError, match=rf"entry {i}\b.*{lay[j][0]}={entries[i][j]}"):
            pack(entries, p)
        return
    words = pack(entries, p)
    lasts = [bool(e[3]) if len(e) == 4 else i == len(entries) - 1 for i, e in enumerate(entries)]
    assert words == [spec_word(e[:3], last, lay) for e, last in zip(entries, lasts)]
    assert unpack(words, p) == [(*e[:3], last) for e, last in zip(entries, lasts)]


#: The sub-FM descriptor of docs/sparse.md section 2, MSB first.
DESC_BITS = [("org_row", 12), ("org_col", 12), ("h", 8), ("w", 8), ("nnz", 16), ("rsvd", 8)]


@fuzz(200)
@given(vals=st.tuples(*(mostly(st.integers(0, (1 << b) - 1), st.one_of(st.integers(1 << b, (1 << b) + 3), WILD), 6)
                        for _, b in DESC_BITS)))
def test_desc_any_fields(vals: tuple[int, ...]) -> None:
    """A descriptor with any field values: the contract's 64-bit word and ``unpack_desc``
    gives it back, or a ValueError naming the first field that does not fit."""
    d = S.Desc(*vals)
    bad = [(n, v) for (n, b), v in zip(DESC_BITS, vals) if not 0 <= v < 1 << b]
    if bad:
        with pytest.raises(ValueError, match=rf"{bad[0][0]}={bad[0][1]}\b"):
            S.pack_desc(d)
        return
    word = 0
    for (_, b), v in zip(DESC_BITS, vals):
        word = word << b | v
    assert S.pack_desc(d) == word
    assert S.unpack_desc(word) == d


@fuzz(200)
@given(word=st.one_of(st.integers(0, (1 << 64) - 1), WILD, st.integers(1 << 64, 1 << 72)))
def test_unpack_desc_any_word(word: int) -> None:
    """Any int as a descriptor word: its fields (and ``pack_desc`` gives the word back),
    or a ValueError for a negative word or one wider than 64 bits."""
    if not 0 <= word < 1 << 64:
        with pytest.raises(ValueError, match=r"64 bits"):
            S.unpack_desc(word)
        return
    d = S.unpack_desc(word)
    pos, want = 64, []
    for _, b in DESC_BITS:
        pos -= b
        want.append(word >> pos & ((1 << b) - 1))
    assert d == S.Desc(*want)
    assert S.pack_desc(d) == word
