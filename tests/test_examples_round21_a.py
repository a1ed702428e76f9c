"""examples/sliding_window_attn.py (Mistral-style sliding-window causal attention forward, GQA,
online softmax over key tiles in three phases: the window's lower edge, the unmasked interior,
the causal diagonal) against its fp64 torch reference on the CPU through Triton's interpreter,
its launcher hooks against the shapes, its study sweep against the points, and a compile for
sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round20_d.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round21_a.py sliding_window_attn``) that prints one JSON
line. Shapes are small, odd and ragged: S not a multiple of BLOCK_M (query tails) nor of
BLOCK_N (masked key loads past S), S = 1, windows of 1 (each query sees only itself: lower-edge
tiles where whole rows are masked), below BLOCK_M (no interior), not a multiple of BLOCK_N, equal
to S and far above it (plain causal), windows with an interior for BLOCK_M below / equal to /
above BLOCK_N; MHA, GQA and MQA; D 16-128; q, k, v as views of one fused QKV projection; both
dtypes; BLOCK_M 16-64, BLOCK_N 16-32, 4 / 8 warps, 1-4 stages.

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same rounded inputs;
the kernel rounds P to the input dtype for the P @ V dot (a relative 2^-9 (bf16) / 2^-12 (fp16)
per weight, an error at most that of sum p |v| <= max|v|, and max|ref| is a sizeable fraction of
max|v| at these window sizes) and the output once (one ulp with the interpreter's truncating
cast). The harness's defaults (bf16 1e-2, fp16 2e-3) bound that; torch_baseline (SDPA in the
input dtype) stays inside them too on the CPU.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "sliding_window_attn"
ROLE = "held-out-21"
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
# the study sweep (scripts/rank_study.py SWEEPS["sliding_window_attn"] once the lead adds it)
AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [16, 32, 64], "num_warps": [4, 8], "num_stages": [1, 2, 3, 4]}


def _cfg(bm, bn, w=4, st=2):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": st}


def _pt(B, S, hq, hkv, D, window, dtype="bf16"):
    return {"B": B, "S": S, "H_q": hq, "H_kv": hkv, "D": D, "WINDOW": window, "dtype": dtype}


# case -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # GQA 2:1, window 7 < BLOCK_M: edge tiles only (lower edge + diagonal); query tail 13 of 16
        "window_below_block_gqa_fp16": (_pt(2, 45, 4, 2, 16, 7, "fp16"), _cfg(16, 16, 4, 2)),
        # BLOCK_N = 2 BLOCK_M, window 64: 1 lower-edge, 1 interior, 1 diagonal tile; key tail 22 of 32
        "interior_bn_above_bm_bf16": (_pt(1, 150, 2, 1, 32, 64, "bf16"), _cfg(16, 32, 4, 2)),
        # BLOCK_M = 2 BLOCK_N, window 100 (not a tile multiple): 2-3 edge + 4 interior tiles; MHA, D 64
        "interior_bm_above_bn_bf16": (_pt(1, 181, 2, 2, 64, 100, "bf16"), _cfg(32, 16, 8, 2)),
        # window 1: each query sees only itself; whole rows masked in the lower-edge tiles
        "window_one_fp16": (_pt(1, 33, 2, 2, 16, 1, "fp16"), _cfg(32, 16, 8, 3)),
        # window 4096 >> S: plain causal (no lower edge), MQA 4:1, D 64, 2 sequences
        "window_covers_seq_mqa_bf16": (_pt(2, 70, 4, 1, 64, 4096, "bf16"), _cfg(32, 32, 4, 1)),
        # window 37, BLOCK_M 64 > window: the lower edge spans 2-4 tiles of 16, no interior; tail 8 of 64
        "window_37_bm64_fp16": (_pt(1, 200, 3, 1, 32, 37, "fp16"), _cfg(64, 16, 4, 4)),
        # q, k, v views of one fused [B, S, H_q + 2 H_kv, D] projection; GQA 2:1, window 20
        "fused_qkv_views_gqa_bf16": (_pt(2, 50, 4, 2, 32, 20, "bf16"), _cfg(16, 16, 4, 3)),
        # one token a sequence (3 sequences): the only key is the query's own
        "single_token_fp16": (_pt(3, 1, 2, 1, 16, 8, "fp16"), _cfg(16, 32, 4, 2)),
        # D 128, S and window exact tile multiples (no tails, interior of one tile), MQA 2:1
        "d128_exact_tiles_bf16": (_pt(1, 96, 2, 1, 128, 64, "bf16"), _cfg(16, 16, 8, 2)),
        # window = S: plain causal at the boundary (the first key seen by the last query)
        "window_equals_seq_fp16": (_pt(1, 48, 2, 2, 16, 48, "fp16"), _cfg(16, 16, 4, 1)),
    },
}
FUSED = "fused_qkv_views_gqa_bf16"

# configs compiled for sm_90 at the module's first POINT (BASELINE first): none spills
COMPILE_CFGS = [_cfg(128, 64, 8, 2), _cfg(64, 32, 4, 3), _cfg(128, 32, 8, 4), _cfg(64, 16, 8, 1)]
SM120_CFGS = [_cfg(128, 64, 8, 2), _cfg(64, 32, 4, 2)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """FUSED: q, k, v become slices of one [B, S, H_q + 2 H_kv, D] buffer (token stride
    (H_q + 2 H_kv) x D), the rest of it filled with large values the kernel must not read."""
    import torch

    if name == FUSED:
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        B, S, hq, D = q.shape
        hkv = k.shape[2]
        buf = torch.randn((B, S, hq + 2 * hkv, D)).to(q.dtype) * 100.0
        buf[:, :, :hq] = q
        buf[:, :, hq:hq + hkv] = k
        buf[:, :, hq + hkv:] = v
        inputs["q"], inputs["k"], inputs["v"] = buf[:, :, :hq], buf[:, :, hq:hq + hkv], buf[:, :, hq + hkv:]
        assert inputs["q"].stride(1) == (hq + 2 * hkv) * D


def _phases(m0: int, S: int, W: int, bm: int, bn: int) -> tuple[int, int, int, int]:
    """The kernel's (lo, mid, full_hi, end) for the block at m0, as _kernel computes them."""
    lo = (max(m0 - W + 1, 0) // bn) * bn
    full_hi = (m0 // bn) * bn
    first_all = max(m0 + bm - W, 0)
    mid = min(max(-(-first_all // bn) * bn, lo), full_hi)
    return lo, mid, full_hi, min(S, m0 + bm)


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["B"], p["S"], p["H_q"], p["D"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")


def test_api_forms():
    """Default sm_scale = 1/sqrt(D); `out=` is filled and returned; a q whose head dim is not
    contiguous is copied, not misread; the output is fresh, contiguous, in q's dtype."""
    res = _results()["__api__"]
    assert "error" not in res, res.get("error")
    assert all(res.values()), res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values; both dtypes; MHA, GQA and MQA; query tails and S = 1; windows
    of 1, below BLOCK_M, not a tile multiple, = S and > S; an interior with BLOCK_M below and above
    BLOCK_N; a fused-projection view."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert any(p["H_q"] == p["H_kv"] for p, _ in cases)                              # MHA
    assert any(p["H_q"] > p["H_kv"] > 1 for p, _ in cases)                           # GQA
    assert any(p["H_q"] > p["H_kv"] == 1 for p, _ in cases)                          # MQA
    assert any(p["S"] % c["BLOCK_M"] for p, c in cases) and any(p["S"] % c["BLOCK_N"] for p, c in cases)
    assert any(p["S"] == 1 for p, _ in cases)
    assert any(p["WINDOW"] == 1 for p, _ in cases)
    assert any(1 < p["WINDOW"] < c["BLOCK_M"] for p, c in cases)
    assert any(p["WINDOW"] % c["BLOCK_N"] for p, c in cases if p["WINDOW"] > 1)
    assert any(p["WINDOW"] == p["S"] for p, _ in cases) and any(p["WINDOW"] > p["S"] for p, _ in cases)
    interior = set()
    for p, c in cases:
        bm, bn = c["BLOCK_M"], c["BLOCK_N"]
        for m0 in range(0, p["S"], bm):
            lo, mid, full_hi, end = _phases(m0, p["S"], p["WINDOW"], bm, bn)
            if mid < full_hi:
                interior.add((bm > bn) - (bm < bn))
    assert interior == {-1, 0, 1}
    assert FUSED in CASES[KERNEL]


def test_phases_partition_the_window():
    """For many (S, WINDOW, BLOCK_M, BLOCK_N): lo <= mid <= full_hi <= end, lo and mid and full_hi
    tile-aligned; every interior key is visible to every row of the block (no mask needed); every
    key a stored row sees lies in [lo, end); the tile count is _plane_iterations'."""
    mod = load_example(KERNEL)
    for S, W, bm, bn in itertools.product((1, 17, 100, 257), (1, 5, 16, 37, 64, 130, 1000), (16, 64),
                                          (16, 32, 64)):
        its = mod._plane_iterations(_cfg(bm, bn), {"S": S, "WINDOW": W})
        assert len(its) == -(-S // bm)
        for blk, m0 in enumerate(range(0, S, bm)):
            lo, mid, full_hi, end = _phases(m0, S, W, bm, bn)
            assert lo <= mid <= full_hi <= end and lo % bn == mid % bn == full_hi % bn == 0
            rows = range(m0, min(S, m0 + bm))
            if mid < full_hi:
                assert all(i - W < j <= i for i in range(m0, m0 + bm) for j in (mid, full_hi - 1))
            assert all(lo <= max(0, i - W + 1) and i < end for i in rows)
            assert its[blk] == (full_hi - lo) // bn + -(-(end - full_hi) // bn) == -(-(end - lo) // bn)


def test_launcher_hooks_agree_with_shapes():
    """At every point and compile config: example_args on meta with the launch's shapes, strides
    and scalars; the grid, per-CTA iterations (min / max / mean), bytes_moved and flops."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "sliding_window_attn"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    for cfg in [mod.BASELINE] + COMPILE_CFGS:
        for p in mod.POINTS:
            B, S, hq, hkv, D, W = (p[k] for k in ("B", "S", "H_q", "H_kv", "D", "WINDOW"))
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            for n, h in (("Q", hq), ("O", hq), ("K", hkv), ("V", hkv)):
                assert args[n].shape == (B, S, h, D) and args[n].dtype == dts[p["dtype"]]
                s = n.lower()
                assert (args[f"stride_{s}b"], args[f"stride_{s}t"], args[f"stride_{s}h"]) == (S * h * D, h * D, D)
            assert (args["seq_len"], args["window"], args["num_heads"]) == (S, W, hq)
            assert (args["GROUP"], args["HEAD_DIM"]) == (hq // hkv, D)
            assert abs(args["sm_scale"] - 1 / math.sqrt(D)) < 1e-12
            assert (args["BLOCK_M"], args["BLOCK_N"]) == (cfg["BLOCK_M"], cfg["BLOCK_N"])
            g = mod.grid(cfg, p)
            assert g == (-(-S // cfg["BLOCK_M"]), B * hq)
            its = mod.cta_iterations(cfg, p)
            assert len(its) == g[0] * g[1] and min(its) >= 1
            full = -(-(W + cfg["BLOCK_M"] - 1) // cfg["BLOCK_N"]) + 1          # a full window's tiles, at most
            assert max(its) <= min(full, -(-S // cfg["BLOCK_N"]))
            assert its[0] == -(-min(S, cfg["BLOCK_M"]) // cfg["BLOCK_N"])      # the first block: a triangle
            assert mod.loop_iterations(cfg, p) == -(-sum(its[:g[0]]) // g[0])
            assert mod.bytes_moved(p) == 2 * B * S * D * 2 * (hq + hkv)
            pairs = sum(min(i + 1, W) for i in range(S))
            assert mod.flops(p) == 4 * D * B * hq * pairs
            assert H.meta_nbytes(args) < 4 * 2**30


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, seeds; reference's and the baseline's shapes and dtypes; the
    reference with window 1 is v itself, with a window >= S causal attention."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 9, 4, 2, 16, 3, "fp16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["q"].shape == (2, 9, 4, 16) and inp["k"].shape == inp["v"].shape == (2, 9, 2, 16)
    assert inp["q"].dtype == torch.float16 and inp["window"] == 3 and inp["sm_scale"] == 0.25
    assert float(inp["q"].float().std()) > 0.5
    ref = mod.reference(inp)
    assert ref.shape == (2, 9, 4, 16) and ref.dtype == torch.float32
    assert mod.torch_baseline(inp).dtype == torch.float16
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["q"], inp["q"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["q"], inp["q"])
    one = dict(inp, window=1)
    assert torch.allclose(mod.reference(one), inp["v"].float().repeat_interleave(2, 2), atol=1e-6)
    wide = dict(inp, window=9)
    import torch.nn.functional as F
    causal = F.scaled_dot_product_attention(inp["q"].double().transpose(1, 2),
                                            inp["k"].double().repeat_interleave(2, 2).transpose(1, 2),
                                            inp["v"].double().repeat_interleave(2, 2).transpose(1, 2),
                                            is_causal=True, scale=0.25).transpose(1, 2)
    assert torch.allclose(mod.reference(wide, rows=4), causal.float(), atol=1e-5)
    assert torch.allclose(mod.reference(dict(inp, window=100)), causal.float(), atol=1e-5)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    q = torch.ones(1, 8, 4, 16, dtype=torch.float16)
    k = torch.ones(1, 8, 2, 16, dtype=torch.float16)
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.sliding_window_attn(q, k, k, 4, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_N=8"):
        mod.sliding_window_attn(q, k, k, 4, BLOCK_N=8)
    with pytest.raises(ValueError, match="WINDOW=0"):
        mod.sliding_window_attn(q, k, k, 0)
    with pytest.raises(ValueError, match="multiple of H_kv=3"):
        mod.sliding_window_attn(q, torch.ones(1, 8, 3, 16, dtype=torch.float16), torch.ones(1, 8, 3, 16,
                                                                                           dtype=torch.float16), 4)
    with pytest.raises(ValueError, match="share one fp16 / bf16"):
        mod.sliding_window_attn(q.float(), k.float(), k.float(), 4)
    with pytest.raises(ValueError, match=r"expected q \[B, S, H_q, D\]"):
        mod.sliding_window_attn(q[0], k[0], k[0], 4)
    with pytest.raises(ValueError, match="D=24"):
        mod.sliding_window_attn(torch.ones(1, 8, 4, 24, dtype=torch.float16),
                                torch.ones(1, 8, 2, 24, dtype=torch.float16), torch.ones(1, 8, 2, 24,
                                                                                        dtype=torch.float16), 4)
    with pytest.raises(ValueError, match="empty"):
        mod.sliding_window_attn(q[:, :0], k[:, :0], k[:, :0], 4)
    with pytest.raises(ValueError, match="out must be"):
        mod.sliding_window_attn(q, k, k, 4, out=torch.empty(1, 8, 4, 16))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 4, 2, 2, 16, 2, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="WINDOW=-1"):
        mod.flops(_pt(1, 4, 2, 2, 16, -1))


def _study_axes() -> tuple[dict, list | None]:
    """SWEEPS' axes (and valid configs) once the entry exists; else this file's AXES."""
    try:
        configs, _, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    except KeyError:
        return AXES, None
    assert axes == AXES
    return axes, configs


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_M 64 / 128 x BLOCK_N 16-64 x 4 / 8 warps x 1-4 stages)
    with BASELINE among them; at every point each config is valid, launches >= 132 CTAs, and its
    Q tile plus num_stages K/V tiles fit 227 KiB. (Every config was compiled for sm_90 with triton
    3.6.0 and 3.9.0 at every point, 144 compiles each: all compile and fit, 12-160 KiB shared
    memory. At the two D 128 points the 4-warp BLOCK_M 128 configs spill (the fp32 [128, 128]
    accumulator alone is 128 registers a thread, the Q tile 64 more): BLOCK_N 64 by 66-156 words
    (3.9) / 84-138 (3.6), BLOCK_N 32 by 4-22 / 10-12, and with 3.9 also 128 x 16 at 4 stages (4)
    and 64 x 64 at 2 stages (6) -- kept, as a production autotuner's space keeps them; 8 warps
    never spill (88-250 registers); nothing spills at the D 64 point (55-254 registers).)"""
    axes, configs = _study_axes()
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    assert configs is None or len(configs) == len(cfgs)
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            g = mod.grid(c, p)
            assert g[0] * g[1] >= H200_SMS, (p, c)
            assert 2 * p["D"] * (c["BLOCK_M"] + 2 * c["num_stages"] * c["BLOCK_N"]) <= H200_SMEM_PER_BLOCK
    # the points differ in character: a full window's steady state, the causal start-up only, a
    # window smaller than a block (edge tiles only); both dtypes; two head dims
    P = mod.POINTS
    assert P[0]["S"] >= 4 * P[0]["WINDOW"] and P[1]["S"] <= P[1]["WINDOW"] and P[2]["WINDOW"] <= 128
    assert {p["dtype"] for p in P} == set(mod.DTYPES) and len({p["D"] for p in P}) == 2
    for p in P:
        assert 10e9 <= mod.flops(p) <= 3e12 and mod.bytes_moved(p) < 2**31


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more compile without spills; and the other two points (fp16
    D 128 causal-only, bf16 D 64 small window) at BASELINE."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0, \
            (cfg, res.n_regs, res.shared, res.n_spills)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _api_checks(mod) -> dict:
    import torch

    inp = mod.make_inputs(_pt(1, 20, 4, 2, 16, 6, "fp16"), seed=3, device="cpu")
    q, k, v = inp["q"], inp["k"], inp["v"]
    cfg = dict(BLOCK_M=16, BLOCK_N=16, num_warps=4, num_stages=2)
    a = mod.sliding_window_attn(q, k, v, 6, 0.25, **cfg)
    b = mod.sliding_window_attn(q, k, v, 6, **cfg)                      # default 1/sqrt(16)
    out = torch.full_like(q, 9.0)
    c = mod.sliding_window_attn(q, k, v, 6, 0.25, out=out, **cfg)
    qt = q.transpose(2, 3).contiguous().transpose(2, 3)                 # head dim strided
    d = mod.sliding_window_attn(qt, k, v, 6, 0.25, **cfg)
    return {"default_scale_same": bool(torch.equal(a, b)), "out_filled": c is out and bool(torch.equal(c, a)),
            "strided_head_dim_same": bool(torch.equal(d, a)), "fresh_contiguous": bool(a.is_contiguous()),
            "dtype_kept": a.dtype == torch.float16}


def _run() -> None:
    """Each case under the interpreter (bf16 dots widened as H.run_cases does), its reference and
    torch_baseline compared; plus the API checks under "__api__"."""
    import json
    import os
    import sys

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
            results[name] = H.compare(out, ref, point["dtype"])
            results[name]["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"])
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        results["__api__"] = _api_checks(mod)
    except Exception as exc:
        results["__api__"] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run()
