"""examples/block_sparse_attn.py (block-sparse causal attention prefill over selected 64-token
key blocks, NSA / MInference style) against its fp32 torch reference on the CPU through
Triton's interpreter, its stream arithmetic, selection and launcher hooks against the shapes,
its study sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round14_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python
tests/test_examples_round15_b.py block_sparse_attn``) that prints one JSON line; the tests
assert per case (the kernel through ``launch``, and torch_baseline). A second subprocess
(``... prefilled``) runs cases into a NaN-filled ``out=`` buffer, so a row no CTA writes (a
ragged last tile, a head the grid order misses) is a mismatch rather than whatever
torch.empty held.

Shapes are small, odd and ragged: S not a multiple of 64 nor of BLOCK_M (a partial last query
block: its Q rows, stores and diagonal keys masked), S < 64 (one query block, BLOCK_N 128 >
S), S an exact multiple; TOPK 2 (the sink and the diagonal only), TOPK above the query-block
count (every past block selected: dense causal), sparse long rows (random picks over the past);
the first TOPK - 1 query blocks of a head selecting fewer blocks (ragged counts); BLOCK_M 16 /
32 / 64 (1-4 CTAs per query block, diagonal keys past a tile's last row skipped), BLOCK_N 16 /
32 / 64 (steps inside one selected block, a scalar index) and 128 (two blocks a step, a
per-row gather, a step straddling the diagonal when the count is even); HEADS_FASTEST 0 / 1;
GQA groups 1, 2, 3, 4; head dims 16-128; q, k, v and out as transposed views of [B, S, H, D]
buffers; the off-diagonal entries in a shuffled order (only the diagonal-last order is
required); both dtypes.

Tolerance (x max|ref|, absolute, per element): the reference is fp32 on the same bf16 / fp16
q, k, v, and makes no use of the diagonal-last order (it masks the gathered keys itself), so
the kernel's scores are exact up to fp32 summation order; it differs by P rounded to the input
dtype for the value dot (2^-9 relative per weight in bf16 on the GPU, 2^-8 with the
interpreter's truncating cast; the weights' errors are independent and average out over the
keys) and the one rounding of the output (one bf16 ulp, 2^-8 relative with the interpreter's
truncation, half on the GPU). max|ref| is O(1) (2-4: early rows average a few N(0, 1) value
rows), so bf16 1.5e-2 covers ~2 truncations of the largest element with margin (measured:
kernel <= 0.75e-2, torch_baseline -- bf16 SDPA over the gathered blocks -- <= 0.3e-2); fp16
3e-3 (an fp16 ulp is 2^-11 relative; measured <= 0.4e-3 for both). Each case runs in 0.3-3.5 s
under the interpreter.
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
KERNEL = "block_sparse_attn"
ROLE = "held-out-15"
TOL = {"bf16": 1.5e-2, "fp16": 3e-3}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bm, bn, hf, w, st):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "HEADS_FASTEST": hf, "num_warps": w, "num_stages": st}


def _pt(B, Hq, Hkv, S, D, topk, dtype):
    return {"B": B, "H": Hq, "H_kv": Hkv, "S": S, "D": D, "TOPK": topk, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # GQA 2, S = 5 x 64 + 13: a partial last query block; the FA-like 64 x 64 tile
        "gqa_ragged_bf16": (_pt(2, 4, 2, 333, 32, 4, "bf16"), _cfg(64, 64, 0, 4, 3)),
        # 4 tiles a query block, two selected blocks a step (counts 1-5: odd and even), grid (H, tiles, B)
        "bm16_bn128_heads_fastest_fp16": (_pt(1, 3, 1, 450, 64, 5, "fp16"), _cfg(16, 128, 1, 4, 2)),
        # 16-token steps: four inside each selected block; MHA; no pipelining
        "bn16_mha_fp16": (_pt(1, 2, 2, 200, 16, 3, "fp16"), _cfg(32, 16, 0, 4, 1)),
        # S < 64: one query block (count 1), 128-token steps over a 40-token stream, GQA 2
        "one_short_block_bf16": (_pt(3, 2, 1, 40, 64, 4, "bf16"), _cfg(64, 128, 1, 8, 2)),
        # TOPK 2: the sink and the diagonal only
        "topk2_sink_and_diag_fp16": (_pt(1, 4, 4, 260, 32, 2, "fp16"), _cfg(32, 32, 1, 8, 3)),
        # TOPK 8 > 5 query blocks: every past block selected (dense causal); S exact; D 128
        "dense_exact_d128_bf16": (_pt(1, 2, 1, 320, 128, 8, "bf16"), _cfg(64, 32, 0, 8, 1)),
        # q, k, v, out as [B, H, S, D] views of [B, S, H, D] buffers (token stride H * D)
        "strided_bshd_views_bf16": (_pt(2, 4, 2, 190, 64, 4, "bf16"), _cfg(32, 64, 1, 4, 2)),
        # off-diagonal entries shuffled (the diagonal kept last), 128-token steps, GQA 3
        "shuffled_selection_fp16": (_pt(1, 3, 1, 500, 32, 6, "fp16"), _cfg(64, 128, 0, 4, 3)),
        # 16-row tiles over a long sparse past (2 random picks of up to 14 blocks)
        "long_sparse_bf16": (_pt(1, 2, 1, 1000, 32, 4, "bf16"), _cfg(16, 64, 0, 4, 2)),
        # GQA 4, 32-token steps, 32-row tiles, partial last block of 1 token
        "gqa4_one_token_tail_fp16": (_pt(2, 4, 1, 257, 64, 3, "fp16"), _cfg(32, 32, 0, 8, 2)),
    },
}

# prefilled: cases run into a NaN-filled out= buffer
PREFILLED = ("gqa_ragged_bf16", "bm16_bn128_heads_fastest_fp16", "one_short_block_bf16",
             "gqa4_one_token_tail_fp16")

# configs compiled for each arch at the module's first POINT (sm_90: BASELINE first; sm_120: those
# within its 99 KiB of shared memory)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(64, 64, 0, 4, 3), _cfg(32, 128, 1, 8, 2), _cfg(64, 32, 1, 8, 1), _cfg(32, 64, 0, 4, 3)],
}
SM120_CFGS = [_cfg(32, 64, 0, 4, 2), _cfg(64, 32, 1, 4, 3), _cfg(64, 64, 0, 4, 2)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: strided views; a shuffled selection order."""
    import torch

    if name == "strided_bshd_views_bf16":
        for key in ("q", "k", "v"):
            t = inputs[key]
            inputs[key] = t.transpose(1, 2).contiguous().transpose(1, 2)       # [B, S, H, D] storage
            B, Hh, S, D = t.shape
            assert inputs[key].stride() == (S * Hh * D, D, Hh * D, 1) and torch.equal(inputs[key], t)
        B, Hq, S, D = inputs["q"].shape
        inputs["out"] = torch.full((B, S, Hq, D), float("nan"), dtype=inputs["q"].dtype).transpose(1, 2)
    if name == "shuffled_selection_fp16":
        idx, cnt = inputs["block_idx"].clone(), inputs["block_count"]
        gen = torch.Generator().manual_seed(7)
        for b, h, i in itertools.product(*(range(n) for n in cnt.shape)):
            c = int(cnt[b, h, i])
            idx[b, h, i, :c - 1] = idx[b, h, i, :c - 1][torch.randperm(c - 1, generator=gen)]
        assert not torch.equal(idx, inputs["block_idx"])
        inputs["block_idx"] = idx


