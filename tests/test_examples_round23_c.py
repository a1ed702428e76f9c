"""examples/int8kv_decode_attn.py (GQA decode attention over an int8 KV cache with per-token,
per-head fp32 scales, split along the sequence, plus its merge kernel) against its fp32 torch
reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its
study sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round14_a.py the interpreter must be chosen before triton is imported, so the
cases run in a subprocess (this file run as a script: ``python tests/test_examples_round23_c.py
int8kv_decode_attn``) that prints one JSON line. A second subprocess (``... prefilled``) runs
cases into an ``out=`` buffer filled with NaN, with the split workspace (o_part, lse) NaN-filled
and every scale past a sequence's length NaN: a head no CTA writes, a split the merge reads that
stage 1 never wrote, or a token past seq_len that is loaded and used, is a mismatch.

Interpreter fixes (subprocess side): triton 3.6's loop bounds read from runtime scalars
(example_harness.patch_interpreter_index); bf16 dot operands widened to fp32 (its tl.dot
multiplies bf16 bit patterns); fp32 -> bf16 rounding to nearest even (the GPU's cvt.rn); and
int -> bf16 casts, which both interpreters do as a numpy astype into bf16's uint16 storage
(int8 5 becomes the bit pattern 0x0005, a denormal): here the integer goes through fp32 first,
exact for int8, as the GPU's conversion is.

Shapes are small, odd and ragged: lengths from 1 token up (one-token sequences, lengths that end
inside a BLOCK_N step, lengths equal to the cache capacity with exact splits and steps), groups of
4 and 5 heads (G = 5: Qwen's 40 / 8, padded to a 16-row tile) and 32 (MQA: BLOCK_G 32), head
dims 32-128 (the real 32 / 8 x 128), NUM_SPLITS 1 (stage 1 writes out, no merge) and 2-16 (the
workspace and the merge; empty trailing splits when sequences are short), q and the caches as
strided views (the caches as a [B, S, Hkv, D] buffer seen as [B, Hkv, S, D]: the token stride
Hkv x D), both dtypes.

Tolerance (x max|ref|, absolute, per element): the reference is fp32 on the same q, int8 codes and
scales; the kernel's scores are exact up to fp32 summation order (int8 keys are exact in
bf16 / fp16); it differs by the weights p x v_scale rounded to q's dtype for the value dot (2^-9
relative in bf16, independent per token, averaging out), the fp32 split partials and their exp2
merge (~1e-6) and the output's one rounding. bf16 1.5e-2, fp16 3e-3 (the kernel measured
<= 0.4e-2 / 0.6e-3 of max|ref|); the torch baseline (dequantized to bf16 / fp16 values, scores
and softmax in that dtype) stays inside them.
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
KERNEL = "int8kv_decode_attn"
ROLE = "held-out-23"
TOL = {"bf16": 1.5e-2, "fp16": 3e-3}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["int8kv_decode_attn"] once the lead adds it)
SWEEP_AXES = {"BLOCK_N": [32, 64, 128], "NUM_SPLITS": [1, 4, 16], "num_warps": [4, 8], "num_stages": [2, 3, 4]}


def _cfg(bn, s, w=4, st=2):
    return {"BLOCK_N": bn, "NUM_SPLITS": s, "num_warps": w, "num_stages": st}


def _pt(B, Hq, Hkv, D, S, lo, hi, dtype, **extra):
    return {"B": B, "Hq": Hq, "Hkv": Hkv, "D": D, "S": S, "min_len": lo, "max_len": hi, "dtype": dtype, **extra}


STRIDED = "strided_views_bf16"

# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # G = 5 (a 16-row tile, 11 zero rows), ragged lengths 1-150, 3 splits of 16-token steps
        "ragged_splits_g5_bf16": (_pt(5, 10, 2, 32, 150, 1, 150, "bf16"), _cfg(16, 3, 4, 2)),
        # NUM_SPLITS 1: stage 1 writes out itself; capacity 200 > every length
        "one_split_direct_fp16": (_pt(4, 8, 2, 64, 200, 10, 180, "fp16"), _cfg(32, 1, 8, 3)),
        # the real 32 / 8 heads x 128 dims, 64-token steps, 4 splits
        "llama_dims_bf16": (_pt(2, 32, 8, 128, 130, 40, 130, "bf16"), _cfg(64, 4, 8, 4)),
        # MQA: 32 heads on one kv head (BLOCK_G 32), 2 splits
        "mqa_group32_fp16": (_pt(3, 32, 1, 32, 80, 1, 80, "fp16"), _cfg(32, 2, 4, 2)),
        # 16 splits of short sequences: most trailing splits empty
        "many_empty_splits_bf16": (_pt(6, 8, 2, 32, 40, 1, 40, "bf16", len_seed=3), _cfg(16, 16, 4, 3)),
        # every sequence one token: only split 0 works, its one step masks 127 of 128 tokens
        "length_one_fp16": (_pt(3, 12, 3, 32, 16, 1, 1, "fp16"), _cfg(128, 4, 8, 2)),
        # lengths = the capacity 128: exact splits (4 x 32) and exact steps, no masked step
        "exact_multiples_bf16": (_pt(2, 16, 4, 64, 128, 128, 128, "bf16"), _cfg(32, 4, 4, 4)),
        # q [B, Hq, 64] inside [B, Hq + 3, 80]; caches [B, S, Hkv, D] seen as [B, Hkv, S, D]; scales
        # [B, Hkv, S] inside [B, Hkv + 1, S + 5]
        STRIDED: (_pt(3, 12, 3, 64, 90, 5, 90, "bf16"), _cfg(32, 2, 4, 3)),
        # one long sequence cut in 16, 128-token steps
        "one_long_seq_16_splits_fp16": (_pt(1, 16, 4, 64, 1500, 1100, 1500, "fp16"), _cfg(128, 16, 8, 3)),
    },
}

# prefilled: cases run into a NaN-filled out= buffer, a NaN-filled workspace, NaN scales past each length
PREFILLED = ("ragged_splits_g5_bf16", "one_split_direct_fp16", "many_empty_splits_bf16", "length_one_fp16",
             "mqa_group32_fp16")

# configs compiled at the module's first POINT (sm_90: BASELINE first; sm_120: within 99 KiB)
COMPILE_CFGS = [_cfg(64, 4, 4, 2), _cfg(128, 16, 8, 4), _cfg(32, 1, 4, 3), _cfg(128, 1, 4, 4)]
SM120_CFGS = [_cfg(64, 4, 4, 2), _cfg(128, 16, 8, 3)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: q, the caches and the scales as strided views."""
    import torch

    if name != STRIDED:
        return
    q = inputs["q"]
    B, Hq, D = q.shape
    wide = torch.zeros((B, Hq + 3, D + 16), dtype=q.dtype)
    wide[:, :Hq, :D] = q
    inputs["q"] = wide[:, :Hq, :D]
    for key in ("k_cache", "v_cache"):
        c = inputs[key]                                      # [B, Hkv, S, D]
        inputs[key] = c.transpose(1, 2).contiguous().transpose(1, 2)
    for key in ("k_scale", "v_scale"):
        s = inputs[key]
        Bs, Hkv, S = s.shape
        big = torch.full((Bs, Hkv + 1, S + 5), float("nan"))
        big[:, :Hkv, :S] = s
        inputs[key] = big[:, :Hkv, :S]


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results(KERNEL)[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["B"], p["Hq"], p["D"]] and res["dtype"] == p["dtype"] and res["contiguous"]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")
    if name == STRIDED:
        assert res["strides"] == {"stride_qh": 80, "stride_kt": 3 * 64, "stride_kh": 64,
                                  "stride_ksh": 95, "stride_ksb": 4 * 95}, res["strides"]


