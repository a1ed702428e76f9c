"""examples/linear_attn_fwd.py against its fp32 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round11_c.py linear_attn_fwd``) that prints one JSON line; the
tests assert per case. A second subprocess (``... api``) checks what the value comparison
does not see: the output is a fresh contiguous [B, H, T, V] tensor in q's dtype, a zero decay
gives the no-decay result, the default scale is K^-0.5, and [B, T, H, K] inputs seen through
.transpose(1, 2) give what their contiguous copies give.

Shapes are small and odd: T not a multiple of BLOCK_T, smaller than it, a multiple of it, and
T = 1 (the chunk's row mask); V not a multiple of BLOCK_V and smaller than it, and several V
slices (the column mask, program_id(0) > 0); K a power of two (16 - 128) and not (24, 48: the
padded, masked head dim); with and without a decay (ALiBi slopes, and hand-set decays from
none (g = 0) to so strong that every factor beyond the diagonal underflows to 0); q, k, v as
slices of a fused [B, T, H, 2K + V] projection (time stride != K, head stride != T K).

Tolerance (x max|ref|, absolute, per element): the reference is the O(T^2) masked form in fp32
of the same (rounded) inputs; the kernel rounds A and the state to the inputs' dtype for the
dots (as fla does) and rounds the output once. bf16 1.5e-2: the interpreter's fp32 -> bf16
cast truncates (up to one bf16 ulp, 2^-7 relative, on the output alone); fp16 2e-3.
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
KERNEL = "linear_attn_fwd"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3}



def _cfg(bt, bv, w, s):
    return {"BLOCK_T": bt, "BLOCK_V": bv, "num_warps": w, "num_stages": s}


def _pt(B, H, T, K, V, decay, dtype):
    return {"B": B, "H": H, "T": T, "K": K, "V": V, "decay": decay, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "plain_t_tail_bf16": (_pt(2, 2, 77, 64, 64, 0, "bf16"), _cfg(32, 32, 4, 2)),
        "decay_t_below_chunk_v_below_block_fp16": (_pt(1, 3, 45, 32, 48, 1, "fp16"), _cfg(64, 64, 8, 3)),
        "head_dim_48_v_tail_bf16": (_pt(1, 2, 100, 48, 40, 1, "bf16"), _cfg(16, 32, 4, 1)),
        "exact_chunks_decay_bf16": (_pt(1, 2, 128, 64, 64, 1, "bf16"), _cfg(32, 64, 4, 2)),
        "chunk128_head128_decay_fp16": (_pt(1, 2, 200, 128, 128, 1, "fp16"), _cfg(128, 128, 8, 2)),
        "plain_v_slices_bf16": (_pt(1, 1, 150, 32, 96, 0, "bf16"), _cfg(16, 32, 8, 1)),
        "fused_qkv_views_fp16": (_pt(2, 3, 70, 32, 32, 0, "fp16"), _cfg(16, 16, 4, 3)),
        "fused_qkv_views_decay_bf16": (_pt(1, 2, 90, 64, 32, 1, "bf16"), _cfg(64, 16, 4, 2)),
        "extreme_decays_k16_fp16": (_pt(1, 3, 60, 16, 24, 1, "fp16"), _cfg(32, 128, 8, 2)),
        "head_dim_24_v_slices_bf16": (_pt(1, 2, 33, 24, 80, 1, "bf16"), _cfg(64, 32, 8, 3)),
        "single_step_fp16": (_pt(2, 2, 1, 64, 64, 1, "fp16"), _cfg(32, 64, 4, 1)),
    },
}
FUSED = ("fused_qkv_views_fp16", "fused_qkv_views_decay_bf16")
EXTREME = "extreme_decays_k16_fp16"

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(64, 32, 4, 2), _cfg(32, 128, 8, 3), _cfg(16, 16, 4, 1)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: q, k, v as slices of one fused [B, T, H, 2K + V] projection, seen
    as [B, H, T, *] through .transpose(1, 2); or hand-set decays: none (g = 0), an ordinary one
    and one so strong (exp(-30) a step) that the state and every off-diagonal factor vanish."""
    import torch

    if name in FUSED:
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        B, Hh, T, K = q.shape
        V = v.shape[3]
        buf = torch.randn((B, T, Hh, 2 * K + V + 8)).to(q.dtype) * 100.0     # the gap must not be read
        buf[..., :K] = q.transpose(1, 2)
        buf[..., K:2 * K] = k.transpose(1, 2)
        buf[..., 2 * K + 8:] = v.transpose(1, 2)
        inputs["q"] = buf[..., :K].transpose(1, 2)
        inputs["k"] = buf[..., K:2 * K].transpose(1, 2)
        inputs["v"] = buf[..., 2 * K + 8:].transpose(1, 2)
        assert inputs["q"].stride(2) == Hh * (2 * K + V + 8) and inputs["v"].stride(3) == 1
        assert torch.equal(inputs["q"], q) and torch.equal(inputs["v"], v)
    if name == EXTREME:
        inputs["g"] = torch.tensor([0.0, -0.7, -30.0], dtype=torch.float32)
        inputs["scale"] = 0.3


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["B"], point["H"], point["T"], point["V"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_api_output_and_argument_forms():
    res = _results("api")
    assert "error" not in res, res.get("error")
    assert res["fresh_contiguous"] and res["dtype_kept"], res
    assert res["zero_decay_same"] and res["default_scale_same"] and res["transposed_inputs_same"], res
    assert res["extreme_head_is_diagonal"], res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases (every sweep value of BLOCK_T,
    BLOCK_V, num_warps and num_stages, and BLOCK_T 128 beyond them); the T, V and K masks, both decay
    settings and both dtypes are hit."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    for ax in SWEEP_AXES:
        assert {c[ax] for _, c in cases} >= set(SWEEP_AXES[ax]), ax
    assert any(p["T"] % c["BLOCK_T"] for p, c in cases) and any(p["T"] < c["BLOCK_T"] for p, c in cases)
    assert any(p["T"] % c["BLOCK_T"] == 0 for p, c in cases) and any(p["T"] == 1 for p, _ in cases)
    assert any(p["V"] % c["BLOCK_V"] for p, c in cases) and any(p["V"] < c["BLOCK_V"] for p, c in cases)
    assert any(p["V"] > c["BLOCK_V"] and p["V"] % c["BLOCK_V"] for p, c in cases)       # several slices, a tail
    assert any(p["K"] & (p["K"] - 1) for p, _ in cases) and {16, 32, 64, 128} <= {p["K"] for p, _ in cases}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES) and {p["decay"] for p, _ in cases} == {0, 1}


