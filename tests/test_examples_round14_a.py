"""examples/mla_decode.py (absorbed-MLA paged decode, split along the sequence, plus its merge
kernel) against its fp32 torch reference on the CPU through Triton's interpreter, its launcher
hooks against the shapes, its study sweep against the points, and a compile for sm_90 and
sm_120 from its own ``example_args``.

As in test_examples_round13_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python
tests/test_examples_round14_a.py mla_decode``) that prints one JSON line; the tests assert per
case. A second subprocess (``... prefilled``) runs cases into an ``out=`` buffer filled with
NaN and with the split workspace (o_part, lse) NaN-filled too, so a head no CTA writes, or a
split the merge reads that stage 1 never wrote (an empty trailing split), is a mismatch rather
than whatever torch.empty held.

Shapes are small, odd and ragged: ragged lengths from 1 token up (sequences of one token,
lengths that end inside a page and inside a BLOCK_N step, lengths that are exact multiples of
the split and the page table's full width), H not a multiple of BLOCK_H and smaller than it
(zero query rows, masked stores), BLOCK_N below, equal to and above the page size (a step
inside one page, exactly one, spanning 2-4 pages), NUM_SPLITS 1 (stage 1 writes out directly,
no merge) and 2-16 (the workspace and the merge; many empty trailing splits when sequences
are short), DeepSeek's real 512 + 64 dims and narrower latent / rope dims (the kernel takes
them as constexprs from the shapes), q and the cache as strided views of wider buffers, both
dtypes.

Tolerance (x max|ref|, absolute, per element): the reference is fp32 on the same bf16 / fp16
q and cache values, so the kernel's scores are exact up to fp32 summation order; it differs
by p rounded to the cache dtype for the value dot (2^-9 relative per weight in bf16 on the
GPU, 2^-8 with the interpreter's truncating cast; the weights' errors are independent, so
they average out over the tokens), the fp32 split partials and their exp2 merge (~1e-6), and
the one rounding of the output (one bf16 ulp: 2^-8 relative with the interpreter's truncation,
half on the GPU). max|ref| is O(1) (an average of N(0, 1) rows), so bf16 1.5e-2 covers ~2
truncations of the largest element with margin, and the bf16 torch_baseline (bf16 scores: up
to ~0.03 absolute at |s| ~ 8, a 2 % error of a softmax weight, then a bf16 softmax and a bf16
value matmul) stays inside it (measured: <= 0.9e-2 at 512 + 64); fp16 3e-3 (an fp16 ulp is 2^-11
relative; the baseline's fp16 scores err ~4e-3 absolute, measured <= 1.4e-3;
the kernel itself measured <= 0.7e-2 in bf16, <= 0.5e-3 in fp16).
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
KERNEL = "mla_decode"
TOL = {"bf16": 1.5e-2, "fp16": 3e-3}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bh, bn, s, w, st):
    return {"BLOCK_H": bh, "BLOCK_N": bn, "NUM_SPLITS": s, "num_warps": w, "num_stages": st}


def _pt(B, Hq, lo, hi, page, latent, rope, dtype, **extra):
    return {"B": B, "H": Hq, "min_len": lo, "max_len": hi, "PAGE": page, "LATENT": latent, "ROPE": rope,
            "dtype": dtype, **extra}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # steps of 32 over 16-token pages (each spans two), 20 heads = a full and a padded group
        "ragged_splits_bf16": (_pt(5, 20, 1, 150, 16, 64, 16, "bf16"), _cfg(16, 32, 3, 4, 2)),
        # NUM_SPLITS 1: stage 1 writes out itself; 16-token steps inside 64-token pages
        "one_split_direct_fp16": (_pt(4, 16, 10, 200, 64, 128, 32, "fp16"), _cfg(16, 16, 1, 8, 3)),
        # DeepSeek's 512 + 64, a step of exactly one page, 24 heads in 32-row tiles
        "deepseek_dims_bf16": (_pt(2, 24, 40, 130, 64, 512, 64, "bf16"), _cfg(32, 64, 2, 8, 2)),
        "deepseek_dims_one_split_fp16": (_pt(2, 16, 50, 200, 64, 512, 64, "fp16"), _cfg(16, 64, 1, 4, 2)),
        # 5 heads in a 64-row tile (59 zero rows), many splits of short sequences
        "heads_fewer_than_block_fp16": (_pt(3, 5, 1, 70, 32, 64, 16, "fp16"), _cfg(64, 16, 4, 8, 1)),
        "many_empty_splits_bf16": (_pt(6, 16, 1, 40, 16, 64, 32, "bf16", len_seed=3), _cfg(16, 16, 8, 4, 2)),
        # every sequence one token: only split 0 works, its single step masks BLOCK_N - 1 tokens
        "length_one_fp16": (_pt(3, 17, 1, 1, 16, 64, 16, "fp16"), _cfg(16, 32, 5, 4, 3)),
        # lengths = the table's full width, exact pages, exact splits, exact steps: no masked step
        "exact_multiples_bf16": (_pt(2, 32, 128, 128, 32, 128, 64, "bf16"), _cfg(32, 32, 4, 8, 2)),
        # q [B, H, 80] inside [B, H + 1, 96]; the cache inside [pages, 16 + 2, 80 + 24]; 64-token
        # steps over 4 pages
        "strided_views_bf16": (_pt(3, 12, 20, 100, 16, 64, 16, "bf16"), _cfg(16, 64, 2, 4, 2)),
        # 128 heads in two 64-row groups, one long sequence cut in 16
        "one_long_seq_16_splits_fp16": (_pt(1, 128, 500, 700, 64, 64, 16, "fp16"), _cfg(64, 32, 16, 8, 2)),
    },
}

# prefilled: cases run into a NaN-filled out= buffer with a NaN-filled split workspace
PREFILLED = ("ragged_splits_bf16", "one_split_direct_fp16", "many_empty_splits_bf16", "length_one_fp16",
             "heads_fewer_than_block_fp16")

# configs compiled for each arch at the module's first POINT (sm_90: BASELINE first; sm_120: those
# within its 99 KiB of shared memory)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(64, 16, 4, 8, 2), _cfg(16, 32, 1, 8, 3), _cfg(32, 16, 16, 16, 2), _cfg(32, 32, 4, 8, 2)],
}
SM120_CFGS = [_cfg(16, 32, 1, 8, 3), _cfg(16, 16, 4, 4, 2), _cfg(32, 16, 16, 8, 2)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: q and the cache as views of wider buffers."""
    import torch

    if name == "strided_views_bf16":
        q = inputs["q"]
        B, Hq, D = q.shape
        wide = torch.zeros((B, Hq + 1, D + 16), dtype=q.dtype)
        wide[:, :Hq, :D] = q
        inputs["q"] = wide[:, :Hq, :D]
        kv = inputs["kv_cache"]
        P, page, _ = kv.shape
        big = torch.zeros((P, page + 2, D + 24), dtype=kv.dtype)
        big[:, :page, :D] = kv
        inputs["kv_cache"] = big[:, :page, :D]
        assert inputs["q"].stride() == ((Hq + 1) * (D + 16), D + 16, 1)
        assert inputs["kv_cache"].stride() == ((page + 2) * (D + 24), D + 24, 1)


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["B"], point["H"], point["LATENT"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", PREFILLED)
def test_every_head_written_and_no_empty_split_read(name):
    """Into a NaN-filled out= buffer, with a NaN-filled workspace: every element written (no NaN
    left), right, and into the caller's buffer."""
    res = _results("prefilled")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled")


def test_cases_cover_every_code_path():
    """Each tunable takes at least two values; NUM_SPLITS 1 and > 1, empty trailing splits,
    padded heads, steps inside / equal to / across pages, masked and unmasked last steps,
    one-token sequences, both dtypes and the real 512 + 64 dims are hit."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {c["NUM_SPLITS"] == 1 for _, c in cases} == {True, False}
    assert any(p["H"] % c["BLOCK_H"] for p, c in cases) and any(p["H"] < c["BLOCK_H"] for p, c in cases)
    assert any(p["H"] % c["BLOCK_H"] == 0 and p["H"] > c["BLOCK_H"] for p, c in cases)
    for rel in (lambda bn, pg: bn < pg, lambda bn, pg: bn == pg, lambda bn, pg: bn > pg):
        assert any(rel(c["BLOCK_N"], p["PAGE"]) for p, c in cases)
    assert any(p["LATENT"] == 512 and p["ROPE"] == 64 for p, _ in cases)
    empty = ragged_tail = exact = one = False
    for p, c in cases:
        for n in mod.seq_lengths(p).tolist():
            tiles = mod.split_tiles(n, c)
            empty |= 0 in tiles
            ragged_tail |= n % c["BLOCK_N"] != 0
            exact |= n % (mod._split_len(n, c["NUM_SPLITS"], c["BLOCK_N"])) == 0 and c["NUM_SPLITS"] > 1
            one |= n == 1
    assert empty and ragged_tail and exact and one


def test_split_arithmetic():
    """split_tiles mirrors the kernel: splits of cdiv(cdiv(n, S), BLOCK_N) * BLOCK_N tokens; their
    steps add up to cdiv(n, BLOCK_N); the non-empty ones come first and number cdiv(n, split_len)
    (what the merge walks); each covers its tokens exactly once."""
    mod = load_example(KERNEL)
    for n in (1, 15, 16, 17, 63, 64, 100, 1000, 4097, 49152):
        for s in (1, 2, 3, 4, 16, 32):
            for bn in (16, 32, 64):
                cfg = {"BLOCK_N": bn, "NUM_SPLITS": s}
                tiles = mod.split_tiles(n, cfg)
                sl = mod._split_len(n, s, bn)
                assert sl % bn == 0 and sl * s >= n and len(tiles) == s
                assert sum(tiles) == -(-n // bn)
                live = [t for t in tiles if t]
                assert tiles[:len(live)] == live and len(live) == -(-n // sl)
                covered = []
                for i in range(s):                        # the kernel's start / end, in Python ints
                    start, end = i * sl, min(i * sl + sl, n)
                    covered += list(range(start, end)) if start < end else []
                    assert tiles[i] == (-(-(end - start) // bn) if start < end else 0)
                assert covered == list(range(n))


def _working_ctas(mod, cfg, point) -> int:
    return sum(1 for it in mod.cta_iterations(cfg, point) if it)


def _smem_bound(cfg, point) -> int:
    """Shared memory of a config, from what the sm_90 compiles showed (an upper bound of every
    one): the loop's q tile, two KV stages, the bf16 P tile and the page-index buffers, or the
    epilogue's fp32 [BLOCK_H, LATENT] layout conversion when that is larger."""
    d = point["LATENT"] + point["ROPE"]
    loop = 2 * cfg["BLOCK_H"] * d + 2 * 2 * cfg["BLOCK_N"] * d + 2 * cfg["BLOCK_H"] * cfg["BLOCK_N"] + 8 * cfg["BLOCK_N"]
    return max(loop, 4 * cfg["BLOCK_H"] * point["LATENT"])


def test_sweep_fits_the_points():
    """The study sweep: 72 configs over the TUNABLES with BASELINE among them; at every POINT
    each config is valid and its buffers (q, two KV stages, P) fit an H200's 227 KiB per block.
    CTAs: every config has >= 16 working CTAs (the 8 long sequences x 2 head groups at BLOCK_H
    64 without splitting, kept on purpose: the no-split lever), and at every point and every
    BLOCK_H some split count gives >= 132 working CTAs (one per SM). (Every config was compiled
    for sm_90 with triton 3.6.0 at every point, the same resources at each: all 216 compile, in
    ~1-7 s each; 64-246 registers, 36.5-144 KiB of shared memory: BLOCK_H 16 / 32 (mma.sync)
    keep one KV buffer, 36.5-55 / 55-74 KiB, 64-162 / 99-208 registers; BLOCK_H 64 (wgmma, q in
    shared memory) two, 108-144 KiB, 128-246 registers. 65 of the 72 do not spill; 7 (BLOCK_H x
    BLOCK_N x NUM_SPLITS x warps x stages: 16x16x1x16x2, 32x16x1x8x2, 32x32x1x16x2, 64x32x1x16x2,
    64x32x{1,4,16}x16x3) keep 1-2 words in local memory, stored before the token loop and loaded
    after it (n_spills 2; no local access inside the loop).)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-14")[KERNEL][2]     # scripts/rank_study.py SWEEPS
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in SWEEP_AXES.values()) >= len(SWEEP_AXES) - 1
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for bh in SWEEP_AXES["BLOCK_H"]:
            assert max(_working_ctas(mod, c, p) for c in cfgs if c["BLOCK_H"] == bh) >= H200_SMS, (p, bh)
        for c in cfgs:
            mod._check_cfg(c)
            assert _working_ctas(mod, c, p) >= 16, (p, c)
            assert _smem_bound(c, p) <= H200_SMEM_PER_BLOCK, (p, c)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes and types of a launch (meta tensors,
    lengths the point's own on the CPU), bytes_moved counts the cache rows, q, out, the page
    entries and lengths once each, grid / cta_iterations / loop_iterations are the split tiling,
    secondary_kernels the merge exactly when NUM_SPLITS > 1; inputs < 4 GB."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "secondary_kernels", "mla_decode"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and len({p["H"] for p in mod.POINTS}) == 2
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            lens = mod.seq_lengths(p)
            assert args["LENGTHS"].device.type == "cpu" and torch.equal(args["LENGTHS"], lens.to(torch.int32))
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for k, v in args.items()
                       if k != "LENGTHS")
            B, Hq, L, R, page = p["B"], p["H"], p["LATENT"], p["ROPE"], p["PAGE"]
            assert (L, R, page) == (512, 64, 64) and p["dtype"] == "bf16"
            pages = sum(-(-n // page) for n in lens.tolist())
            assert args["Q"].shape == (B, Hq, L + R) and args["KV"].shape == (pages, page, L + R)
            assert args["PAGE_TABLE"].shape == (B, -(-p["max_len"] // page)) and args["O"].shape == (B, Hq, L)
            assert args["Q"].dtype == args["KV"].dtype == args["O"].dtype == torch.bfloat16
            assert (args["LATENT"], args["ROPE"], args["PAGE_SIZE"], args["H"]) == (L, R, page, Hq)
            S = cfg["NUM_SPLITS"]
            if S > 1:
                assert args["O_PART"].shape == (B, Hq, S, L) and args["LSE"].shape == (B, Hq, S)
            assert (args["stride_qb"], args["stride_qh"], args["stride_kvp"], args["stride_kvt"]) == \
                ((L + R) * Hq, L + R, page * (L + R), L + R)
            tokens = int(lens.sum())
            assert mod.bytes_moved(p) == 2 * (tokens * (L + R) + B * Hq * (2 * L + R)) + 4 * pages + 4 * B
            assert 0.25e9 < mod.bytes_moved(p) < 4e9 and H.meta_nbytes(args) < 4 * 2**30
            assert mod.flops(p) == 2 * Hq * tokens * (2 * L + R)
            g = mod.grid(cfg, p)
            assert g == (triton.cdiv(Hq, cfg["BLOCK_H"]), S, B)
            its = mod.cta_iterations(cfg, p)
            assert len(its) == g[0] * g[1] * g[2]
            assert sum(its) == g[0] * sum(-(-n // cfg["BLOCK_N"]) for n in lens.tolist())
            assert mod.loop_iterations(cfg, p) == -(-sum(its) // len(its))
            sec = mod.secondary_kernels(cfg, p)
            if S == 1:
                assert sec == []
            else:
                (m,) = sec
                live = sum(sum(1 for t in mod.split_tiles(n, cfg) if t) for n in lens.tolist())
                assert m["grid"] == B * Hq and m["iterations"] == -(-live // B) and 1 <= m["iterations"] <= S
                assert m["tile_bytes"] == 4 * L + 4 and m["dram_bytes"] == 0


def test_hooks_on_small_points_and_inputs():
    """make_inputs' tensors (every page once, -1 past a sequence's pages, the batch's lengths the
    point's, not the seed's), cta_iterations' order (head group fastest), the reference's scale."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(5, 20, 1, 150, 16, 64, 16, "bf16")
    c = _cfg(16, 32, 3, 4, 2)
    inputs = mod.make_inputs(p, seed=1, device="cpu")
    lens = mod.seq_lengths(p)
    assert inputs["lengths"].dtype == torch.int32 and torch.equal(inputs["lengths"].long(), lens)
    assert int(lens.min()) >= 1 and int(lens.max()) <= 150 and len(set(lens.tolist())) > 2
    q, kv, table = inputs["q"], inputs["kv_cache"], inputs["page_table"]
    pages = [-(-n // 16) for n in lens.tolist()]
    assert q.shape == (5, 20, 80) and q.dtype == torch.bfloat16 and kv.shape == (sum(pages), 16, 80)
    assert table.shape == (5, 10) and table.dtype == torch.int32
    used = torch.cat([table[b, :n] for b, n in enumerate(pages)])
    assert sorted(used.tolist()) == list(range(sum(pages)))
    assert all(bool((table[b, n:] == -1).all()) for b, n in enumerate(pages))
    assert float(q.float().std()) > 0.5 and float(kv.float().std()) > 0.5
    expect = [t for n in lens.tolist() for t in mod.split_tiles(n, c) for _ in range(2)]
    assert mod.cta_iterations(c, p) == expect and mod.grid(c, p) == (2, 3, 5)
    ref = mod.reference(inputs)
    assert ref.shape == (5, 20, 64) and ref.dtype == torch.float32 and 0.05 < float(ref.abs().max()) < 5
    base = mod.torch_baseline(inputs)
    assert base.shape == (5, 20, 64) and base.dtype == torch.bfloat16
    # the batch is the point's (len_seed), the values the input seed's
    other = mod.make_inputs(p, seed=2, device="cpu")
    assert torch.equal(other["lengths"], inputs["lengths"]) and not torch.equal(other["q"], q)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["kv_cache"], kv)
    assert not torch.equal(mod.seq_lengths(dict(p, len_seed=1)), lens)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(2, 16, 5, 40, 16, 64, 16, "fp16"), device="cpu")
    q, kv, table, lens = inputs["q"], inputs["kv_cache"], inputs["page_table"], inputs["lengths"]
    with pytest.raises(ValueError, match="BLOCK_H=8"):
        mod.mla_decode(q, kv, table, lens, 64, BLOCK_H=8)
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.mla_decode(q, kv, table, lens, 64, BLOCK_N=48)
    with pytest.raises(ValueError, match="NUM_SPLITS=0"):
        mod.mla_decode(q, kv, table, lens, 64, NUM_SPLITS=0)
    with pytest.raises(ValueError, match="bf16 / fp16"):
        mod.mla_decode(q, kv.bfloat16(), table, lens, 64)
    with pytest.raises(ValueError, match="bf16 / fp16"):
        mod.mla_decode(q.float(), kv.float(), table, lens, 64)
    with pytest.raises(ValueError, match="latent \\+ rope"):
        mod.mla_decode(q[:, :, :72], kv, table, lens, 64)
    with pytest.raises(ValueError, match="LATENT=56"):
        mod.mla_decode(q, kv, table, lens, 56)
    with pytest.raises(ValueError, match="ROPE=48"):
        mod.mla_decode(q, kv, table, lens, 32)
    with pytest.raises(ValueError, match="page_table must be int32"):
        mod.mla_decode(q, kv, table.long(), lens, 64)
    with pytest.raises(ValueError, match="lengths must be int32"):
        mod.mla_decode(q, kv, table, lens[:1], 64)
    with pytest.raises(ValueError, match="out must be"):
        mod.mla_decode(q, kv, table, lens, 64, out=torch.empty(2, 16, 80, dtype=torch.float16))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(2, 16, 5, 40, 16, 64, 16, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="PAGE=24"):
        mod.make_inputs(_pt(2, 16, 5, 40, 24, 64, 16, "bf16"), device="cpu")
    with pytest.raises(ValueError, match="min_len <= max_len"):
        mod.seq_lengths(_pt(2, 16, 50, 40, 16, 64, 16, "bf16"))


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles_sm90(shared_cache, kernel):
    """On sm_90: BASELINE and three more (BLOCK_H 16 / 32 / 64, both epilogues, 8 and 16 warps)
    compile without spills inside 227 KiB; BLOCK_H 64 runs a bf16 wgmma, 16 an mma.sync. (This
    machine's triton 3.9 needs more registers than 3.6, the H200's compiler, at BLOCK_H 64: 3.9
    spills 12-84 words at BLOCK_N 32 or 16 warps, where 3.6 does not; BASELINE spills in neither.)"""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], "sm_90"):
        assert res.status == "ok", f"{kernel} {cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and 0 < res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0
    for cfg, op in ((mod.BASELINE, "wgmma.mma_async"), (_cfg(16, 32, 1, 8, 3), "mma.sync")):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[0]), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], keep_ir=True)
        assert res.status == "ok", res.message
        assert op in res.ptx and ".bf16" in res.ptx, cfg


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) the BLOCK_H 16 / 32 configs compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_and_merge_compile(shared_cache, arch):
    """The second point (16 heads, a page table of 28 columns: not 16-aligned) and the third at a
    config fitting both archs, and the merge kernel at each point's workspace strides."""
    import torch

    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = _cfg(16, 32, 4, 8, 2)
    for p in mod.POINTS:
        if p is not mod.POINTS[0]:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                                 num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
        a = mod.example_args(cfg, p)
        o_part, lse, out = a["O_PART"], a["LSE"], a["O"]
        margs = dict(O_PART=o_part, LSE=lse, LENGTHS=a["LENGTHS"], O=out, stride_pb=o_part.stride(0),
                     stride_ph=o_part.stride(1), stride_ps=o_part.stride(2), stride_lb=lse.stride(0),
                     stride_lh=lse.stride(1), stride_ob=out.stride(0), stride_oh=out.stride(1),
                     LATENT=p["LATENT"], NUM_SPLITS=cfg["NUM_SPLITS"], BLOCK_N=cfg["BLOCK_N"])
        res = compile_kernel(mod._merge_kernel, args=margs, arch=arch, num_warps=mod.MERGE_WARPS, num_stages=1)
        assert res.status == "ok" and res.n_spills == 0, f"merge at {p} on {arch}: {res.status}: {res.message}"
        if arch == "sm_90":       # 16 blocks an H200 SM (2048 threads, 64k registers), as secondary_kernels says
            assert res.n_regs * 32 * mod.MERGE_WARPS * 16 <= 65536
        assert isinstance(out, torch.Tensor)


# ----------------------------------------------------------------- the subprocess side
def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into a NaN-filled out= buffer, the split
    workspace NaN-filled too; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(H.TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    plain = mod._workspace

    def nan_workspace(*a):
        return tuple(t.fill_(float("nan")) for t in plain(*a))

    mod._workspace = nan_workspace
    results = {}
    for name in PREFILLED:
        point, cfg = CASES[KERNEL][name]
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            q = inputs["q"]
            out = torch.full((point["B"], point["H"], point["LATENT"]), float("nan"), dtype=q.dtype)
            got = mod.mla_decode(q, inputs["kv_cache"], inputs["page_table"], inputs["lengths"], inputs["latent"],
                                 inputs["sm_scale"], out=out, **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == out.data_ptr()
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled":
        _run_prefilled()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
