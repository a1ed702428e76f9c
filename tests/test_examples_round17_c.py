"""examples/wgrad_gemm.py (a linear layer's weight gradient dW = dY^T X, reduced over tokens, with
a split-K workspace and a deterministic reduction kernel) against its fp64 torch reference on the
CPU through Triton's interpreter, its launcher hooks against the shapes, its study sweep against
the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python
tests/test_examples_round17_c.py wgrad_gemm``) that prints one JSON line; the tests assert per
case. The subprocess fills every floating-point tensor torch.empty makes with NaN (dW and the
fp32 split-K workspace have no memset), so an element no CTA writes -- a partial of an empty
split share, a ragged edge -- is a NaN mismatch rather than whatever memory held. Each case also
runs a second time through ``wgrad_gemm(..., out=)`` into a NaN-filled view of a wider buffer
(a row stride > IN: the kernel's and the reduction's strided store) and must be bitwise equal to
the first (the fixed split order).

Shapes are small, odd and ragged: OUT / IN not multiples of the tile (masked rows / columns), T
not a multiple of BLOCK_K (the EVEN_K=False masked loop) and a multiple (EVEN_K), SPLIT_K 1 / 2 /
3 / 4 with even shares, a short last share and an empty one (k tiles < SPLIT_K x share), GROUP_M
1 / 2 / 8 with a partial last group, 16- to 128-wide tiles, both input dtypes, both output dtypes
(fp32 main grad, the inputs' dtype), dY / X as row-strided views of wider buffers and an X whose
feature dimension is not contiguous (copied by the wrapper).

Tolerance (x max|ref|, absolute, per element), keyed by dW's dtype: the reference is fp64 on the
same fp16 / bf16 inputs; the kernel multiplies in fp32 (products of two 8- or 11-bit mantissas
are exact) and sums in fp32 (error ~ sqrt(T) 2^-24 of the sum of |products|, < 1e-5 of max|ref|
at these T), adds the split partials in fp32, then rounds once: fp32 out 1e-4 bounds the sums;
bf16 / fp16 out add half an ulp on the GPU, up to one ulp with the interpreter's truncating cast,
an ulp <= 2^-7 = 7.8e-3 (bf16) / 2^-10 = 9.8e-4 (fp16) of max|ref|: bf16 1e-2, fp16 2e-3.
torch_baseline (torch's matmul in the inputs' dtype, or of the fp32-cast operands for an fp32
dW) stays inside them too.
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
KERNEL = "wgrad_gemm"
TOL = {"bf16": 1e-2, "fp16": 2e-3, "fp32": 1e-4}        # keyed by dW's dtype
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bm, bn, bk, g, s, w, st):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g, "SPLIT_K": s, "num_warps": w,
            "num_stages": st}


def _pt(T, IN, OUT, dtype, out_dtype="same"):
    return {"T": T, "IN": IN, "OUT": OUT, "dtype": dtype, "out_dtype": out_dtype}


# case name -> (point, cfg); comments: tiles (m x n), k tiles, the split shares
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 3 x 2 tiles, 7 k tiles (T tail of 4), shares 3 / 3 / 1; groups of 2 rows, the last partial
        "ragged_split3_bf16": (_pt(100, 50, 37, "bf16"), _cfg(16, 32, 16, 2, 3, 4, 2)),
        # 3 x 3 tiles, 5 k tiles (EVEN_K), shares 2 / 2 / 1 / 0: an empty share stores zeros
        "empty_share_fp16_fp32out": (_pt(80, 40, 70, "fp16", "fp32"), _cfg(32, 16, 16, 1, 4, 8, 3)),
        # 5 x 3 tiles, no split (dW stored by _kernel), EVEN_K, GROUP_M 2 over 5 rows
        "nosplit_grouped_bf16_fp32out": (_pt(128, 96, 80, "bf16", "fp32"), _cfg(16, 32, 32, 2, 1, 4, 3)),
        # 64 x 128 tiles: 3 x 2, 3 k tiles (EVEN_K), shares 2 / 1; GROUP_M 8 > tiles_m
        "big_tiles_split2_bf16": (_pt(96, 150, 130, "bf16"), _cfg(64, 128, 32, 8, 2, 4, 4)),
        # 128 x 128 tiles: 2 x 2, 2 k tiles with a tail (T 70), no split
        "block128_fp16": (_pt(70, 200, 140, "fp16"), _cfg(128, 128, 64, 1, 1, 8, 3)),
        # dY [90, 33] inside [90, 41], X [90, 45] inside [90, 64]; 2 x 1 tiles, 6 k tiles, shares 3 / 3
        "strided_rows_bf16_fp32out": (_pt(90, 45, 33, "bf16", "fp32"), _cfg(32, 64, 16, 8, 2, 8, 2)),
        # X given feature-strided (a transposed [IN, T] buffer: copied); 2 x 2 tiles, 4 k tiles, tail
        "transposed_x_fp16": (_pt(200, 24, 19, "fp16"), _cfg(16, 16, 64, 1, 1, 4, 4)),
        # 1 x 2 tiles, 3 k tiles (T tail), shares 1 / 1 / 1 / 0
        "tiny_split4_fp16": (_pt(40, 17, 9, "fp16"), _cfg(16, 16, 16, 2, 4, 4, 2)),
    },
}
STRIDED_ROWS = "strided_rows_bf16_fp32out"
TRANSPOSED_X = "transposed_x_fp16"

# configs compiled for sm_90 at the module's first POINT (BASELINE first) and for sm_120
COMPILE_CFGS = [None, _cfg(64, 128, 64, 1, 2, 4, 4), _cfg(128, 128, 64, 8, 4, 4, 3), _cfg(64, 128, 64, 8, 1, 8, 3)]
SM120_CFGS = [_cfg(64, 128, 64, 8, 1, 4, 3), _cfg(128, 128, 32, 1, 2, 8, 2)]


def _out_tol_key(point) -> str:
    return "fp32" if point["out_dtype"] == "fp32" else point["dtype"]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: dY / X as row-strided views; X with a non-unit feature stride."""
    import torch

    dy, x = inputs["dy"], inputs["x"]
    T, O = dy.shape
    I = x.shape[1]
    if name == STRIDED_ROWS:
        w = torch.zeros((T, O + 8), dtype=dy.dtype)
        w[:, :O] = dy
        inputs["dy"] = w[:, :O]
        w = torch.zeros((T, I + 19), dtype=x.dtype)
        w[:, :I] = x
        inputs["x"] = w[:, :I]
        assert inputs["dy"].stride() == (O + 8, 1) and inputs["x"].stride() == (I + 19, 1)
    if name == TRANSPOSED_X:
        inputs["x"] = x.t().contiguous().t()
        assert inputs["x"].stride() == (1, T)


