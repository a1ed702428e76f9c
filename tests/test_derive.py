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


def test_registers_are_clamped_and_anchored():
    def held(cfg):                                     # the accumulator: BK / 2 words per thread
        s = _sample(cfg)
        return Sampled(s.cfg, s.alloc, s.shared, 0, 64, 0, {"live:acc:arg#1": cfg["BK"] / 2})
    dm = DerivedModel(["BK", "num_warps", "num_stages"],
                      [held({"BK": k, "num_warps": 4, "num_stages": 2}) for k in (16, 32)], "sm_120").fit()
    cfg = {"BK": 128, "num_warps": 4, "num_stages": 2}
    # the accumulator's words are expressed as BK/2 (8 and 16 words at BK 16 and 32): 64 at BK=128;
    # anchored on BK=32 (64 registers, 16 words): 64 + b x (64 - 16) words
    dm._coef = (10.0, 100.0)                           # 64 + 100 x 48 = 4864 -> 255, a spill
    assert dm.regs(cfg) == 255 and dm.spills(cfg)
    dm._coef = (10.0, -100.0)                          # 64 - 4800 -> 1
    assert dm.regs(cfg) == 1 and not dm.spills(cfg)
    dm._coef = (10.0, 0.5)                             # 64 + 0.5 x 48 = 88
    assert dm.regs(cfg) == 88
    assert dm.expression("regs") == "clamp(10.0 + 0.500 x peak live words, 1, 255)"


def test_register_fit_is_a_line_through_the_sample_with_a_nonnegative_slope():
    def held(bk, regs):
        s = _sample({"BK": bk, "num_warps": 4, "num_stages": 2})
        return Sampled(s.cfg, s.alloc, s.shared, 0, regs, 0, {"live:acc:arg#1": bk / 2})
    # words 8, 16, 32 -> regs 40, 48, 64: regs = 32 + 1 x words
    dm = DerivedModel(["BK", "num_warps", "num_stages"], [held(16, 40), held(32, 48), held(64, 64)], "sm_120").fit()
    assert dm._coef == pytest.approx((32.0, 1.0))
    # registers falling as words grow: no slope, the mean (48 + 40) / 2
    dm = DerivedModel(["BK", "num_warps", "num_stages"], [held(16, 48), held(32, 40)], "sm_120").fit()
    assert dm._coef == pytest.approx((44.0, 0.0))


def test_model_needs_every_parameter():
    dm = DerivedModel(["BK", "num_warps", "num_stages"],
                      [_sample({"BK": k, "num_warps": 4, "num_stages": 2}) for k in (16, 32)], "sm_120").fit()
    from occmodel.errors import ConfigError
    with pytest.raises(ConfigError, match="lacks num_stages"):
        dm.shared({"BK": 16, "num_warps": 4})


# ------------------------------------- a layout conversion is keyed by the value it converts
# The epilogue of Liger's neighborhood-attention QK^T kernel as two configs of one code path
# compile it (triton 3.9, sm_120): `acc = tl.where(mask > 0, acc, -inf)` at line 184, then
# `tl.store(ptrs, acc)` at line 193. Both convert the i1 mask into the mma layout and the f32
# result out of it for the store; RemoveLayoutConversions gives the second conversion the
# select's location on one config (BLOCK_M=BLOCK_N=BLOCK_K=32, num_warps=8) and the store's on
# another (num_warps=4). Keyed by their own locations the two read as two code paths (a buffer
# "acc@:184#2" here, "@:193#1" there) whose presence follows no rule in the parameters.
def _epilogue(cvt_loc: str, warps: int) -> str:
    return f"""\
#blocked = #ttg.blocked<{{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [{warps}, 1], order = [1, 0]}}>
#mma = #ttg.nvidia_mma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = [{warps // 2}, 2], instrShape = [16, 8]}}>
module attributes {{"ttg.num-warps" = {warps} : i32, ttg.shared = 4096 : i32}} {{
  tt.func public @k(%P: tensor<32x32x!tt.ptr<f32>, #blocked>, %M: tensor<32x32xf32, #blocked>, %A: tensor<32x32xf32, #mma>) attributes {{noinline = false}} {{
    %cst = arith.constant dense<0.000000e+00> : tensor<32x32xf32, #blocked> loc(#loc3)
    %cst_1 = arith.constant dense<0xFF800000> : tensor<32x32xf32, #mma> loc(#loc3)
    %acc_74 = arith.cmpf ogt, %M, %cst : tensor<32x32xf32, #blocked> loc(#loc4)
    %acc_75 = ttg.convert_layout %acc_74 {{allocation.offset = 0 : i32, allocation.size = 1024 : i32}} : tensor<32x32xi1, #blocked> -> tensor<32x32xi1, #mma> loc(#loc5)
    %acc_76 = arith.select %acc_75, %A, %cst_1 : tensor<32x32xi1, #mma>, tensor<32x32xf32, #mma> loc(#loc5)
    %0 = ttg.convert_layout %acc_76 {{allocation.offset = 0 : i32, allocation.size = 4096 : i32}} : tensor<32x32xf32, #mma> -> tensor<32x32xf32, #blocked> loc({cvt_loc})
    tt.store %P, %0 : tensor<32x32x!tt.ptr<f32>, #blocked> loc(#loc2)
    tt.return loc(#loc2)
  }} loc(#loc2)
}} loc(#loc2)
#loc1 = loc("fna.py":184:0)
#loc2 = loc("fna.py":193:4)
#loc3 = loc(unknown)
#loc4 = loc("acc"(#loc1))
#loc5 = loc("acc"(#loc1))
"""


