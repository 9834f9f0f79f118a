"""The host library's pure parts (models/host/lib.py; docs/host.md section 10, spec 002
sections 2.3, 2.5, 2.10): expected values are worked by hand from the spec and the
contract, or come from ``lockstep.models.host``."""

from __future__ import annotations

import random

import numpy as np
import pytest

from lockstep.models import host as H
from lockstep.models.host.params import HostParams
from lockstep.models.record import ParamError
from lockstep.models.host.lib import (
    AllocError, ArrayDevice, DeviceAllocator, MemoryMap, OutOfDeviceMemory, SplitError, TaskPacket,
    TaskResult, UnmappedAddress, compare, dequantize, host_run, pad_words, quantize, scale_for, split_task,
    tile, to_bytes, untile,
)

P = HostParams()

# ------------------------------------------------------------------------------------
# fixed point
# ------------------------------------------------------------------------------------


def test_quantize_ties_to_even() -> None:
    x = np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 0.49, 0.51], dtype=np.float32)
    q, n_sat = quantize(x, 0, 0)
    assert q.dtype == np.int64
    assert q.tolist() == [0, 2, 2, 4, 0, -2, -2, 0, 1]
    assert n_sat == 0
    # frac bits scale first: 0.25 * 2 = 0.5 -> 0; 0.75 * 2 = 1.5 -> 2; -0.375 * 4 = -1.5 -> -2
    assert quantize(np.float32([0.25, 0.75]), 0, 1)[0].tolist() == [0, 2]
    assert quantize(np.float32([-0.375]), 1, 2)[0].tolist() == [-2]


def test_quantize_is_exact_where_float32_shortcuts_are_not() -> None:
    # the float32 just below 0.5: floor(x + 0.5) in float32 rounds the sum up to 1.0
    below = np.nextafter(np.float32(0.5), np.float32(0))
    assert np.floor(below + np.float32(0.5)) == 1.0          # the shortcut is wrong ...
    assert quantize(np.array([below]), 0, 0)[0].tolist() == [0]   # ... quantize is not
    # 3 * 2**-9 with 8 fraction bits is exactly 1.5: a tie, to even = 2
    assert quantize(np.array([np.float32(3 * 2.0 ** -9)]), 0, 8)[0].tolist() == [2]
    # 1 + 2**-23 (float32) with frac 0 stays 1; with frac 23 it is exactly 2**23 + 1 (int16 saturates)
    v = np.float32(1) + np.float32(2.0 ** -23)
    assert quantize(np.array([v]), 1, 0)[0].tolist() == [1]


def test_quantize_saturation_edges() -> None:
    # int8: 127.5 rounds to 128 (even) and saturates; 127.49 does not; -128.5 rounds to -128
    # (even) and does not saturate; -128.51 rounds to -129 and saturates
    q, n = quantize(np.array([127.5, 127.49, -128.5, -128.51, 1e6, -3e38], dtype=np.float32), 0, 0)
    assert q.tolist() == [127, 127, -128, -128, 127, -128]
    assert n == 4
    # int16 with 8 fraction bits: 32767/256 is the largest value, 128.0 saturates
    q, n = quantize(np.array([32767 / 256, 128.0, -128.0, -128.00390625], dtype=np.float32), 1, 8)
    assert q.tolist() == [32767, 32767, -32768, -32768]
    assert n == 2


def test_quantize_nan_and_inf() -> None:
    q, n = quantize(np.array([np.nan, np.inf, -np.inf, -np.nan, 1.0], dtype=np.float32), 0, 3)
    assert q.tolist() == [0, 127, -128, 0, 8]
    assert n == 2                                  # +-Inf saturated; NaN is not a saturation
    q, n = quantize(np.array([[np.inf], [np.nan]]), 1, 0)
    assert q.shape == (2, 1) and q.ravel().tolist() == [32767, 0] and n == 1


