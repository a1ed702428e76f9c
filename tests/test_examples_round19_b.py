"""examples/ssd_chunk_scan.py (Mamba-2's SSD chunk-scan output kernel: per (batch, chunk, head,
row block, P block) CTA the inter-chunk term C @ prev_state^T and a causal walk over the chunk's
tokens, C.B^T tile x decay x dt, then a dot with x) against its fp64 torch reference on the CPU
through Triton's interpreter, its launcher hooks against the shapes, its study sweep against
the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python tests/test_examples_round19_b.py
ssd_chunk_scan``) that prints one JSON line; the tests assert per case (the kernel and
torch_baseline, the same scan in eager fp32).

Shapes are small, odd and ragged: a ragged last chunk (L not a multiple of CHUNK) whose row
blocks past its end return at once, L below CHUNK (one short chunk), CHUNK not a multiple of
BLOCK_M (48 tokens in 32-row blocks: a masked tail block), BLOCK_K above BLOCK_M (a diagonal
step reaching past the block's rows) and below it (several steps a CTA), N not a power of two
(a masked state / C / B column tail), P not a multiple of BLOCK_P (masked columns), G = 1, G = H
and 1 < G < H, the D skip on and off, both x dtypes (bf16 / fp16) and all three state dtypes
(fp32 / bf16 / fp16), and x, C and B as strided views of one [B, L, H*P + 2*G*N] conv output
(xBC, as vLLM and mamba_ssm split it). BLOCK_M 16-128, BLOCK_P 16-64, BLOCK_K 16-64, 4 / 8
warps, 1-3 stages.

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same bf16 / fp16
inputs and fp32 / bf16 / fp16 states. The kernel, as mamba_ssm, rounds two operands to x's
dtype before the tensor-core dots: prev_state (fp32 -> bf16 / fp16) and the decay-weighted
C.B^T tile W; every product and sum after that is fp32 (products of 8- / 11-bit mantissas
exact, the sums ~sqrt(n) 2^-24), then one rounding of y to x's dtype. On the GPU these casts
round to nearest (2^-9 / 2^-11 relative, unbiased: the errors of the N + chunk terms of an
element mostly cancel); the interpreter's casts truncate (up to 2^-8 / 2^-10 relative, all
toward zero: the errors of W's terms add up instead of cancelling, a systematic shrink of the
intra-chunk term of up to 2^-8 / 2^-10 of its size), and y's own truncation costs up to an
ulp, 2^-7 / 2^-10 of an element <= max|ref|. Together: up to ~0.8 % + ~0.4 % (bf16) and
~0.1 % + ~0.1 % (fp16) of max|ref|. bf16 2e-2 and fp16 3e-3 bound that; the eager fp32
torch_baseline (one rounding at the end) stays far inside them. Measured: kernel max error
0.68-1.02 % (bf16; 1.02 % in the xBC case, whose mean error is 0.6 % of the mean |ref|) and
<= 0.06 % (fp16) of max|ref|; the baseline <= 0.30 % / 0.03 %.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "ssd_chunk_scan"
TOL = {"bf16": 2e-2, "fp16": 3e-3}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bm, bp, bk, w, st):
    return {"BLOCK_M": bm, "BLOCK_P": bp, "BLOCK_K": bk, "num_warps": w, "num_stages": st}


def _pt(B, L, H, G, P, N, Q, dtype, state_dtype, has_D):
    return {"B": B, "L": L, "H": H, "G": G, "P": P, "N": N, "CHUNK": Q, "dtype": dtype,
            "state_dtype": state_dtype, "has_D": has_D}


CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 3 chunks (last 13 tokens: its row block 1 returns at once), 2 groups of 2 heads, P 24 in
        # 16-column blocks, N 20 (masked to 32), D
        "ragged_groups_D_bf16": (_pt(2, 77, 4, 2, 24, 20, 32, "bf16", "fp32", True), _cfg(16, 16, 16, 4, 2)),
        # BLOCK_K 32 > BLOCK_M 16: one diagonal step reaches past the rows; last chunk 36 of 64
        "bk_over_bm_fp16_bf16state": (_pt(1, 100, 3, 1, 32, 64, 64, "fp16", "bf16", False), _cfg(16, 32, 32, 8, 1)),
        # L 20 < CHUNK 64: one short chunk, row block 1 returns; fp16 states, 3 stages
        "short_chunk_fp16state": (_pt(3, 20, 2, 1, 16, 16, 64, "bf16", "fp16", True), _cfg(32, 16, 16, 4, 3)),
        # CHUNK 48 in 32-row blocks (a 16-row masked tail block), G = H, P 40 / N 36 masked
        "chunk48_fp16_gh": (_pt(1, 130, 4, 4, 40, 36, 48, "fp16", "fp32", True), _cfg(32, 32, 16, 8, 2)),
        # x, C, B views of one xBC conv output; one 64-row block a chunk, 2 steps of 32
        "xbc_views_bf16": (_pt(1, 90, 2, 1, 32, 32, 64, "bf16", "fp32", False), _cfg(64, 32, 32, 4, 2)),
        # the BASELINE config at P 64, N 128 (the points' head / state sizes), ragged CHUNK 128
        "baseline_p64_n128": (_pt(1, 140, 2, 1, 64, 128, 128, "bf16", "fp32", True), _cfg(64, 64, 64, 4, 2)),
        # 128-row blocks, 32-token steps, L 200 < CHUNK 256: row block 1 walks 3 steps
        "bm128_fp16": (_pt(1, 200, 1, 1, 64, 64, 256, "fp16", "bf16", True), _cfg(128, 64, 32, 8, 3)),
    },
}
XBC = "xbc_views_bf16"

# configs compiled for each arch at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(64, 64, 64, 4, 2), _cfg(128, 64, 32, 8, 3), _cfg(64, 32, 32, 4, 1), _cfg(128, 32, 64, 8, 2)],
}
SM120_CFGS = [_cfg(64, 64, 32, 4, 2), _cfg(64, 32, 64, 8, 1), _cfg(128, 32, 32, 8, 1)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: x, C and B as views of one [B, L, H*P + 2*G*N] conv output."""
    import torch

    if name == XBC:
        x, C, Bm = inputs["x"], inputs["C"], inputs["Bm"]
        Bsz, L, Hh, P = x.shape
        G, N = C.shape[2], C.shape[3]
        xbc = torch.empty((Bsz, L, Hh * P + 2 * G * N), dtype=x.dtype)
        xbc[..., :Hh * P] = x.reshape(Bsz, L, -1)
        xbc[..., Hh * P:Hh * P + G * N] = Bm.reshape(Bsz, L, -1)
        xbc[..., Hh * P + G * N:] = C.reshape(Bsz, L, -1)
        inputs["x"] = xbc[..., :Hh * P].view(Bsz, L, Hh, P)
        inputs["Bm"] = xbc[..., Hh * P:Hh * P + G * N].view(Bsz, L, G, N)
        inputs["C"] = xbc[..., Hh * P + G * N:].view(Bsz, L, G, N)
        assert inputs["x"].stride(1) == Hh * P + 2 * G * N and not inputs["C"].is_contiguous()


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    p = CASES[kernel][name][0]
    assert res["shape"] == [p["B"], p["L"], p["H"], p["P"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_cases_cover_every_code_path():
    """Each tunable at >= 2 values; both dtypes, all state dtypes, D on / off, G = 1 / H / between,
    ragged last chunks with idle row blocks, CHUNK % BLOCK_M != 0, BLOCK_K above and below
    BLOCK_M, N and P needing masks."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["state_dtype"] for p, _ in cases} == set(mod.STATE_DTYPES)
    assert {p["has_D"] for p, _ in cases} == {True, False}
    assert {(p["G"] == 1, p["G"] == p["H"]) for p, _ in cases} >= {(True, False), (False, True), (False, False)}
    assert any(p["L"] % p["CHUNK"] and 0 in mod.cta_iterations(c, p) for p, c in cases)
    assert any(p["L"] < p["CHUNK"] for p, _ in cases)
    assert any(p["CHUNK"] % c["BLOCK_M"] for p, c in cases)
    assert any(c["BLOCK_K"] > c["BLOCK_M"] for _, c in cases) and any(c["BLOCK_K"] < c["BLOCK_M"] for _, c in cases)
    assert any(p["N"] & (p["N"] - 1) for p, _ in cases) and any(p["P"] % c["BLOCK_P"] for p, c in cases)


def _smem_bound(cfg) -> int:
    """An upper bound of the shared memory of a config at the points (P 64, N 128, 2-byte x / C /
    B), from what the sm_90 compiles showed: the C tile [BLOCK_M, 128], per stage a B tile [128,
    BLOCK_K] and an x tile [BLOCK_K, BLOCK_P], the state tile [128, BLOCK_P] (staged in fp32),
    and room for the layout conversions of the fp32 tiles."""
    bm, bp, bk, st = cfg["BLOCK_M"], cfg["BLOCK_P"], cfg["BLOCK_K"], max(cfg["num_stages"], 1)
    return 2 * bm * 128 + st * 2 * (128 * bk + bk * bp) + 4 * 128 * bp + 4 * bm * max(bk, bp) + 4096


def test_sweep_fits_the_points():
    """The study sweep: 48 configs over the TUNABLES with BASELINE among them; at every POINT each
    config is valid, launches far more than 132 CTAs (2.5k-16k), and its buffers fit an H200's
    227 KiB a block (_smem_bound holds for every compile). (Every config was compiled for sm_90
    with triton 3.6.0 at every point: all 144 compile, in ~1-6 s each (~3.7 min in all); 24-121
    KiB of shared memory (1 stage 24-48 KiB, 3 stages 55-121 KiB); registers 74-255: BLOCK_M 64
    on 4 warps 79-190, on 8 warps 74-171; BLOCK_M 128 on 4 warps 153-255, on 8 warps 98-191. One
    config spills: 128 x 64 x 64 on 4 warps, 1 stage, 8-12 bytes (255 registers).)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-19")[KERNEL][2]     # scripts/rank_study.py SWEEPS
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for v in SWEEP_AXES.values())
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy, gz = mod.grid(c, p)
            assert gx * gy * gz >= 10 * H200_SMS, (p, c)
            assert _smem_bound(c) <= H200_SMEM_PER_BLOCK, (p, c)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes, dtypes and strides of a launch (meta
    tensors), bytes_moved counts each tensor once, flops the causal triangle, grid /
    cta_iterations / loop_iterations agree; inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "ssd_chunk_scan"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")                 # one kernel a launch
    assert len(mod.POINTS) == 3
    assert len({(p["CHUNK"], p["G"], p["state_dtype"], p["has_D"], p["dtype"]) for p in mod.POINTS}) == 3
    dts = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            Bsz, L, Hh, G, P, N, Q = (p[k] for k in ("B", "L", "H", "G", "P", "N", "CHUNK"))
            nc = -(-L // Q)
            assert args["X"].shape == args["Y"].shape == (Bsz, L, Hh, P)
            assert args["C"].shape == args["Bm"].shape == (Bsz, L, G, N)
            assert args["DT"].shape == args["DA"].shape == (Bsz, Hh, nc, Q)
            assert args["S"].shape == (Bsz, nc, Hh, P, N) and args["S"].dtype == dts[p["state_dtype"]]
            assert args["X"].dtype == args["C"].dtype == args["Y"].dtype == dts[p["dtype"]]
            assert (args["D"] is not None) == p["has_D"] == args["HAS_D"]
            assert (args["stride_x_l"], args["stride_c_l"], args["stride_s_p"]) == (Hh * P, G * N, N)
            assert args["heads_per_group"] == Hh // G and args["CHUNK"] == Q and args["nchunks"] == nc
            assert args["BLOCK_N"] == 128 and {k: args[k] for k in ("BLOCK_M", "BLOCK_P", "BLOCK_K")} == \
                {k: cfg[k] for k in ("BLOCK_M", "BLOCK_P", "BLOCK_K")}
            assert H.meta_nbytes(args) < 4 * 2**30
            es = 4 if p["state_dtype"] == "fp32" else 2
            assert mod.bytes_moved(p) == H.meta_nbytes(args)         # every tensor once, y included
            assert mod.bytes_moved(p) == 4 * Bsz * L * Hh * P + 4 * Bsz * L * G * N + 8 * Bsz * Hh * nc * Q + \
                es * Bsz * nc * Hh * P * N + (4 * Hh if p["has_D"] else 0)
            g = mod.grid(cfg, p)
            assert g == (-(-Q // cfg["BLOCK_M"]) * -(-P // cfg["BLOCK_P"]), Bsz * nc, Hh)
            its = mod.cta_iterations(cfg, p)
            assert len(its) == g[0] * g[1] * g[2]
            rows = [-(-min((m + 1) * cfg["BLOCK_M"], Q) // cfg["BLOCK_K"]) for m in range(-(-Q // cfg["BLOCK_M"]))]
            assert its[:g[0]] == [r for r in rows for _ in range(g[0] // len(rows))]
            assert mod.loop_iterations(cfg, p) == -(-sum(rows) // len(rows))
            if L % Q == 0:
                assert sum(its) == Bsz * Hh * nc * sum(rows) * (g[0] // len(rows))
    # flops: the causal triangle, 2 l N P + (N + P) l (l + 1) per (b, chunk, head)
    p = mod.POINTS[0]
    assert mod.flops(p) == 2 * 80 * 16 * (2 * 256 * 128 * 64 + 192 * 256 * 257)


def test_hooks_on_small_points_and_inputs():
    """make_inputs' tensors (shapes, dtypes, dA_cs the within-chunk cumsum of dt * A, decreasing,
    the seed's), cta_iterations' idle row blocks of a ragged last chunk, the reference's and the
    baseline's shapes and dtypes, an empty batch."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 77, 4, 2, 24, 20, 32, "bf16", "bf16", True)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["x"].shape == (2, 77, 4, 24) and inp["x"].dtype == torch.bfloat16
    assert inp["C"].shape == inp["Bm"].shape == (2, 77, 2, 20) and inp["prev_states"].dtype == torch.bfloat16
    assert inp["dt"].shape == inp["dA_cs"].shape == (2, 4, 3, 32) and inp["D"].shape == (4,)
    assert (inp["dt"] > 0).all() and (inp["dA_cs"] < 0).all() and (inp["dA_cs"].diff(dim=-1) < 0).all()
    assert float(inp["x"].float().std()) > 0.5 and float(inp["prev_states"].float().abs().max()) > 0
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], inp["x"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], inp["x"])
    ref = mod.reference(inp)
    assert ref.shape == (2, 77, 4, 24) and ref.dtype == torch.float32 and 0.3 < float(ref.std()) < 10
    assert mod.torch_baseline(inp).dtype == torch.bfloat16
    cfg = _cfg(16, 16, 16, 4, 2)
    its = mod.cta_iterations(cfg, p)           # per (b, h): chunks of 32, 32, 13 tokens, 2 P blocks
    assert its[:12] == [1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 0, 0] and len(its) == 4 * 6 * 4
    assert mod.grid(cfg, p) == (4, 6, 4)
    assert mod.make_inputs(_pt(1, 8, 2, 1, 16, 16, 16, "fp16", "fp32", False), device="cpu")["D"] is None
    e = mod.ssd_chunk_scan(torch.ones(0, 16, 2, 16, dtype=torch.float16), torch.ones(0, 16, 1, 16, dtype=torch.float16),
                           torch.ones(0, 16, 1, 16, dtype=torch.float16), torch.ones(0, 2, 1, 16),
                           torch.ones(0, 2, 1, 16), torch.ones(0, 1, 2, 16, 16))
    assert e.shape == (0, 16, 2, 16)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    p = _pt(1, 40, 2, 1, 16, 16, 32, "bf16", "fp32", False)
    inp = mod.make_inputs(p, device="cpu")
    args = [inp[k] for k in ("x", "C", "Bm", "dt", "dA_cs", "prev_states")]
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.ssd_chunk_scan(*args, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.ssd_chunk_scan(*args, BLOCK_K=8)
    with pytest.raises(ValueError, match="bf16 / fp16"):
        mod.ssd_chunk_scan(args[0].float(), *args[1:])
    with pytest.raises(ValueError, match="x's dtype"):
        mod.ssd_chunk_scan(args[0], args[1].half(), *args[2:])
    with pytest.raises(ValueError, match="prev_states must be"):
        mod.ssd_chunk_scan(*args[:5], args[5][:, :, :1])
    with pytest.raises(ValueError, match="dt / dA_cs"):
        mod.ssd_chunk_scan(*args[:3], args[3][:, :, :1], args[4][:, :, :1], args[5])
    with pytest.raises(ValueError, match="D must be"):
        mod.ssd_chunk_scan(*args, torch.ones(3))
    with pytest.raises(ValueError, match="unit innermost"):
        mod.ssd_chunk_scan(args[0].transpose(2, 3).contiguous().transpose(2, 3), *args[1:])
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 8, 2, 1, 16, 16, 16, "fp32", "fp32", False), device="cpu")
    with pytest.raises(ValueError, match="state_dtype 'int8'"):
        mod.example_args(mod.BASELINE, _pt(1, 8, 2, 1, 16, 16, 16, "bf16", "int8", False))


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles_sm90(shared_cache, kernel):
    """On sm_90: BASELINE and three more (64 / 128 rows, 32 / 64 columns and steps, 4 / 8 warps,
    1-3 stages) compile without spills inside 227 KiB; the dots run as bf16 wgmma."""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], "sm_90"):
        assert res.status == "ok", f"{kernel} {cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and 0 < res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0
        assert res.shared <= _smem_bound(cfg), (cfg, res.shared)
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=4, num_stages=2, keep_ir=True)
    assert res.status == "ok", res.message
    assert "wgmma.mma_async" in res.ptx and ".bf16" in res.ptx


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) configs of 64 / 128 rows compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second point (bf16 states, D) and the third (fp16, 8 groups, CHUNK 128, D) at a config
    fitting both archs."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = _cfg(64, 32, 32, 4, 2)
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
        assert res.shared <= (H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK)


# ----------------------------------------------------------------- the subprocess side
if __name__ == "__main__":
    H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
