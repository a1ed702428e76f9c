"""The derived model's pure parts on hand-worked inputs (CPU only, no compile):
allocated-TTGIR excerpts -> buffers and liveness -> Triton's allocator replayed;
exact forms of a buffer's size; layouts -> registers per thread; the model itself on
synthetic samples (code paths, refusals)."""

from __future__ import annotations

import pytest

from occmodel.allocation import Allocation, Buffer, check, parse_allocated, replay
from occmodel.derive import DerivedModel, Sampled
from occmodel.derive_fit import agree, exact_forms
from occmodel.layouts import Layouts

# A 2-deep ring of 32x64 f16 tiles (passed to the loop block as a block argument, read
# through a memdesc_index view), a 64x32 f16 tile live at the same time, and after both
# are dead a layout conversion of a 64x64 f32 tile through shared memory (scratch).
EXCERPT = """\
#blocked = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#shared = #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#smem = #ttg.shared_memory
module attributes {"ttg.num-warps" = 4 : i32, ttg.shared = 16384 : i32} {
  tt.func public @k(%X: !tt.ptr<f16>) attributes {noinline = false} {
    %c0_i32 = arith.constant 0 : i32
    %ring = ttg.local_alloc {allocation.offset = 0 : i32} : () -> !ttg.memdesc<2x32x64xf16, #shared, #smem, mutable> loc(#loc1)
    %tile = ttg.local_alloc {allocation.offset = 8192 : i32} : () -> !ttg.memdesc<64x32xf16, #shared, #smem, mutable> loc(#loc2)
    cf.br ^bb1(%ring : !ttg.memdesc<2x32x64xf16, #shared, #smem, mutable>)
  ^bb1(%r: !ttg.memdesc<2x32x64xf16, #shared, #smem, mutable>):  // pred: ^bb0
    %v = ttg.memdesc_index %r[%c0_i32] : !ttg.memdesc<2x32x64xf16, #shared, #smem, mutable> -> !ttg.memdesc<32x64xf16, #shared, #smem, mutable>
    %a = ttg.local_load %v : !ttg.memdesc<32x64xf16, #shared, #smem, mutable> -> tensor<32x64xf16, #blocked>
    %b = ttg.local_load %tile : !ttg.memdesc<64x32xf16, #shared, #smem, mutable> -> tensor<64x32xf16, #blocked>
    %acc = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #blocked>
    %out = ttg.convert_layout %acc {allocation.offset = 0 : i32, allocation.size = 16384 : i32} : tensor<64x64xf32, #blocked> -> tensor<64x64xf32, #mma> loc(#loc3)
    tt.return
  }
}
#loc1 = loc("k.py":10:4)
#loc2 = loc("k.py":11:4)
#loc3 = loc("k.py":20:8)
"""


def test_buffers_shapes_to_bytes_and_liveness():
    alloc = parse_allocated(EXCERPT)
    ring, tile, cvt = alloc.buffers
    # ring 2 x 32 x 64 x 2 B = 8192; tile 64 x 32 x 2 B = 4096; the scratch as the IR says, 64 x 64 x 4 B
    assert [b.bytes for b in alloc.buffers] == [8192, 4096, 16384]
    assert (ring.kind, ring.dims, ring.alignment) == ("explicit", (2, 32, 64), 16)      # swizzled_shared: 16
    assert (cvt.kind, cvt.alignment, cvt.dims) == ("scratch", 128, (64, 64))
    assert ring.where == "k.py:10" and cvt.where == "k.py:20"
    # the ring stays live through its block-argument alias and view up to the local_load of %v,
    # so it overlaps the tile; the conversion comes after both are dead
    assert ring.start < tile.start < ring.end and tile.end <= cvt.start
    assert alloc.shared == 16384 and check(alloc) == ""


def test_replay_liveness_to_total():
    alloc = parse_allocated(EXCERPT)
    # compiler's answer: ring at 0, tile above it at 8192 (both live), scratch at 0 (alone):
    # total = max(8192 + 4096, 0 + 16384) = 16384
    assert replay([8192, 4096, 16384], alloc.buffers) == ([0, 8192, 0], 16384)
    # a 4-deep ring (16384 B) sorts first with the scratch; the tile still sits above the ring:
    # total = max(16384 + 4096, 16384) = 20480
    assert replay([16384, 4096, 16384], alloc.buffers) == ([0, 16384, 0], 20480)