def test_dequantize_round_trips_every_value() -> None:
    for dtype, frac in ((0, 0), (0, 4), (1, 8), (1, 15)):
        lo, hi = H.sat_range(dtype)
        q = np.arange(lo, hi + 1)
        f = dequantize(q, dtype, frac)
        assert f.dtype == np.float32
        back, n = quantize(f, dtype, frac)
        assert np.array_equal(back, q) and n == 0
    assert dequantize(np.array([127, -128]), 0, 4).tolist() == [7.9375, -8.0]
    with pytest.raises(ValueError, match="must be integers in"):
        dequantize(np.array([128]), 0, 0)
    with pytest.raises(ValueError):
        dequantize(np.array([0.5]), 0, 0)
    with pytest.raises(ParamError):
        quantize(np.zeros(2), 0, 100)


def test_scale_for() -> None:
    assert scale_for(4, 6, 5) == (1, 5)
    with pytest.raises(ParamError):
        scale_for(1, 1, 5)


# ------------------------------------------------------------------------------------
# blocking
# ------------------------------------------------------------------------------------


def test_pad_words() -> None:
    assert [pad_words(k, 0) for k in (1, 3, 4, 5, 8, 9)] == [4, 4, 4, 8, 8, 12]
    assert [pad_words(k, 1) for k in (1, 2, 3, 4, 5)] == [2, 2, 4, 4, 6]