def _launch(mod, inputs, cfg):
    if "out" not in inputs:
        return mod.launch(inputs, cfg)
    return mod.block_sparse_attn(inputs["q"], inputs["k"], inputs["v"], inputs["block_idx"], inputs["block_count"],
                                 inputs["sm_scale"], out=inputs["out"], **cfg)


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


def _study():
    return H.study_sweeps([KERNEL], ROLE)[KERNEL]      # (configs, points, axes) of scripts/rank_study.py SWEEPS


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    p = CASES[kernel][name][0]
    assert res["shape"] == [p["B"], p["H"], p["S"], p["D"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", PREFILLED)
def test_every_row_written(name):
    """Into a NaN-filled out= buffer: every element written (no NaN left), right, into the caller's buffer."""
    res = _results("prefilled")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled")


def test_cases_cover_every_code_path():
    """Each tunable takes >= 2 values (BLOCK_N every value: 16-64 scalar-index steps, 128 the
    gather); partial and full last query blocks, S < 64, TOPK 2 and TOPK above the block count,
    counts that leave a 128-token step straddling the diagonal, GQA and MHA, both dtypes."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {c["BLOCK_M"] for _, c in cases} == {16, 32, 64} and {c["BLOCK_N"] for _, c in cases} == {16, 32, 64, 128}
    assert {c["HEADS_FASTEST"] for _, c in cases} == {0, 1} and {c["num_stages"] for _, c in cases} == {1, 2, 3}
    assert any(p["S"] % 64 for p, _ in cases) and any(p["S"] % 64 == 0 for p, _ in cases)
    assert any(p["S"] < 64 for p, _ in cases) and any(p["S"] % c["BLOCK_M"] for p, c in cases)
    assert any(p["TOPK"] == 2 for p, _ in cases) and any(p["TOPK"] > -(-p["S"] // 64) for p, _ in cases)
    assert any(p["TOPK"] + 2 < -(-p["S"] // 64) for p, _ in cases)
    assert {p["H"] // p["H_kv"] for p, _ in cases} >= {1, 2, 3, 4}
    straddle = any(c["BLOCK_N"] == 128 and ((n - 1) * 64) % 128 for p, c in cases
                   for n in mod.block_counts(p["S"], p["TOPK"]))
    assert straddle


def _emulate_tile(count: int, m0: int, bm: int, bn: int):
    """The kernel's two loops for a row tile, in Python: (unmasked steps, masked steps) as token ranges."""
    t_diag = (count - 1) * 64
    full_hi = t_diag // bn * bn
    t_end = t_diag + m0 % 64 + bm
    return ([range(t, t + bn) for t in range(0, full_hi, bn)],
            [range(t, min(t + bn, t_end)) for t in range(full_hi, t_end, bn)])


def test_stream_arithmetic():
    """tile_steps mirrors the kernel's loops: the steps cover the stream tokens 0 .. t_end once
    each, the unmasked ones only off-diagonal tokens, every key a tile's rows need (all
    off-diagonal ones, the diagonal up to its last row) is covered, and no step starts past it."""
    mod = load_example(KERNEL)
    for S in (1, 40, 64, 65, 200, 333, 1000):
        for topk in (2, 3, 5, 16):
            counts = mod.block_counts(S, topk)
            assert counts == [min(topk, i + 1) for i in range(-(-S // 64))]
            for bm, bn in itertools.product((16, 32, 64), (16, 32, 64, 128)):
                steps = mod.tile_steps({"BLOCK_M": bm, "BLOCK_N": bn}, S, topk)
                assert len(steps) == -(-S // bm)
                for mt, n_steps in enumerate(steps):
                    m0 = mt * bm
                    count = counts[m0 // 64]
                    plain, masked = _emulate_tile(count, m0, bm, bn)
                    assert n_steps == len(plain) + len(masked) and 1 <= len(masked) <= (64 + bn - 1) // bn + 1
                    toks = [t for r in plain + masked for t in r]
                    t_end = (count - 1) * 64 + m0 % 64 + bm
                    assert toks == list(range(t_end))
                    assert all(t < (count - 1) * 64 for r in plain for t in r)
                    rows_last = min(m0 + bm, S) - 1 - (m0 // 64) * 64         # the last row's diagonal key
                    assert (count - 1) * 64 + rows_last < t_end


def test_selection_and_hooks_on_small_points():
    """select_blocks: per row the sink, distinct ascending picks among 1 .. i - 1, the diagonal
    last, -1 past the count; the input seed draws it, example_args gives seed 0's with data;
    flops / bytes_moved / cta_iterations against brute force."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 4, 2, 700, 32, 5, "bf16")
    inputs = mod.make_inputs(p, seed=0, device="cpu")
    idx, cnt = inputs["block_idx"], inputs["block_count"]
    nqb = 11
    assert idx.shape == (2, 4, nqb, 5) and idx.dtype == cnt.dtype == torch.int32 and cnt.shape == (2, 4, nqb)
    for b, h, i in itertools.product(range(2), range(4), range(nqb)):
        c = int(cnt[b, h, i])
        row = idx[b, h, i].tolist()
        assert c == min(5, i + 1) and row[c:] == [-1] * (5 - c) and row[c - 1] == i
        if i:
            assert row[0] == 0 and row[:c] == sorted(set(row[:c])) and all(1 <= j < i for j in row[1:c - 1])
    assert len({tuple(idx[0, h, 10].tolist()) for h in range(4)}) > 1          # random per head
    other = mod.make_inputs(p, seed=1, device="cpu")
    assert not torch.equal(other["block_idx"], idx) and not torch.equal(other["q"], inputs["q"])
    assert torch.equal(mod.make_inputs(p, seed=0, device="cpu")["block_idx"], idx)
    args = mod.example_args(_cfg(32, 64, 0, 4, 2), p)
    assert args["BLOCK_IDX"].device.type == "cpu" and torch.equal(args["BLOCK_IDX"], idx)
    assert torch.equal(args["BLOCK_COUNT"], cnt)
    # flops: kept (query, key) pairs of the reference's mask
    q_lo_pairs = 0
    for i in range(nqb):
        keep = mod._selection_mask(idx[0, 0, i:i + 1].long().clamp(min=0), cnt[0, 0, i:i + 1].long(), i, 700)
        q_lo_pairs += int(keep[0, :max(0, min(64, 700 - 64 * i))].sum())
    assert mod.flops(p) == 4 * 32 * 2 * 4 * q_lo_pairs
    # bytes_moved: the K/V blocks some head of the group selects (the last block 700 - 640 = 60 tokens)
    tokens = 0
    for b, g in itertools.product(range(2), range(2)):
        blocks = set(idx[b, 2 * g:2 * g + 2].flatten().tolist()) - {-1}
        tokens += sum(min(64, 700 - 64 * j) for j in blocks)
    assert mod._kv_tokens_selected(p) == tokens
    assert mod.bytes_moved(p) == 2 * (2 * 2 * 4 * 700 * 32 + 2 * tokens * 32) + 4 * 2 * 4 * nqb * 6
    # cta_iterations: launch order, program_id(0) fastest
    for hf in (0, 1):
        c = _cfg(16, 128, hf, 4, 2)
        its = mod.cta_iterations(c, p)
        g = mod.grid(c, p)
        steps = mod.tile_steps(c, 700, 5)
        assert g == ((4, 44, 2) if hf else (44, 4, 2)) and len(its) == 44 * 4 * 2
        for z, y, x in itertools.product(range(g[2]), range(g[1]), range(g[0])):
            tile = y if hf else x
            assert its[(z * g[1] + y) * g[0] + x] == steps[tile]
        assert mod.loop_iterations(c, p) == -(-sum(steps) // len(steps))


def _smem_bound(cfg, point) -> int:
    """Shared memory of a config, from what the sm_90 compiles showed (an upper bound of every
    one): num_stages (1 at least) K + V tiles of [BLOCK_N, D], the q tile, 1 KiB for the rest."""
    e = 2
    return max(1, cfg["num_stages"]) * 2 * cfg["BLOCK_N"] * point["D"] * e + cfg["BLOCK_M"] * point["D"] * e + 1024


def test_sweep_fits_the_points():
    """The study sweep: 72 configs (BLOCK_M 32 / 64 x BLOCK_N 32 / 64 / 128 x HEADS_FASTEST 0 / 1
    x 4 / 8 warps x 1-3 stages), BASELINE among them; at every POINT each config is valid, gives
    >= 4 x 132 CTAs (>= 8k: the grid is never short), and its buffers fit 227 KiB a block.
    (Every config was compiled for sm_90 with triton 3.6.0 at every point, ~2-5 s each; points 1
    and 2 share one specialization. D 128 (points 1, 2): 99-255 registers, 18-208.5 KiB of
    shared memory (num_stages K/V buffers at BLOCK_N <= 64; BLOCK_N 128's gathered steps keep 1-2);
    BLOCK_M 64 runs wgmma, 32 mma.sync; 1-4 blocks an SM. 69 of the 72 do not spill; 3 (BLOCK_M
    64 x BLOCK_N 128 on 4 warps: HEADS_FASTEST 0 at 3 stages, 1 at 2 and 3 stages) keep 2-4 words
    in local memory (n_spills). D 64 fp16 (point 3): 64-255 registers, 10-104.5 KiB, no spills.)"""
    cfgs, points, axes = _study()
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES) and all(len(v) >= 2 for v in axes.values())
    assert len(cfgs) == len(list(itertools.product(*axes.values()))) and 40 <= len(cfgs) <= 72
    assert mod.BASELINE in cfgs and points == mod.POINTS
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            g = mod.grid(c, p)
            assert g[0] * g[1] * g[2] >= 4 * H200_SMS and max(g[1], 1) <= 65535, (p, c)
            assert _smem_bound(c, p) <= H200_SMEM_PER_BLOCK, (p, c)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes and types of a launch (q, k, v, out
    meta tensors; the selection with data on the CPU), bytes_moved counts q, out, the selected
    K/V blocks (all of them at these points) and the index once each, flops the kept pairs,
    grid / cta_iterations / loop_iterations the row tiling; inputs < 4 GB; 20 us - 3 ms of work
    at the H200's bandwidth and dense bf16 rate."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "block_sparse_attn"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and len({(p["D"], p["TOPK"], p["dtype"]) for p in mod.POINTS}) == 3
    for p in mod.POINTS:
        B, Hq, Hkv, S, D, topk = (p[n] for n in ("B", "H", "H_kv", "S", "D", "TOPK"))
        nqb = -(-S // 64)
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[p["dtype"]]
        for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
            args = mod.example_args(cfg, p)
            assert all(args[n].device.type == "meta" and args[n].dtype == dt for n in "QKVO")
            assert args["Q"].shape == args["O"].shape == (B, Hq, S, D)
            assert args["K"].shape == args["V"].shape == (B, Hkv, S, D)
            assert args["BLOCK_IDX"].shape == (B, Hq, nqb, topk) and args["BLOCK_COUNT"].shape == (B, Hq, nqb)
            assert args["BLOCK_IDX"].device.type == "cpu" and args["BLOCK_IDX"].dtype == torch.int32
            assert (args["GROUP"], args["HEAD_DIM"], args["KV_BLOCK"]) == (Hq // Hkv, D, 64)
            assert (args["seq_len"], args["num_heads"], args["num_qblocks"], args["topk"]) == (S, Hq, nqb, topk)
            assert (args["stride_qs"], args["stride_kh"]) == (D, S * D)
            assert H.meta_nbytes(args) < 4 * 2**30
            g = mod.grid(cfg, p)
            tiles = -(-S // cfg["BLOCK_M"])
            assert g == ((Hq, tiles, B) if cfg["HEADS_FASTEST"] else (tiles, Hq, B))
            its = mod.cta_iterations(cfg, p)
            assert len(its) == g[0] * g[1] * g[2] and min(its) >= 1
            steps = mod.tile_steps(cfg, S, topk)
            assert sum(its) == B * Hq * sum(steps) and mod.loop_iterations(cfg, p) == -(-sum(steps) // len(steps))
            # a typical (full-count) tile: (TOPK - 1) * 64 off-diagonal tokens, then its diagonal part
            assert steps[-1] == -(-topk * 64 // cfg["BLOCK_N"])
        assert mod._kv_tokens_selected(p) == B * Hkv * S           # every block selected at these points
        assert mod.bytes_moved(p) == 2 * (2 * B * Hq * S * D + 2 * B * Hkv * S * D) + 4 * B * Hq * nqb * (topk + 1)
        pairs = sum((min(topk, i + 1) - 1) * 64 * 64 + 64 * 65 // 2 for i in range(nqb))   # S % 64 == 0 here
        assert mod.flops(p) == 4 * D * B * Hq * pairs
        assert 20e-6 < mod.flops(p) / 990e12 and mod.bytes_moved(p) / 4.8e12 < 3e-3


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(1, 4, 2, 130, 32, 3, "fp16"), device="cpu")
    q, k, v, idx, cnt = (inputs[n] for n in ("q", "k", "v", "block_idx", "block_count"))
    with pytest.raises(ValueError, match="BLOCK_M=128"):
        mod.block_sparse_attn(q, k, v, idx, cnt, BLOCK_M=128)
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.block_sparse_attn(q, k, v, idx, cnt, BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_N=256"):
        mod.block_sparse_attn(q, k, v, idx, cnt, BLOCK_N=256)
    with pytest.raises(ValueError, match="HEADS_FASTEST=2"):
        mod.block_sparse_attn(q, k, v, idx, cnt, HEADS_FASTEST=2)
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.block_sparse_attn(q, k.bfloat16(), v, idx, cnt)
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.block_sparse_attn(q.float(), k.float(), v.float(), idx, cnt)
    with pytest.raises(ValueError, match="expected q"):
        mod.block_sparse_attn(q, k[:, :, :100], v[:, :, :100], idx, cnt)
    with pytest.raises(ValueError, match="multiple of H_kv"):
        mod.block_sparse_attn(q[:, :3], k, v, idx[:, :3], cnt[:, :3])
    with pytest.raises(ValueError, match="block_idx must be int32"):
        mod.block_sparse_attn(q, k, v, idx.long(), cnt)
    with pytest.raises(ValueError, match="block_idx must be int32"):
        mod.block_sparse_attn(q, k, v, idx[:, :, :2], cnt)
    with pytest.raises(ValueError, match="block_count must be int32"):
        mod.block_sparse_attn(q, k, v, idx, cnt.long())
    with pytest.raises(ValueError, match="out must be"):
        mod.block_sparse_attn(q, k, v, idx, cnt, out=torch.empty(1, 4, 130, 32, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 4, 2, 130, 32, 3, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="D=48"):
        mod.make_inputs(_pt(1, 4, 2, 130, 48, 3, "fp16"), device="cpu")
    with pytest.raises(ValueError, match="TOPK=1"):
        mod.make_inputs(_pt(1, 4, 2, 130, 32, 1, "fp16"), device="cpu")


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles_sm90(shared_cache, kernel):
    """On sm_90: BASELINE and three more (both tile orders, BLOCK_N 32 / 64 / 128, 1-3 stages,
    4 and 8 warps) compile without spills inside 227 KiB; BLOCK_M 64 runs a bf16 wgmma, 32 an
    mma.sync."""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], "sm_90"):
        assert res.status == "ok", f"{kernel} {cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and 0 < res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0, (cfg, res.n_spills)
    for cfg, op in ((mod.BASELINE, "wgmma.mma_async"), (_cfg(32, 64, 0, 4, 3), "mma.sync")):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[0]), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], keep_ir=True)
        assert res.status == "ok", res.message
        assert op in res.ptx and ".bf16" in res.ptx, cfg


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) the smaller tiles compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second (TOPK 32, 16 heads) and third point (fp16, D 64, TOPK 8: not 16-aligned) at a
    config fitting both archs."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = _cfg(32, 64, 1, 4, 2)
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
        limit = SM120_SMEM_PER_BLOCK if arch == "sm_120" else H200_SMEM_PER_BLOCK
        assert 0 < res.shared <= limit


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
            inputs = mod.make_inputs(point, seed=len(name) + 100, device="cpu")
            _prepare(name, point, inputs)
            q = inputs["q"]
            out = torch.full(tuple(q.shape), float("nan"), dtype=q.dtype)
            got = mod.block_sparse_attn(q, inputs["k"], inputs["v"], inputs["block_idx"], inputs["block_count"],
                                        inputs["sm_scale"], out=out, **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == out.data_ptr()
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


def _run_cases() -> None:
    """Under TRITON_INTERPRET=1: every case through launch (or block_sparse_attn with the case's
    out= view), and torch_baseline; one JSON line."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(H.TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            out = _launch(mod, inputs, cfg)
            ref = mod.reference(inputs)
            results[name] = H.compare(out, ref, point["dtype"], TOL)
            results[name]["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"], TOL)
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled":
        _run_prefilled()
    else:
        _run_cases()
