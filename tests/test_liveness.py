"""The main loop's register pressure (occmodel.liveness) on hand-worked TTGIR excerpts
(CPU only, no compile)."""

from __future__ import annotations

import pytest

from occmodel.layouts import Layouts
from occmodel.liveness import distinct_words, live_at_peak, result_types, spread_words, strip_loc, value_types

# num_warps = 4: 128 threads. A Q tile loaded before the loop and used in it; a loop carrying
# a 64x64 f32 accumulator and a 64-row running maximum; in the body a K tile loaded, the
# S = Q K dot, its row maximum (a reduction with a combiner region), the maximum broadcast
# back over S's columns and subtracted, the difference added to the accumulator.
LOOP = """\
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 8]}>
module attributes {"ttg.num-warps" = 4 : i32} {
  tt.func public @k(%X: !tt.ptr<f16>, %n: i32) attributes {noinline = false} {
    %c0_i32 = arith.constant 0 : i32 loc(#loc1)
    %c1_i32 = arith.constant 1 : i32 loc(#loc1)
    %cst = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #mma> loc(#loc1)
    %cst_0 = arith.constant dense<0xFF800000> : tensor<64xf32, #ttg.slice<{dim = 1, parent = #mma}>> loc(#loc1)
    %qp = tt.splat %X : !tt.ptr<f16> -> tensor<64x64x!tt.ptr<f16>, #blocked> loc(#loc2)
    %q = tt.load %qp : tensor<64x64x!tt.ptr<f16>, #blocked> loc(#loc2)
    %res:2 = scf.for %i = %c0_i32 to %n step %c1_i32 iter_args(%acc = %cst, %m = %cst_0) -> (tensor<64x64xf32, #mma>, tensor<64xf32, #ttg.slice<{dim = 1, parent = #mma}>>)  : i32 {
      %k = tt.load %qp : tensor<64x64x!tt.ptr<f16>, #blocked> loc(#loc3)
      %s = tt.dot %q, %k, %cst, inputPrecision = tf32 : tensor<64x64xf16, #blocked> * tensor<64x64xf16, #blocked> -> tensor<64x64xf32, #mma> loc(#loc4)
      %mx = "tt.reduce"(%s) <{axis = 1 : i32}> ({
      ^bb0(%x: f32 loc(callsite(#loc1 at #loc5)), %y: f32 loc(callsite(#loc1 at #loc5))):
        %z = arith.maxnumf %x, %y : f32 loc(#loc5)
        tt.reduce.return %z : f32 loc(#loc5)
      }) : (tensor<64x64xf32, #mma>) -> tensor<64xf32, #ttg.slice<{dim = 1, parent = #mma}>> loc(#loc5)
      %m_1 = arith.maxnumf %m, %mx : tensor<64xf32, #ttg.slice<{dim = 1, parent = #mma}>> loc(#loc6)
      %e = tt.expand_dims %m_1 {axis = 1 : i32} : tensor<64xf32, #ttg.slice<{dim = 1, parent = #mma}>> -> tensor<64x1xf32, #mma> loc(#loc7)
      %b = tt.broadcast %e : tensor<64x1xf32, #mma> -> tensor<64x64xf32, #mma> loc(#loc7)
      %p = arith.subf %s, %b : tensor<64x64xf32, #mma> loc(#loc7)
      %acc_2 = arith.addf %acc, %p : tensor<64x64xf32, #mma> loc(#loc8)
      scf.yield %acc_2, %m_1 : tensor<64x64xf32, #mma>, tensor<64xf32, #ttg.slice<{dim = 1, parent = #mma}>> loc(#loc9)
    } loc(#loc9)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
"""