def test_replay_aligns_scratch_to_128():
    # a 200 B buffer live with a 100 B scratch: the scratch goes above it, aligned to 128:
    # offset align(200, 128) = 256, total 256 + 100 = 356
    a = Buffer("a", "explicit", "ttg.local_alloc", "a", "", (100,), "f16", 200, 16, 0, 0, 10)
    s = Buffer("s", "scratch", "tt.reduce", "s", "", (), "f32", 100, 128, 0, 5, 6)
    assert replay([200, 100], [a, s]) == ([0, 256], 356)


def test_exact_forms_ring_depth_and_min():
    pts = [{"BK": k, "num_warps": w, "num_stages": s} for k in (16, 32, 64) for w in (2, 4, 8) for s in (2, 3, 4)]
    ring = exact_forms(pts[::2], [128 * c["BK"] * (c["num_stages"] - 1) for c in pts[::2]],
                       ["BK", "num_warps", "num_stages"])
    assert [str(f) for f in ring] == ["128*BK*(num_stages - 1)"]
    # a scratch that stops growing at 8 rows per warp: Min(BK, 8 x num_warps) x 512 x 2 B
    scratch = exact_forms(pts[::2], [min(c["BK"], 8 * c["num_warps"]) * 1024 for c in pts[::2]],
                          ["BK", "num_warps", "num_stages"])
    assert [str(f) for f in scratch] == ["Min(1024*BK, 8192*num_warps)"]
    assert all(agree(scratch, c) == min(c["BK"], 8 * c["num_warps"]) * 1024 for c in pts)


def test_forms_the_sample_cannot_separate_give_no_answer():
    # BK = 8 x num_warps on every sampled point: 1024*BK and 8192*num_warps both fit
    pts = [{"BK": 16, "num_warps": 2}, {"BK": 32, "num_warps": 4}, {"BK": 64, "num_warps": 8}]
    forms = exact_forms(pts, [1024 * c["BK"] for c in pts], ["BK", "num_warps"])
    assert len(forms) == 2
    assert agree(forms, {"BK": 32, "num_warps": 4}) == 32768
    assert agree(forms, {"BK": 64, "num_warps": 2}) is None


def test_layout_words_per_thread():
    lay = Layouts(EXCERPT)
    # mma v2, warps 2 x 2: 4 fp32 per 16x8 tile, ceil(64/32) x ceil(64/16) = 8 tiles -> 32 words
    assert lay.words("tensor<64x64xf32, #mma>", 4) == 32
    # blocked [1,4] x [4,8] x [4,1]: tile 16 x 32; 64x64 -> 4 x 2 repeats x 4 elements = 32 f16 = 16 words
    assert lay.words("tensor<64x64xf16, #blocked>", 4) == 16
    assert lay.words("i64", 4) == 2


# ------------------------------------------------------- the model, synthetic
def _sample(cfg) -> Sampled:
    """A compile of a pipelined GEMM-like kernel, as its allocated buffers would read:
    a (S-1)-deep ring of BK x 64 f16 tiles and a 64 x BK staging tile, live together;
    after the loop, a 64 x 64 f32 epilogue conversion (scratch) alone. num_stages = 1
    takes another code path: no ring, the staging tile only."""
    bk, s = cfg["BK"], cfg["num_stages"]
    bufs = []
    if s > 1:
        bufs.append(Buffer("ring", "explicit", "ttg.local_alloc", "b", "k.py:5", (s - 1, bk, 64), "f16",
                           (s - 1) * bk * 128, 16, 0, 2, 9))
    bufs.append(Buffer("stage", "explicit", "ttg.local_alloc", "a", "k.py:4", (64, bk), "f16", bk * 128, 16, 0, 3, 9))
    bufs.append(Buffer("cvt", "scratch", "ttg.convert_layout", "", "k.py:9", (64, 64), "f32", 16384, 128, 0, 12, 13))
    offsets, total = replay([b.bytes for b in bufs], bufs)
    bufs = [Buffer(**{**b.__dict__, "offset": o}) for b, o in zip(bufs, offsets)]
    return Sampled(dict(cfg), Allocation(total, tuple(bufs)), total, 0, 64, 0, {"carry:0": 32.0})