def test_a_conversion_records_the_value_it_converts():
    at_select = parse_allocated(_epilogue("#loc5", 8))       # the conversion placed at the select
    at_store = parse_allocated(_epilogue("#loc2", 4))        # ... and at the store
    # own locations: "acc@fna.py:184" (2nd there) vs "@fna.py:193" (1st there): two keys
    assert [b.key for b in at_select.buffers] == [
        "scratch ttg.convert_layout acc@fna.py:184 r2#1", "scratch ttg.convert_layout acc@fna.py:184 r2#2"]
    assert [b.key for b in at_store.buffers] == [
        "scratch ttg.convert_layout acc@fna.py:184 r2#1", "scratch ttg.convert_layout @fna.py:193 r2#1"]
    # both convert values defined at line 184 named acc (the cmpf, then the select): the 1st and
    # the 2nd conversion of acc@fna.py:184 on both configs
    assert [b.src for b in at_select.buffers] == [b.src for b in at_store.buffers] == [
        "acc@fna.py:184#1", "acc@fna.py:184#2"]
    # sizes as the IR says: 32 x 32 i1 = 1024 B, 32 x 32 f32 = 4096 B; each alone at its op, both
    # at offset 0: total max(1024, 4096) = 4096
    assert [b.bytes for b in at_store.buffers] == [1024, 4096] and check(at_store) == ""
    # an operand with no defining op (a function argument): no src
    arg = parse_allocated(_epilogue("#loc2", 4).replace("convert_layout %acc_76", "convert_layout %A"))
    assert arg.buffers[1].src == ""


def _qk(cfg, at_store: bool) -> Sampled:
    """The QK^T kernel's allocation as the sweep reads (bf16, head_dim 128): q / k rings
    (S-1) x BM x BK and (S-1) x BN x BK x 2 B, live together over the loop; after it the i1
    mask conversion (BM x BN x 1 B) and the f32 result's (BM x BN x 4 B), each alone."""
    bm, bn, bk, s = cfg["BM"], cfg["BN"], cfg["BK"], cfg["num_stages"]
    f = "fna.py"
    q = Buffer(f"explicit ttg.local_alloc q@{f}:164 r3 swizzled_shared#1", "explicit", "ttg.local_alloc", "q",
               f"{f}:164", (s - 1, bm, bk), "bf16", 2 * (s - 1) * bm * bk, 16, 0, 60, 120)
    k = Buffer(f"explicit ttg.local_alloc k@{f}:174 r3 swizzled_shared#1", "explicit", "ttg.local_alloc", "k",
               f"{f}:174", (s - 1, bn, bk), "bf16", 2 * (s - 1) * bn * bk, 16, 0, 61, 119)
    m = Buffer(f"scratch ttg.convert_layout acc@{f}:184 r2#1", "scratch", "ttg.convert_layout", "acc", f"{f}:184",
               (bm, bn), "i1", bm * bn, 128, 0, 140, 141, f"acc@{f}:184#1")
    key, name, where = ((f"scratch ttg.convert_layout @{f}:193 r2#1", "", f"{f}:193") if at_store else
                        (f"scratch ttg.convert_layout acc@{f}:184 r2#2", "acc", f"{f}:184"))
    o = Buffer(key, "scratch", "ttg.convert_layout", name, where, (bm, bn), "f32", 4 * bm * bn, 128, 0, 142, 143,
               f"acc@{f}:184#2")
    bufs = [q, k, m, o]
    offsets, total = replay([b.bytes for b in bufs], bufs)
    bufs = tuple(Buffer(**{**b.__dict__, "offset": x}) for b, x in zip(bufs, offsets))
    return Sampled(dict(cfg), Allocation(total, bufs), total, 0, 64, 0, {"carry:0": 32.0})


