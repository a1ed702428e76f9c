"""examples/varlen_attn_fwd.py against fp32 softmax attention of each packed sequence on the
CPU through Triton's interpreter, its launcher hooks against the shapes (and against a
Python replay of the kernel's program -> sequence search), its study sweep against the
points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round13_d.py varlen_attn_fwd``) that prints one JSON line; the
tests assert per case. A second subprocess (``... api``) checks what the value comparison
does not see: into a NaN-filled ``out=`` every element is written (idle program slots,
query-row tails), the default scale is D^-0.5, q, k, v as views of one fused QKV buffer give
exactly what their contiguous copies give, a GQA group gives exactly what MHA over repeated
K/V heads gives, and a batch of no tokens launches nothing.

Shapes are small, odd and ragged: sequence lengths 1 .. 300 drawn per case (uniform and
log-uniform), not multiples of BLOCK_M nor BLOCK_N, shorter than both, exact multiples of
both, single-token sequences, zero-length sequences inside cu_seqlens, one long sequence
of many query blocks; BLOCK_M below, equal to and above BLOCK_N (the causal unmasked prefix
rounds down to a BLOCK_N boundary); GQA groups 1 - 4; head dims 16 - 128; causal and
bidirectional (the masked tail tile past the sequence end); q, k, v as slices of a fused
[T, (H_q + 2 H_kv) D] projection (token stride != H D).

Tolerance (x max|ref|, absolute, per element): the reference is fp32 softmax attention of
the same rounded inputs; the kernel rounds P to the inputs' dtype for its P @ V dot (as
FlashAttention does), accumulates in fp32 and rounds the output once. bf16 2e-2: the
interpreter's fp32 -> bf16 casts truncate (P and the output, up to 2^-7 relative each;
0.5 % seen); fp16 3e-3 (an fp16 ulp is 2^-10 relative; 0.04 % seen).
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
KERNEL = "varlen_attn_fwd"
TOL = {"bf16": 2e-2, "fp16": 3e-3}


def _cfg(bm, bn, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s}


def _pt(B, lo, hi, hq, hkv, D, causal, dtype, dist="uniform", seed=0):
    return {"B": B, "min_len": lo, "max_len": hi, "dist": dist, "len_seed": seed, "H_q": hq, "H_kv": hkv, "D": D,
            "causal": causal, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "causal_gqa2_bm_below_bn_bf16": (_pt(4, 1, 90, 4, 2, 32, 1, "bf16"), _cfg(16, 32, 4, 2)),
        "causal_gqa3_bm_above_bn_fp16": (_pt(3, 20, 100, 3, 1, 16, 1, "fp16"), _cfg(32, 16, 8, 3)),
        "bidirectional_mha_d64_fp16": (_pt(3, 10, 80, 2, 2, 64, 0, "fp16"), _cfg(16, 16, 4, 1)),
        "bidirectional_gqa4_loguniform_bf16": (_pt(5, 1, 60, 4, 1, 32, 0, "bf16", "loguniform"), _cfg(32, 64, 8, 2)),
        "causal_d128_bf16": (_pt(2, 30, 70, 2, 1, 128, 1, "bf16"), _cfg(64, 32, 4, 2)),
        "causal_big_tiles_fp16": (_pt(3, 100, 300, 2, 1, 16, 1, "fp16", seed=1), _cfg(128, 128, 8, 3)),
        "bidirectional_big_tiles_bf16": (_pt(2, 100, 260, 2, 2, 16, 0, "bf16", seed=2), _cfg(64, 128, 4, 4)),
        "causal_bm128_bn64_fp16": (_pt(2, 150, 280, 2, 1, 32, 1, "fp16", seed=3), _cfg(128, 64, 4, 1)),
        "exact_multiples_causal_fp16": (_pt(3, 64, 64, 2, 1, 16, 1, "fp16"), _cfg(32, 16, 4, 2)),
        "exact_multiples_bidirectional_bf16": (_pt(2, 128, 128, 2, 1, 16, 0, "bf16"), _cfg(64, 32, 8, 3)),
        "single_tokens_fp16": (_pt(4, 1, 1, 2, 1, 16, 1, "fp16"), _cfg(16, 16, 4, 2)),
        "empty_sequences_causal_bf16": (_pt(4, 5, 50, 2, 1, 32, 1, "bf16"), _cfg(16, 32, 4, 3)),
        "fused_qkv_views_causal_bf16": (_pt(3, 10, 70, 4, 2, 32, 1, "bf16"), _cfg(32, 32, 4, 2)),
        "fused_qkv_views_bidirectional_fp16": (_pt(2, 20, 90, 2, 1, 64, 0, "fp16"), _cfg(64, 64, 8, 1)),
        "one_long_sequence_causal_bf16": (_pt(1, 257, 257, 1, 1, 16, 1, "bf16"), _cfg(64, 64, 4, 3)),
    },
}
FUSED = ("fused_qkv_views_causal_bf16", "fused_qkv_views_bidirectional_fp16")
EMPTY = ("empty_sequences_causal_bf16",)

# configs compiled for each arch at the module's first POINT (BASELINE first; all fit sm_120's 99 KiB)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(128, 64, 8, 2), _cfg(64, 64, 4, 2), _cfg(64, 32, 8, 3), _cfg(128, 32, 8, 1)],
}


def _with_empty_sequences(inputs: dict) -> None:
    """Zero-length sequences at the start, in the middle and at the end of cu_seqlens."""
    import torch

    cu = inputs["cu_seqlens_cpu"].tolist()
    cu = [0] + cu[:3] + [cu[2]] + cu[3:] + [cu[-1]]
    t = torch.tensor(cu, dtype=torch.int32)
    inputs["cu_seqlens"], inputs["cu_seqlens_cpu"] = t, t.clone()


def _as_fused_views(inputs: dict) -> None:
    """q, k, v as column slices of one fused [T, (H_q + 2 H_kv) D] projection buffer."""
    import torch

    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    T, hq, d = q.shape
    hkv = k.shape[1]
    fused = torch.zeros((T, (hq + 2 * hkv) * d), dtype=q.dtype)
    fused[:, :hq * d] = q.reshape(T, -1)
    fused[:, hq * d:(hq + hkv) * d] = k.reshape(T, -1)
    fused[:, (hq + hkv) * d:] = v.reshape(T, -1)
    inputs["q"] = fused[:, :hq * d].view(T, hq, d)
    inputs["k"] = fused[:, hq * d:(hq + hkv) * d].view(T, hkv, d)
    inputs["v"] = fused[:, (hq + hkv) * d:].view(T, hkv, d)
    assert inputs["q"].stride() == ((hq + 2 * hkv) * d, d, 1) and not inputs["k"].is_contiguous()


def _prepare(name: str, point: dict, inputs: dict) -> None:
    if name in EMPTY:
        _with_empty_sequences(inputs)
    if name in FUSED:
        _as_fused_views(inputs)


def _replay_plane(cu: list[int], bm: int, bn: int, causal: bool) -> list[int]:
    """The kernel's program -> (sequence, block) search replayed in Python for one head plane:
    each program id's K/V tile count (0 where the kernel returns at once)."""
    B = len(cu) - 1
    its = []
    for pid in range(cu[-1] // bm + B):
        lo, hi = 0, B
        while lo < hi:
            mid = (lo + hi) // 2
            if cu[mid] // bm + mid <= pid:
                lo = mid + 1
            else:
                hi = mid
        s = lo - 1
        n = cu[s + 1] - cu[s]
        m0 = (pid - (cu[s] // bm + s)) * bm
        assert m0 >= 0
        its.append(0 if m0 >= n else -(-(min(n, m0 + bm) if causal else n) // bn))
    return its


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    mod = load_example(kernel)
    T = int(mod.seq_lengths(point).sum())
    assert res["shape"] == [T, point["H_q"], point["D"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_api_output_and_argument_forms():
    res = _results("api")
    assert "error" not in res, res.get("error")
    assert res["every_element_written"] and res["same_buffer"], res
    assert res["fresh_output"] and res["dtype_kept"], res
    assert res["default_scale_same"] and res["fused_views_same"] and res["gqa_equals_repeated_mha"], res
    assert res["no_tokens_no_launch"], res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases (every sweep value among them); the
    sequence tails, BLOCK_M above / equal to / below BLOCK_N under causal masking, idle program
    slots, single-token and empty sequences, GQA groups 1 - 4, head dims 16 - 128, both masks
    and both dtypes are hit."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-13")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    for ax in SWEEP_AXES:
        assert {c[ax] for _, c in cases} >= set(SWEEP_AXES[ax]), ax
    lens = {name: mod.seq_lengths(p).tolist() for name, (p, _) in CASES[KERNEL].items()}
    items = [(lens[n], p, c) for n, (p, c) in CASES[KERNEL].items()]
    assert any(any(n % c["BLOCK_M"] and n % c["BLOCK_N"] for n in ls) for ls, _, c in items)
    assert any(any(n < min(c["BLOCK_M"], c["BLOCK_N"]) for n in ls) for ls, _, c in items)
    assert any(all(n % c["BLOCK_M"] == 0 and n % c["BLOCK_N"] == 0 for n in ls) for ls, _, c in items)
    assert any(all(n == 1 for n in ls) for ls, _, _ in items)
    for causal in (0, 1):
        for rel in (lambda c: c["BLOCK_M"] > c["BLOCK_N"], lambda c: c["BLOCK_M"] < c["BLOCK_N"],
                    lambda c: c["BLOCK_M"] == c["BLOCK_N"]):
            assert any(p["causal"] == causal and rel(c) for p, c in cases), causal
    # idle slots: a program whose block starts past its sequence's end
    assert sum(0 in mod.cta_iterations(c, p) for p, c in cases) >= len(cases) // 2
    assert {p["H_q"] // p["H_kv"] for p, _ in cases} >= {1, 2, 3, 4}
    assert {p["D"] for p, _ in cases} == {16, 32, 64, 128} and {p["dist"] for p, _ in cases} == set(mod.DISTS)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES) and {p["causal"] for p, _ in cases} == {0, 1}
    assert any(p["B"] == 1 and p["min_len"] > 4 * c["BLOCK_M"] for p, c in cases)


def _sweep_cfgs():
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-13")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    return SWEEP_AXES, [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (40 - 72), BASELINE among them, every tunable over >= 2 values;
    at every POINT each config is valid, its example_args are the point's bytes, its grid is
    (T // BLOCK_M + B, H_q) with >= 8 x 132 CTAs, its cta_iterations cover the grid, and its
    pipeline buffers fit an H200's 227 KiB per block: the Q tile and num_stages K and V tiles,
    2 D (BLOCK_M + 2 num_stages BLOCK_N) bytes (what triton 3.6 allocates for BLOCK_M >= 64, the
    wgmma path; BLOCK_M 32, on mma.sync, takes less). (Every config was compiled for sm_90 with
    triton 3.6.0 at every point: all 162 compile, in <= 6 s each; D 128 points 100-255
    registers, 18-224 KiB of shared memory, D 64 point 64-255 registers, 10-112 KiB. Spills,
    all at 4 warps but one: at the D 128 points 16 configs spill, BLOCK_M 128 x BLOCK_N 128 at
    4 warps heavily (254-462 words), BLOCK_M 128 x BLOCK_N 64 (68-150), BLOCK_M 64 x BLOCK_N
    128 (12-88), BLOCK_M 128 x BLOCK_N 32 (2-12), BLOCK_M 32 x BLOCK_N 128 (14-16) at 4 warps
    and BLOCK_M 128 x BLOCK_N 128 x 8 warps x 2 stages (14); at the D 64 point BLOCK_M 128 x
    BLOCK_N 128 at 4 warps (30-46) and BLOCK_M 32 x BLOCK_N 128 x 8 warps x 3 stages (2).)"""
    SWEEP_AXES, cfgs = _sweep_cfgs()
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES) and all(len(v) >= 2 for v in SWEEP_AXES.values())
    assert len(cfgs) == 54 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert H.meta_nbytes(args) == mod.bytes_moved(p)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 8 * 132 and len(mod.cta_iterations(c, p)) == gx * gy, (p, c)
            assert 2 * p["D"] * (c["BLOCK_M"] + 2 * c["num_stages"] * c["BLOCK_N"]) <= 227 * 1024, (p, c)
            assert (args["BLOCK_M"], args["BLOCK_N"]) == (c["BLOCK_M"], c["BLOCK_N"])


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the lengths are the point's (B of them in [min_len, max_len]);
    the meta tensors of example_args are exactly the bytes bytes_moved counts (q, k, v read, out
    written once, cu_seqlens), together more than the 50 MB L2 five times over and under 4 GB;
    grid is the program slots, cta_iterations the kernel's own search replayed, loop_iterations
    their mean; flops >= 0.2 ms of dots even at 990 TFLOP/s."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "varlen_attn_fwd", "seq_lengths"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["causal"] for p in mod.POINTS} == {0, 1} and {p["D"] for p in mod.POINTS} == {64, 128}
    assert {p["H_q"] // p["H_kv"] for p in mod.POINTS} == {1, 4}
    for p in mod.POINTS:
        lens = mod.seq_lengths(p)
        assert lens.shape == (p["B"],) and int(lens.min()) >= p["min_len"] and int(lens.max()) <= p["max_len"]
        assert int(lens.max()) - int(lens.min()) > (p["max_len"] - p["min_len"]) // 2       # really ragged
        T = int(lens.sum())
        cu = [0] + torch.cumsum(lens, 0).tolist()
        assert mod.bytes_moved(p) == 2 * T * p["D"] * 2 * (p["H_q"] + p["H_kv"]) + 4 * (p["B"] + 1)
        assert 5 * 50 * 10**6 < mod.bytes_moved(p) < 4 * 10**9
        pairs = (lens * (lens + 1) // 2).sum() if p["causal"] else (lens * lens).sum()
        assert mod.flops(p) == 4 * p["D"] * p["H_q"] * int(pairs) and mod.flops(p) / 990e12 >= 0.2e-3
        dt = mod._torch_dtype(p["dtype"])
        for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p)
            for n, h in (("Q", p["H_q"]), ("K", p["H_kv"]), ("V", p["H_kv"]), ("O", p["H_q"])):
                assert args[n].shape == (T, h, p["D"]) and args[n].dtype == dt and args[n].is_contiguous()
            assert args["CU_SEQLENS"].shape == (p["B"] + 1,) and args["CU_SEQLENS"].dtype == torch.int32
            assert (args["num_seqs"], args["GROUP"], args["HEAD_DIM"], args["CAUSAL"]) == (
                p["B"], p["H_q"] // p["H_kv"], p["D"], bool(p["causal"]))
            assert (args["stride_qt"], args["stride_qh"], args["stride_kt"], args["stride_kh"]) == (
                p["H_q"] * p["D"], p["D"], p["H_kv"] * p["D"], p["D"])
            assert abs(args["sm_scale"] - p["D"] ** -0.5) < 1e-12
            bm = cfg["BLOCK_M"]
            assert mod.grid(cfg, p) == (T // bm + p["B"], p["H_q"])
            plane = _replay_plane(cu, bm, cfg["BLOCK_N"], bool(p["causal"]))
            assert mod.cta_iterations(cfg, p) == plane * p["H_q"]
            assert sum(1 for n in plane if n) == sum(triton.cdiv(n, bm) for n in lens.tolist())
            assert mod.loop_iterations(cfg, p) == -(-sum(plane) // len(plane))
    assert mod.example_args(mod.BASELINE, mod.POINTS[2])["Q"].dtype == torch.float16


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 10, 80, 4, 2, 32, 1, "bf16")
    lens = mod.seq_lengths(p).tolist()
    assert len(lens) == 3 and all(10 <= n <= 80 for n in lens)
    assert mod.seq_lengths(p).tolist() == lens and mod.seq_lengths(dict(p, len_seed=1)).tolist() != lens
    # lengths 32, 17, 33 -> cu 0, 32, 49, 82; BLOCK_M 32: slots 0..1 | 2 | 3..4 (slot 1 idle: the
    # first sequence ends on a block boundary)
    cu = [0, 32, 49, 82]
    assert _replay_plane(cu, 32, 16, True) == [2, 0, 2, 2, 3]
    assert _replay_plane(cu, 32, 16, False) == [2, 0, 2, 3, 3]
    assert _replay_plane(cu, 32, 64, True) == [1, 0, 1, 1, 1]
    assert _replay_plane([0, 40, 57, 90], 32, 16, True) == [2, 3, 2, 2, 3]      # no idle slot
    c = _cfg(16, 32, 4, 2)
    T = sum(lens)
    assert mod.grid(c, p) == (T // 16 + 3, 4)
    its = mod.cta_iterations(c, p)
    assert len(its) == (T // 16 + 3) * 4 and its[:T // 16 + 3] * 4 == its
    assert mod.bytes_moved(p) == T * 32 * 2 * (2 * 4 + 2 * 2) + 16
    assert mod.flops(p) == 4 * 32 * 4 * sum(n * (n + 1) // 2 for n in lens)
    assert mod.flops(dict(p, causal=0)) == 4 * 32 * 4 * sum(n * n for n in lens)
    args = mod.example_args(c, p)
    assert args["GROUP"] == 2 and args["CAUSAL"] and args["Q"].dtype == torch.bfloat16
    assert not mod.example_args(c, dict(p, causal=0, dtype="fp16"))["CAUSAL"]
    # log-uniform lengths lean short, uniform ones do not
    wide = dict(p, B=4000, min_len=16, max_len=4096)
    assert float(mod.seq_lengths(dict(wide, dist="loguniform")).double().median()) < 600
    assert 1700 < float(mod.seq_lengths(wide).double().median()) < 2400
    inputs = mod.make_inputs(p, seed=3, device="cpu")
    q, k, v, cu_t = inputs["q"], inputs["k"], inputs["v"], inputs["cu_seqlens"]
    assert q.shape == (T, 4, 32) and k.shape == v.shape == (T, 2, 32) and q.dtype == torch.bfloat16
    assert cu_t.dtype == torch.int32 and cu_t.tolist() == [0] + list(itertools.accumulate(lens))
    assert torch.equal(inputs["cu_seqlens_cpu"], cu_t) and inputs["causal"] and abs(inputs["sm_scale"] - 32 ** -0.5) < 1e-12
    assert 0.8 < float(q.float().std()) < 1.2 and not torch.equal(mod.make_inputs(p, seed=4, device="cpu")["q"], q)
    # the reference of one sequence and head by its definition, in fp64
    s0, s1 = lens[0], lens[0] + lens[1]
    qq, kk, vv = q[s0:s1, 3].double(), k[s0:s1, 1].double(), v[s0:s1, 1].double()
    sc = (qq @ kk.T) * inputs["sm_scale"]
    sc = sc.masked_fill(torch.ones(lens[1], lens[1], dtype=torch.bool).triu(1), float("-inf"))
    ref = mod.reference(inputs)
    assert ref.shape == (T, 4, 32) and ref.dtype == torch.float32
    assert torch.allclose(ref[s0:s1, 3].double(), torch.softmax(sc, -1) @ vv, atol=1e-5)
    assert torch.allclose(mod.reference(inputs, max_scores=100), ref, atol=1e-6)     # row chunks
    base = mod.torch_baseline(inputs)
    assert base.shape == (T, 4, 32) and base.dtype == torch.bfloat16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(2, 4, 9, 4, 2, 32, 1, "fp16"), device="cpu")
    q, k, v, cu = inputs["q"], inputs["k"], inputs["v"], inputs["cu_seqlens"]
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.varlen_attn_fwd(q, k, v, cu, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_N=8"):
        mod.varlen_attn_fwd(q, k, v, cu, BLOCK_N=8)
    with pytest.raises(ValueError, match=r"q \[T, H_q, D\]"):
        mod.varlen_attn_fwd(q[0], k, v, cu)
    with pytest.raises(ValueError, match=r"q \[T, H_q, D\]"):
        mod.varlen_attn_fwd(q, k[:3], v[:3], cu)
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.varlen_attn_fwd(q.float(), k.float(), v.float(), cu)
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.varlen_attn_fwd(q, k, v.bfloat16(), cu)
    with pytest.raises(ValueError, match="H_q=4 must be a positive multiple of H_kv=3"):
        mod.varlen_attn_fwd(q, torch.cat([k, k[:, :1]], 1), torch.cat([v, v[:, :1]], 1), cu)
    with pytest.raises(ValueError, match="D=48"):
        mod.varlen_attn_fwd(q[..., :24].repeat(1, 1, 2), k[..., :24].repeat(1, 1, 2), v[..., :24].repeat(1, 1, 2), cu)
    with pytest.raises(ValueError, match="cu_seqlens must be int32"):
        mod.varlen_attn_fwd(q, k, v, cu.long())
    with pytest.raises(ValueError, match="cu_seqlens must be int32"):
        mod.varlen_attn_fwd(q, k, v, cu[:1])
    with pytest.raises(ValueError, match=r"out must be torch.float16 \["):
        mod.varlen_attn_fwd(q, k, v, cu, out=torch.empty_like(q)[:, :2])
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(1, 4, 4, 2, 1, 16, 1, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="dist 'zipf'"):
        mod.seq_lengths(_pt(2, 4, 8, 2, 1, 16, 1, "fp16", dist="zipf"))
    with pytest.raises(ValueError, match="min_len <= max_len"):
        mod.seq_lengths(_pt(2, 9, 8, 2, 1, 16, 1, "fp16"))
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(2, 4, 8, 2, 1, 16, 1, "fp8"))
    with pytest.raises(ValueError, match="H_kv"):
        mod.example_args(_cfg(16, 16, 4, 2), _pt(2, 4, 8, 3, 2, 16, 1, "fp16"))


def test_examples_import_without_torch():
    """The launcher contract: the module imports with no torch (it is imported inside the functions)."""
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
        assert res.n_regs > 0 and res.shared >= 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The many-short-sequences point and the bidirectional fp16 D 64 MHA point at BASELINE."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_shared_memory_is_the_pipeline_buffers(shared_cache):
    """On sm_90 the K/V loads feed tl.dot and are multi-buffered: shared memory is the Q tile plus
    num_stages K and V tiles, 2 D (BLOCK_M + 2 num_stages BLOCK_N) bytes (the formula the sweep
    test checks against 227 KiB), and the dots are wgmma."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[0]
    for c in (_cfg(128, 64, 8, 2), _cfg(64, 128, 8, 3), _cfg(64, 32, 4, 1)):
        res = compile_kernel(mod._kernel, args=mod.example_args(c, p), arch="sm_90", num_warps=c["num_warps"],
                             num_stages=c["num_stages"], keep_ir=c["num_stages"] == 2)
        assert res.status == "ok", res.message
        assert res.shared == 2 * p["D"] * (c["BLOCK_M"] + 2 * c["num_stages"] * c["BLOCK_N"]), (c, res.shared)
        if res.ptx:
            assert "wgmma.mma_async" in res.ptx


# ----------------------------------------------------------------- the subprocess side
def _run_api() -> None:
    """Under TRITON_INTERPRET=1: the user-facing function's output and argument forms; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(HERE.parent))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    try:
        p = _pt(3, 5, 45, 4, 2, 32, 1, "fp16", seed=7)
        inputs = mod.make_inputs(p, seed=5, device="cpu")
        q, k, v, cu = inputs["q"], inputs["k"], inputs["v"], inputs["cu_seqlens"]
        cfg = dict(BLOCK_M=16, BLOCK_N=32, num_warps=4, num_stages=2)
        written = True
        same = True
        for causal in (True, False):
            out = torch.full_like(q, float("nan"))
            got = mod.varlen_attn_fwd(q, k, v, cu, causal, out=out, **cfg)
            written = written and not bool(torch.isnan(out).any())
            same = same and got.data_ptr() == out.data_ptr()
        plain = mod.varlen_attn_fwd(q, k, v, cu, True, 32 ** -0.5, **cfg)
        dflt = mod.varlen_attn_fwd(q, k, v, cu, True, **cfg)
        fused = dict(inputs)
        _as_fused_views(fused)
        from_views = mod.varlen_attn_fwd(fused["q"], fused["k"], fused["v"], cu, True, **cfg)
        mha = mod.varlen_attn_fwd(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), cu, True, **cfg)
        bf = mod.varlen_attn_fwd(q.bfloat16(), k.bfloat16(), v.bfloat16(), cu, True, **cfg)
        none = mod.varlen_attn_fwd(q[:0], k[:0], v[:0], torch.zeros(2, dtype=torch.int32), True, **cfg)
        res = {"every_element_written": written, "same_buffer": same,
               "fresh_output": plain.is_contiguous() and plain.shape == q.shape
               and plain.data_ptr() not in {t.data_ptr() for t in (q, k, v)},
               "dtype_kept": plain.dtype == torch.float16 and bf.dtype == torch.bfloat16,
               "default_scale_same": bool(torch.equal(plain, dflt)),
               "fused_views_same": bool(torch.equal(from_views, plain)),
               "gqa_equals_repeated_mha": bool(torch.equal(mha, plain)),
               "no_tokens_no_launch": none.shape == (0, 4, 32)}
    except Exception as exc:
        res = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "api":
        _run_api()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