def _truth(cfg) -> int:
    bk, s = cfg["BK"], cfg["num_stages"]
    return max((s - 1) * bk * 128 + bk * 128, 16384)


def test_model_predicts_both_code_paths_exactly():
    grid = [{"BK": k, "num_warps": w, "num_stages": s} for k in (16, 32, 64, 128) for w in (4, 8) for s in (1, 2, 3, 4)]
    picked = [{"BK": 32, "num_warps": 4, "num_stages": s} for s in (1, 2, 3, 4)] + \
             [{"BK": k, "num_warps": 4, "num_stages": 3} for k in (16, 64, 128)] + \
             [{"BK": 64, "num_warps": 8, "num_stages": 1}, {"BK": 32, "num_warps": 8, "num_stages": 3}]
    dm = DerivedModel(["BK", "num_warps", "num_stages"], [_sample(c) for c in picked], "sm_120").fit()
    assert dm.structural == [("num_stages",)]
    # e.g. BK=128, S=4: ring 3 x 128 x 128 = 49152 above... staging 16384: 65536 > epilogue 16384
    assert all(dm.shared(c) == _truth(c) for c in grid)
    exprs = {name: expr for name, expr, _ in dm.buffers_at({"BK": 64, "num_warps": 4, "num_stages": 3})}
    assert exprs["b (local_alloc, k.py:5)"] == "128*BK*(num_stages - 1)"


def test_model_refuses_an_unseen_code_path_and_an_unvaried_parameter():
    picked = [{"BK": 32, "num_warps": 4, "num_stages": s} for s in (2, 3)] + [{"BK": 64, "num_warps": 4,
                                                                              "num_stages": 2}]
    dm = DerivedModel(["BK", "num_warps", "num_stages"], [_sample(c) for c in picked], "sm_120").fit()
    cfg = {"BK": 32, "num_warps": 4, "num_stages": 3}
    assert dm.shared(cfg) == _truth(cfg)
    # num_stages=1 never compiled: its code path is unknown (the ring's rule would guess a 0-deep ring)
    assert dm.shared({"BK": 32, "num_warps": 4, "num_stages": 1}) is None
    assert "code path there is unknown" in dm.why_not({"BK": 32, "num_warps": 4, "num_stages": 1})
    # num_warps never varied: no sampled config at num_warps=8
    assert dm.shared({"BK": 32, "num_warps": 8, "num_stages": 3}) is None
    two = DerivedModel(["BK", "num_warps", "num_stages"],
                       [_sample({"BK": 32, "num_warps": 4, "num_stages": s}) for s in (1, 2, 3)], "sm_120").fit()
    assert two.shared({"BK": 64, "num_warps": 4, "num_stages": 3}) is None
    assert "no sampled config has BK=64" in two.why_not({"BK": 64, "num_warps": 4, "num_stages": 3})


def test_registers_are_clamped():
    dm = DerivedModel(["BK", "num_warps", "num_stages"],
                      [_sample({"BK": k, "num_warps": 4, "num_stages": 2}) for k in (16, 32)], "sm_120").fit()
    dm._coef = (10.0, 100.0, 0.0)                      # 10 + 100 x 32 words = 3210 -> 255, a spill
    cfg = {"BK": 16, "num_warps": 4, "num_stages": 2}
    assert dm.regs(cfg) == 255 and dm.spills(cfg)
    dm._coef = (-500.0, 0.0, 0.0)
    assert dm.regs(cfg) == 1 and not dm.spills(cfg)


def test_model_needs_every_parameter():
    dm = DerivedModel(["BK", "num_warps", "num_stages"],
                      [_sample({"BK": k, "num_warps": 4, "num_stages": 2}) for k in (16, 32)], "sm_120").fit()
    from occmodel.errors import ConfigError
    with pytest.raises(ConfigError, match="lacks num_stages"):
        dm.shared({"BK": 16, "num_warps": 4})
