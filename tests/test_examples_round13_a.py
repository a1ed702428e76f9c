"""examples/fused_moe_gemm.py against its fp32 torch reference on the CPU through Triton's
interpreter, its alignment (moe_align_block_size) and launcher hooks against the shapes, its
study sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round12_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round13_a.py fused_moe_gemm``) that prints one JSON line; the
tests assert per case. A second subprocess (``... prefilled_out``) runs cases into an ``out=``
buffer filled with NaN first, so a (token, slot) row that no CTA writes is a mismatch rather
than whatever torch.empty held.

Shapes are small, odd and ragged: T, N and K not multiples of the blocks and smaller than them
(the padded row blocks, the wrapped weight columns, the masked store, the masked K tail),
exact K tiles (EVEN_K), both projections (gate_up: A [T, K] gathered by token, each row read
by its topk slots; down: A [T * topk, K], one row per slot), the routing weights multiplied in
or not, experts with no tokens, one hot expert owning several row blocks, a last GROUP_M group
of fewer row blocks (one of them working), topk = 1, topk = E, one token, A and W as strided views of wider buffers,
a BLOCK_M launch() has no precomputed alignment for, and blocks past num_post_padded (every
case: the grid covers the upper bound of the padded rows).

Tolerance (x max|ref|, absolute, per element): the reference multiplies the same bf16 / fp16
values in fp32, so the kernel differs only by its fp32 summation order (K <= 1000: ~1e-6
relative) and the one rounding of the output to bf16 / fp16 (the routing weight is applied
in fp32 before it). bf16 1.5e-2: the interpreter's fp32 -> bf16 cast truncates (up to one bf16
ulp, 2^-7 relative; the GPU rounds to nearest, half that) and torch_baseline rounds twice
when it scales (the matmul's output, then the scaled value); fp16 2e-3 (an fp16 ulp is 2^-10
relative, twice that for the baseline's two roundings).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "fused_moe_gemm"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024


def _cfg(bm, bn, bk, g, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g, "num_warps": w, "num_stages": s}


def _pt(T, E, topk, N, K, dtype, proj="gate_up", mul=False, **extra):
    return {"T": T, "E": E, "topk": topk, "N": N, "K": K, "dtype": dtype, "proj": proj, "mul_routed_weight": mul,
            **extra}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_gate_up_bf16": (_pt(37, 5, 2, 50, 100, "bf16"), _cfg(16, 32, 32, 2, 4, 2)),
        "ragged_gate_up_weighted_fp16": (_pt(29, 7, 3, 70, 90, "fp16", mul=True), _cfg(32, 32, 64, 1, 4, 3)),
        "down_weighted_exact_k_bf16": (_pt(23, 6, 3, 40, 64, "bf16", "down", True), _cfg(16, 16, 32, 4, 2, 2)),
        "down_exact_tiles_fp16": (_pt(16, 4, 2, 64, 128, "fp16", "down"), _cfg(16, 32, 64, 8, 4, 4)),
        "idle_experts_bf16": (_pt(5, 16, 2, 48, 80, "bf16", mul=True), _cfg(16, 64, 16, 4, 8, 1)),
        "blocks_wider_than_problem_fp16": (_pt(3, 4, 2, 9, 40, "fp16", "down", True), _cfg(64, 64, 64, 8, 8, 1)),
        "single_token_topk1_bf16": (_pt(1, 3, 1, 100, 256, "bf16", mul=True), _cfg(16, 64, 128, 8, 4, 3)),
        "hot_expert_short_group_fp16": (_pt(40, 4, 2, 24, 48, "fp16", skew=3.0), _cfg(16, 16, 16, 5, 2, 2)),
        "strided_views_bf16": (_pt(19, 5, 2, 35, 72, "bf16", mul=True), _cfg(16, 32, 32, 2, 4, 2)),
        "strided_down_fp16": (_pt(11, 4, 3, 33, 96, "fp16", "down"), _cfg(32, 16, 32, 2, 4, 3)),
        "long_ragged_k_fp16": (_pt(12, 3, 2, 24, 1000, "fp16", mul=True), _cfg(32, 16, 128, 1, 8, 3)),
        "topk_equals_e_down_bf16": (_pt(9, 4, 4, 30, 48, "bf16", "down", True), _cfg(32, 64, 16, 2, 4, 4)),
    },
}

# prefilled_out: cases run into a NaN-filled out= buffer (every (token, slot) row must be written)
PREFILLED = ("ragged_gate_up_bf16", "hot_expert_short_group_fp16", "blocks_wider_than_problem_fp16",
             "idle_experts_bf16", "down_weighted_exact_k_bf16")

# configs compiled for each arch at the module's first POINT (BASELINE first; all fit sm_120's 99 KiB too)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(64, 128, 64, 16, 4, 4), _cfg(128, 128, 64, 16, 8, 3), _cfg(16, 64, 64, 1, 4, 5),
             _cfg(128, 64, 64, 1, 4, 3)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: A and W as views of wider buffers; no precomputed alignment."""
    import torch

    if name in ("strided_views_bf16", "strided_down_fp16"):
        a = inputs["a"]
        wide = torch.zeros((a.shape[0], a.shape[1] + 16), dtype=a.dtype)
        wide[:, :a.shape[1]] = a
        inputs["a"] = wide[:, :a.shape[1]]
        w = inputs["w"]                                  # [E, N, K] inside [E, N + 3, K + 24]
        E, N, K = w.shape
        big = torch.zeros((E, N + 3, K + 24), dtype=w.dtype)
        big[:, :N, :K] = w
        inputs["w"] = big[:, :N, :K]
        assert inputs["a"].stride() == (K + 16, 1) and inputs["w"].stride() == ((N + 3) * (K + 24), K + 24, 1)
    if name == "ragged_gate_up_weighted_fp16":
        inputs["aligned"] = {}                           # launch() aligns for its BLOCK_M itself


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["T"] * point["topk"], point["N"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", PREFILLED)
def test_every_row_written(name):
    """Into a NaN-filled out= buffer: every element written (no NaN left) and right."""
    res = _results("prefilled_out")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled out")


def _live_blocks(point, bm: int, seed: int = 0) -> int:
    """Row blocks before num_post_padded at the point's routing (the alignment, rebuilt)."""
    mod = load_example(KERNEL)
    _, ids = mod._routing(point, seed)
    return int(mod.align_block_size(ids, point["E"], bm)[2])  // bm


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; padded row blocks, masked K tails
    and exact tiles, short groups, idle experts, both projections and weightings are hit."""
    import torch
    import triton

    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL].values()
    assert any(p["N"] % c["BLOCK_N"] for p, c in cases) and any(p["N"] < c["BLOCK_N"] for p, c in cases)
    assert any(p["K"] % c["BLOCK_K"] for p, c in cases) and any(p["K"] < c["BLOCK_K"] for p, c in cases)
    for proj in mod.PROJS:
        assert any(p["proj"] == proj and p["K"] % c["BLOCK_K"] for p, c in cases)
        assert any(p["proj"] == proj and p["K"] % c["BLOCK_K"] == 0 for p, c in cases)
        assert any(p["proj"] == proj and p["mul_routed_weight"] for p, c in cases)
        assert any(p["proj"] == proj and not p["mul_routed_weight"] for p, c in cases)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert any(p["topk"] == 1 for p, _ in cases) and any(p["topk"] == p["E"] for p, _ in cases)
    short_group = idle = hot = past_end = False
    for name, (p, c) in CASES[KERNEL].items():
        seed = len(name)                                 # run_cases' seed: the case's routing
        _, ids = mod._routing(p, seed)
        counts = torch.bincount(ids.reshape(-1).long(), minlength=p["E"])
        idle |= bool((counts == 0).any())
        hot |= bool((counts > c["BLOCK_M"]).any())
        tiles_m = mod._padded_len(p["T"] * p["topk"], p["E"], c["BLOCK_M"]) // c["BLOCK_M"]
        # a last group of fewer than GROUP_M row blocks, after a full one, holding a working block
        live = _live_blocks(p, c["BLOCK_M"], seed)
        short_group |= 1 < c["GROUP_M"] < tiles_m and tiles_m // c["GROUP_M"] * c["GROUP_M"] < live
        past_end |= live < tiles_m
        assert triton.cdiv(p["T"] * p["topk"], c["BLOCK_M"]) <= tiles_m
    assert short_group and idle and hot and past_end


def test_alignment_matches_its_definition():
    """align_block_size on random routings: every (token, slot) id once, grouped by expert in
    ascending order, each group padded with the sentinel to a BLOCK_M multiple; expert_ids name
    each block's expert; num_post_padded is the padded total; -1 past it."""
    import torch

    mod = load_example(KERNEL)
    gen = torch.Generator().manual_seed(7)
    for T, E, topk, bm in ((37, 5, 2, 16), (3, 16, 2, 16), (50, 8, 8, 32), (1, 1, 1, 64), (200, 64, 6, 128)):
        ids = torch.stack([torch.randperm(E, generator=gen)[:topk] for _ in range(T)]).to(torch.int32)
        sorted_ids, expert_ids, num_post = mod.align_block_size(ids, E, bm)
        n = T * topk
        assert sorted_ids.dtype == expert_ids.dtype == num_post.dtype == torch.int32
        em = sorted_ids.numel()
        assert em % bm == 0 and em >= n + E * (bm - 1) and em - bm < n + E * (bm - 1)
        assert expert_ids.numel() == em // bm and num_post.shape == (1,)
        counts = torch.bincount(ids.reshape(-1).long(), minlength=E)
        padded = (counts + bm - 1) // bm * bm
        assert int(num_post) == int(padded.sum())
        live = sorted_ids[:int(num_post)]
        assert sorted(live[live < n].tolist()) == list(range(n))
        assert bool((sorted_ids[int(num_post):] == n).all())
        flat = ids.reshape(-1).long()
        pos = 0
        for e in range(E):
            grp = sorted_ids[pos:pos + int(padded[e])]
            real = grp[:int(counts[e])]
            assert real.tolist() == torch.nonzero(flat == e).reshape(-1).tolist()      # ascending
            assert bool((grp[int(counts[e]):] == n).all())
            assert expert_ids[pos // bm:(pos + int(padded[e])) // bm].tolist() == [e] * (int(padded[e]) // bm)
            pos += int(padded[e])
        assert bool((expert_ids[int(num_post) // bm:] == -1).all())


def test_sweep_fits_the_points():
    """The study sweep: 72 configs over the TUNABLES (BLOCK_K held at 64) with BASELINE among
    them; at every POINT each config is valid, runs the unmasked K loop (EVEN_K), gives the 132
    SMs at least one working CTA each (blocks past num_post_padded not counted), and its
    pipeline buffers (num_stages x the bf16 / fp16 A and W tiles) fit an H200's 227 KiB of
    shared memory per block. (Every config was compiled for sm_90 with triton 3.6.0 at every
    point: all 216 compile in <= 1.5 s each, none spills, 36-214 registers, 20-160 KiB of
    shared memory; BLOCK_M 16 (mma.sync) keeps num_stages - 1 buffers, 20-72 KiB, BLOCK_M 64 /
    128 (wgmma) num_stages of them, 48-160 KiB.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-13")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in SWEEP_AXES.values()) == len(SWEEP_AXES) - 1     # all but BLOCK_K swept
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.example_args(c, p)["EVEN_K"], (p, c)
            tiles_n = -(-p["N"] // c["BLOCK_N"])
            assert _live_blocks(p, c["BLOCK_M"]) * tiles_n >= H200_SMS, (p, c)
            assert c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * 2 <= H200_SMEM_PER_BLOCK


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args (the routing's index tensors: the
    seed-0 routing's values, on the CPU) have the shapes and types of a launch, bytes_moved counts A, the hit experts' weights, out and the routing once each, and
    grid / loop_iterations / cta_iterations are the tiling of those shapes."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "fused_moe_gemm", "align_block_size"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["proj"] for p in mod.POINTS} == set(mod.PROJS)
    assert {p["mul_routed_weight"] for p in mod.POINTS} == {True, False}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            index = ("SORTED_IDS", "EXPERT_IDS", "NUM_POST_PADDED")   # the routing's data, on the CPU (rank reads it)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for k, v in args.items()
                       if k not in index)
            aligned = mod.align_block_size(mod._routing(p, 0)[1], p["E"], cfg["BLOCK_M"])
            assert all(args[k].device.type == "cpu" and torch.equal(args[k], v) for k, v in zip(index, aligned))
            T, E, topk, N, K = p["T"], p["E"], p["topk"], p["N"], p["K"]
            rows = T if p["proj"] == "gate_up" else T * topk
            assert args["A"].shape == (rows, K) and args["W"].shape == (E, N, K) and args["OUT"].shape == (T * topk, N)
            assert args["A"].dtype == args["W"].dtype == args["OUT"].dtype
            assert args["W"].element_size() * N * K > 2**20                # MB-sized experts
            assert args["TOPK_WEIGHTS"].shape == (T * topk,) and args["TOPK_WEIGHTS"].dtype == torch.float32
            em = args["SORTED_IDS"].numel()
            assert em % cfg["BLOCK_M"] == 0 and args["EM"] == em and args["EXPERT_IDS"].numel() == em // cfg["BLOCK_M"]
            assert args["SORTED_IDS"].dtype == args["EXPERT_IDS"].dtype == args["NUM_POST_PADDED"].dtype == torch.int32
            assert args["TOP_K"] == (topk if p["proj"] == "gate_up" else 1)
            assert args["MUL_ROUTED_WEIGHT"] == p["mul_routed_weight"] and args["num_valid"] == T * topk
            assert (args["N"], args["K"], args["stride_am"], args["stride_we"], args["stride_wn"], args["stride_om"]) \
                == (N, K, K, N * K, K, N)
            hit = mod.experts_hit(p)
            assert (E if T * topk >= 8 * E else E // 2) <= hit <= E
            el = args["A"].element_size()
            expect = (el * (rows * K + hit * N * K + T * topk * N) + 4 * T * topk
                      + (4 * T * topk if p["mul_routed_weight"] else 0))
            assert mod.bytes_moved(p) == expect > 300 * 2**20, p         # the weights alone exceed the L2
            g = mod.grid(cfg, p)
            assert g == (em // cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
            assert mod.loop_iterations(cfg, p) == triton.cdiv(K, cfg["BLOCK_K"])
            it = mod.cta_iterations(cfg, p)
            live = _live_blocks(p, cfg["BLOCK_M"])
            assert len(it) == g and set(it) <= {0, mod.loop_iterations(cfg, p)}
            assert sum(x > 0 for x in it) == live * triton.cdiv(N, cfg["BLOCK_N"])
            assert mod.flops(p) == 2 * T * topk * N * K >= 10**9
            assert mod.bytes_moved(p) < 4 * 2**30


def test_hooks_on_small_points_and_inputs():
    """The hooks on a small point: grid, cta_iterations in the kernel's GROUP_M order (checked
    against a scalar walk of the program ids), make_inputs' tensors and alignments, the
    reference's scale."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 5, 2, 50, 100, "bf16", mul=True)
    c = _cfg(16, 32, 32, 3, 4, 2)
    tiles_m = mod._padded_len(74, 5, 16) // 16
    assert tiles_m == -(-(74 + 5 * 15) // 16) and mod.grid(c, p) == tiles_m * 2 and mod.loop_iterations(c, p) == 4
    live = _live_blocks(p, 16)
    expect = []
    for pid in range(tiles_m * 2):                      # the kernel's program-id arithmetic, in Python ints
        per_group = 3 * 2
        first = (pid // per_group) * 3
        tm = first + (pid % per_group) % min(tiles_m - first, 3)
        expect.append(4 if tm < live else 0)
    assert mod.cta_iterations(c, p) == expect and 0 in expect
    args = mod.example_args(c, p)
    assert not args["EVEN_K"] and args["OUT"].dtype == torch.bfloat16 and args["MUL_ROUTED_WEIGHT"]
    assert mod.example_args(_cfg(16, 32, 32, 2, 4, 2), _pt(4, 2, 2, 16, 96, "fp16"))["EVEN_K"]
    for proj, rows in (("gate_up", 37), ("down", 74)):
        inputs = mod.make_inputs(dict(p, proj=proj), device="cpu")
        a, w = inputs["a"], inputs["w"]
        assert a.dtype == w.dtype == torch.bfloat16 and a.shape == (rows, 100) and w.shape == (5, 50, 100)
        assert inputs["topk_ids"].dtype == torch.int32 and inputs["topk_ids"].shape == (37, 2)
        assert torch.allclose(inputs["topk_weights"].sum(1), torch.ones(37))
        assert all(len(set(r)) == 2 for r in inputs["topk_ids"].tolist())      # topk distinct experts
        assert set(inputs["aligned"]) == set(mod.ALIGNED_BLOCK_M)
        for bm, (sorted_ids, expert_ids, num_post) in inputs["aligned"].items():
            assert sorted_ids.numel() == mod._padded_len(74, 5, bm) and int(num_post) % bm == 0
        ref = mod.reference(inputs)
        assert ref.shape == (74, 50) and ref.dtype == torch.float32 and 0.1 < float(ref.std()) < 3
        base = mod.torch_baseline(inputs)
        assert base.shape == (74, 50) and base.dtype == torch.bfloat16
    # the routing is the seed's, drawn on the CPU: the same for the same seed, another for another
    a0, a1 = mod.make_inputs(p, seed=3, device="cpu"), mod.make_inputs(p, seed=3, device="cpu")
    assert torch.equal(a0["topk_ids"], a1["topk_ids"]) and torch.equal(a0["a"], a1["a"])
    assert not torch.equal(a0["topk_ids"], mod.make_inputs(p, seed=4, device="cpu")["topk_ids"])
    # skew makes a hot expert
    hot = mod.make_inputs(_pt(200, 8, 2, 16, 16, "fp16", skew=3.0), device="cpu")["topk_ids"]
    assert int(torch.bincount(hot.reshape(-1).long()).max()) > 2 * 400 // 8


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(8, 4, 2, 16, 64, "fp16"), device="cpu")
    a, w, tw, ti = inputs["a"], inputs["w"], inputs["topk_weights"], inputs["topk_ids"]
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.fused_moe_gemm(a, w, tw, ti, BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_M=8"):
        mod.fused_moe_gemm(a, w, tw, ti, BLOCK_M=8)
    with pytest.raises(ValueError, match="GROUP_M=0"):
        mod.fused_moe_gemm(a, w, tw, ti, GROUP_M=0)
    with pytest.raises(ValueError, match="bfloat16 or torch.float16"):
        mod.fused_moe_gemm(a.float(), w.float(), tw, ti)
    with pytest.raises(ValueError, match="bfloat16 or torch.float16"):
        mod.fused_moe_gemm(a, w.bfloat16(), tw, ti)
    with pytest.raises(ValueError, match=r"w \[E, N, K\]"):
        mod.fused_moe_gemm(a, w[:, :, :32], tw, ti)
    with pytest.raises(ValueError, match=r"\[T, topk\]"):
        mod.fused_moe_gemm(a, w, tw[:, :1], ti)
    with pytest.raises(ValueError, match="fp32"):
        mod.fused_moe_gemm(a, w, tw.half(), ti)
    with pytest.raises(ValueError, match="T \\* topk=16"):
        mod.fused_moe_gemm(a[:5], w, tw, ti)
    with pytest.raises(ValueError, match="K contiguous"):
        mod.fused_moe_gemm(a.T.contiguous().T, w, tw, ti)
    with pytest.raises(ValueError, match="K contiguous"):
        mod.fused_moe_gemm(a, w.transpose(1, 2).contiguous().transpose(1, 2), tw, ti)
    with pytest.raises(ValueError, match="another BLOCK_M than 32"):
        mod.fused_moe_gemm(a, w, tw, ti, aligned=inputs["aligned"][16], BLOCK_M=32)
    with pytest.raises(ValueError, match=r"out must be torch.float16 \[16, 16\]"):
        mod.fused_moe_gemm(a, w, tw, ti, out=torch.empty(16, 15, dtype=torch.float16))
    with pytest.raises(ValueError, match="expert id >= E=4"):
        mod.align_block_size(torch.tensor([[0, 4]], dtype=torch.int32), 4, 16)
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(4, 2, 1, 8, 32, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="proj"):
        mod.make_inputs(_pt(4, 2, 1, 8, 32, "fp16", "up"), device="cpu")
    with pytest.raises(ValueError, match="topk <= E"):
        mod.bytes_moved(_pt(4, 2, 3, 8, 32, "fp16"))


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles(shared_cache, kernel, arch):
    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], arch):
        assert res.status == "ok", f"{kernel} {cfg} on {arch}: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared >= 0 and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second point (down, fp16, routing weights, TOP_K 1) and the third (decode) at BASELINE."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_dot_runs_on_tensor_cores(shared_cache):
    """On sm_90 a BLOCK_M 64 tile's dot is a bf16 wgmma; a BLOCK_M 16 one (decode) an mma.sync."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    for cfg, op in ((mod.BASELINE, "wgmma.mma_async"), (_cfg(16, 64, 64, 1, 4, 3), "mma.sync")):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[0]), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], keep_ir=True)
        assert res.status == "ok", res.message
        assert op in res.ptx and ".bf16" in res.ptx, cfg


# ----------------------------------------------------------------- the subprocess side
def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into a NaN-filled out= buffer; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(H.TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    results = {}
    for name in PREFILLED:
        point, cfg = CASES[KERNEL][name]
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            a = inputs["a"]
            out = torch.full((point["T"] * point["topk"], point["N"]), float("nan"), dtype=a.dtype)
            got = mod.fused_moe_gemm(a, inputs["w"], inputs["topk_weights"], inputs["topk_ids"],
                                     mul_routed_weight=inputs["mul_routed_weight"], out=out, **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == out.data_ptr()
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled_out":
        _run_prefilled()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