@pytest.mark.parametrize("name", PREFILLED)
def test_every_head_written_and_nothing_past_the_length_read(name):
    """Into a NaN-filled out= buffer, with a NaN-filled workspace and NaN scales past each
    sequence's length: every element written (no NaN left), right, into the caller's buffer."""
    res = _results("prefilled")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled")


def test_cases_cover_every_code_path():
    """Each tunable at >= 2 values (BLOCK_N over the sweep's range and below); NUM_SPLITS 1 and
    > 1, empty trailing splits, padded groups (G 4 / 5) and a BLOCK_G above 16, masked and
    unmasked last steps, exact splits, one-token sequences, both dtypes, the real 32 / 8 x 128."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {c["NUM_SPLITS"] == 1 for _, c in cases} == {True, False}
    groups = {p["Hq"] // p["Hkv"] for p, _ in cases}
    assert {4, 5, 32} <= groups and max(mod.block_g(g) for g in groups) == 32
    assert any(p["Hq"] == 32 and p["Hkv"] == 8 and p["D"] == 128 for p, _ in cases)
    for k in ("BLOCK_N", "num_warps", "num_stages"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)
    empty = ragged_tail = exact = one = False
    for p, c in cases:
        for n in mod.seq_lengths(p).tolist():
            tiles = mod.split_tiles(n, c)
            empty |= 0 in tiles
            ragged_tail |= n % c["BLOCK_N"] != 0
            exact |= n % mod._split_len(n, c["NUM_SPLITS"], c["BLOCK_N"]) == 0 and c["NUM_SPLITS"] > 1
            one |= n == 1
    assert empty and ragged_tail and exact and one


def test_split_arithmetic():
    """split_tiles mirrors the kernel: splits of cdiv(cdiv(n, S), BLOCK_N) * BLOCK_N tokens; their
    steps add up to cdiv(n, BLOCK_N); the non-empty ones come first and number cdiv(n, split_len)
    (what the merge walks); each covers its tokens exactly once."""
    mod = load_example(KERNEL)
    for n in (1, 15, 16, 17, 63, 64, 100, 1000, 4097, 98304):
        for s in (1, 2, 3, 4, 16):
            for bn in (16, 32, 64, 128):
                cfg = {"BLOCK_N": bn, "NUM_SPLITS": s}
                tiles = mod.split_tiles(n, cfg)
                sl = mod._split_len(n, s, bn)
                assert sl % bn == 0 and sl * s >= n and len(tiles) == s
                assert sum(tiles) == -(-n // bn)
                live = [t for t in tiles if t]
                assert tiles[:len(live)] == live and len(live) == -(-n // sl)
                covered = []
                for i in range(s):                       # the kernel's start / end, in Python ints
                    start, end = i * sl, min(i * sl + sl, n)
                    covered += list(range(start, end)) if start < end else []
                    assert tiles[i] == (-(-(end - start) // bn) if start < end else 0)
                assert covered == list(range(n))


def _sweep_cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


def _working_ctas(mod, cfg, point) -> int:
    return sum(1 for it in mod.cta_iterations(cfg, point) if it)


def _smem_bound(cfg, point) -> int:
    """An upper bound of a config's shared memory: num_stages buffers of the int8 K and V tiles and
    their scales, the q tile and the widened K / V / P operands, or the epilogue's fp32 tile."""
    bn, d, bg = cfg["BLOCK_N"], point["D"], 32
    loop = cfg["num_stages"] * (2 * bn * d + 8 * bn) + 2 * bg * d + 2 * 2 * bn * d + 2 * bg * bn
    return max(loop, 4 * bg * d)


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_N 32-128 x NUM_SPLITS 1 / 4 / 16 x 4 / 8 warps x 2-4
    stages) with BASELINE among them, over the TUNABLES; at every POINT each config is valid, its
    buffers fit an H200's 227 KiB a block, and every config has >= 32 working CTAs (the 4 long
    sequences x 8 kv heads unsplit: the no-split lever), while some split count gives >= 132 (one
    per SM) at every point. (Every config was compiled for sm_90 with triton 3.6.0 at every point,
    162 compiles, ~4 s each: all compile and none spills; the three points give the same resources
    to within a register. Registers by BLOCK_N: 32: 91-141, 64: 128-209, 128: 182-251 (4 warps the
    most); shared memory 13-110 KiB, num_stages buffers of the int8 K / V tiles and scales (BLOCK_N
    128: 41 / 74 / 107 KiB at 2 / 3 / 4 stages); 1-4 blocks an SM, 1 at BLOCK_N 128 with 8 warps.)"""
    mod = load_example(KERNEL)
    assert mod.SWEEP_AXES == SWEEP_AXES and mod.ROLE == ROLE
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for v in SWEEP_AXES.values())
    cfgs = _sweep_cfgs()
    assert 45 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        assert max(_working_ctas(mod, c, p) for c in cfgs) >= H200_SMS, p
        for c in cfgs:
            mod._check_cfg(c)
            assert _working_ctas(mod, c, p) >= 32, (p, c)
            assert _smem_bound(c, p) <= H200_SMEM_PER_BLOCK, (p, c)
    # the points differ in character: group size, batch / length regime, dtype
    assert {p["Hq"] // p["Hkv"] for p in mod.POINTS} == {4, 5}
    assert {p["dtype"] for p in mod.POINTS} == {"bf16", "fp16"}
    assert len({(p["B"], p["max_len"]) for p in mod.POINTS}) == 3


def test_study_sweep_entry_matches():
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    mod = load_example(KERNEL)
    assert axes == SWEEP_AXES and len(configs) == len(_sweep_cfgs()) and points == mod.POINTS


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args has the launch's shapes, dtypes and strides
    (meta tensors, seq_len the point's own on the CPU), bytes_moved counts the int8 rows, their
    scales, q, out and seq_len once each, grid / cta_iterations / loop_iterations are the split
    tiling, secondary_kernels the merge exactly when NUM_SPLITS > 1; inputs < 4 GB; ~50 us - 1 ms
    at 3.35-4.8 TB/s."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "secondary_kernels",
               "int8kv_decode_attention", "merge_args"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    for p in mod.POINTS:
        B, Hq, Hkv, D, S = (p[k] for k in ("B", "Hq", "Hkv", "D", "S"))
        lens = mod.seq_lengths(p)
        tokens = int(lens.sum())
        assert int(lens.max()) <= S and int(lens.min()) >= 1
        el = 2
        assert mod.bytes_moved(p) == Hkv * tokens * (2 * D + 8) + 2 * el * B * Hq * D + 4 * B
        assert 0.1e9 <= mod.bytes_moved(p) <= 2e9
        assert 50e-6 < mod.bytes_moved(p) / 4.8e12 and mod.bytes_moved(p) / 3.35e12 < 1e-3
        assert mod.flops(p) == 4 * Hq * tokens * D
        for cfg in _sweep_cfgs():
            a = mod.example_args(cfg, p)
            assert a["SEQ_LEN"].device.type == "cpu" and torch.equal(a["SEQ_LEN"], lens.to(torch.int32))
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for k, v in a.items()
                       if k != "SEQ_LEN")
            assert a["Q"].shape == (B, Hq, D) and a["Q"].dtype == a["O"].dtype == dts[p["dtype"]]
            assert a["K"].shape == a["V"].shape == (B, Hkv, S, D) and a["K"].dtype == a["V"].dtype == torch.int8
            assert a["K_SCALE"].shape == a["V_SCALE"].shape == (B, Hkv, S)
            assert a["K_SCALE"].dtype == torch.float32 and a["O"].shape == (B, Hq, D)
            assert (a["stride_kb"], a["stride_kh"], a["stride_kt"], a["stride_ksh"]) == (Hkv * S * D, S * D, D, S)
            assert (a["GROUP"], a["HEAD_DIM"], a["BLOCK_G"]) == (Hq // Hkv, D, 16)
            assert (a["NUM_SPLITS"], a["BLOCK_N"]) == (cfg["NUM_SPLITS"], cfg["BLOCK_N"])
            s = cfg["NUM_SPLITS"]
            if s > 1:
                assert a["O_PART"].shape == (B, Hq, s, D) and a["LSE"].shape == (B, Hq, s)
            assert H.meta_nbytes(a) < 4 * 2**30
            g = mod.grid(cfg, p)
            assert g == (s, Hkv, B)
            its = mod.cta_iterations(cfg, p)
            assert len(its) == s * Hkv * B
            assert sum(its) == Hkv * sum(-(-n // cfg["BLOCK_N"]) for n in lens.tolist())
            assert mod.loop_iterations(cfg, p) == -(-sum(its) // len(its))
            sec = mod.secondary_kernels(cfg, p)
            if s == 1:
                assert sec == []
            else:
                (m,) = sec
                live = sum(sum(1 for t in mod.split_tiles(n, cfg) if t) for n in lens.tolist())
                assert m["grid"] == B * Hq and m["iterations"] == -(-live // B) and 1 <= m["iterations"] <= s
                assert m["tile_bytes"] == 4 * D + 4 and m["dram_bytes"] == 0


def test_hooks_on_small_points_and_inputs():
    """make_inputs' tensors (the batch's lengths the point's, not the seed's), cta_iterations'
    order (split fastest), the reference's shape and scale."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(5, 10, 2, 32, 150, 1, 150, "bf16")
    c = _cfg(16, 3)
    inputs = mod.make_inputs(p, seed=1, device="cpu")
    lens = mod.seq_lengths(p)
    assert inputs["seq_len"].dtype == torch.int32 and torch.equal(inputs["seq_len"].long(), lens)
    assert int(lens.min()) >= 1 and int(lens.max()) <= 150 and len(set(lens.tolist())) > 2
    assert inputs["q"].shape == (5, 10, 32) and inputs["q"].dtype == torch.bfloat16
    for k in ("k_cache", "v_cache"):
        t = inputs[k]
        assert t.shape == (5, 2, 150, 32) and t.dtype == torch.int8
        assert int(t.min()) >= -127 and int(t.max()) <= 127 and float(t.float().std()) > 50
    for k in ("k_scale", "v_scale"):
        t = inputs[k]
        assert t.shape == (5, 2, 150) and t.dtype == torch.float32
        assert 0.004 <= float(t.min()) and float(t.max()) <= 0.03
    assert not torch.equal(inputs["k_cache"], inputs["v_cache"])
    assert inputs["sm_scale"] == 32 ** -0.5
    expect = [t for n in lens.tolist() for _ in range(2) for t in mod.split_tiles(n, c)]
    assert mod.cta_iterations(c, p) == expect and mod.grid(c, p) == (3, 2, 5)
    ref = mod.reference(inputs)
    assert ref.shape == (5, 10, 32) and ref.dtype == torch.float32 and 0.05 < float(ref.abs().max()) < 5
    base = mod.torch_baseline(inputs)
    assert base.shape == (5, 10, 32) and base.dtype == torch.bfloat16
    other = mod.make_inputs(p, seed=2, device="cpu")
    assert torch.equal(other["seq_len"], inputs["seq_len"]) and not torch.equal(other["q"], inputs["q"])
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["k_cache"], inputs["k_cache"])
    assert not torch.equal(mod.seq_lengths(dict(p, len_seed=1)), lens)
    # a hand case: one token -> out is that token's dequantized value row for every head
    one = mod.make_inputs(_pt(1, 4, 2, 16, 3, 1, 1, "fp16"), device="cpu")
    r = mod.reference(one)
    v = one["v_cache"][0, :, 0].float() * one["v_scale"][0, :, 0, None]
    assert torch.allclose(r[0], v.repeat_interleave(2, 0))


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(_pt(2, 8, 2, 32, 40, 5, 40, "fp16"), device="cpu")
    args = [inp[k] for k in ("q", "k_cache", "v_cache", "k_scale", "v_scale", "seq_len")]
    f = mod.int8kv_decode_attention
    with pytest.raises(ValueError, match="BLOCK_N=8"):
        f(*args, BLOCK_N=8)
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        f(*args, BLOCK_N=48)
    with pytest.raises(ValueError, match="NUM_SPLITS=0"):
        f(*args, NUM_SPLITS=0)
    with pytest.raises(ValueError, match="bf16 / fp16"):
        f(args[0].float(), *args[1:])
    with pytest.raises(ValueError, match="k_cache must be"):
        f(args[0], args[1].to(torch.uint8), *args[2:])
    with pytest.raises(ValueError, match="v_cache must be"):
        f(args[0], args[1], args[2][:, :, :30], *args[3:])
    with pytest.raises(ValueError, match="k_scale must be"):
        f(*args[:3], args[3].half(), *args[4:])
    with pytest.raises(ValueError, match="seq_len must be"):
        f(*args[:5], args[5].long())
    with pytest.raises(ValueError, match="Hq=7"):
        f(args[0][:, :7], *args[1:])
    with pytest.raises(ValueError, match="D=24"):
        f(args[0][..., :24], *(t[..., :24] for t in args[1:3]), *args[3:])
    with pytest.raises(ValueError, match="out must be"):
        f(*args, out=torch.empty(2, 8, 32, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(2, 8, 2, 32, 40, 5, 40, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="min_len <= max_len"):
        mod.seq_lengths(_pt(2, 8, 2, 32, 40, 30, 20, "bf16"))
    with pytest.raises(ValueError, match="capacity"):
        mod.seq_lengths(_pt(2, 8, 2, 32, 40, 5, 41, "bf16"))


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more at the first point (BLOCK_N 32-128, 1-16 splits, 4 / 8
    warps, 2-4 stages) compile without spills inside 227 KiB, the group's dots on tensor cores."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and 0 < res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0, (cfg, res.n_regs)
    cfg = mod.BASELINE
    res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[0]), arch="sm_90",
                         num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], keep_ir=True)
    assert res.status == "ok" and "mma" in res.ptx and ".bf16" in res.ptx, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) BASELINE and a 128-token, 3-stage config compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