def test_a_conversion_whose_location_moves_is_one_buffer():
    grid = [{"BM": m, "BN": n, "BK": 32, "num_stages": st} for m in (32, 64) for n in (32, 64) for st in (2, 3)]
    # where the f32 conversion lands follows no rule in fewer than all three parameters (as on the
    # real kernel, where only BM, BN, BK and num_warps together told it): at the store when
    # (BM == BN) == (num_stages == 3)
    store = lambda c: (c["BM"] == c["BN"]) == (c["num_stages"] == 3)   # noqa: E731
    held = {"BM": 64, "BN": 64, "BK": 32, "num_stages": 3}
    sample = [_qk(c, store(c)) for c in grid if c != held]
    dm = DerivedModel(["BM", "BN", "num_stages"], sample, "sm_120").fit()
    # one code path: the 193 key's buffers took the 184#2 key (on 4 of the 7 configs; 193 on 3)
    assert sum(store(c) for c in grid if c != held) == 3
    assert len({s.alloc.structure for s in dm.sample}) == 1 and "193" not in str(dm.sample[0].alloc.structure)
    # BM=BN=64, S=3 (never compiled): rings 2 x 64 x 32 x 2 B x 2 = 16384 live together; the f32
    # conversion 64 x 64 x 4 B = 16384 after them: max(16384, 16384) = 16384
    assert dm.shared({"BM": 64, "BN": 64, "num_stages": 3}) == 16384
    # without the operand (src "") the two keys stay apart: two code paths that only all three
    # parameters together separate, and BM=BN=64, S=3 was never compiled: refused
    bare = [Sampled(**{**x.__dict__, "alloc": Allocation(x.alloc.shared, tuple(
        Buffer(**{**b.__dict__, "src": ""}) for b in x.alloc.buffers))}) for x in sample]
    split = DerivedModel(["BM", "BN", "num_stages"], bare, "sm_120").fit()
    assert len({s.alloc.structure for s in split.sample}) == 2
    assert split.shared({"BM": 64, "BN": 64, "num_stages": 3}) is None


def test_conversions_are_not_merged_when_they_meet_or_convert_different_values():
    from occmodel.derive import same_conversions
    grid = [{"BM": m, "BN": 32, "BK": 32, "num_stages": 2} for m in (32, 64)]
    a, b = _qk(grid[0], False), _qk(grid[1], True)
    # the 2nd conversion of another value: not the same buffer
    other = tuple(Buffer(**{**x.__dict__, "src": "s@fna.py:180#1"}) if "193" in x.key else x for x in b.alloc.buffers)
    b2 = Sampled(**{**b.__dict__, "alloc": Allocation(b.alloc.shared, other)})
    assert [s.alloc.structure for s in same_conversions([a, b2])] == [a.alloc.structure, b2.alloc.structure]
    # both keys on one config: two buffers, whatever they convert
    both = Sampled(**{**a.__dict__, "alloc": Allocation(a.alloc.shared, a.alloc.buffers + (b.alloc.buffers[-1],))})
    assert same_conversions([both, b])[1].alloc.structure == b.alloc.structure
    # otherwise merged, into the key on more configs (tie: the first seen)
    assert same_conversions([a, b])[1].alloc.structure == a.alloc.structure


# --------------------------------------------- encodings are part of a buffer's identity
SM90_EXCERPT = """\
#shared = #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#shared1 = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>
#smem = #ttg.shared_memory
module attributes {"ttg.num-warps" = 4 : i32, ttg.shared = 24576 : i32} {
  tt.func public @k(%X: !tt.ptr<f16>) attributes {noinline = false} {
    %a = ttg.local_alloc {allocation.offset = 0 : i32} : () -> !ttg.memdesc<2x32x64xf16, #shared, #smem, mutable> loc(#loc1)
    %b = ttg.local_alloc {allocation.offset = 8192 : i32} : () -> !ttg.memdesc<2x64x64xf16, #shared1, #smem, mutable> loc(#loc1)
    tt.return
  }
}
#loc1 = loc("mm.py":21:4)
"""


