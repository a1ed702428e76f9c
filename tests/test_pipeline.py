"""The pipelining report (occmodel.pipeline) on real TTGIR: decode_attention (KV tiles
pipelined, num_stages-1 deep) against decode_attention_nopipe (one buffer whatever
num_stages), on sm_120 and sm_90; a TMA loop; and the static premise it decides.
CPU only. The TTGIR spelling was checked on triton 3.6 and 3.9 (run this file under
either); the excerpt test pins the op shapes the parser relies on."""

from __future__ import annotations

import json
from pathlib import Path
import os
import subprocess
import sys

import pytest

pytest.importorskip("triton")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from occmodel import pipeline as P  # noqa: E402
from occmodel.compile import compile_kernel  # noqa: E402
from occmodel.kernels import decode_attention as DA  # noqa: E402
from occmodel.kernels import decode_attention_nopipe as NP  # noqa: E402
from occmodel.spec import load_spec  # noqa: E402
from occmodel.premise import MECHANISM_FAILS, MECHANISM_HOLDS, judge  # noqa: E402
from test_premise import facts  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _cache(shared_cache):
    return shared_cache


def report(card, arch: str, stages: int, **overrides) -> P.PipelineReport:
    cfg = card.resolve(dict(overrides, num_stages=stages))
    res = compile_kernel(card.kernel, card.signature(cfg), card.constexprs(cfg), arch=arch,
                         num_warps=cfg["num_warps"], num_stages=stages, keep_ir=True)
    assert res.ok, res.message
    return P.analyze(res)


def loads(rep) -> dict[str, P.LoopLoad]:
    return {ld.name: ld for ld in rep.main.loads}


@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_decode_attention_kv_tiles_are_pipelined_stages_minus_one_deep(arch):
    for stages in (2, 3):
        rep = report(DA.CARD, arch, stages)
        assert rep.main.has_dot and rep.main.where.startswith("decode_attention.py:")
        ld = loads(rep)
        for name, tile in (("k_lat", "16x512xbf16"), ("k_rope", "16x64xbf16")):
            assert ld[name].kind == "cp.async" and ld[name].buffers == stages - 1 and ld[name].tile == tile
            assert "tl.load(kv_row" in ld[name].source
        # the page lookup sits in `if t0 % PAGE_SIZE == 0`: a plain scalar load in an scf.if region
        assert ld["page"].kind == "plain" and ld["page"].in_branch and ld["page"].tile == "i32"
        assert rep.ahead == stages - 2
        # 2 commit groups (k_lat, k_rope) per iteration; the wait leaves the next iteration's in flight
        assert (rep.main.groups_per_iteration, rep.main.wait_groups) == (2, 2 * (stages - 2))


@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_nopipe_kv_ring_stays_one_buffer(arch):
    reps = {s: report(NP.CARD, arch, s) for s in (2, 3, 4)}
    for s, rep in reps.items():
        ld = loads(rep)
        assert ld["k_lat"].buffers == ld["k_rope"].buffers == 1 and rep.ahead == 0
        assert rep.main.wait_groups == 0
    # the per-token page vector: dropped by the pipeliner at S=2, a one-deep ring from S=3,
    # staged once per consumer layout (k_lat and k_rope addresses): 2 rings x 16 x 4 B
    assert loads(reps[2])["page"].kind == "plain"
    page = loads(reps[3])["page"]
    assert (page.kind, page.buffers, page.rings, page.slot_bytes) == ("cp.async", 1, 2, 128)


