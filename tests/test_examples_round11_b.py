"""examples/selective_scan.py against its fp64 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round11_b.py selective_scan``) that prints one JSON line; the
tests assert per case. A second subprocess (``... state_and_out``) checks what the value
comparison does not see: the last state (return_last_state) against the reference
recurrence's, an ``out=`` buffer that is a view of a NaN-filled wider one (every element
written, the rest untouched, the same buffer returned), and u / z given as the two halves of
one [B, 2D, L] in_proj output giving the same output, bit for bit, as contiguous copies.

Shapes are small and odd: D not a multiple of BLOCK_D and smaller than it (the channel
mask), L not a multiple of BLOCK_L, shorter than it and a single step (the tail steps must
leave the carried state alone), exact tiles, a d_state N that is not a power of two (the
state mask), sequences of several chunks with slow decays (the state carried across chunks
matters), softplus inputs beyond its threshold of 20, every flag off and on (z, delta_bias,
softplus, the D skip), strided u / delta / z views and inputs that are not L-contiguous.

Tolerance (x max|ref|, absolute, per element): the reference runs the recurrence in fp64 from
the same (rounded) inputs, so only fp32 arithmetic (the scan's association order) and the one
rounding to the output dtype differ. bf16 1.5e-2: the interpreter's fp32 -> bf16 cast
truncates (up to one bf16 ulp, 2^-7 relative); fp16 2e-3 (an fp16 ulp is 2^-10); fp32 1e-5.
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
KERNEL = "selective_scan"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3, "fp32": 1e-5}



def _cfg(bd, bl, w, s=1):
    return {"BLOCK_D": bd, "BLOCK_L": bl, "num_warps": w, "num_stages": s}


def _pt(B, D, L, dtype, N=16, **flags):
    return {"B": B, "D": D, "L": L, "N": N, "dtype": dtype, **flags}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "mamba_call_ragged_d_and_l_bf16": (_pt(2, 13, 37, "bf16"), _cfg(8, 16, 4)),
        "exact_tiles_fp32": (_pt(1, 16, 64, "fp32"), _cfg(4, 32, 4)),
        "plain_delta_no_z_no_bias_fp16": (_pt(2, 10, 50, "fp16", z=False, delta_bias=False, softplus=False),
                                          _cfg(2, 8, 8)),
        "d_state_5_one_short_chunk_fp32": (_pt(1, 6, 29, "fp32", N=5), _cfg(1, 64, 16, 2)),
        "no_d_skip_many_chunks_bf16": (_pt(3, 9, 100, "bf16", D_skip=False), _cfg(8, 64, 8)),
        "single_step_fewer_channels_fp16": (_pt(2, 3, 1, "fp16"), _cfg(4, 16, 4, 2)),
        "slow_decay_long_memory_fp32": (_pt(1, 4, 300, "fp32"), _cfg(2, 32, 4)),
        "softplus_past_threshold_fp32": (_pt(2, 7, 45, "fp32", N=8), _cfg(4, 8, 8)),
        "bias_without_softplus_bf16": (_pt(1, 12, 40, "bf16", softplus=False), _cfg(1, 16, 16)),
        "xz_halves_strided_views_bf16": (_pt(2, 11, 33, "bf16"), _cfg(4, 16, 8)),
        "not_l_contiguous_inputs_fp32": (_pt(2, 9, 21, "fp32", N=12), _cfg(8, 8, 4)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(8, 32, 4), _cfg(1, 64, 8), _cfg(4, 16, 16)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: slow decays; delta past softplus's threshold; u and z as the two
    halves of one [B, 2D, L] buffer with delta a channel slice of a wider one; or every [B, *, L]
    input stored L-major ([B, L, *] contiguous, transposed)."""
    import torch

    if name == "slow_decay_long_memory_fp32":
        inputs["A"] = inputs["A"] * 0.01                      # decays of 0.99-0.9999 a step
    if name == "softplus_past_threshold_fp32":
        d = inputs["delta"].clone()
        d[:, :, ::5] = 28.0 + torch.rand(d[:, :, ::5].shape)    # dt = delta + bias > 20: softplus is dt itself
        d[:, ::3, 2::7] = -30.0                                 # exp(dt) ~ 1e-13: log1p's small end
        inputs["delta"] = d
    if name == "xz_halves_strided_views_bf16":
        u, z, dl = inputs["u"], inputs["z"], inputs["delta"]
        B, D, L = u.shape
        xz = torch.empty((B, 2 * D, L), dtype=u.dtype)
        xz[:, :D], xz[:, D:] = u, z
        wide = torch.randn((B, D + 5, L)).to(dl.dtype)
        wide[:, 2:2 + D] = dl
        inputs["u"], inputs["z"], inputs["delta"] = xz[:, :D], xz[:, D:], wide[:, 2:2 + D]
        assert inputs["u"].stride() == (2 * D * L, L, 1) and inputs["delta"].stride(0) == (D + 5) * L
    if name == "not_l_contiguous_inputs_fp32":
        for k in ("u", "delta", "z", "B", "C"):
            t = inputs[k]
            inputs[k] = t.transpose(1, 2).contiguous().transpose(1, 2)
            assert inputs[k].stride(2) != 1 and torch.equal(inputs[k], t)


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["B"], point["D"], point["L"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_last_state_out_buffer_and_xz_views():
    res = _results("state_and_out")
    assert "error" not in res, res.get("error")
    assert res["state_shape"] == [2, 13, 16] and res["state_fp32"], res
    assert res["state_err"] <= 1e-5 * res["state_scale"], res
    assert res["state_tail_err"] <= 1e-5 * res["state_tail_scale"], res
    assert res["same_buffer"] and res["pad_untouched"] and res["no_nan"], res
    assert res["out_err"] <= 1e-5 * res["out_scale"], res
    assert res["xz_views_same"], res
    assert res["empty_ok"], res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases and the sweep's values are all
    among them; the D, L and N tails, exact tiles, one-chunk and many-chunk sequences, every flag
    both ways and every dtype are hit."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k
    assert any(p["D"] % c["BLOCK_D"] for p, c in cases) and any(p["D"] < c["BLOCK_D"] for p, c in cases)
    assert any(p["L"] % c["BLOCK_L"] for p, c in cases) and any(p["L"] < c["BLOCK_L"] for p, c in cases)
    assert any(p["D"] % c["BLOCK_D"] == 0 and p["L"] % c["BLOCK_L"] == 0 for p, c in cases)
    assert any(p["L"] == 1 for p, _ in cases) and any(p["L"] >= 4 * c["BLOCK_L"] for p, c in cases)
    assert any(p["N"] & (p["N"] - 1) for p, _ in cases) and any(p["N"] != 16 for p, _ in cases)
    for i, flag in enumerate(("z", "delta_bias", "softplus", "D_skip")):
        assert {mod._flags(p)[i] for p, _ in cases} == {True, False}, flag
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES, each but num_stages over >= 2 values, 48 configs with
    BASELINE among them; at every POINT each config is valid, its example_args are the point's
    bytes, it fills the 132 SMs many times over, it walks L in cdiv(L, BLOCK_L) chunks, and its
    scan tensors are at most 64 elements a thread. (Every config was compiled for sm_90 with
    triton 3.6.0 at every point: all 144 compile, in at most ~11 s, 31-255 registers, 128 B to
    16 KiB of shared memory (the reduction over N crosses warps). One spills: 8 x 64 at 4 warps
    at the bf16 and fp16 points, 44 words a thread at 255 registers; at the fp32 point the same
    config fits in 255 registers.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert list(SWEEP_AXES) == list(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in SWEEP_AXES.items() if k != "num_stages") and SWEEP_AXES["num_stages"] == [1]
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 48 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert H.meta_nbytes(args) == mod.bytes_moved(p)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 4 * 132 and gy == p["B"], (p, c)
            assert mod.loop_iterations(c, p) == -(-p["L"] // c["BLOCK_L"])
            assert c["BLOCK_D"] * args["BLOCK_N"] * c["BLOCK_L"] <= 64 * 32 * c["num_warps"], c


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (u, delta, z read once, out written once, B and C once, the fp32 A, D and
    delta_bias once), with a real launch's strides; grid is (channel blocks, batch rows); the
    points are real Mamba layers bigger than the L2."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "selective_scan", "scan_torch"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["D"] for p in mod.POINTS} == {5120, 8192} and all(p["N"] == 16 for p in mod.POINTS)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            B, D, L, N = p["B"], p["D"], p["L"], p["N"]
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p), p
            dt = mod._torch_dtype(p["dtype"])
            e = torch.empty((), dtype=dt).element_size()
            assert 2 * B * D * L * e > 50 * 2**20 and mod.bytes_moved(p) > 500 * 2**20
            for k in ("U", "DELTA", "Z", "OUT"):
                assert args[k].shape == (B, D, L) and args[k].stride() == (D * L, L, 1) and args[k].dtype == dt
            for k in ("Bm", "Cm"):
                assert args[k].shape == (B, N, L) and args[k].stride() == (N * L, L, 1) and args[k].dtype == dt
            assert args["A"].shape == (D, N) and args["A"].dtype == torch.float32
            assert args["Dskip"].shape == args["DBIAS"].shape == (D,) and args["HLAST"] is None
            assert args["HAS_D"] and args["HAS_Z"] and args["HAS_DBIAS"] and args["SOFTPLUS"]
            assert not args["STORE_STATE"] and args["BLOCK_N"] == 16
            assert (args["D"], args["L"], args["N"]) == (D, L, N)
            assert (args["stride_ub"], args["stride_ud"], args["stride_zb"], args["stride_od"]) == (D * L, L, D * L, L)
            assert (args["stride_bb"], args["stride_bn"], args["stride_ad"]) == (N * L, L, N)
            assert mod.bytes_moved(p) == e * (4 * B * D * L + 2 * B * N * L) + 4 * (D * N + 2 * D)
            assert mod.grid(cfg, p) == (triton.cdiv(D, cfg["BLOCK_D"]), B)
            assert mod.loop_iterations(cfg, p) == triton.cdiv(L, cfg["BLOCK_L"])
            assert mod.flops(p) == B * D * L * (7 * N + 4) >= 5 * 10**9
    assert mod.example_args(mod.BASELINE, mod.POINTS[0])["OUT"].dtype == torch.bfloat16


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 10, 50, "fp16", N=5, z=False, delta_bias=False, softplus=False)
    c = _cfg(4, 16, 4)
    assert mod.grid(c, p) == (3, 2) and mod.loop_iterations(c, p) == 4
    assert mod.bytes_moved(p) == 2 * (3 * 2 * 10 * 50 + 2 * 2 * 5 * 50) + 4 * (10 * 5 + 10)
    assert mod.flops(p) == 2 * 10 * 50 * (7 * 5 + 3)
    assert mod.flops(_pt(2, 10, 50, "fp16", N=5, z=False, D_skip=False)) == 2 * 10 * 50 * (7 * 5 + 1)
    args = mod.example_args(c, p)
    assert args["Z"] is None and args["DBIAS"] is None and not args["HAS_Z"] and not args["SOFTPLUS"]
    assert args["BLOCK_N"] == 8 and args["N"] == 5 and args["HAS_D"]
    assert H.meta_nbytes(args) == mod.bytes_moved(p)
    inputs = mod.make_inputs(p, device="cpu")
    assert inputs["z"] is None and inputs["delta_bias"] is None and not inputs["delta_softplus"]
    assert inputs["u"].shape == (2, 10, 50) and inputs["u"].dtype == torch.float16
    assert inputs["B"].shape == inputs["C"].shape == (2, 5, 50) and inputs["A"].shape == (10, 5)
    assert inputs["A"].dtype == inputs["D"].dtype == torch.float32 and bool((inputs["A"] < 0).all())
    assert 1e-3 * 0.99 <= float(inputs["delta"].min()) and float(inputs["delta"].max()) <= 0.1 * 1.01
    full = mod.make_inputs(_pt(1, 64, 8, "bf16"), device="cpu")
    dt = torch.nn.functional.softplus(full["delta"].double() + full["delta_bias"].double()[:, None])
    assert full["delta_bias"].dtype == torch.float32 and 1e-4 < float(dt.median()) < 0.3
    ref = mod.reference(inputs)
    assert ref.shape == (2, 10, 50) and ref.dtype == torch.float64
    base = mod.torch_baseline(inputs)
    assert base.shape == (2, 10, 50) and base.dtype == torch.float16
    # the reference against a plain step-by-step loop of the recurrence
    u, dl, A, Bm, Cm, Dv = (inputs[k].double() for k in ("u", "delta", "A", "B", "C", "D"))
    h = torch.zeros(2, 10, 5, dtype=torch.float64)
    want = torch.empty(2, 10, 50, dtype=torch.float64)
    for t in range(50):
        h = torch.exp(dl[:, :, t, None] * A) * h + (dl[:, :, t] * u[:, :, t])[..., None] * Bm[:, None, :, t]
        want[:, :, t] = (h * Cm[:, None, :, t]).sum(-1) + Dv * u[:, :, t]
    assert torch.allclose(ref, want, rtol=1e-12, atol=1e-12)
    # in time chunks of 7 steps (the last one 1), as the full-size points run it
    mod.REF_CHUNK_ELEMS = 2 * 10 * 5 * 7
    y, h_last = mod.scan_torch(inputs, torch.float64, return_last_state=True)
    assert torch.allclose(y, want, rtol=1e-12, atol=1e-12) and torch.allclose(h_last, h, rtol=1e-12, atol=1e-12)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(2, 8, 12, "fp16", N=4), device="cpu")
    u, dl, A, Bm, Cm, Dv, z, db = (inputs[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias"))
    with pytest.raises(ValueError, match="BLOCK_D=6"):
        mod.selective_scan(u, dl, A, Bm, Cm, Dv, z, db, True, BLOCK_D=6)
    with pytest.raises(ValueError, match="BLOCK_L=0"):
        mod.selective_scan(u, dl, A, Bm, Cm, Dv, z, db, True, BLOCK_L=0)
    with pytest.raises(ValueError, match=r"u, delta \[B, D, L\]"):
        mod.selective_scan(u[0], dl[0], A, Bm, Cm)
    with pytest.raises(ValueError, match=r"A \[8, N\]"):
        mod.selective_scan(u, dl, A[:4], Bm, Cm)
    with pytest.raises(ValueError, match="A must be fp32"):
        mod.selective_scan(u, dl, A.half(), Bm, Cm)
    with pytest.raises(ValueError, match=r"B must be torch.float16 \[2, 4, 12\]"):
        mod.selective_scan(u, dl, A, Bm[:, :3], Cm)
    with pytest.raises(ValueError, match=r"C must be torch.float16"):
        mod.selective_scan(u, dl, A, Bm, Cm.float())
    with pytest.raises(ValueError, match=r"z must be torch.float16 \[2, 8, 12\]"):
        mod.selective_scan(u, dl, A, Bm, Cm, z=z[:, :, :6])
    with pytest.raises(ValueError, match=r"D must be fp32 \[8\]"):
        mod.selective_scan(u, dl, A, Bm, Cm, Dv.half())
    with pytest.raises(ValueError, match=r"delta_bias must be fp32 \[8\]"):
        mod.selective_scan(u, dl, A, Bm, Cm, delta_bias=db[:4])
    with pytest.raises(ValueError, match="not fp16, bf16 or fp32"):
        mod.selective_scan(u.double(), dl.double(), A, Bm.double(), Cm.double())
    with pytest.raises(ValueError, match="d_state N=300"):
        mod.selective_scan(u, dl, torch.zeros(8, 300), Bm, Cm)
    with pytest.raises(ValueError, match="L contiguous"):
        mod.selective_scan(u, dl, A, Bm, Cm, out=torch.empty((2, 12, 8), dtype=u.dtype).transpose(1, 2))
    with pytest.raises(ValueError, match=r"out must be a \[2, 8, 12\]"):
        mod.selective_scan(u, dl, A, Bm, Cm, out=torch.empty((2, 8, 12), dtype=torch.float32))
    with pytest.raises(ValueError, match="fp8"):
        mod.make_inputs(_pt(1, 4, 4, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="fp64"):
        mod.bytes_moved(_pt(1, 4, 4, "fp64"))


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
def test_other_points_and_flags_compile(shared_cache, arch):
    """BASELINE at the other two points (fp32, fp16) and with every flag off and N = 5 (no z, no
    bias, no softplus, no D: those terms compiled out; the state mask)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    bare = dict(mod.POINTS[0], N=5, z=False, delta_bias=False, softplus=False, D_skip=False)
    for p in mod.POINTS[1:] + [bare]:
        args = mod.example_args(cfg, p)
        assert args["HAS_Z"] == (p is not bare) == args["HAS_D"] == args["SOFTPLUS"]
        res = compile_kernel(mod._kernel, args=args, arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_num_stages_leaves_the_cubin_alone(shared_cache):
    """No dot and no pipelined load: num_stages 1, 2, 3 compile to the same cubin for sm_90 (why
    SWEEP_AXES holds num_stages at 1)."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[0]
    cfg = mod.BASELINE
    cubins = {compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=cfg["num_warps"],
                             num_stages=s, keep_ir=True).cubin for s in (1, 2, 3)}
    assert len(cubins) == 1 and None not in cubins


# ----------------------------------------------------------------- the subprocess side
def _run_state_and_out() -> None:
    """Under TRITON_INTERPRET=1: return_last_state against the fp64 recurrence's last state (also
    with an L tail: L = 45 at BLOCK_L 16), out= as a view of a NaN-filled wider buffer, u / z as
    the halves of one xz buffer against contiguous copies, and an empty sequence. One JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    try:
        res = {}
        kw = dict(BLOCK_D=4, BLOCK_L=16, num_warps=4, num_stages=1)
        inputs = mod.make_inputs(_pt(2, 13, 48, "fp32"), seed=3, device="cpu")
        args = [inputs[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias", "delta_softplus")]
        buf = torch.full((2, 16, 48 + 8), float("nan"), dtype=torch.float32)
        out = buf[:, 1:14, 4:52]
        got, state = mod.selective_scan(*args, True, out=out, **kw)
        ref, ref_state = mod.scan_torch(inputs, torch.float64, return_last_state=True)
        res["state_shape"], res["state_fp32"] = list(state.shape), state.dtype == torch.float32
        res["state_err"] = float((state.double() - ref_state).abs().max())
        res["state_scale"] = float(ref_state.abs().max())
        res["same_buffer"] = got.data_ptr() == out.data_ptr()
        mask = torch.ones_like(buf, dtype=torch.bool)
        mask[:, 1:14, 4:52] = False
        res["pad_untouched"] = bool(torch.isnan(buf[mask]).all())
        res["no_nan"] = not bool(torch.isnan(got).any())
        res["out_err"], res["out_scale"] = float((got.double() - ref).abs().max()), float(ref.abs().max())

        tail = mod.make_inputs(_pt(1, 6, 45, "fp32"), seed=4, device="cpu")
        targs = [tail[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias", "delta_softplus")]
        _, tstate = mod.selective_scan(*targs, True, **kw)
        _, tref = mod.scan_torch(tail, torch.float64, return_last_state=True)
        res["state_tail_err"] = float((tstate.double() - tref).abs().max())
        res["state_tail_scale"] = float(tref.abs().max())

        x = mod.make_inputs(_pt(2, 9, 40, "bf16"), seed=5, device="cpu")
        xz = torch.cat((x["u"], x["z"]), dim=1)
        a = mod.selective_scan(xz[:, :9], x["delta"], x["A"], x["B"], x["C"], x["D"], xz[:, 9:],
                               x["delta_bias"], True, **kw)
        b = mod.selective_scan(x["u"], x["delta"], x["A"], x["B"], x["C"], x["D"], x["z"], x["delta_bias"], True,
                               **kw)
        res["xz_views_same"] = torch.equal(a, b)

        e = mod.make_inputs(_pt(1, 4, 1, "fp16", N=4), device="cpu")
        e0 = {k: (v[:, :, :0] if k in ("u", "delta", "z", "B", "C") else v) for k, v in e.items()}
        eo, es = mod.selective_scan(*[e0[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias",
                                                       "delta_softplus")], True, **kw)
        res["empty_ok"] = eo.shape == (1, 4, 0) and es.shape == (1, 4, 4) and not bool(es.any())
    except Exception as exc:          # reported by the test
        res = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "state_and_out":
        _run_state_and_out()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