def _case_inputs(mod, name, point):
    inputs = mod.make_inputs(point, seed=len(name), device="cpu")
    _prepare(name, point, inputs)
    return inputs


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    """launch() (NaN-filled dW and workspace) and wgrad_gemm(out=) into a NaN-filled strided view
    both match the reference, bitwise equal to each other; torch_baseline matches too."""
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    point = CASES[KERNEL][name][0]
    assert res["shape"] == [point["OUT"], point["IN"]] and res["dtype"] == _out_tol_key(point)
    for what in ("kernel", "out_view", "baseline"):
        assert res[what]["n_bad"] == 0, H.mismatch(res[what], f"{name} {what}")
    assert res["same_buffer"], f"{name}: wgrad_gemm(out=) did not return the caller's buffer"
    assert res["deterministic"], f"{name}: the out= run differs from the first"


def test_cases_cover_every_code_path():
    """Each tunable takes at least two values; both dtypes and output dtypes, EVEN_K on and off,
    ragged rows and columns, no split, even / uneven / empty split shares, a partial group and
    GROUP_M above the tile rows, strided and copied operands are all hit."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    seen = set()
    for name, (p, c) in CASES[KERNEL].items():
        shares = mod._shares(c, p)
        tiles_m = -(-p["OUT"] // c["BLOCK_M"])
        seen |= {f"in_{p['dtype']}", f"out_{p['out_dtype']}"}
        seen |= {"even_k" if p["T"] % c["BLOCK_K"] == 0 else "k_tail"}
        seen |= {"ragged_m"} if p["OUT"] % c["BLOCK_M"] else set()
        seen |= {"ragged_n"} if p["IN"] % c["BLOCK_N"] else set()
        seen |= {"no_split"} if c["SPLIT_K"] == 1 else set()
        seen |= {"even_shares"} if c["SPLIT_K"] > 1 and len(set(shares)) == 1 else set()
        seen |= {"short_share"} if 0 < min(shares) < max(shares) else set()
        seen |= {"empty_share"} if min(shares) == 0 else set()
        seen |= {"partial_group"} if 1 < c["GROUP_M"] < tiles_m and tiles_m % c["GROUP_M"] else set()
        seen |= {"group_above_rows"} if c["GROUP_M"] > tiles_m else set()
        seen |= {"multi_k_per_cta"} if max(shares) > 1 else set()
        assert sum(shares) == -(-p["T"] // c["BLOCK_K"]), name
    seen |= {"strided"} if STRIDED_ROWS in CASES[KERNEL] else set()
    seen |= {"copied"} if TRANSPOSED_X in CASES[KERNEL] else set()
    want = {"in_bf16", "in_fp16", "out_fp32", "out_same", "even_k", "k_tail", "ragged_m", "ragged_n", "no_split",
            "even_shares", "short_share", "empty_share", "partial_group", "group_above_rows", "multi_k_per_cta",
            "strided", "copied"}
    assert want <= seen, want - seen


def _smem_bound(cfg) -> int:
    """The pipeline's buffers: num_stages x (a dY^T [BLOCK_M, BLOCK_K] + an X [BLOCK_K, BLOCK_N]
    tile, 2 B an element), or the epilogue's fp32 [BLOCK_M, BLOCK_N] layout conversion."""
    return max(cfg["num_stages"] * (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg["BLOCK_K"] * 2,
               4 * cfg["BLOCK_M"] * cfg["BLOCK_N"])


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_M 64 / 128 x GROUP_M 1 / 8 x SPLIT_K 1 / 2 / 4 x 4 / 8
    warps x 3 / 4 stages; BLOCK_N 128, BLOCK_K 64), BASELINE among them; at every POINT each
    config is valid, every CTA has token tiles, the grid is at least 128 CTAs (the small-output
    point at 128 x 128 without a split is 128 tiles for 132 SMs: the under-filled end the split is
    for), and the buffers fit 227 KiB.
    (Every config was compiled for sm_90 with triton 3.6.0 at every point, through `occmodel table
    --compiled`: all 144 compile, none spills, ~5 min in all on 2 shared CPU cores (~1-3 s a
    config); shared memory 72-128 KiB, exactly num_stages x (BLOCK_M + BLOCK_N) x 64 x 2 B (1-3
    CTAs an SM by shared memory); registers: BLOCK_M 64 on 8 warps 64-74, on 4 warps 120-126;
    BLOCK_M 128 on 8 warps 99-116, on 4 warps 201-210 (the fp32 128 x 128 accumulator alone is
    128 a thread there). GROUP_M and the points' dtypes change no resource; SPLIT_K > 1 (an fp32
    workspace store) a few registers.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-17")[KERNEL][2]     # scripts/rank_study.py SWEEPS
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            tiles, splits = mod.grid(c, p)
            its = mod.cta_iterations(c, p)
            assert len(its) == tiles * splits >= 128 and min(its) >= 1, (p, c)
            assert mod.loop_iterations(c, p) == max(its)
            assert _smem_bound(c) <= H200_SMEM_PER_BLOCK, (p, c)
    # the points differ in character: at the BASELINE 1024 / 3584 tiles vs 128 (< 132 SMs)
    tiles = sorted(mod.grid(mod.BASELINE, p)[0] for p in mod.POINTS)
    assert tiles[0] < H200_SMS <= 4 * H200_SMS < tiles[1]
    assert {p["dtype"] for p in mod.POINTS} == {"bf16", "fp16"}
    assert {p["out_dtype"] for p in mod.POINTS} == {"fp32", "same"}