def test_other_points_and_merge_compile(shared_cache, arch):
    """The second point (G = 5) and the third (fp16, 256 sequences) at BASELINE, and the merge
    kernel at each point's workspace strides (16 blocks an SM, as secondary_kernels says)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    for p in mod.POINTS:
        a = mod.example_args(cfg, p)
        if p is not mod.POINTS[0]:
            res = compile_kernel(mod._kernel, args=a, arch=arch, num_warps=cfg["num_warps"],
                                 num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
        margs = mod.merge_args(a["O_PART"], a["LSE"], a["SEQ_LEN"], a["O"], cfg)
        res = compile_kernel(mod._merge_kernel, args=margs, arch=arch, num_warps=mod.MERGE_WARPS, num_stages=1)
        assert res.status == "ok" and res.n_spills == 0, f"merge at {p} on {arch}: {res.status}: {res.message}"
        if arch == "sm_90":
            assert res.n_regs * 32 * mod.MERGE_WARPS * 16 <= 65536


# ----------------------------------------------------------------- the subprocess side
def _patch_interpreter_int_to_bf16() -> None:
    """int -> bf16 in Triton's interpreter: through fp32 (see the module docstring)."""
    import triton.language as tl
    from triton.runtime import interpreter as interp

    B = interp.InterpreterBuilder
    orig = B.create_si_to_fp

    def si_to_fp(self, src, dst_type):
        if dst_type.scalar == tl.bfloat16:
            return self.cast_impl(orig(self, src, tl.float32), dst_type)
        return orig(self, src, dst_type)

    B.create_si_to_fp = si_to_fp