def test_num_stages_premise_decided_by_pipelining():
    base, cand = DA.CARD.resolve(), DA.CARD.resolve({"num_stages": 3})
    deeper, why = P.prefetch_change(report(DA.CARD, "sm_120", 2), report(DA.CARD, "sm_120", 3))
    assert deeper and "k_lat [16x512xbf16] cp.async 1 buffer (0 ahead) -> cp.async 2 buffers (1 ahead)" in why
    deeper, why = P.prefetch_change(report(NP.CARD, "sm_120", 2), report(NP.CARD, "sm_120", 3))
    assert not deeper and "k_lat [16x512xbf16] stays cp.async 1 buffer (0 ahead)" in why
    assert "page [16xi32] plain tt.load -> cp.async 1 buffer" in why and "No load that matters" in why
    # shared memory grows by the page ring (37,376 -> 37,504 B), which alone would say "holds"
    flat = judge(facts(base, shared=37376), facts(cand, shared=37504))
    assert flat.mechanism == MECHANISM_HOLDS
    prem = judge(facts(base, shared=37376, pipeline=report(NP.CARD, "sm_120", 2)),
                 facts(cand, shared=37504, pipeline=report(NP.CARD, "sm_120", 3)))
    assert prem.mechanism == MECHANISM_FAILS and "refuted before any timing" in prem.why and "k_lat" in prem.why
    # what the pipeliner did instead is said beside it: the page vector became an async copy
    assert "load page plain -> cp.async x1" in prem.also_changed and "load page plain -> cp.async x1" in prem.major
    # the one-call form a planner uses before any GPU time: the compiled evidence decides
    from occmodel import evidence as E
    spec = load_spec("sm_120")
    for card, expected in ((NP.CARD, MECHANISM_FAILS), (DA.CARD, MECHANISM_HOLDS)):
        evs = E.compiled(card, spec, [card.resolve(base), card.resolve(cand)])
        assert E.judge(*evs).mechanism == expected


def test_loop_iterations_against_depth():
    cfg = DA.CARD.resolve({"num_stages": 3})
    rows = P.fill_rows(DA.CARD, cfg, report(DA.CARD, "sm_120", 3), [{"C": 1, "ctx": 8192}, {"C": 64, "ctx": 8192}])
    # C=1: 128 splits of 4 tiles (the card keeps >= 4 tiles per split) -> 4 iterations per CTA;
    # C=64: 8 splits x 1024 tokens -> 64 iterations
    assert [(r["ctas"], r["iterations"], r["ahead"]) for r in rows] == [(128, 4, 1), (512, 64, 1)]
    assert rows[1]["note"] == ""
    # a 16-token context is one tile: one iteration cannot fill a tile ahead
    short = P.fill_rows(DA.CARD, cfg, report(DA.CARD, "sm_120", 3), [{"C": 1, "ctx": 16}])[0]
    assert short["iterations"] == 1 and short["note"].startswith("too few")