def test_explicit_keys_carry_the_shared_encoding():
    # one source line, two encodings: a cp.async ring for mma.sync (swizzled_shared, 16-aligned)
    # and a TMA/wgmma ring (nvmma_shared, 128 B swizzle -> 128 x 8 = 1024-aligned). They are two
    # code paths, so their keys differ (before, both were "...mm.py:21 r3#n").
    a, b = parse_allocated(SM90_EXCERPT).buffers
    assert a.key.endswith("r3 swizzled_shared#1") and b.key.endswith("r3 nvmma_shared#1")
    assert (a.alignment, b.alignment) == (16, 1024)
    # 2 x 32 x 64 x 2 B = 8192 and 2 x 64 x 64 x 2 B = 16384
    assert (a.bytes, b.bytes) == (8192, 16384)


def _mm90(cfg) -> Sampled:
    """tests/user_kernel/mm.py on sm_90 as its allocations read: BM=32 takes mma.sync, its A/B
    rings swizzled_shared and num_stages-1 deep; BM>=64 takes wgmma, nvmma_shared rings
    num_stages deep. Ring bytes: depth x (BM x BK + BK x BN) x 2 B with BK=32, BN=64."""
    bm, s = cfg["BM"], cfg["num_stages"]
    enc, depth = ("swizzled_shared", s - 1) if bm == 32 else ("nvmma_shared", s)
    a = Buffer(f"explicit ttg.local_alloc a@mm.py:21 r3 {enc}#1", "explicit", "ttg.local_alloc", "a", "mm.py:21",
               (depth, bm, 32), "f16", depth * bm * 64, 16, 0, 2, 9)
    b = Buffer(f"explicit ttg.local_alloc b@mm.py:22 r3 {enc}#1", "explicit", "ttg.local_alloc", "b", "mm.py:22",
               (depth, 32, 64), "f16", depth * 4096, 16, 0, 3, 9)
    offsets, total = replay([a.bytes, b.bytes], [a, b])
    bufs = (Buffer(**{**a.__dict__, "offset": offsets[0]}), Buffer(**{**b.__dict__, "offset": offsets[1]}))
    return Sampled(dict(cfg), Allocation(total, bufs), total, 0, 64, 0, {"carry:0": 32.0})


def test_mm_sm90_mma_sync_tile_sampled_at_one_num_stages_is_refused():
    # The sample `occmodel fit --sample 0.3` took (6 of 18): BM=32 at num_stages=3 only. Before,
    # one form over the whole sample (a Min over BM and num_stages) answered BM=32 at S=2 and 4
    # with the wgmma depth: 8,192 / 12,288 B predicted where the compile has 4,096 / 12,288.
    picked = [{"BM": 32, "num_stages": 3}] + [{"BM": m, "num_stages": s} for m in (64, 128) for s in (2, 4)] \
        + [{"BM": 64, "num_stages": 3}]
    dm = DerivedModel(["BM", "num_stages"], [_mm90(c) for c in picked], "sm_90").fit()
    for s in (2, 4):
        cfg = {"BM": 32, "num_stages": s}
        assert dm.shared(cfg) is None, (cfg, dm.shared(cfg), _mm90(cfg).shared)
        assert "one value of num_stages" in dm.why_not(cfg)
    # BM=128, S=3 (wgmma): 3 x (128 x 32 + 32 x 64) x 2 B = 3 x 12288 = 36864
    assert dm.shared({"BM": 128, "num_stages": 3}) == 36864 == _mm90({"BM": 128, "num_stages": 3}).shared
    # BM=32 at S=3 is sampled: 2 x (32 x 32 + 32 x 64) x 2 B = 12288
    assert dm.shared({"BM": 32, "num_stages": 3}) == 12288

    # Without the encodings in the keys (the old parse) both tiles' rings are one buffer whose depth
    # fits Min(BM/16, num_stages) on the sample: BM=32 -> 2 at S=3, BM>=64 -> S. Its BM/16 term
    # decided the depth at BM=32, S=3 alone, so it is not extrapolated to S=2 (a tie, 2 = 2: the
    # compile has 6,144 B, the form would say 12,288) or S=4 (18,432 B; the form: 12,288).
    import re

    def keyless(s: Sampled) -> Sampled:
        bufs = tuple(Buffer(**{**b.__dict__, "key": re.sub(r" \w+_shared", "", b.key)}) for b in s.alloc.buffers)
        return Sampled(s.cfg, Allocation(s.alloc.shared, bufs), s.shared, 0, 64, 0, s.holds)
    old = DerivedModel(["BM", "num_stages"], [keyless(_mm90(c)) for c in picked], "sm_90").fit()
    assert "Min(BM/16, num_stages)" in dict((n, e) for n, e, _ in old.buffers_at({"BM": 32, "num_stages": 3}))[
        "b (local_alloc, mm.py:22)"]
    for s in (2, 4):
        assert old.shared({"BM": 32, "num_stages": s}) is None
        assert "sampled at one value of num_stages only" in old.why_not({"BM": 32, "num_stages": s})
    grid = [{"BM": m, "num_stages": s} for m in (32, 64, 128) for s in (2, 3, 4)]
    assert all(old.shared(c) in (None, _mm90(c).shared) for c in grid)