def test_launcher_hooks_agree_with_shapes():
    """At every point: example_args (meta tensors, dW or the [SPLIT_K, OUT, IN] fp32 workspace,
    the strides, EVEN_K), grid / loop_iterations / cta_iterations the split's, secondary_kernels
    (the reduction only when SPLIT_K > 1, from DRAM when the workspace outgrows the L2),
    bytes_moved (dY, X once, dW once), flops; inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "secondary_kernels", "wgrad_gemm"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3
    for cfg in [mod.BASELINE] + [c for c in COMPILE_CFGS if c]:
        for p in mod.POINTS:
            T, IN, OUT = p["T"], p["IN"], p["OUT"]
            dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[p["dtype"]]
            od = torch.float32 if p["out_dtype"] == "fp32" else dt
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["DY"].shape == (T, OUT) and args["X"].shape == (T, IN)
            assert args["DY"].dtype == args["X"].dtype == dt
            S = cfg["SPLIT_K"]
            if S == 1:
                assert args["OUT"].shape == (OUT, IN) and args["OUT"].dtype == od and args["stride_os"] == 0
            else:
                assert args["OUT"].shape == (S, OUT, IN) and args["OUT"].dtype == torch.float32
                assert args["stride_os"] == OUT * IN
            assert (args["M"], args["N"], args["T"]) == (OUT, IN, T)
            assert (args["stride_dyt"], args["stride_xt"], args["stride_om"]) == (OUT, IN, IN)
            assert args["EVEN_K"] == (T % cfg["BLOCK_K"] == 0)
            assert {k: args[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K")} == \
                {k: cfg[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K")}
            tiles = -(-OUT // cfg["BLOCK_M"]) * -(-IN // cfg["BLOCK_N"])
            k_tiles = -(-T // cfg["BLOCK_K"])
            assert mod.grid(cfg, p) == (tiles, S)
            its = mod.cta_iterations(cfg, p)
            assert len(its) == tiles * S and sum(its) == tiles * k_tiles
            assert mod.loop_iterations(cfg, p) == -(-k_tiles // S) == max(its)
            sec = mod.secondary_kernels(cfg, p)
            if S == 1:
                assert sec == []
            else:
                (r,) = sec
                assert r["name"] == "_reduce_kernel" and r["iterations"] == S
                assert r["grid"] == -(-OUT * IN // mod.REDUCE_BLOCK) and r["tile_bytes"] == 4 * mod.REDUCE_BLOCK
                assert r["dram_bytes"] == (r["tile_bytes"] if S * OUT * IN * 4 > 50 * 2**20 else 0)
            ob = 4 if p["out_dtype"] == "fp32" else 2
            assert mod.bytes_moved(p) == 2 * T * (IN + OUT) + ob * OUT * IN
            assert mod.flops(p) == 2 * T * IN * OUT
            assert H.meta_nbytes({k: args[k] for k in ("DY", "X")}) < 4 * 2**30
            assert H.meta_nbytes(args) < 4 * 2**30


def test_hooks_on_small_points_and_inputs():
    """make_inputs (shapes, dtypes, O(1) products, the seed's), reference / torch_baseline shapes
    and dtypes, and the wrapper's trivial shapes (no launch)."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(300, 50, 37, "bf16", "fp32")
    inputs = mod.make_inputs(p, seed=1, device="cpu")
    dy, x = inputs["dy"], inputs["x"]
    assert dy.shape == (300, 37) and x.shape == (300, 50) and dy.dtype == x.dtype == torch.bfloat16
    assert inputs["out_dtype"] == torch.float32
    ref = mod.reference(inputs)
    assert ref.shape == (37, 50) and ref.dtype == torch.float32 and 0.3 < float(ref.std()) < 3
    assert float(dy.float().std()) > 0.01 and float(x.float().std()) > 0.5
    base = mod.torch_baseline(inputs)
    assert base.shape == (37, 50) and base.dtype == torch.float32
    same = mod.make_inputs(_pt(64, 8, 8, "fp16"), device="cpu")
    assert same["out_dtype"] == torch.float16 and mod.torch_baseline(same).dtype == torch.float16
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["dy"], dy)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["dy"], dy)
    # empty OUT / IN and T = 0: no launch (T = 0 gives zeros)
    e = mod.wgrad_gemm(torch.ones(4, 0, dtype=torch.float16), torch.ones(4, 3, dtype=torch.float16))
    assert e.shape == (0, 3)
    z = mod.wgrad_gemm(torch.ones(0, 2, dtype=torch.bfloat16), torch.ones(0, 3, dtype=torch.bfloat16),
                       torch.float32)
    assert z.shape == (2, 3) and z.dtype == torch.float32 and not z.any()


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    dy = torch.ones(16, 8, dtype=torch.bfloat16)
    x = torch.ones(16, 4, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.wgrad_gemm(dy, x, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.wgrad_gemm(dy, x, BLOCK_K=8)
    with pytest.raises(ValueError, match="GROUP_M=0"):
        mod.wgrad_gemm(dy, x, GROUP_M=0)
    with pytest.raises(ValueError, match="SPLIT_K=0"):
        mod.wgrad_gemm(dy, x, SPLIT_K=0)
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.wgrad_gemm(dy, x.half())
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.wgrad_gemm(dy.float(), x.float())
    with pytest.raises(ValueError, match="expected dy"):
        mod.wgrad_gemm(dy, x[:8])
    with pytest.raises(ValueError, match="out_dtype"):
        mod.wgrad_gemm(dy, x, torch.float16)
    with pytest.raises(ValueError, match="out must be"):
        mod.wgrad_gemm(dy, x, out=torch.empty(8, 5, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(4, 4, 4, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="out_dtype 'bf16'"):
        mod.example_args(mod.BASELINE, _pt(64, 64, 64, "fp16", "bf16"))


def test_examples_import_without_torch():
    """The launcher contract: the module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


def _reduce_args(cfg, p):
    import torch

    od = torch.float32 if p["out_dtype"] == "fp32" else {"bf16": torch.bfloat16, "fp16": torch.float16}[p["dtype"]]
    M, N = p["OUT"], p["IN"]
    return dict(WS=torch.empty((cfg["SPLIT_K"], M, N), dtype=torch.float32, device="meta"),
                C=torch.empty((M, N), dtype=od, device="meta"), N=N, numel=M * N, stride_ws=M * N, stride_cm=N,
                SPLIT_K=cfg["SPLIT_K"], BLOCK=1024)


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more (64 / 128 rows, 4 / 8 warps, SPLIT_K 1 / 2 / 4) compile
    without spills inside 227 KiB; the dot runs as a bf16 wgmma; the reduction kernel compiles."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfgs = [mod.BASELINE] + COMPILE_CFGS[1:]
    for cfg, res in H.compile_results(KERNEL, cfgs, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and 0 < res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0, cfg
        assert res.shared <= _smem_bound(cfg), (cfg, res.shared)
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=8, num_stages=3, keep_ir=True)
    assert res.status == "ok", res.message
    assert "wgmma.mma_async" in res.ptx and ".bf16" in res.ptx
    red = compile_kernel(mod._reduce_kernel, args=_reduce_args(COMPILE_CFGS[2], mod.POINTS[1]), arch="sm_90",
                         num_warps=4, num_stages=3)
    assert red.status == "ok" and red.n_spills == 0, red.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) configs of 64 / 128 rows compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second point (an fp32 dW store) and the third (fp16 operands, split 2) at a config
    fitting both archs."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    for p, cfg in ((mod.POINTS[1], _cfg(64, 128, 64, 8, 1, 4, 3)), (mod.POINTS[2], _cfg(64, 128, 64, 8, 2, 4, 3))):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
        assert res.shared <= (H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK)


# ----------------------------------------------------------------- the subprocess side
def _run_cases() -> None:
    """Under TRITON_INTERPRET=1: each case through launch() with torch.empty's floating tensors
    NaN-filled, then through wgrad_gemm(out=) into a NaN-filled strided view; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(H.TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    plain_empty = torch.empty

    def nan_empty(*a, **kw):
        t = plain_empty(*a, **kw)
        if t.dtype.is_floating_point:
            t.fill_(float("nan"))
        return t

    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = _case_inputs(mod, name, point)
            ref = mod.reference(inputs)
            key = _out_tol_key(point)
            torch.empty = nan_empty
            try:
                out = mod.launch(inputs, cfg)
            finally:
                torch.empty = plain_empty
            M, N = ref.shape
            wide = torch.full((M + 3, N + 5), float("nan"), dtype=inputs["out_dtype"])
            view = wide[1:M + 1, 2:N + 2]
            got = mod.wgrad_gemm(inputs["dy"], inputs["x"], out=view, **cfg)
            res = H.compare(out, ref, key, TOL)
            res["dtype"] = key
            res["kernel"] = dict(res)
            res["out_view"] = H.compare(got, ref, key, TOL)
            res["baseline"] = H.compare(mod.torch_baseline(inputs), ref, key, TOL)
            res["same_buffer"] = got.data_ptr() == view.data_ptr() and bool(torch.isnan(wide[0]).all())
            res["deterministic"] = bool(torch.equal(got, out))
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run_cases()