def test_compile_pipeline_cli_refutes_nopipe(_cache):
    env = dict(os.environ, OCCMODEL_CACHE_DIR=_cache, TRITON_DEFAULT_FP_FUSION="1")
    out = subprocess.run([sys.executable, "-m", "occmodel", "compile", "--kernel", "decode_attention_nopipe",
                          "--stages", "3", "--pipeline", "--spec", "sm_90", "--format", "json"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    prem = next(s for s in d["sections"] if s["title"].startswith("Premise"))["rows"][0]
    assert prem["mechanism"] == "fails" and "stays cp.async 1 buffer" in prem["why"]
    pipe = next(s for s in d["sections"] if s["title"].startswith("Pipelining"))["rows"]
    assert {(r["config"][:4], r["load"], r["buffers"]) for r in pipe if r["load"] == "k_lat"} == {
        ("base", "k_lat", 1), ("cand", "k_lat", 1)}
    fill = next(s for s in d["sections"] if s["title"].startswith("Loop iterations"))["rows"]
    assert len(fill) == 2 * len(NP.CARD.default_points)


@triton.jit
def tma_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A GEMM whose K loop loads through tensor descriptors (TMA on sm_90)."""
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(B, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    pm = tl.program_id(0) * BM
    pn = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([pm, k * BK])
        b = b_desc.load([k * BK, pn])
        acc = tl.dot(a, b, acc)
    tl.store(C + (pm + tl.arange(0, BM))[:, None] * N + (pn + tl.arange(0, BN))[None, :], acc.to(tl.float16))


def test_tma_ring_on_sm90():
    res = compile_kernel(tma_kernel, "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16",
                         {"BM": 128, "BN": 128, "BK": 64}, arch="sm_90", num_warps=4, num_stages=3, keep_ir=True)
    assert res.ok, res.message
    ld = loads(P.analyze(res))
    # the mbarrier ring (3x1xi64) is not a load; A and B are 3-deep TMA rings of 16 KB slots
    assert set(ld) == {"a", "b"}
    assert (ld["a"].kind, ld["a"].buffers, ld["a"].tile, ld["a"].slot_bytes) == ("TMA", 3, "128x64xf16", 16384)


EXCERPT = """
module attributes {"ttg.num-warps" = 4 : i32} {
  tt.func public @k(%X: !tt.ptr<bf16> loc("X"(#loc))) attributes {noinline = false} {
    %buf = ttg.local_alloc : () -> !ttg.memdesc<2x16x64xbf16, #shared, #smem, mutable> loc(#loc3)
    %x:3 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %cst, %t = %tok) -> (tensor<16x64xf32, #mma>, !ttg.async.token)  : i32 {
      %w = ttg.async_wait %t {num = 2 : i32} loc(#loc3)
      %s = ttg.memdesc_index %buf[%i] : !ttg.memdesc<2x16x64xbf16, #shared, #smem, mutable> -> !ttg.memdesc<16x64xbf16, #shared, #smem, mutable> loc(#loc3)
      %y = tt.load %p : tensor<16x!tt.ptr<i32>, #blocked> loc(#loc4)
      %r = "tt.reduce"(%y) <{axis = 0 : i32}> ({
      ^bb0(%u: i32, %v: i32):
        tt.reduce.return %u : i32
      }) : (tensor<16xi32, #blocked>) -> i32 loc(#loc4)
      %d = tt.dot %q, %l, %a : tensor<16x64xbf16> * tensor<64x64xbf16> -> tensor<16x64xf32, #mma> loc(#loc5)
      %c = ttg.async_copy_global_to_local %ptrs, %s mask %m other %z : tensor<16x64x!tt.ptr<bf16>, #blocked> -> <16x64xbf16, #shared, #smem, mutable> loc(#loc3)
      %g = ttg.async_commit_group tokens %c loc(#loc3)
      scf.yield %d, %g : tensor<16x64xf32, #mma>, !ttg.async.token loc(#loc6)
    } loc(#loc7)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc("/src/k.py":3:0)
#loc1 = loc("/src/k.py":10:12)
#loc2 = loc("/src/k.py":11:8)
#loc8 = loc("/src/k.py":9:4)
#loc3 = loc("tile"(#loc1))
#loc4 = loc("ids"(#loc2))
#loc5 = loc("/src/k.py":12:14)
#loc6 = loc("/src/k.py":12:8)
#loc7 = loc("/src/k.py":9:4)
"""


def test_parser_on_an_excerpt():
    rep = P.parse_ttgir(EXCERPT, "k", "sm_120", 3)
    (loop,) = rep.loops
    assert (loop.where, loop.has_dot, loop.wait_groups, loop.groups_per_iteration) == ("k.py:9", True, 2, 1)
    ld = loads(rep)
    assert (ld["tile"].kind, ld["tile"].buffers, ld["tile"].tile, ld["tile"].where) == (
        "cp.async", 2, "16x64xbf16", "k.py:10")
    assert (ld["ids"].kind, ld["ids"].tile, ld["ids"].slot_bytes) == ("plain", "16xi32", 64)
    assert P.parse_ttgir("module {\n}\n").main is None


# ------------------------------------------------------------ dot operand reads
DOTS = """\
#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [1, 4], instrShape = [16, 8]}>
#mma1 = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [8, 1], instrShape = [16, 128, 16]}>
module {
  tt.func public @k() {
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (tensor<16x16xf32, #mma>) : i32 {
      %s = tt.dot %a, %b, %acc : tensor<16x512xbf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>> * tensor<512x16xbf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>> -> tensor<16x16xf32, #mma>
      %w = ttng.warp_group_dot %x, %y, %c {inputPrecision = 0 : i32, isAsync = true} : !ttg.memdesc<128x64xf16, #shared, #smem, mutable> * !ttg.memdesc<64x256xf16, #shared, #smem, mutable> -> tensor<128x256xf32, #mma1>
      scf.yield %s : tensor<16x16xf32, #mma>
    }
    tt.return
  }
}
"""


def test_dot_operand_reads_from_the_warp_layout():
    (mma, wgmma) = P.parse_ttgir(DOTS).main.dots
    # mma.sync [16,16] += [16,512] x [512,16] over warps [1, 4]: each of the 4 warps loads all 16 A rows
    # (4 x 16 x 512 x 2 = 65,536 B); B's 16 columns are 2 n8 tiles for 4 warps, so 32 columns are
    # loaded (1 x 32 x 512 x 2 = 32,768 B)
    assert (mma.m, mma.n, mma.k, mma.version, mma.warps) == (16, 16, 512, 2, (1, 4))
    assert mma.shared_read_bytes == 65_536 + 32_768
    # wgmma m64 x n128 x k16 instructions on [128,256] += [128,64] x [64,256]: A read 256/128 = 2 times
    # (2 x 128 x 64 x 2 = 32,768 B), B read 128/64 = 2 times (2 x 64 x 256 x 2 = 65,536 B)
    assert (wgmma.version, wgmma.instr_n, wgmma.a_in_registers) == (3, 128, False)
    assert wgmma.shared_read_bytes == 32_768 + 65_536
    assert wgmma.flops == 2 * 128 * 256 * 64


def test_decode_operand_reads_grow_with_warps():
    # sm_90, BLOCK_T = BLOCK_H = 16: both dots get warps [1, W]; per iteration
    # W=4: q (16 x 576) read by 4 warps = 73,728; K^T 16 columns as 32 = 36,864; P (16x16) x 4 = 2,048;
    #      V (16 x 512) once = 16,384 -> 129,024 B.  W=2: 36,864 + 18,432 + 1,024 + 16,384 = 72,704
    reads = {w: report(DA.CARD, "sm_90", 2, num_warps=w).main.shared_read_bytes for w in (2, 4, 8)}
    assert reads[2] == 72_704 and reads[4] == 129_024 and reads[8] > reads[4]


def test_fewer_warps_premise_decided_by_operand_reads():
    from occmodel.premise import MECHANISM_UNCHECKED
    base, fewer, more = ({"num_warps": w, "num_stages": 2} for w in (4, 2, 8))
    reps = {w: report(DA.CARD, "sm_90", 2, num_warps=w) for w in (2, 4, 8)}
    b = facts(base, warps=16, pipeline=reps[4])
    holds = judge(b, facts(fewer, warps=8, pipeline=reps[2]))
    # 129,024 / 18,432 loaded bytes = 7.0 B per loaded byte; 72,704 / 18,432 = 3.9
    assert holds.mechanism == MECHANISM_HOLDS and "129,024 -> 72,704" in holds.why and "7.0 -> 3.9" in holds.why
    assert "16 -> 8" in holds.note                    # the occupancy drop is said, not hidden
    assert judge(facts(base, warps=16), facts(fewer, warps=8)).mechanism == MECHANISM_UNCHECKED   # no TTGIR
    # more warps: the occupancy premise, with the extra operand reads as a side note
    up = judge(b, facts(more, warps=16, pipeline=reps[8]))
    assert up.mechanism == MECHANISM_FAILS and "129,024 ->" in up.note


def test_row_length_and_whether_the_k_loop_walks_it():
    """examples/w8a8_gemm.py compiled for sm_90, 64 x 64 x 64 tiles: a's tile rows are BLOCK_K = 64
    int8 bytes of one row of A, and the K loop advances a's pointer by that constant, so the next
    iteration reads on along the same rows (walks_rows); so is b's with an [N, K] weight (K contiguous:
    the launcher specializes stride 1). With a [K, N] weight b's rows run along N (BLOCK_N bytes) and
    the loop steps by BLOCK_K x stride_bk, a runtime stride: other rows, not walked."""
    from occmodel import evidence as E
    from occmodel.source import load_source

    path = str(Path(__file__).resolve().parents[1] / "examples" / "w8a8_gemm.py")
    cfg = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}
    got = {}
    for layout in ("nk", "kn"):
        pt = {"M": 256, "N": 512, "K": 1024, "dtype": "bf16", "bias": False, "b_layout": layout}
        kernel = load_source(f"{path}:_kernel", launcher=path).at_point(pt)
        ev = E.gather(kernel, load_spec("sm_90"), [kernel.resolve(cfg)], compile=True, progress=False)[0]
        got[layout] = {ld.name: (ld.run_bytes, ld.walks_rows) for ld in ev.pipeline.main.loads}
    assert got["nk"] == {"a": (64, True), "b": (64, True)}
    assert got["kn"] == {"a": (64, True), "b": (64, False)}


@triton.jit
def _two_branch_loops(X, Y, N, FLAG, BK: tl.constexpr):
    offs = tl.arange(0, BK)
    acc = tl.zeros([BK], tl.float32)
    p = X + offs
    if FLAG > 0:
        for k in range(0, N, BK):              # steps 999 elements: not along its 64-element rows
            acc += tl.load(p)
            p += 999
    else:
        for k in range(0, N, BK):              # steps BK: walks its rows
            acc += tl.load(p)
            p += BK
    tl.store(Y + offs, acc)


def test_the_step_is_read_from_the_loop_around_the_load():
    """Two loops in the branches of an if reuse SSA names; each load's step is read in its own loop
    (the first walks nothing, the second walks BK = 16 fp32 elements: 64-byte rows)."""
    res = compile_kernel(_two_branch_loops, "*fp32:16,*fp32:16,i32,i32", {"BK": 16}, arch="sm_90",
                         num_warps=1, num_stages=1, keep_ir=True)
    assert res.ok, res.message
    walks = sorted((lp.loads[0].walks_rows, lp.loads[0].run_bytes) for lp in P.analyze(res).loops if lp.loads)
    assert walks == [(False, 64), (True, 64)]


@triton.jit
def _scaled_chunk(S, B, rows, cols, n):
    """A helper's two loads: a [4, 32] fp32 tile of S and a 32-element fp16 row of B."""
    s = tl.load(S + rows[:, None] * n + cols[None, :])
    b = tl.load(B + cols).to(tl.float32)
    return s * b[None, :]


@triton.jit
def _helper_loads(S, B, Y, N, BN: tl.constexpr):
    rows = tl.arange(0, 4)
    acc = tl.zeros([4], tl.float32)
    for n0 in range(0, N, BN):
        acc += tl.sum(_scaled_chunk(S, B, rows, n0 + tl.arange(0, BN), N), axis=1)
    tl.store(Y + rows, acc)


def test_loads_inlined_from_one_helper_call_stay_apart():
    """Every operation of an inlined @triton.jit helper carries the helper's call site as its location
    (a callsite loc): the helper's two loads are still two loads of the loop -- found on round 30's
    selective_state_update, whose state, B and C loads in `_update` read as one (C's 2 bytes a thread)."""
    res = compile_kernel(_helper_loads, "*fp32:16,*fp16:16,*fp32:16,i32", {"BN": 32}, arch="sm_90",
                         num_warps=4, num_stages=1, keep_ir=True)
    assert res.ok, res.message
    got = sorted((ld.root, ld.tile, ld.thread_bytes) for ld in P.analyze(res).main.loads)
    # 128 threads: the [4, 32] fp32 tile is one element a thread; the 32 fp16 of B one, replicated
    assert got == [("B", "32xf16", 2.0), ("S", "4x32xf32", 4.0)]