# ------------------------------------------- a buffer's presence, decided on its own
def _decode(cfg) -> Sampled:
    """A decode-attention-like kernel. Explicit: q (BH x 64 f16, live [0, 40)), a K ring
    ((S-1) x BN x 64 f16, live [5, 30)) when S > 1; scratch: a layout conversion of the K tile
    (BN x 64 f32 = 256 x BN B) at op 20 only for BN >= 64 with num_warps <= 2, a reduction
    (4 x BH x num_warps B) at op 25, and an epilogue conversion (BH x 64 f32) at op 45."""
    bn, bh, w, s = cfg["BN"], cfg["BH"], cfg["num_warps"], cfg["num_stages"]
    bufs = [Buffer("explicit q", "explicit", "ttg.local_alloc", "q", "d.py:1", (bh, 64), "f16", bh * 128, 16, 0, 0, 40)]
    if s > 1:
        bufs.append(Buffer("explicit k", "explicit", "ttg.local_alloc", "k", "d.py:2", (s - 1, bn, 64), "f16",
                           (s - 1) * bn * 128, 16, 0, 5, 30))
    if bn >= 64 and w <= 2:
        bufs.append(Buffer("scratch cvt_k", "scratch", "ttg.convert_layout", "k", "d.py:3", (bn, 64), "f32",
                           bn * 256, 128, 0, 20, 21))
    bufs.append(Buffer("scratch red", "scratch", "tt.reduce", "m", "d.py:4", (bh, bn), "f32", 4 * bh * w, 128, 0,
                       25, 26))
    bufs.append(Buffer("scratch epi", "scratch", "ttg.convert_layout", "", "d.py:5", (bh, 64), "f32", bh * 256,
                       128, 0, 45, 46))
    offsets, total = replay([b.bytes for b in bufs], bufs)
    bufs = [Buffer(**{**b.__dict__, "offset": o}) for b, o in zip(bufs, offsets)]
    return Sampled(dict(cfg), Allocation(total, tuple(bufs)), total, 0, 64, 0, {"carry:0": 32.0})


_DGRID = [{"BN": n, "BH": h, "num_warps": w, "num_stages": s}
          for n in (16, 32, 64) for h in (16, 32) for w in (2, 4, 8) for s in (1, 2, 3)]


def test_a_scratch_that_exists_in_one_corner_is_placed_where_the_sample_shows_it():
    # 14 of 54 sampled; the conversion scratch seen at (BN=64, num_warps=2) with S=1 and S=2
    # only, never with S=3 -- the old model refused every (BN, num_warps, S) it had not seen.
    picked = [dict(zip(("BN", "BH", "num_warps", "num_stages"), v)) for v in [
        (32, 16, 4, 2), (16, 16, 4, 2), (64, 16, 4, 2), (32, 32, 4, 2), (32, 16, 2, 2), (32, 16, 8, 2),
        (32, 16, 4, 1), (32, 16, 4, 3), (64, 16, 2, 1), (64, 32, 2, 2), (16, 32, 8, 3), (64, 32, 8, 1),
        (16, 16, 2, 1), (64, 16, 8, 3)]]
    dm = DerivedModel(["BN", "BH", "num_warps", "num_stages"], [_decode(c) for c in picked], "sm_120").fit()
    cfg = {"BN": 64, "BH": 16, "num_warps": 2, "num_stages": 3}
    # the cvt_k scratch is inside the box BN 64..64 x BH 16..32 x warps 2..2 x S 1..2 stretched to S=3?
    # no sampled config without it falls in BN=64, warps=2, so the box rule alone cannot say; but it
    # exists at (BN=64, num_warps=2) whatever S -- the smallest deciding set (BN, num_warps) has
    # cfg's values sampled. Placed at op 20: q (0..40) and the ring (5..30) live there, so it goes
    # above both: q 2048 + ring 2 x 64 x 128 = 16384 -> offset 18432, +16384 = 34816; the epilogue
    # (16 x 256 = 4096) and the reduction are smaller and fit beside -> total 34816.
    assert _decode(cfg).shared == 34816
    assert dm.shared(cfg) == 34816
    # and where the scratch does not exist, the model says so from the box: BN=32 with num_warps=2
    # is a sampled config without it, so no box holding every config with it reaches BN=32
    for c in _DGRID:
        got = dm.shared(c)
        assert got is None or got == _decode(c).shared, (c, got, _decode(c).shared)
    assert sum(dm.shared(c) is not None for c in _DGRID) == 54          # every config of the grid