def test_result_types_by_op():
    assert result_types("arith.select", "%v = arith.select %c, %a, %b : tensor<8xi1, #b>, tensor<8xf32, #b>") \
        == ["tensor<8xf32, #b>"]
    assert result_types("arith.cmpi", "%v = arith.cmpi slt, %a, %b : tensor<8xi32, #b>") == ["tensor<8xi1, #b>"]
    assert result_types("tt.load", "%v = tt.load %p, %m : tensor<8x!tt.ptr<f16>, #b>") == ["tensor<8xf16, #b>"]
    assert result_types("arith.truncf", "%v = arith.truncf %a : tensor<8xf32, #b> to tensor<8xf16, #b>") \
        == ["tensor<8xf16, #b>"]
    assert strip_loc('%z = arith.maxnumf %x, %y : f32 loc(callsite(#loc1 at #loc5))') == "%z = arith.maxnumf %x, %y : f32"


def test_spread_and_distinct_words():
    # 64x64 f32 over 128 threads: 32 words; f16 half that; a 64-row vector: half an element -> 1
    assert spread_words("tensor<64x64xf32, #mma>", 4) == 32
    assert spread_words("tensor<64x64xf16, #blocked>", 4) == 16
    assert spread_words("tensor<64xf32, #ttg.slice<{dim = 1, parent = #mma}>>", 4) == 1
    assert spread_words("!ttg.async.token", 4) == 0
    fn = LOOP.splitlines()[3:]
    types = value_types(fn)
    assert types["%mx"] == "tensor<64xf32, #ttg.slice<{dim = 1, parent = #mma}>>"     # from the closing line
    assert types["%acc"] == "tensor<64x64xf32, #mma>" and types["%res#1"] == types["%mx"]
    w = distinct_words(fn, types, 4)
    assert w["%cst"] == 0                  # a dense constant: an immediate
    assert w["%b"] == 1                    # a broadcast of a 1-word column: 1, not 32
    assert w["%p"] == 32                   # S (32) minus it: min(32, 32 + 1)


def test_live_at_peak_by_hand():
    # body ops 0..8: k=load, s=dot, mx=reduce, m_1, e, b, p, acc_2, yield. Live (words):
    # q 16 (defined before the loop: all along), acc 32 (carried, to op 7), m 1 (to op 3),
    # k 16 [0,1], s 32 [1,6], mx 1 [2,3], m_1 1 [3,8], e 1 [4,5], b 1 [5,6], p 32 [6,7], acc_2 32 [7,8].
    # op 1: 16+32+1+16+32 = 97; op 6: q 16 + acc 32 + s 32 + m_1 1 + b 1 + p 32 = 114 (the peak);
    # op 7: 16 + 32 + 1 + 32 + 32 = 113.
    live = live_at_peak(LOOP, 4)
    assert live == {"live:q:tt.load#1": 16, "live:acc:arg#1": 32, "live:s:tt.dot#1": 32,
                    "live:m:arith.maxnumf#1": 1, "live:b:tt.broadcast#1": 1, "live:p:arith.subf#1": 32}
    assert sum(live.values()) == 114
    # 8 warps: every tile's share halves (vectors stay at one word): 8+16+16+1+1+16 = 58
    assert sum(live_at_peak(LOOP, 8).values()) == 58


def test_live_at_peak_without_a_loop_walks_the_function():
    text = LOOP.split("    %res:2")[0] + "    tt.return\n  }\n}\n"
    # the body: constants (0 words), qp (splat of an argument of unknown type: 0), q 16 -> peak 16
    assert live_at_peak(text, 4) == {"live:q:tt.load#1": 16}


def test_mma_slice_counts_one_column():
    lay = Layouts(LOOP)
    # mma v2, warps [4, 1]: a 64-row vector (slice of dim 1) -> 64x1: 2 rows x 1 column per 16-row
    # tile, ceil(64 / 64) = 1 tile -> 2 elements (it was 4: the 2 columns of a full tile)
    assert lay.elements([64], "#ttg.slice<{dim = 1, parent = #mma}>", 128) == 2
    # a full 64x64 tile: 2 x 2 per tile x 1 x 8 tiles = 32
    assert lay.words("tensor<64x64xf32, #mma>", 4) == 32