def _patch_all() -> None:
    H.patch_interpreter_index()
    H.patch_interpreter_bf16_rounding()
    _patch_interpreter_int_to_bf16()


def _run() -> None:
    """Every case through launch, against reference, and torch_baseline too; one JSON line."""
    _patch_all()
    mod = load_example(KERNEL)

    def extra(name, point, inputs, out, ref):
        res = {"contiguous": bool(out.is_contiguous()),
               "dtype": {"torch.float16": "fp16", "torch.bfloat16": "bf16"}.get(str(out.dtype))}
        if name == STRIDED:
            cfg = CASES[KERNEL][name][1]
            o_part, lse = mod._workspace(point["B"], point["Hq"], point["D"], cfg["NUM_SPLITS"], "cpu")
            a = mod._kernel_args(inputs["q"], inputs["k_cache"], inputs["v_cache"], inputs["k_scale"],
                                 inputs["v_scale"], inputs["seq_len"], o_part, lse, out, 1.0, cfg)
            res["strides"] = {k: a[k] for k in ("stride_qh", "stride_kt", "stride_kh", "stride_ksh", "stride_ksb")}
        return res

    H.run_cases(KERNEL, CASES[KERNEL], TOL, prepare=_prepare, baseline=True, extra=extra)


def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into a NaN-filled out= buffer, the split
    workspace NaN-filled, every scale past a sequence's length NaN; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(H.TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    _patch_all()
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
            ref = mod.reference(inputs)
            for b, n in enumerate(inputs["seq_len"].tolist()):
                inputs["k_scale"][b, :, n:] = float("nan")
                inputs["v_scale"][b, :, n:] = float("nan")
            q = inputs["q"]
            out = torch.full(tuple(q.shape), float("nan"), dtype=q.dtype)
            got = mod.int8kv_decode_attention(q, inputs["k_cache"], inputs["v_cache"], inputs["k_scale"],
                                              inputs["v_scale"], inputs["seq_len"], inputs["sm_scale"], out=out, **cfg)
            results[name] = H.compare(got, ref, point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == out.data_ptr()
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled":
        _run_prefilled()
    else:
        _run()