def test_tile_untile_round_trip(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((70, 130)).astype(np.float32)
    t = tile(x, 32, 64)
    assert t.shape == (3, 3, 32, 64)
    assert np.array_equal(t[1, 0], x[32:64, 0:64])
    assert np.array_equal(t[2, 2][:6, :2], x[64:70, 128:130])   # the corner block: 6 x 2 data ...
    assert np.count_nonzero(t[2, 2]) == np.count_nonzero(x[64:70, 128:130])   # ... and zeros
    assert np.count_nonzero(t) == np.count_nonzero(x)
    assert np.array_equal(untile(t, x.shape), x)
    for shape in ((1, 1), (32, 64), (33, 65), (5, 200)):
        y = rng.integers(-128, 128, shape)
        assert np.array_equal(untile(tile(y), shape), y)
    with pytest.raises(ValueError):
        untile(t, (97, 10))


def test_split_task_blocks() -> None:
    s = split_task(70, 30, 37, P, dtype=0)
    assert (s.kp, s.np_) == (32, 40)
    assert s.row_blocks == ((0, 32), (32, 64), (64, 70))
    assert s.col_blocks == ((0, 16), (16, 32), (32, 40))
    assert s.count == 9 and s.dims(2, 2) == (6, 32, 8)
    s16 = split_task(3, 3, 3, P, dtype=1)
    assert (s16.kp, s16.np_) == (4, 4)
    # pool: M even and each row block even
    sp = split_task(8, 4, 4, HostParams(m_max=3), pool=True)
    assert sp.row_blocks == ((0, 2), (2, 4), (4, 6), (6, 8))
    with pytest.raises(SplitError, match="odd"):
        split_task(7, 4, 4, P, pool=True)
    assert split_task(1, 64, 4, P).kp == 64
    with pytest.raises(SplitError, match="k_max = 64"):
        split_task(1, 65, 4, P)
    assert split_task(1, 63, 4, P, dtype=1).kp == 64             # int16: 63 pads to 64, fits
    with pytest.raises(SplitError, match="padded to 66"):
        split_task(1, 65, 4, P, dtype=1)


def test_split_tasks_compute_the_whole_product(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for m, k, n, dtype, pool in ((70, 30, 37, 0, False), (40, 17, 9, 1, True), (1, 1, 1, 0, False)):
        lo, hi = H.sat_range(dtype)
        a = rng.integers(lo, hi + 1, (m, k))
        w = rng.integers(lo, hi + 1, (k, n))
        s = split_task(m, k, n, P, dtype, pool)
        panels = s.panels(w)
        outs = []
        for rb, cb, _ in s.tasks():
            tm, tk, tn = s.dims(rb, cb)
            assert tm <= P.m_max and tk <= P.k_max and tn <= P.n_max
            assert tk % (4 // H.esize(dtype)) == 0 and tn % (4 // H.esize(dtype)) == 0
            d = H.Descriptor(dtype=dtype, m=tm, k=tk, n=tn, relu=1, pool=int(pool), mult=3, shift=9)
            outs.append(H.kernel_ref(s.a_block(a, rb), panels[cb], d))
        whole = H.kernel_ref(a, w, H.Descriptor(dtype=dtype, m=m, k=k, n=n, relu=1, pool=int(pool), mult=3, shift=9))
        assert np.array_equal(s.join(outs), whole)


def test_to_bytes_is_the_device_layout() -> None:
    m = np.array([[1, -1], [-32768, 258]])
    assert to_bytes(m, 1).tolist() == [1, 0, 0xFF, 0xFF, 0x00, 0x80, 0x02, 0x01]
    mem = np.zeros(16, np.uint8)
    mem[4:12] = to_bytes(m, 1)
    assert np.array_equal(H.read_mat(mem, 4, 2, 2, 1), m)
    with pytest.raises(ValueError):
        to_bytes(np.array([128]), 0)


# ------------------------------------------------------------------------------------
# allocator
# ------------------------------------------------------------------------------------


def test_allocator_reuses_the_unused_set_first() -> None:
    al = DeviceAllocator(4096, align=64)
    a = al.alloc(100)          # 128 bytes aligned
    b = al.alloc(64)
    c = al.alloc(1)
    assert (a, b, c) == (0, 128, 192) and al.fresh == 256
    al.free(b)
    assert al.unused == [(128, 64)]
    assert al.alloc(10) == 128               # from the unused set, not fresh memory (256)
    al.free(a)
    assert al.unused == [(0, 128)]
    assert al.alloc(64) == 0                 # split: the low end
    assert al.unused == [(64, 64)]


def test_allocator_best_fit_and_coalescing() -> None:
    al = DeviceAllocator(1 << 14, base=0x1000, align=64)
    blocks = [al.alloc(s) for s in (192, 64, 64, 64, 128)]
    assert blocks == [0x1000, 0x10C0, 0x1100, 0x1140, 0x1180]
    al.free(blocks[0])                       # a 192-byte hole
    al.free(blocks[2])                       # a 64-byte hole
    assert al.alloc(50) == blocks[2]         # best fit: the 64-byte hole, not the first (192)
    al.free(blocks[2])
    al.free(blocks[1])                       # merges 0x1000..0x1140 into one hole
    assert al.unused == [(0x1000, 0x140)]
    al.free(blocks[4])                       # touches fresh memory: returns to it
    assert al.fresh == 0x1180 and al.unused == [(0x1000, 0x140)]
    al.free(blocks[3])                       # everything free: back to the start state
    assert al.fresh == 0x1000 and al.unused == [] and al.used == {}


def test_allocator_errors() -> None:
    al = DeviceAllocator(256, align=64)
    a = al.alloc(64)
    b = al.alloc(64)
    al.free(a)
    with pytest.raises(AllocError, match="double free of 0x0"):
        al.free(a)
    with pytest.raises(AllocError, match="inside the live block at 0x40"):
        al.free(b + 4)
    with pytest.raises(AllocError, match="never allocated"):
        al.free(0x1000)
    al.alloc(64)
    al.alloc(64)
    with pytest.raises(OutOfDeviceMemory, match="cannot allocate 100 bytes"):
        al.alloc(100)
    with pytest.raises(ParamError):
        al.alloc(0)
    with pytest.raises(ParamError):
        DeviceAllocator(256, base=32, align=64)


def test_allocator_random_alloc_free_properties(seed: int) -> None:
    rnd = random.Random(seed)
    size, align = 1 << 16, 64
    al = DeviceAllocator(size, align=align)
    live: dict[int, int] = {}
    for _ in range(3000):
        if live and (rnd.random() < 0.45 or len(live) > 60):
            addr = rnd.choice(sorted(live))
            al.free(addr)
            del live[addr]
            continue
        want = rnd.choice([1, 8, 64, 65, 100, 256, 1000, 4096])
        n = -(-want // align) * align
        unused, fresh = al.unused, al.fresh
        fits = [(s, a) for a, s in unused if s >= n]
        try:
            addr = al.alloc(want)
        except OutOfDeviceMemory:
            assert not fits and fresh + n > size
            continue
        if fits:                             # the unused set first, best fit, lowest address
            s, a = min(fits)
            assert addr == a
        else:
            assert addr == fresh
        live[addr] = n
        assert addr % align == 0 and 0 <= addr and addr + n <= size
        spans = sorted(live.items())
        for (a0, n0), (a1, _) in zip(spans, spans[1:]):
            assert a0 + n0 <= a1, "live blocks overlap"
        # free blocks never overlap live ones and lie below fresh memory
        for fa, fs in al.unused:
            assert fa + fs <= al.fresh
            assert all(fa + fs <= la or la + ln <= fa for la, ln in spans)


def test_allocator_same_pattern_same_addresses() -> None:
    al = DeviceAllocator(1 << 16)
    weights = al.alloc(3000)                 # lives across passes

    def forward() -> list[int]:
        got, held = [], []
        for size in (1024, 512, 2048, 100, 512):     # layer buffers: in, out, scratch ...
            got.append(al.alloc(size))
            held.append(got[-1])
            if len(held) > 2:                # a layer's input is freed two layers later
                al.free(held.pop(0))
        for a in held:
            al.free(a)
        return got

    first = forward()
    assert forward() == first and forward() == first
    assert weights == 0 and weights not in first


# ------------------------------------------------------------------------------------
# memory map
# ------------------------------------------------------------------------------------


def test_map_translate_reverse_round_trip() -> None:
    mm = MemoryMap(DeviceAllocator(1 << 16))
    x = np.zeros(100, np.uint8)
    y = np.zeros((3, 10), np.int16)          # 60 bytes
    dx = mm.map_block("x", x)
    dy = mm.map_block("y", y)
    assert (dx, dy) == (0, 128)
    for blk, n, d in (("x", 100, dx), ("y", 60, dy)):
        for off in range(n):
            assert mm.translate(blk, off) == d + off
            assert mm.reverse(d + off) == (blk, off)
    with pytest.raises(UnmappedAddress, match="offset 100"):
        mm.translate("x", 100)
    with pytest.raises(UnmappedAddress, match="not registered"):
        mm.translate("z", 0)
    with pytest.raises(UnmappedAddress, match="0x64"):
        mm.reverse(100)                      # the alignment gap after x
    with pytest.raises(UnmappedAddress):
        mm.reverse(dy + 60)
    mm.unmap("x")
    with pytest.raises(UnmappedAddress):
        mm.reverse(dx)


def test_map_non_contiguous_sub_blocks() -> None:
    dev = np.zeros(1 << 14, np.uint8)
    mm = MemoryMap(DeviceAllocator(1 << 14), ArrayDevice(dev))
    host = np.arange(150, dtype=np.uint8)
    mm.add_block("b", host)
    mm.map("b", 0, 100, dev_addr=0x1000)
    mm.map("b", 100, 50, dev_addr=0x3000)
    assert mm.translate("b", 120) == 0x3014 and mm.reverse(0x3014) == ("b", 120)
    assert mm.translate("b", 99) == 0x1063
    with pytest.raises(ValueError, match="already mapped"):
        mm.map("b", 90, 20)
    mm.add_block("c", np.zeros(8, np.uint8))
    with pytest.raises(ValueError, match="overlaps"):
        mm.map("c", 0, 8, dev_addr=0x3010)
    t = mm.push("b")
    assert [(x.offset, x.dev_addr, x.nbytes) for x in t] == [(0, 0x1000, 100), (100, 0x3000, 50)]
    assert np.array_equal(dev[0x1000:0x1064], host[:100]) and np.array_equal(dev[0x3000:0x3032], host[100:])


def test_transferred_flags_and_counters() -> None:
    dev = np.zeros(1 << 12, np.uint8)
    mm = MemoryMap(DeviceAllocator(1 << 12), ArrayDevice(dev))
    host = np.zeros(256, np.uint8)
    d = mm.map_block("img", host)
    assert not mm.is_transferred("img")
    assert sum(t.nbytes for t in mm.push("img")) == 256 and mm.h2d_bytes == 256
    assert mm.is_transferred("img") and mm.push("img") == [] and mm.h2d_bytes == 256   # marked: not sent again
    mm.host_write("img", 10, np.array([1, 0, 2], np.uint8))   # byte 11 is unchanged (0)
    assert not mm.is_transferred("img", 10, 13) and mm.is_transferred("img", 11, 12)
    sent = mm.push("img")
    assert [(t.offset, t.nbytes) for t in sent] == [(10, 1), (12, 1)]
    assert mm.h2d_bytes == 258 and dev[d + 10] == 1 and dev[d + 12] == 2
    mm.invalidate("img", 0, 4)
    assert mm.push("img", 0, 2)[0].nbytes == 2 and not mm.is_transferred("img", 2, 4)
    dev[d:d + 256] = 7                                         # the device rewrites it
    mm.pull("img")
    assert mm.d2h_bytes == 256 and mm.d2h_count == 1 and (host == 7).all()
    mm.mark_transferred("img", 0, 256)
    assert mm.is_transferred("img")


def test_weights_move_once() -> None:
    dev = np.zeros(1 << 14, np.uint8)
    mm = MemoryMap(DeviceAllocator(1 << 14), ArrayDevice(dev))
    rng = np.random.default_rng(3)
    ws = {("conv1", 0): rng.integers(-128, 128, (32, 16)), ("conv2", 0): rng.integers(-128, 128, (20, 8)),
          ("fc", 0): rng.integers(-128, 128, (3, 1))}           # 3 bytes: padded to 4
    img = mm.upload_weights_once(ws, 0)
    assert img.offsets == {("conv1", 0): 0, ("conv2", 0): 512, ("fc", 0): 672}
    assert img.nbytes == 676 and img.moved == 676 and mm.h2d_bytes == 676 and mm.h2d_count == 1
    for key, w in ws.items():
        assert np.array_equal(H.read_mat(dev, img.dev_addr + img.offsets[key], *w.shape, 0), w)
    for _ in range(5):                                          # five more forward passes
        again = mm.upload_weights_once(ws, 0)
        assert again.moved == 0 and again.dev_addr == img.dev_addr and again.offsets == img.offsets
    assert mm.h2d_bytes == 676 and mm.h2d_count == 1            # the weights moved once
    ws[("conv2", 0)][1, 1] += 1 if ws[("conv2", 0)][1, 1] < 127 else -1
    assert mm.upload_weights_once(ws, 0).moved == 1             # one changed byte re-sent
    with pytest.raises(ValueError):
        mm.upload_weights_once({"x": np.array([300])}, 0)


# ------------------------------------------------------------------------------------
# packet, host backend, comparison
# ------------------------------------------------------------------------------------


def test_packet_fields_result_and_descriptor() -> None:
    pk = TaskPacket(tag=0x1234, m=4, k=8, n=4, stream=2, seq=5, wgt_off=64, dev_in_addr=0x100,
                    dev_out_addr=0x200, host_in_off=16, dtype=0, scale_mult=3, scale_shift=2, relu=True,
                    pool=True, route="both", payload_out=np.ones((2, 4), np.int64))
    r = pk.to_result()
    assert isinstance(r, TaskResult)
    assert set(vars(r)) == {"tag", "stream", "status", "data", "error"}     # pipeline-only fields dropped
    assert (r.tag, r.stream, r.status) == (0x1234, 2, "NEW")
    d = pk.descriptor(seq=9, wgt_base=0x800)
    assert (d.opcode, d.tag, d.m, d.k, d.n, d.act_addr, d.out_addr, d.wgt_off, d.mult, d.shift, d.relu, d.pool,
            d.seq) == (H.MATMUL, 0x1234, 4, 8, 4, 0x100, 0x200, 64, 3, 2, 1, 1, 9)
    lim = H.Limits(exp_seq=9, wgt_base=0x800, wgt_size=1024, mem_limit=P.mem_bytes)
    assert H.check(d.words(), lim, P) == H.ST["OK"]
    assert pk.descriptor(9, 0x800, wgt_addr=0x840).wgt_off == 128   # the matrix 64 bytes into the region
    with pytest.raises(ValueError, match="below"):
        pk.descriptor(0, 0x800, wgt_addr=0x700)
    pk.fail("pre-processing raised")
    assert pk.to_result().status == "FAILED" and pk.to_result().error == "pre-processing raised"
    pk.set_status("MEM_ERR")
    with pytest.raises(ParamError):
        pk.set_status("LOST")
    with pytest.raises(ParamError):
        TaskPacket(tag=1, m=1, k=4, n=4, route="fpga")
    with pytest.raises(ParamError):
        TaskPacket(tag=1 << 16, m=1, k=4, n=4)


def test_compare_reports_the_first_difference() -> None:
    a = np.zeros((3, 4), np.int64)
    b = a.copy()
    b[2, 0], b[1, 2] = 1, 5
    c = compare(a, b)
    assert not c and c.n_diff == 2 and c.first == ((1, 2), 0, 5) and "(1, 2)" in c.message
    assert compare(a, a.astype(np.int8))
    assert not compare(a, a[:2]) and "shapes differ" in compare(a, a[:2]).message


def test_end_to_end_on_the_front_model_weights_once(seed: int) -> None:
    """A layer of float data through split, quantise, weights-once, the map and the
    front-end model over two forward passes; route 'both' compares with host_run."""
    p = HostParams()
    rng = np.random.default_rng(seed)
    front = H.FrontModel(p, np.zeros(p.mem_bytes, np.uint8))
    al = DeviceAllocator(p.mem_bytes)
    mm = MemoryMap(al, ArrayDevice(front.mem))
    m, k, n, frac, wfrac, ofrac, dtype = 40, 30, 20, 5, 6, 4, 0
    mult, shift = scale_for(frac, wfrac, ofrac)
    wf = (rng.standard_normal((k, n)) * 0.5).astype(np.float32)
    wq, _ = quantize(wf, dtype, wfrac)
    s = split_task(m, k, n, p, dtype)
    panels = s.panels(wq)
    addrs, results = [], []
    for fwd in range(2):
        img = mm.upload_weights_once({("l1", c): pn for c, pn in enumerate(panels)}, dtype)
        front.wgt_base, front.wgt_size = img.dev_addr, img.nbytes
        xf = rng.standard_normal((m, k)).astype(np.float32)
        xq, _ = quantize(xf, dtype, frac)
        outs, used = [], []
        for rb, cb, i in s.tasks():
            tm, tk, tn = s.dims(rb, cb)
            a_host = to_bytes(s.a_block(xq, rb), dtype)
            o_host = np.zeros(tm * tn, np.uint8)
            used += [mm.map_block(("a", i), a_host), mm.map_block(("o", i), o_host)]
            mm.push(("a", i))
            pk = TaskPacket(tag=i, m=tm, k=tk, n=tn, dtype=dtype, frac=frac, wfrac=wfrac, ofrac=ofrac,
                            scale_mult=mult, scale_shift=shift, relu=True, route="both",
                            wgt_off=img.offsets[("l1", cb)],
                            dev_in_addr=mm.translate(("a", i), 0), dev_out_addr=mm.translate(("o", i), 0),
                            payload_in=s.a_block(xq, rb))
            out = front.submit(pk.descriptor(front.exp_seq, img.dev_addr).words())
            assert out.status == H.ST["OK"], H.HostParams.STATUS[out.status]
            mm.pull(("o", i))
            got = o_host.view(np.int8).astype(np.int64).reshape(tm, tn)
            cmp = compare(got, host_run(pk, panels[cb]))
            assert cmp, cmp.message
            outs.append(got)
        for i in range(s.count):
            mm.unmap(("a", i))
            mm.unmap(("o", i))
        addrs.append(used)
        results.append(dequantize(s.join(outs), dtype, ofrac))
        ref = H.kernel_ref(xq, wq, H.Descriptor(dtype=dtype, m=m, k=k, n=n, relu=1, mult=mult, shift=shift))
        assert np.array_equal(s.join(outs), ref)
    assert addrs[0] == addrs[1]                                  # the same pattern, the same addresses
    wbytes = sum(pn.size for pn in panels)                       # int8: one byte per weight
    abytes = m * s.kp * len(s.col_blocks)                        # each task sends its rows of A
    assert mm.h2d_bytes == wbytes + 2 * abytes                   # weights once, activations twice
    assert mm.d2h_bytes == 2 * m * s.np_
