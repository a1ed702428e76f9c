"""examples/lora_shrink.py against its fp64 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its segment plan, its study sweep against
the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round11_a.py lora_shrink``) that prints one JSON line; the tests
assert per case. A second subprocess (``... prefilled_out``) runs cases into an ``out=``
buffer filled with NaN first (some of them a row-strided view of a wider buffer whose extra
columns must stay NaN), without max_seg_len (the host reads seg_indptr), so a row that no
program writes (an empty segment's neighbour, a base-model segment, a split with no K tile)
is a mismatch rather than whatever torch.empty held, and a stray write shows.

Shapes are small and odd: segments longer than BLOCK_M and not a multiple of it, shorter
than it (single-token decode segments among them), empty segments, base-model segments
(adapter -1) and a batch of them only; R not a multiple of BLOCK_N (two rank tiles, the last
masked) and smaller than it; H not a multiple of BLOCK_K (the K tail) and a multiple
(EVEN_K); SPLIT_K not dividing the K tiles and larger than them (splits with no K tile);
more adapters than segments; both A layouts ([L, H, R] and the transposed [L, R, H]) and A
as a rank slice of a buffer padded to a larger max rank (vLLM's stacking); x as a
row-strided view; int32 and int64 seg_indptr / adapter_ids; fp32 and x-dtype outputs; a
scale; both dtypes.

Tolerance (x max|ref|, absolute, per element): the reference multiplies the same (rounded)
inputs in fp64, so only the fp32 summation order and the one rounding to the output dtype
differ. bf16 1.5e-2: the interpreter's fp32 -> bf16 cast truncates (up to one bf16 ulp,
2^-7 relative); fp16 2e-3 (an fp16 ulp is 2^-10 relative); an fp32 output is far inside both.
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
KERNEL = "lora_shrink"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3}



def _cfg(bm, bn, bk, sk, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "SPLIT_K": sk, "num_warps": w, "num_stages": s}


def _pt(T, S, L, H, R, dtype, out, a_layout, sigma=0.0, base=0, scale=1.0):
    return {"T": T, "S": S, "L": L, "H": H, "R": R, "dtype": dtype, "out": out, "a_layout": a_layout,
            "sigma": sigma, "base": base, "scale": scale}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "grouped_tails_base_scale_bf16": (_pt(90, 6, 4, 200, 24, "bf16", "fp32", "rh", 1.0, base=1, scale=0.5),
                                          _cfg(16, 16, 64, 1, 4, 2)),
        "split_k_uneven_share_fp16": (_pt(77, 5, 5, 320, 16, "fp16", "same", "hr", 0.5), _cfg(32, 16, 32, 3, 4, 3)),
        "split_k_past_k_tiles_bf16": (_pt(40, 3, 2, 48, 8, "bf16", "same", "rh", 0.3), _cfg(16, 16, 16, 4, 2, 2)),
        "decode_single_tokens_bf16": (_pt(12, 12, 12, 256, 32, "bf16", "fp32", "rh"), _cfg(16, 32, 128, 2, 4, 3)),
        "long_and_empty_segments_fp16": (_pt(170, 5, 3, 96, 16, "fp16", "same", "hr"), _cfg(64, 16, 64, 1, 8, 2)),
        "block_m_wider_than_segments_bf16": (_pt(30, 6, 3, 128, 64, "bf16", "fp32", "hr", 0.8),
                                             _cfg(64, 64, 64, 1, 4, 3)),
        "int64_indices_strided_x_fp16": (_pt(50, 4, 6, 160, 16, "fp16", "fp32", "hr", 0.6),
                                         _cfg(16, 16, 32, 2, 8, 2)),
        "padded_rank_slice_bf16": (_pt(45, 3, 3, 64, 12, "bf16", "same", "rh", 0.4), _cfg(32, 16, 64, 1, 4, 2)),
        "all_base_model_fp16": (_pt(20, 2, 2, 64, 16, "fp16", "fp32", "hr", base=2), _cfg(16, 64, 16, 2, 4, 2)),
        "everything_smaller_than_blocks_bf16": (_pt(5, 2, 2, 40, 8, "bf16", "same", "hr", scale=2.0),
                                                _cfg(64, 64, 256, 1, 8, 3)),
        "wide_rank_split_fp16": (_pt(64, 2, 2, 512, 40, "fp16", "same", "rh", 0.2), _cfg(64, 16, 256, 4, 8, 3)),
    },
}

# lengths that replace segment_plan's in the named cases (summing to T)
LENGTHS = {"long_and_empty_segments_fp16": [0, 150, 3, 0, 17]}
INT64 = ("int64_indices_strided_x_fp16",)            # seg_indptr and adapter_ids as int64
STRIDED_X = ("int64_indices_strided_x_fp16", "split_k_uneven_share_fp16")   # x a [T, H] view of [T, H + 24]
PADDED_RANK = ("padded_rank_slice_bf16", "block_m_wider_than_segments_bf16")   # A a rank slice of a max-rank buffer

# prefilled_out: cases run into a NaN-filled out= buffer (every element written, nothing else)
PREFILLED = ("grouped_tails_base_scale_bf16", "split_k_past_k_tiles_bf16", "long_and_empty_segments_fp16",
             "all_base_model_fp16", "decode_single_tokens_bf16", "block_m_wider_than_segments_bf16")
STRIDED_OUT = ("long_and_empty_segments_fp16", "decode_single_tokens_bf16")   # out a [T, R] view of [T, R + 8]

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(64, 16, 64, 1, 4, 3), _cfg(64, 64, 256, 4, 8, 3), _cfg(16, 16, 256, 1, 4, 2)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: given segment lengths (empty segments, one long one); int64 index
    tensors; x as a row-strided view of a wider buffer; A as a rank slice of a buffer padded to
    a larger max rank (the padding garbage, so a read past R shows)."""
    import torch

    if name in LENGTHS:
        lens = torch.tensor(LENGTHS[name], dtype=torch.int64)
        assert lens.numel() == point["S"] and int(lens.sum()) == point["T"]
        ind = torch.zeros(point["S"] + 1, dtype=torch.int64)
        torch.cumsum(lens, 0, out=ind[1:])
        inputs["seg_indptr"] = ind.to(torch.int32)
        inputs["max_seg_len"] = int(lens.max())
    if name in INT64:
        inputs["seg_indptr"] = inputs["seg_indptr"].long()
        inputs["adapter_ids"] = inputs["adapter_ids"].long()
    if name in STRIDED_X:
        x = inputs["x"]
        wide = (torch.randn((x.shape[0], x.shape[1] + 24)) * 100.0).to(x.dtype)
        wide[:, 16:16 + x.shape[1]] = x
        inputs["x"] = wide[:, 16:16 + x.shape[1]]
        assert inputs["x"].stride() == (x.shape[1] + 24, 1) and torch.equal(inputs["x"], x)
    if name in PADDED_RANK:
        a = inputs["lora_a"]
        L, Hd, R = a.shape
        if point["a_layout"] == "rh":
            buf = (torch.randn((L, R + 20, Hd)) * 100.0).to(a.dtype)
            buf[:, :R, :] = a.transpose(1, 2)
            inputs["lora_a"] = buf[:, :R, :].transpose(1, 2)
            assert inputs["lora_a"].stride() == ((R + 20) * Hd, 1, Hd)
        else:
            buf = (torch.randn((L, Hd, R + 20)) * 100.0).to(a.dtype)
            buf[:, :, :R] = a
            inputs["lora_a"] = buf[:, :, :R]
        assert torch.equal(inputs["lora_a"], a)