def test_box_verdict_by_hand():
    from occmodel.derive import _box_verdict
    P = ["BN", "num_warps"]
    inside = [{"BN": 64, "num_warps": 2}]
    outside = [{"BN": 32, "num_warps": 2}, {"BN": 64, "num_warps": 4}]
    # the smallest box [64, 64] x [2, 2] holds cfg -> True
    assert _box_verdict(inside, outside, {"BN": 64, "num_warps": 2}, P) is True
    # stretched to BN=16: [16, 64] x [2, 2] takes in (32, 2), which lacks it -> no box fits -> False
    assert _box_verdict(inside, outside, {"BN": 16, "num_warps": 2}, P) is False
    # stretched to num_warps=8: [64, 64] x [2, 8] takes in (64, 4) -> False
    assert _box_verdict(inside, outside, {"BN": 64, "num_warps": 8}, P) is False
    # BN=128 (beyond every sample): [64, 128] x [2, 2] holds nothing that lacks it -> unknown
    assert _box_verdict(inside, outside, {"BN": 128, "num_warps": 2}, P) is None
    # a sample that lacks it inside the smallest box: no box fits at all -> unknown
    assert _box_verdict(inside + [{"BN": 64, "num_warps": 8}], outside + [{"BN": 64, "num_warps": 4}],
                        {"BN": 64, "num_warps": 2}, P) is None


def test_presence_with_another_buffer_and_disagreeing_rules():
    # an index buffer that exists from S=3 up unless the corner's conversion scratch does
    def s(cfg):
        base = _decode(cfg)
        corner = any(b.key == "scratch cvt_k" for b in base.alloc.buffers)
        bufs = list(base.alloc.buffers)
        if cfg["num_stages"] >= 3 and not corner:
            bufs.insert(1, Buffer("explicit idx", "explicit", "ttg.local_alloc", "idx", "d.py:6", (cfg["BN"],), "i32",
                                  4 * cfg["BN"], 16, 0, 4, 31))
        offsets, total = replay([b.bytes for b in bufs], bufs)
        bufs = [Buffer(**{**b.__dict__, "offset": o}) for b, o in zip(bufs, offsets)]
        return Sampled(dict(cfg), Allocation(total, tuple(bufs)), total, 0, 64, 0, {"carry:0": 32.0})
    picked = [dict(zip(("BN", "BH", "num_warps", "num_stages"), v)) for v in [
        (32, 16, 4, 3), (16, 16, 4, 3), (64, 16, 4, 3), (32, 32, 4, 3), (32, 16, 2, 3), (32, 16, 8, 3),
        (32, 16, 4, 1), (32, 16, 4, 2), (64, 16, 2, 3), (64, 32, 2, 1), (16, 32, 8, 2), (64, 32, 8, 1)]]
    dm = DerivedModel(["BN", "BH", "num_warps", "num_stages"], [s(c) for c in picked], "sm_120").fit()
    # idx at (16, 32, 2, 3)? no parameters-only rule answers (BN=16 with warps=2 and S=3 never
    # sampled together...), but (num_stages, cvt_k exists) decides it on the sample: S=3 without
    # cvt_k -> it exists; cvt_k's own rule says it does not exist at BN=16
    cfg = {"BN": 16, "BH": 32, "num_warps": 2, "num_stages": 3}
    assert dm._present("explicit idx", cfg)[0] is True
    for c in _DGRID:
        got = dm.shared(c)
        assert got is None or got == s(c).shared, (c, got, s(c).shared)
