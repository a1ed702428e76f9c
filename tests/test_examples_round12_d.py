"""examples/attn_bwd_dkdv.py against torch autograd of fp32 attention on the CPU through
Triton's interpreter, its launcher hooks against the shapes, its study sweep against the
points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round12_d.py attn_bwd_dkdv``) that prints one JSON line; the
tests assert per case. A second subprocess (``... api``) checks what the value comparison
does not see: the function returns fresh contiguous (dk, dv) in q's dtype, the default scale
is D^-0.5, [B, T, H, D] inputs seen through .transpose(1, 2) give what their contiguous
copies give, and dK and dV are each close to the reference on their own scale.

Shapes are small and odd: T not a multiple of BLOCK_M nor BLOCK_N, smaller than both, a
multiple of both, and T = 1 (the query-row tail: lse = +inf, and the key tail: rows not
stored); BLOCK_M below, equal to and above BLOCK_N (the causal start tile rounds down to a
BLOCK_M boundary); head dims 16 - 128, powers of two and not (32 < 48, 80: BLOCK_D padded and
masked); causal and not; q, k, v as slices of a fused [B, T, 3, H, D] projection and dO a
transposed [B, T, H, D] buffer (time stride != D, head stride != T D).

Tolerance (x max|ref|, absolute, per element, over dK and dV stacked): the reference is
autograd of fp32 softmax attention of the same rounded inputs; the kernel rounds P and dS to
the inputs' dtype for their dots (as FlashAttention-2 does) and its outputs once. bf16 2e-2:
the interpreter's fp32 -> bf16 casts truncate (P, dS and the output, up to 2^-7 relative
each; 0.7 % seen); fp16 3e-3 (an fp16 ulp is 2^-10).
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
KERNEL = "attn_bwd_dkdv"
TOL = {"bf16": 2e-2, "fp16": 3e-3}



def _cfg(bm, bn, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s}


def _pt(B, Hh, T, D, causal, dtype):
    return {"B": B, "H": Hh, "T": T, "D": D, "causal": causal, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "causal_t_tail_d48_bf16": (_pt(1, 2, 77, 48, 1, "bf16"), _cfg(16, 32, 4, 2)),
        "plain_bn16_fp16": (_pt(2, 1, 50, 64, 0, "fp16"), _cfg(32, 16, 4, 1)),
        "causal_bm_above_bn_d32_fp16": (_pt(1, 2, 100, 32, 1, "fp16"), _cfg(64, 32, 8, 3)),
        "causal_exact_tiles_bf16": (_pt(1, 1, 128, 64, 1, "bf16"), _cfg(32, 64, 4, 4)),
        "t_below_both_tiles_d16_bf16": (_pt(2, 1, 13, 16, 0, "bf16"), _cfg(64, 64, 8, 1)),
        "causal_d80_fp16": (_pt(1, 1, 90, 80, 1, "fp16"), _cfg(16, 64, 8, 2)),
        "fused_qkv_views_bf16": (_pt(1, 2, 40, 32, 0, "bf16"), _cfg(16, 32, 4, 3)),
        "fused_qkv_views_causal_fp16": (_pt(2, 2, 45, 32, 1, "fp16"), _cfg(32, 32, 8, 2)),
        "causal_d128_bf16": (_pt(1, 1, 70, 128, 1, "bf16"), _cfg(32, 32, 8, 4)),
        "single_token_causal_fp16": (_pt(2, 1, 1, 64, 1, "fp16"), _cfg(16, 32, 4, 2)),
    },
}
FUSED = ("fused_qkv_views_bf16", "fused_qkv_views_causal_fp16")

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(32, 64, 4, 2), _cfg(64, 64, 8, 3), _cfg(16, 32, 4, 1), _cfg(64, 32, 8, 4)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: q, k, v as slices of one fused [B, T, 3, H, D] projection and dO a
    [B, T, H, D] buffer, all seen as [B, H, T, D] through .transpose(1, 2)."""
    import torch

    if name in FUSED:
        q, k, v, do = inputs["q"], inputs["k"], inputs["v"], inputs["do"]
        B, Hh, T, D = q.shape
        buf = torch.randn((B, T, 3, Hh, D)).to(q.dtype) * 100.0
        for i, t in enumerate((q, k, v)):
            buf[:, :, i] = t.transpose(1, 2)
        inputs["q"], inputs["k"], inputs["v"] = (buf[:, :, i].transpose(1, 2) for i in range(3))
        inputs["do"] = do.transpose(1, 2).contiguous().transpose(1, 2)
        assert inputs["q"].stride(2) == 3 * Hh * D and inputs["do"].stride(1) == D
        assert all(torch.equal(inputs[n], t) for n, t in (("q", q), ("k", k), ("v", v), ("do", do)))


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [2, point["B"], point["H"], point["T"], point["D"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_api_output_and_argument_forms():
    res = _results("api")
    assert "error" not in res, res.get("error")
    assert res["fresh_contiguous"] and res["dtype_kept"], res
    assert res["default_scale_same"] and res["transposed_inputs_same"], res
    assert res["dk_dv_separately_close"], res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases (every sweep value, and BLOCK_N 16
    beyond them); the T tails, BLOCK_M above and below BLOCK_N, the padded head dims, both
    causal settings and both dtypes are hit."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-12")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    for ax in SWEEP_AXES:
        assert {c[ax] for _, c in cases} >= set(SWEEP_AXES[ax]), ax
    assert any(p["T"] % c["BLOCK_M"] and p["T"] % c["BLOCK_N"] for p, c in cases)
    assert any(p["T"] < min(c["BLOCK_M"], c["BLOCK_N"]) for p, c in cases)
    assert any(p["T"] % c["BLOCK_M"] == 0 and p["T"] % c["BLOCK_N"] == 0 for p, c in cases)
    assert any(p["T"] == 1 for p, _ in cases)
    assert any(c["BLOCK_M"] > c["BLOCK_N"] and p["causal"] for p, c in cases)
    assert any(c["BLOCK_M"] < c["BLOCK_N"] and p["causal"] for p, c in cases)
    assert any(p["D"] & (p["D"] - 1) for p, _ in cases) and {16, 32, 64, 128} <= {p["D"] for p, _ in cases}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES) and {p["causal"] for p, _ in cases} == {0, 1}


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (>= 40), BASELINE among them, every tunable over >= 2 values;
    at every POINT each config is valid, its example_args are the point's bytes, its grid is
    (key tiles, B x H) with >= 128 CTAs and >= 16 query tiles a CTA. (Every config was compiled
    for sm_90 with triton 3.6.0 at every point: all 144 compile, in <= 5 s each, 80-255 registers,
    13-162 KiB of shared memory. Nothing spills at the D = 64 point; at the two D = 128 points 8
    configs each spill a little: BLOCK_M 64 x BLOCK_N 64 at 4 warps (6-24 words, 255 registers),
    BLOCK_M 64 x BLOCK_N 32 at 8 warps with 2-4 stages (2) and BLOCK_M 32 x BLOCK_N 32 at 4 warps
    and 2 stages (2).)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-12")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES) and all(len(v) >= 2 for v in SWEEP_AXES.values())
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 48 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert H.meta_nbytes(args) == mod.bytes_moved(p)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 128 and mod.loop_iterations(c, p) >= 16, (p, c)
            assert (args["BLOCK_M"], args["BLOCK_N"]) == (c["BLOCK_M"], c["BLOCK_N"])


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (q, k, v, dO read, lse, delta read, dK, dV written), more than the 50 MB
    L2 three times over; >= 0.05 ms of dots even at 990 TFLOP/s; grid and loop_iterations are
    the tiling."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "attn_bwd_dkdv", "forward_stats"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["causal"] for p in mod.POINTS} == {0, 1} and {p["D"] for p in mod.POINTS} == {64, 128}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            B, Hh, T, D = (p[n] for n in ("B", "H", "T", "D"))
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) == B * Hh * T * (6 * D * 2 + 8)
            assert mod.bytes_moved(p) > 3 * 50 * 10**6
            assert mod.flops(p) / 990e12 >= 0.25e-3
            dt = mod._torch_dtype(p["dtype"])
            for n in ("Q", "K", "V", "DO", "DK", "DV"):
                assert args[n].shape == (B, Hh, T, D) and args[n].dtype == dt and args[n].is_contiguous()
            for n in ("LSE", "DELTA"):
                assert args[n].shape == (B, Hh, T) and args[n].dtype == torch.float32
            assert (args["T"], args["H"], args["HEAD_DIM"], args["BLOCK_D"]) == (T, Hh, D, D)
            assert (args["stride_qb"], args["stride_qh"], args["stride_qt"]) == (Hh * T * D, T * D, D)
            assert (args["stride_ob"], args["stride_oh"], args["stride_ot"]) == (Hh * T * D, T * D, D)
            assert abs(args["sm_scale"] - D ** -0.5) < 1e-12 and args["CAUSAL"] == bool(p["causal"])
            assert mod.grid(cfg, p) == (triton.cdiv(T, cfg["BLOCK_N"]), B * Hh)
            pairs = T * (T + 1) // 2 if p["causal"] else T * T
            assert mod.flops(p) == 8 * B * Hh * pairs * D
            if not p["causal"]:
                assert mod.loop_iterations(cfg, p) == triton.cdiv(T, cfg["BLOCK_M"])
            else:
                full = triton.cdiv(T, cfg["BLOCK_M"])
                assert full // 2 <= mod.loop_iterations(cfg, p) <= full // 2 + 2
    assert mod.example_args(mod.BASELINE, mod.POINTS[1])["Q"].dtype == torch.float16


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 3, 77, 48, 1, "bf16")
    c = _cfg(32, 16, 4, 2)
    assert mod.grid(c, p) == (5, 6)
    # key tiles start at queries 0, 0, 32, 32, 64: 3 + 3 + 2 + 2 + 1 query tiles
    assert mod.loop_iterations(c, p) == -(-11 // 5)
    assert mod.loop_iterations(c, dict(p, causal=0)) == 3
    assert mod.bytes_moved(p) == 2 * 3 * 77 * (6 * 48 * 2 + 8)
    assert mod.flops(p) == 8 * 6 * (77 * 78 // 2) * 48
    args = mod.example_args(c, p)
    assert (args["HEAD_DIM"], args["BLOCK_D"]) == (48, 64) and args["CAUSAL"]
    assert mod.example_args(c, _pt(1, 1, 8, 8, 0, "fp16"))["BLOCK_D"] == 16
    inputs = mod.make_inputs(p, device="cpu")
    q, k, v, do = (inputs[n] for n in ("q", "k", "v", "do"))
    assert q.shape == (2, 3, 77, 48) and q.dtype == torch.bfloat16 and abs(inputs["sm_scale"] - 48 ** -0.5) < 1e-12
    # lse and delta from their definitions, one head
    b, h = 1, 2
    s = (q[b, h].double() @ k[b, h].double().T) * inputs["sm_scale"]
    s = s.masked_fill(torch.ones(77, 77, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(s, -1)
    o = torch.softmax(s, -1) @ v[b, h].double()
    assert torch.allclose(inputs["lse"][b, h].double(), lse, atol=1e-4)
    assert torch.allclose(inputs["delta"][b, h].double(), (do[b, h].double() * o).sum(-1), atol=1e-4)
    assert torch.allclose(mod.forward_stats(q, k, v, do, True, inputs["sm_scale"], rows_per_step=16)[0],
                          inputs["lse"], atol=1e-5)
    ref = mod.reference(inputs)
    assert ref.shape == (2, 2, 3, 77, 48) and ref.dtype == torch.float32
    # dV and dK of that head by their closed forms
    P = torch.softmax(s, -1)
    dP = do[b, h].double() @ v[b, h].double().T
    dS = P * (dP - (do[b, h].double() * o).sum(-1, keepdim=True))
    assert torch.allclose(ref[1, b, h].double(), P.T @ do[b, h].double(), atol=1e-4)
    assert torch.allclose(ref[0, b, h].double(), dS.T @ q[b, h].double() * inputs["sm_scale"], atol=1e-4)
    assert torch.allclose(mod.reference(inputs, max_scores=77 * 77), ref, atol=1e-5)
    base = mod.torch_baseline(inputs)
    assert base.shape == (2, 2, 3, 77, 48) and base.dtype == torch.bfloat16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(1, 2, 8, 32, 0, "fp16"), device="cpu")
    q, k, v, do, lse, delta = (inputs[n] for n in ("q", "k", "v", "do", "lse", "delta"))
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.attn_bwd_dkdv(q, k, v, do, lse, delta, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_N=8"):
        mod.attn_bwd_dkdv(q, k, v, do, lse, delta, BLOCK_N=8)
    with pytest.raises(ValueError, match=r"\[B, H, T, D\]"):
        mod.attn_bwd_dkdv(q[0], k[0], v[0], do[0], lse, delta)
    with pytest.raises(ValueError, match=r"\[B, H, T, D\]"):
        mod.attn_bwd_dkdv(q, k[:, :, :4], v, do, lse, delta)
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.attn_bwd_dkdv(q.float(), k.float(), v.float(), do.float(), lse, delta)
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.attn_bwd_dkdv(q, k, v, do.bfloat16(), lse, delta)
    with pytest.raises(ValueError, match=r"lse must be fp32 \[1, 2, 8\]"):
        mod.attn_bwd_dkdv(q, k, v, do, lse.half(), delta)
    with pytest.raises(ValueError, match=r"delta must be fp32 \[1, 2, 8\]"):
        mod.attn_bwd_dkdv(q, k, v, do, lse, delta[:, :1])
    big = torch.zeros((1, 1, 4, 320), dtype=torch.float16)
    with pytest.raises(ValueError, match="D=320"):
        mod.attn_bwd_dkdv(big, big, big, big, lse[:, :1, :4], delta[:, :1, :4])
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(1, 1, 4, 16, 0, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(1, 1, 4, 16, 0, "fp8"))
    dk, dv = mod.attn_bwd_dkdv(q[:, :, :0], k[:, :, :0], v[:, :, :0], do[:, :, :0], lse[:, :, :0],
                               delta[:, :, :0])       # no tokens: no launch
    assert dk.shape == dv.shape == (1, 2, 0, 32) and dk.dtype == torch.float16


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
def test_every_point_compiles(shared_cache, arch):
    """BASELINE at the fp16 non-causal point (D 64), and with a padded head dim (D 96, masked)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    odd = dict(mod.POINTS[0], D=96, T=1000)
    for p in (mod.POINTS[1], odd):
        args = mod.example_args(mod.BASELINE, p)
        assert (args["BLOCK_D"] != args["HEAD_DIM"]) == (p is odd)
        res = compile_kernel(mod._kernel, args=args, arch=arch, num_warps=4, num_stages=2)
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_num_stages_changes_the_cubin(shared_cache):
    """The loop's q / dO loads feed tl.dot and are pipelined: num_stages 1 - 4 give four cubins
    for sm_90, shared memory growing from 2 stages on (why SWEEP_AXES sweeps it)."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-12")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[1]
    res = [compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, p), arch="sm_90", num_warps=4,
                          num_stages=s, keep_ir=True) for s in SWEEP_AXES["num_stages"]]
    assert all(r.status == "ok" for r in res)
    assert len({r.cubin for r in res}) == 4 and None not in {r.cubin for r in res}
    assert res[1].shared < res[2].shared < res[3].shared


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
        p = _pt(1, 3, 37, 32, 1, "fp16")
        inputs = mod.make_inputs(p, seed=5, device="cpu")
        q, k, v, do, lse, delta = (inputs[n] for n in ("q", "k", "v", "do", "lse", "delta"))
        cfg = dict(BLOCK_M=16, BLOCK_N=16, num_warps=4, num_stages=2)
        dk, dv = mod.attn_bwd_dkdv(q, k, v, do, lse, delta, True, 1.0 / 32 ** 0.5, **cfg)
        dflt = mod.attn_bwd_dkdv(q, k, v, do, lse, delta, True, **cfg)
        qt, kt, vt, dot = (x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v, do))
        assert qt.stride(2) == 3 * 32
        tr = mod.attn_bwd_dkdv(qt, kt, vt, dot, lse, delta, True, 1.0 / 32 ** 0.5, **cfg)
        ref = mod.reference(inputs)
        bf = [t.bfloat16() for t in (q, k, v, do)]
        res = {"fresh_contiguous": all(t.is_contiguous() and t.shape == (1, 3, 37, 32) for t in (dk, dv))
               and dk.data_ptr() != dv.data_ptr()
               and not {dk.data_ptr(), dv.data_ptr()} & {t.data_ptr() for t in (q, k, v, do)},
               "dtype_kept": dk.dtype == dv.dtype == torch.float16 and mod.attn_bwd_dkdv(
                   *bf, lse, delta, True, **cfg)[0].dtype == torch.bfloat16,
               "default_scale_same": bool(torch.equal(dk, dflt[0]) and torch.equal(dv, dflt[1])),
               "transposed_inputs_same": bool(torch.equal(tr[0], dk) and torch.equal(tr[1], dv)),
               "dk_dv_separately_close": all(
                   float((got.float() - want).abs().max()) <= 3e-3 * float(want.abs().max())
                   for got, want in ((dk, ref[0]), (dv, ref[1])))}
    except Exception as exc:
        res = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "api":
        _run_api()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