def test_sweep_fits_the_points():
    """The study sweep: 72 configs (>= 40), BASELINE among them, every tunable over >= 2 values;
    at every POINT each config is valid, its example_args are the point's bytes, its grid is
    (V slices, B x H) with >= 128 CTAs and >= 16 chunks a CTA. (Every config was compiled for
    sm_90 with triton 3.6.0 at every point: all 216 compile, in <= 5 s each, 62-255 registers,
    5-160 KiB of shared memory. At the two K = 128 points (bf16, decay) 14 configs spill: BLOCK_V
    128 at 4 warps (2 words at BLOCK_T 16, 66-70 at 32, 130-148 at 64) and at 8 warps with
    BLOCK_T 64 (2-26), and BLOCK_T 64 x BLOCK_V 64 at 4 warps (10-24); at K = 64 only BLOCK_T 64
    x BLOCK_V 128 at 4 warps and 3 stages, 2 words: the fp32 state alone is K x BLOCK_V / 128
    registers a thread at 4 warps.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES) and all(len(v) >= 2 for v in SWEEP_AXES.values())
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert H.meta_nbytes(args) == mod.bytes_moved(p)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 128 and mod.loop_iterations(c, p) >= 16, (p, c)
            assert (args["BLOCK_T"], args["BLOCK_V"]) == (c["BLOCK_T"], c["BLOCK_V"])


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (q, k, v read once, o written once, g), more than the 50 MB L2 ten times
    over and >= 0.1 ms at 4.8 TB/s; grid and loop_iterations are the tiling."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "linear_attn_fwd", "decay_slopes"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["decay"] for p in mod.POINTS} == {0, 1} and {p["K"] for p in mod.POINTS} == {64, 128}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            B, Hh, T, K, V = (p[n] for n in ("B", "H", "T", "K", "V"))
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) == B * Hh * T * (2 * K + 2 * V) * 2 + 4 * Hh * p["decay"]
            assert mod.bytes_moved(p) > 10 * 50 * 10**6 and mod.bytes_moved(p) / 4.8e12 >= 0.1e-3
            dt = mod._torch_dtype(p["dtype"])
            for n, last in (("Q", K), ("Kp", K), ("Vp", V), ("O", V)):
                assert args[n].shape == (B, Hh, T, last) and args[n].dtype == dt and args[n].is_contiguous()
            assert (args["G"] is not None) == bool(p["decay"]) == args["HAS_DECAY"]
            assert args["G"] is None or (args["G"].shape == (Hh,) and args["G"].dtype == torch.float32)
            assert (args["T"], args["V"], args["H"], args["HEAD_K"], args["BLOCK_K"]) == (T, V, Hh, K, K)
            assert (args["stride_qb"], args["stride_qh"], args["stride_qt"]) == (Hh * T * K, T * K, K)
            assert (args["stride_vb"], args["stride_vh"], args["stride_vt"]) == (Hh * T * V, T * V, V)
            assert (args["stride_ob"], args["stride_oh"], args["stride_ot"]) == (Hh * T * V, T * V, V)
            assert args["scale"] == K ** -0.5
            assert mod.grid(cfg, p) == (triton.cdiv(V, cfg["BLOCK_V"]), B * Hh)
            assert mod.loop_iterations(cfg, p) == triton.cdiv(T, cfg["BLOCK_T"])
            assert mod.flops(p) == 4 * B * Hh * T * K * V >= 10**10
    assert mod.example_args(mod.BASELINE, mod.POINTS[1])["O"].dtype == torch.float16


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 3, 77, 48, 40, 1, "bf16")
    c = _cfg(32, 16, 4, 2)
    assert mod.grid(c, p) == (3, 6) and mod.loop_iterations(c, p) == 3
    assert mod.bytes_moved(p) == 2 * 3 * 77 * (96 + 80) * 2 + 12
    assert mod.bytes_moved(dict(p, decay=0)) == 2 * 3 * 77 * (96 + 80) * 2
    assert mod.flops(p) == 4 * 6 * 77 * 48 * 40
    args = mod.example_args(c, p)
    assert (args["HEAD_K"], args["BLOCK_K"]) == (48, 64) and args["HAS_DECAY"]
    assert mod.example_args(c, _pt(1, 1, 8, 8, 8, 0, "fp16"))["BLOCK_K"] == 16
    g = mod.decay_slopes(8)
    assert g.dtype == torch.float32 and torch.allclose(g, -(2.0 ** (-torch.arange(1, 9).float())))
    inputs = mod.make_inputs(p, device="cpu")
    assert inputs["q"].shape == (2, 3, 77, 48) and inputs["v"].shape == (2, 3, 77, 40)
    assert inputs["q"].dtype == torch.bfloat16 and inputs["g"].shape == (3,) and inputs["scale"] == 48 ** -0.5
    assert mod.make_inputs(dict(p, decay=0), device="cpu")["g"] is None
    ref = mod.reference(inputs)
    assert ref.shape == (2, 3, 77, 40) and ref.dtype == torch.float32
    # one output row by its definition, and the row blocks of the reference agree
    b, h, t = 1, 2, 50
    q, k, v = (inputs[n][b, h].double() for n in ("q", "k", "v"))
    w = torch.exp(inputs["g"][h].double() * torch.arange(t, -1, -1).double())       # exp(g (t - s)), s = 0..t
    want = ((k[:t + 1] @ q[t]) * w) @ v[:t + 1] * inputs["scale"]
    assert torch.allclose(ref[b, h, t].double(), want, rtol=1e-4, atol=1e-4)
    assert torch.allclose(mod.reference(inputs, rows_per_step=16), ref, rtol=1e-5, atol=1e-5)
    base = mod.torch_baseline(inputs)
    assert base.shape == (2, 3, 77, 40) and base.dtype == torch.bfloat16
    assert torch.allclose(mod.torch_baseline(inputs, chunk=16).float(), ref, atol=0.02 * float(ref.abs().max()))


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(1, 2, 8, 32, 16, 1, "fp16"), device="cpu")
    q, k, v, g = inputs["q"], inputs["k"], inputs["v"], inputs["g"]
    with pytest.raises(ValueError, match="BLOCK_T=48"):
        mod.linear_attn_fwd(q, k, v, g, BLOCK_T=48)
    with pytest.raises(ValueError, match="BLOCK_V=8"):
        mod.linear_attn_fwd(q, k, v, g, BLOCK_V=8)
    with pytest.raises(ValueError, match=r"q, k \[B, H, T, K\]"):
        mod.linear_attn_fwd(q[0], k[0], v[0])
    with pytest.raises(ValueError, match=r"q, k \[B, H, T, K\]"):
        mod.linear_attn_fwd(q, k[:, :, :4], v)
    with pytest.raises(ValueError, match=r"q, k \[B, H, T, K\]"):
        mod.linear_attn_fwd(q, k, v[:, :1])
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.linear_attn_fwd(q.float(), k.float(), v.float())
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.linear_attn_fwd(q, k.bfloat16(), v)
    with pytest.raises(ValueError, match=r"fp32 \[2\]"):
        mod.linear_attn_fwd(q, k, v, g.half())
    with pytest.raises(ValueError, match=r"fp32 \[2\]"):
        mod.linear_attn_fwd(q, k, v, g[:1])
    big = torch.zeros((1, 1, 4, 320), dtype=torch.float16)
    with pytest.raises(ValueError, match="K=320"):
        mod.linear_attn_fwd(big, big, big[..., :16])
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(1, 1, 4, 16, 16, 0, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(1, 1, 4, 16, 16, 0, "fp8"))
    out = mod.linear_attn_fwd(q[:, :, :0], k[:, :, :0], v[:, :, :0], g)       # no tokens: no launch
    assert out.shape == (1, 2, 0, 16) and out.dtype == torch.float16


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
    """BASELINE at the fp16 no-decay point (K 64), and with a padded head dim (K 96, masked)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    odd = dict(mod.POINTS[0], K=96, T=1000)
    for p in (mod.POINTS[1], odd):
        args = mod.example_args(mod.BASELINE, p)
        assert (args["BLOCK_K"] != args["HEAD_K"]) == (p is odd)
        res = compile_kernel(mod._kernel, args=args, arch=arch, num_warps=4, num_stages=2)
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_num_stages_changes_the_cubin(shared_cache):
    """The loop's q, k, v loads feed tl.dot and are pipelined: num_stages 1, 2, 3 give three
    cubins for sm_90 with growing shared memory (why SWEEP_AXES sweeps it)."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[1]
    res = [compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, p), arch="sm_90", num_warps=4,
                          num_stages=s, keep_ir=True) for s in (1, 2, 3)]
    assert all(r.status == "ok" for r in res)
    assert len({r.cubin for r in res}) == 3 and None not in {r.cubin for r in res}
    assert res[0].shared < res[1].shared < res[2].shared


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
        p = _pt(1, 3, 37, 32, 24, 0, "fp16")
        inputs = mod.make_inputs(p, seed=5, device="cpu")
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        cfg = dict(BLOCK_T=16, BLOCK_V=16, num_warps=4, num_stages=2)
        plain = mod.linear_attn_fwd(q, k, v, None, 32 ** -0.5, **cfg)
        zero = mod.linear_attn_fwd(q, k, v, torch.zeros(3), **cfg)
        # [B, T, H, K] buffers seen as [B, H, T, K]
        qt, kt, vt = (x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v))
        assert qt.stride(2) == 3 * 32
        tr = mod.linear_attn_fwd(qt, kt, vt, None, 32 ** -0.5, **cfg)
        dflt = mod.linear_attn_fwd(q, k, v, **cfg)
        g = torch.tensor([-0.1, -40.0, -1e-3])
        strong = mod.linear_attn_fwd(q, k, v, g, 0.5, **cfg)
        diag = ((q[0, 1].float() * k[0, 1].float()).sum(-1, keepdim=True) * v[0, 1].float() * 0.5)
        res = {"fresh_contiguous": plain.is_contiguous() and plain.shape == (1, 3, 37, 24)
               and plain.data_ptr() not in (q.data_ptr(), k.data_ptr(), v.data_ptr()),
               "dtype_kept": plain.dtype == torch.float16 and mod.linear_attn_fwd(
                   q.bfloat16(), k.bfloat16(), v.bfloat16(), **cfg).dtype == torch.bfloat16,
               "zero_decay_same": bool(torch.equal(plain, zero)),
               "default_scale_same": bool(torch.equal(plain, dflt)),
               "transposed_inputs_same": bool(torch.equal(tr, plain)),
               "extreme_head_is_diagonal": bool(torch.allclose(strong[0, 1].float(), diag, rtol=2e-3, atol=2e-3))}
    except Exception as exc:
        res = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "api":
        _run_api()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