def _active_programs(mod, cfg, point) -> int:
    """Programs of `_kernel` that do not return at once (their row block starts inside a segment)."""
    lens, _ = mod.segment_plan(point)
    blocks = int(((lens + cfg["BLOCK_M"] - 1) // cfg["BLOCK_M"]).sum())
    return blocks * -(-point["R"] // cfg["BLOCK_N"]) * cfg["SPLIT_K"]


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["T"], point["R"]]
    want = "fp32" if point["out"] == "fp32" else point["dtype"]
    assert res["out_dtype"] == {"fp32": "torch.float32", "bf16": "torch.bfloat16", "fp16": "torch.float16"}[want]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", PREFILLED)
def test_every_row_written(name):
    """Into a NaN-filled out= buffer, max_seg_len read from seg_indptr: every element written
    (no NaN left) and right; a strided out's extra columns untouched; the function returns that
    buffer."""
    res = _results("prefilled_out")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["pad_untouched"], res
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled out")


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases (every value of SWEEP_AXES among
    them); the row, rank and K tails, EVEN_K, the split shares, empty and base-model segments,
    both layouts, both outputs, both index dtypes and both dtypes are hit."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].items())
    for ax in SWEEP_AXES:
        assert {c[ax] for _, (_, c) in cases} >= set(SWEEP_AXES[ax]), ax

    def lens(name, p):
        import torch
        return torch.tensor(LENGTHS[name]) if name in LENGTHS else mod.segment_plan(p)[0]

    segs = [(n, p, c, lens(n, p)) for n, (p, c) in cases]
    assert any(bool(((ln > c["BLOCK_M"]) & (ln % c["BLOCK_M"] != 0)).any()) for _, _, c, ln in segs)
    assert any(bool((ln < c["BLOCK_M"]).all()) for _, _, c, ln in segs)
    assert any(bool((ln == 1).all()) for _, _, _, ln in segs)                    # decode
    assert any(bool((ln == 0).any()) for _, _, _, ln in segs)                    # empty segments
    assert any(p["R"] % c["BLOCK_N"] and p["R"] > c["BLOCK_N"] for _, p, c, _ in segs)
    assert any(p["R"] < c["BLOCK_N"] for _, p, c, _ in segs)
    assert any(p["H"] % c["BLOCK_K"] and p["H"] > c["BLOCK_K"] for _, p, c, _ in segs)
    assert any(p["H"] < c["BLOCK_K"] for _, p, c, _ in segs)
    assert any(p["H"] % c["BLOCK_K"] == 0 for _, p, c, _ in segs)              # EVEN_K
    ktiles = [(-(-p["H"] // c["BLOCK_K"]), c["SPLIT_K"]) for _, p, c, _ in segs]
    assert any(k % s and k > s > 1 for k, s in ktiles) and any(s > k for k, s in ktiles)
    assert any(0 < p["base"] < p["S"] for _, p, _, _ in segs) and any(p["base"] == p["S"] for _, p, _, _ in segs)
    assert any(p["L"] > p["S"] for _, p, _, _ in segs) and any(p["scale"] != 1.0 for _, p, _, _ in segs)
    assert {p["dtype"] for _, p, _, _ in segs} == set(mod.DTYPES)
    assert {p["out"] for _, p, _, _ in segs} == set(mod.OUT_DTYPES)
    assert {p["a_layout"] for _, p, _, _ in segs} == set(mod.A_LAYOUTS)
    assert {p["a_layout"] for n, p, _, _ in segs if n in PADDED_RANK} == set(mod.A_LAYOUTS)


def test_segment_plan_is_realistic():
    """Exactly T tokens in S segments of >= 1 each, spread by sigma (equal at 0), deterministic;
    the LoRA segments take every adapter (each once when S - base = L), base segments -1; at
    the POINTS: skewed prefill batches and decode segments of 1-8 tokens."""
    import torch

    mod = load_example(KERNEL)
    for p in mod.POINTS:
        lens, ids = mod.segment_plan(p)
        assert lens.dtype == torch.int64 and lens.shape == (p["S"],) and int(lens.sum()) == p["T"]
        assert int(lens.min()) >= 1 and (ids >= 0).all() and ids.unique().numel() == p["L"] == p["S"]
        again = mod.segment_plan(p)
        assert torch.equal(lens, again[0]) and torch.equal(ids, again[1])
    l0, _ = mod.segment_plan(mod.POINTS[0])
    assert float(l0.double().median()) < 0.75 * 512 and int(l0.max()) > 4 * 512       # skewed prefill
    l2, _ = mod.segment_plan(mod.POINTS[2])
    assert 1 <= int(l2.min()) and int(l2.max()) <= 8 and int((l2 == 1).sum()) > 100     # decode
    eq, _ = mod.segment_plan(_pt(64, 16, 4, 8, 8, "bf16", "same", "hr"))
    assert (eq == 4).all()
    lens, ids = mod.segment_plan(_pt(100, 10, 3, 8, 8, "bf16", "same", "hr", 1.0, base=4))
    assert int((ids == -1).sum()) == 4 and set(ids[ids >= 0].tolist()) == {0, 1, 2}
    with pytest.raises(ValueError, match="S <= T"):
        mod.segment_plan(_pt(3, 5, 2, 8, 8, "bf16", "same", "hr"))
    with pytest.raises(ValueError, match="base=6"):
        mod.segment_plan(_pt(10, 5, 2, 8, 8, "bf16", "same", "hr", base=6))


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES, each over >= 2 values, 64 configs with BASELINE among
    them; at every POINT each config is valid, runs the unmasked K loads (EVEN_K), has at least
    132 programs that do work, its example_args are the point's bytes (SPLIT_K 1; with a split,
    the fp32 workspace instead of out), and its pipeline buffers (num_stages x the x and A
    tiles) fit an H200's 227 KiB of shared memory per block. (Every config was compiled for
    sm_90 with triton 3.6.0 at every point: all 192 compile in <= 13 s, none spills, 30-172
    registers (the most at BLOCK_M 64 x BLOCK_N 64 x BLOCK_K 256, 4 warps), 4-192 KiB of shared
    memory: num_stages x (BLOCK_M + BLOCK_N) x BLOCK_K x 2 bytes at BLOCK_M 64, (num_stages - 1)
    x that at BLOCK_M 16.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert list(SWEEP_AXES) == list(mod.TUNABLES) and all(len(v) >= 2 for v in SWEEP_AXES.values())
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 64 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert args["EVEN_K"] and _active_programs(mod, c, p) >= 132, (p, c)
            assert mod.loop_iterations(c, p) >= 1
            ws = 0 if c["SPLIT_K"] == 1 else c["SPLIT_K"] * p["T"] * p["R"] * 4
            out = p["T"] * p["R"] * (4 if p["out"] == "fp32" else 2)
            assert H.meta_nbytes(args) - ws + (out if ws else 0) == mod.bytes_moved(p)
            assert c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * 2 <= 227 * 1024


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (x, the adapters' A, the index tensors read once, out written once),
    with the strides of the point's A layout; grid is (row blocks of the longest segment x rank
    tiles, SPLIT_K, S) and loop_iterations a split's K tiles; the working set exceeds the L2."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "secondary_kernels", "lora_shrink", "segment_plan"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["out"] for p in mod.POINTS} == set(mod.OUT_DTYPES)
    assert {p["a_layout"] for p in mod.POINTS} == set(mod.A_LAYOUTS)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            T, S, L, Hd, R = p["T"], p["S"], p["L"], p["H"], p["R"]
            dt = mod._torch_dtype(p["dtype"])
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            oe = 4 if p["out"] == "fp32" else 2
            assert mod.bytes_moved(p) == 2 * (T * Hd + L * Hd * R) + oe * T * R + 4 * (2 * S + 1)
            assert 2 * (T * Hd + L * Hd * R) > 5 * 50 * 2**20 and mod.bytes_moved(p) > 250 * 2**20
            assert args["X"].shape == (T, Hd) and args["X"].stride() == (Hd, 1) and args["X"].dtype == dt
            assert args["A"].shape == (L, Hd, R) and args["A"].dtype == dt
            assert args["A"].stride() == ((Hd * R, R, 1) if p["a_layout"] == "hr" else (R * Hd, 1, Hd))
            assert (args["stride_al"], args["stride_ak"], args["stride_ar"]) == args["A"].stride()
            if cfg["SPLIT_K"] == 1:
                assert H.meta_nbytes(args) == mod.bytes_moved(p), p
                assert args["OUT"].shape == (T, R) and args["OUT"].dtype == (torch.float32 if oe == 4 else dt)
                assert (args["stride_os"], args["stride_ot"]) == (0, R)
                assert mod.secondary_kernels(cfg, p) == []
            else:
                assert args["OUT"].shape == (cfg["SPLIT_K"], T, R) and args["OUT"].dtype == torch.float32
                assert (args["stride_os"], args["stride_ot"]) == (T * R, R)
                (sec,) = mod.secondary_kernels(cfg, p)
                assert sec["grid"] == triton.cdiv(T * R, mod.REDUCE_BLOCK) and sec["iterations"] == cfg["SPLIT_K"]
                assert sec["dram_bytes"] == 0
            assert args["SEG_INDPTR"].shape == (S + 1,) and args["ADAPTER_IDS"].shape == (S,)
            assert args["SEG_INDPTR"].dtype == args["ADAPTER_IDS"].dtype == torch.int32
            assert (args["R"], args["K"], args["scale"]) == (R, Hd, 1.0)
            assert args["EVEN_K"] == (Hd % cfg["BLOCK_K"] == 0)
            lens, _ = mod.segment_plan(p)
            assert mod.grid(cfg, p) == (triton.cdiv(int(lens.max()), cfg["BLOCK_M"]) * triton.cdiv(R, cfg["BLOCK_N"]),
                                        cfg["SPLIT_K"], S)
            assert mod.loop_iterations(cfg, p) == triton.cdiv(triton.cdiv(Hd, cfg["BLOCK_K"]), cfg["SPLIT_K"])
            assert mod.flops(p) == 2 * T * Hd * R >= 5 * 10**8
    assert mod.example_args(mod.BASELINE, mod.POINTS[0])["OUT"].dtype == torch.float32


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(90, 6, 4, 200, 24, "bf16", "fp32", "rh", 1.0, base=1, scale=0.5)
    c = _cfg(16, 16, 64, 3, 4, 2)
    lens, ids = mod.segment_plan(p)
    assert mod.grid(c, p) == (-(-int(lens.max()) // 16) * 2, 3, 6) and mod.loop_iterations(c, p) == 2
    t_lora = int(lens[ids >= 0].sum())
    used = int(ids[ids >= 0].unique().numel())
    assert mod.bytes_moved(p) == 2 * t_lora * 200 + 2 * used * 200 * 24 + 4 * 90 * 24 + 4 * 13
    assert mod.flops(p) == 2 * t_lora * 200 * 24
    assert mod.bytes_moved(dict(p, out="same")) == mod.bytes_moved(p) - 2 * 90 * 24
    args = mod.example_args(c, p)
    assert not args["EVEN_K"] and args["scale"] == 0.5 and args["OUT"].shape == (3, 90, 24)
    assert mod.example_args(_cfg(16, 16, 64, 1, 4, 2), dict(p, H=320))["EVEN_K"]
    inputs = mod.make_inputs(p, device="cpu")
    x, a = inputs["x"], inputs["lora_a"]
    assert x.shape == (90, 200) and x.dtype == torch.bfloat16 and x.is_contiguous()
    assert a.shape == (4, 200, 24) and a.stride() == (24 * 200, 1, 200)
    assert inputs["seg_indptr"].dtype == inputs["adapter_ids"].dtype == torch.int32
    assert torch.equal(inputs["seg_indptr"][1:].long() - inputs["seg_indptr"][:-1].long(), lens)
    assert torch.equal(inputs["adapter_ids"].long(), ids)
    assert inputs["max_seg_len"] == int(lens.max()) and inputs["out_dtype"] == torch.float32
    assert inputs["scale"] == 0.5
    ref = mod.reference(inputs)
    assert ref.shape == (90, 24) and ref.dtype == torch.float32
    ind = inputs["seg_indptr"].tolist()
    for s, ad in enumerate(ids.tolist()):
        rows = ref[ind[s]:ind[s + 1]]
        if ad < 0:
            assert (rows == 0).all()
        else:
            want = 0.5 * x[ind[s]:ind[s + 1]].float() @ a[ad].float()
            assert torch.allclose(rows, want, atol=1e-4)
    live = ref[(mod._token_adapters(inputs) >= 0)]
    assert 0.2 < float(live.std()) < 1.0                         # ~ N(0, 0.5^2)
    base = mod.torch_baseline(inputs)
    assert base.shape == (90, 24) and base.dtype == torch.float32
    hr = mod.make_inputs(dict(p, a_layout="hr", out="same"), device="cpu")
    assert hr["lora_a"].is_contiguous() and hr["out_dtype"] == torch.bfloat16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(40, 4, 3, 64, 16, "fp16", "fp32", "hr", 0.5), device="cpu")
    x, a, ind, ids = inputs["x"], inputs["lora_a"], inputs["seg_indptr"], inputs["adapter_ids"]
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.lora_shrink(x, a, ind, ids, BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.lora_shrink(x, a, ind, ids, BLOCK_K=8)
    with pytest.raises(ValueError, match="SPLIT_K=0"):
        mod.lora_shrink(x, a, ind, ids, SPLIT_K=0)
    with pytest.raises(ValueError, match=r"expected x \[T, H\] and lora_a \[L, H, R\]"):
        mod.lora_shrink(x, a[:, :32], ind, ids)
    with pytest.raises(ValueError, match=r"expected x \[T, H\] and lora_a \[L, H, R\]"):
        mod.lora_shrink(x, a[0], ind, ids)
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.lora_shrink(x, a.bfloat16(), ind, ids)
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.lora_shrink(x.float(), a.float(), ind, ids)
    with pytest.raises(ValueError, match=r"seg_indptr must be int32 / int64 \[S \+ 1\]"):
        mod.lora_shrink(x, a, ind.float(), ids)
    with pytest.raises(ValueError, match=r"adapter_ids must be int32 / int64 \[4\]"):
        mod.lora_shrink(x, a, ind, ids[:3])
    with pytest.raises(ValueError, match="must rise from 0 to T=40"):
        mod.lora_shrink(x, a, ind - 1, ids)
    with pytest.raises(ValueError, match="must rise from 0 to T=39"):
        mod.lora_shrink(x[:39], a, ind, ids)
    with pytest.raises(ValueError, match="out_dtype must be torch.float32"):
        mod.lora_shrink(x, a, ind, ids, out_dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"out must be a \[40, 16\]"):
        mod.lora_shrink(x, a, ind, ids, out=torch.empty((40, 16), dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"out must be a \[40, 16\]"):
        mod.lora_shrink(x, a, ind, ids, out=torch.empty((16, 40), dtype=torch.float32).T)
    with pytest.raises(ValueError, match="more than the grid's 65535"):
        mod.lora_shrink(x[:0], a, torch.zeros(65537, dtype=torch.int32), torch.zeros(65536, dtype=torch.int32))
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(4, 2, 2, 8, 8, "fp32", "same", "hr"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(4, 2, 2, 8, 8, "fp8", "same", "hr"))
    with pytest.raises(ValueError, match="out 'fp16'"):
        mod.bytes_moved(_pt(4, 2, 2, 8, 8, "fp16", "fp16", "hr"))
    with pytest.raises(ValueError, match="a_layout 'rhl'"):
        mod.example_args(mod.BASELINE, _pt(4, 2, 2, 8, 8, "fp16", "same", "rhl"))


def test_empty_problems_need_no_launch():
    """T = 0 (every segment empty) or R = 0: an empty out; H = 0: zeros; no kernel launched (on
    the CPU a launch would fail outside the interpreter)."""
    import torch

    mod = load_example(KERNEL)
    a = torch.randn((3, 16, 8)).half()
    out = mod.lora_shrink(torch.zeros((0, 16), dtype=torch.float16), a, torch.zeros(4, dtype=torch.int32),
                          torch.zeros(3, dtype=torch.int32))
    assert out.shape == (0, 8) and out.dtype == torch.float32
    ind = torch.tensor([0, 2, 5], dtype=torch.int32)
    ids = torch.tensor([0, -1], dtype=torch.int32)
    out = mod.lora_shrink(torch.randn((5, 0)).half(), torch.zeros((3, 0, 8), dtype=torch.float16), ind, ids,
                          out_dtype=torch.float16)
    assert out.shape == (5, 8) and out.dtype == torch.float16 and (out == 0).all()
    assert mod.lora_shrink(torch.randn((5, 16)).half(), a[:, :, :0], ind, ids).shape == (5, 0)


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
def test_other_points_and_the_reduction_compile(shared_cache, arch):
    """BASELINE at the other two points (fp16 out, the [L, R, H] layout), with a K tail (EVEN_K
    false) and int64 index tensors; the split-K reduction kernel."""
    import torch
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    tail = dict(mod.POINTS[0], H=4000)
    for p in mod.POINTS[1:] + [tail]:
        args = mod.example_args(cfg, p)
        assert args["EVEN_K"] == (p is not tail)
        if p is tail:
            args["SEG_INDPTR"] = torch.empty((p["S"] + 1,), dtype=torch.int64, device="meta")
            args["ADAPTER_IDS"] = torch.empty((p["S"],), dtype=torch.int64, device="meta")
        res = compile_kernel(mod._kernel, args=args, arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"
    p = mod.POINTS[1]
    ws = torch.empty((4, p["T"], p["R"]), dtype=torch.float32, device="meta")
    out = torch.empty((p["T"], p["R"]), dtype=torch.float16, device="meta")
    res = compile_kernel(mod._reduce_kernel, args=dict(WS=ws, OUT=out, numel=p["T"] * p["R"], R=p["R"],
                                                       stride_ws=ws.stride(0), stride_ot=p["R"], SPLIT_K=4,
                                                       BLOCK=mod.REDUCE_BLOCK), arch=arch, num_warps=4, num_stages=1)
    assert res.status == "ok", res.message


@pytest.mark.slow
def test_k_loop_is_pipelined(shared_cache):
    """The K loop's loads are software-pipelined for sm_90: the shared memory is num_stages copies
    of the x and A tiles at BLOCK_M 64, num_stages - 1 at BLOCK_M 16 (why SWEEP_AXES varies
    num_stages)."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[0]
    for bm, bufs in ((64, 0), (16, -1)):
        for s in (2, 3):
            cfg = _cfg(bm, 16, 256, 1, 4, s)
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=4,
                                 num_stages=s)
            assert res.status == "ok", res.message
            assert res.shared == (s + bufs) * (bm + 16) * 256 * 2, (bm, s, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run_cases() -> None:
    """Under TRITON_INTERPRET=1: every case through launch (and torch_baseline), compared with
    the reference; the output's dtype recorded. One JSON line."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(HERE.parent))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            out = mod.launch(inputs, cfg)
            ref = mod.reference(inputs)
            results[name] = H.compare(out, ref, point["dtype"], TOL)
            results[name]["out_dtype"] = str(out.dtype)
            results[name]["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"], TOL)
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into a NaN-filled out= buffer; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(HERE.parent))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    results = {}
    for name in PREFILLED:
        point, cfg = CASES[KERNEL][name]
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            T, R = point["T"], point["R"]
            pad = 8 if name in STRIDED_OUT else 0
            buf = torch.full((T, R + pad), float("nan"), dtype=inputs["out_dtype"])
            out = buf[:, :R]
            got = mod.lora_shrink(inputs["x"], inputs["lora_a"], inputs["seg_indptr"], inputs["adapter_ids"],
                                  scale=inputs["scale"], out=out, **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == buf.data_ptr()
            results[name]["pad_untouched"] = bool(torch.isnan(buf[:, R:]).all())
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled_out":
        _run_prefilled()
    else:
        _run_cases()


def test_cta_iterations_count_the_live_programs():
    """rank's ragged schedule: one count per program of grid(); the programs with work are the row
    blocks inside their segment (base-model segments have none), each running its split's K tiles."""
    mod = load_example(KERNEL)
    import math
    pt = mod.POINTS[0]
    lens, ids = mod.segment_plan(pt)
    for cfg in ({"BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 64, "SPLIT_K": 1}, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 256, "SPLIT_K": 4}):
        its = mod.cta_iterations(cfg, pt)
        assert len(its) == math.prod(mod.grid(cfg, pt))
        live = sum(-(-int(n) // cfg["BLOCK_M"]) for n, a in zip(lens.tolist(), ids.tolist()) if a >= 0)
        tiles_n = -(-pt["R"] // cfg["BLOCK_N"])
        assert sum(1 for x in its if x) == live * tiles_n * cfg["SPLIT_K"]
        # every live program's share: the K tiles split SPLIT_K ways
        assert sum(its) == live * tiles_n * -(-pt["H"] // cfg["BLOCK_K"])
