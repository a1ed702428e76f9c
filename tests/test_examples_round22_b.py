"""examples/block_diag_matmul.py (a Monarch / block-diagonal linear layer forward: G independent
[b_in, b_out] blocks, x [M, G*b_in] -> y [M, G*b_out], optional bias, tl.dot with fp32
accumulation) against its fp64 torch reference on the CPU through Triton's interpreter, its
launcher hooks against the shapes, its study sweep against the points, and a compile for sm_90
and sm_120 from its own ``example_args``.

As in test_examples_round21_b.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round22_b.py block_diag_matmul``) that prints one JSON line.
Shapes are small, odd and ragged: M not a multiple of BLOCK_M (a last row tile with wrapped rows)
and M below BLOCK_M (one tile, most rows wrapped); b_out not a multiple of BLOCK_N (EVEN_N False:
wrapped W columns, masked stores) and a multiple; b_in not a multiple of BLOCK_K (EVEN_K False:
the masked last step), below one BLOCK_K (a single masked step) and a multiple; square and
rectangular blocks both ways (b_in < b_out: an up projection, b_in > b_out: a down one); 2-5
groups; with and without the bias; fp16 and bf16; x a column slice of a wider buffer (its row
stride read in place) and W a transposed view of a [G, b_out, b_in] checkpoint (K-contiguous
W, stride_wn != 1); BLOCK_M / N / K 16-64, 2-8 warps, num_stages 1-4.

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same rounded x, W and
bias; the kernel multiplies them exactly and sums in fp32 (b_in <= 96 terms: ~1e-6 relative) and
rounds once to x's dtype (half an ulp on the GPU, up to one with the interpreter's truncating bf16
cast: 2^-10 fp16, 2^-7 bf16 of an element <= max|ref|). The harness's defaults (fp16 2e-3, bf16
1e-2) bound that. torch_baseline (bmm in x's dtype, then the bias: two roundings) stays inside too.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "block_diag_matmul"
ROLE = "held-out-22"
SM120_SMEM_PER_BLOCK = 99 * 1024
H200_SMEM_PER_BLOCK = 227 * 1024

# the study sweep (scripts/rank_study.py's SWEEPS entry, added by the lead, must equal it)
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8],
              "num_stages": [2, 3, 4]}


def _cfg(bm, bn, bk, w=4, st=3):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": st}


def _pt(M, G, b_in, b_out, bias=False, dtype="fp16"):
    return {"M": M, "G": G, "b_in": b_in, "b_out": b_out, "bias": bias, "dtype": dtype}


# case -> (point, cfg); comments: row tiles x column tiles x K steps, per group
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 3 square groups of 32; 3 row tiles of 16 (tail 5) x 1 x 1 step; bias; EVEN_K, EVEN_N
        "square_even_bias_fp16": (_pt(37, 3, 32, 32, True), _cfg(16, 32, 32, 4, 2)),
        # 2 groups 40 -> 24 (down); 2 row tiles of 32 (tail 18) x 2 of 16 (tail 8) x 3 steps of 16 (tail 8)
        "down_ragged_bf16": (_pt(50, 2, 40, 24, False, "bf16"), _cfg(32, 16, 16, 8, 3)),
        # 4 groups 24 -> 72 (up); M 20 < BLOCK_M 32 (12 wrapped rows) x 2 tiles of 64 (tail 8)
        # x one masked step (b_in 24 < BLOCK_K 32); bias; num_stages 1
        "up_short_bias_fp16": (_pt(20, 4, 24, 72, True), _cfg(32, 64, 32, 4, 1)),
        # 5 groups 48 -> 16, W a transposed view (K-contiguous); 3 row tiles of 16 (tail 1) x 1 x 3 steps; bias
        "transposed_w_bias_bf16": (_pt(33, 5, 48, 16, True, "bf16"), _cfg(16, 16, 16, 2, 3)),
        # 2 square groups of 64, x a column slice of an [M, 2*64 + 40] buffer; one row tile of 64
        # (45 wrapped rows) x 1 x 1; 4 stages
        "strided_x_fp16": (_pt(19, 2, 64, 64), _cfg(64, 64, 64, 4, 4)),
        # 3 groups 96 -> 32 (down); 2 row tiles of 64 (tail 6) x 1 x 2 steps of 64 (tail 32); bias
        "down_ktail_bias_bf16": (_pt(70, 3, 96, 32, True, "bf16"), _cfg(64, 32, 64, 8, 2)),
        # 2 groups 32 -> 40 (up); 2 row tiles of 16 (even) x 3 of 16 (tail 8) x 2 steps of 16 (even)
        "up_ntail_fp16": (_pt(32, 2, 32, 40), _cfg(16, 16, 16, 2, 2)),
    },
}
STRIDED = "strided_x_fp16"
TRANSPOSED = "transposed_w_bias_bf16"

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [None, _cfg(64, 64, 32, 4, 2), _cfg(128, 128, 64, 4, 4)]
SM120_CFGS = [_cfg(128, 64, 32, 4, 3), _cfg(64, 128, 64, 8, 2)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: x becomes the first G*b_in columns of an [M, G*b_in + 40] buffer; TRANSPOSED: W
    becomes a transposed view of a contiguous [G, b_out, b_in] tensor (same values)."""
    import torch

    if name == STRIDED:
        x = inputs["x"]
        wide = torch.full((x.shape[0], x.shape[1] + 40), 5.0, dtype=x.dtype)
        wide[:, : x.shape[1]] = x
        inputs["x"] = wide[:, : x.shape[1]]
    if name == TRANSPOSED:
        inputs["w"] = inputs["w"].transpose(1, 2).contiguous().transpose(1, 2)


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["M"], p["G"] * p["b_out"]] and res["contiguous"] is True
    assert res["dtype"] == p["dtype"]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")
    if name == STRIDED:
        assert res["x_stride"] == p["G"] * p["b_in"] + 40
    if name == TRANSPOSED:
        assert res["w_stride"] == [p["b_in"] * p["b_out"], 1, p["b_in"]]


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values; both dtypes; with and without bias; EVEN_K and EVEN_N both
    ways; M tails and M < BLOCK_M; b_in < BLOCK_K; up, down and square blocks; a strided x, a
    transposed W."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    plans = [(p, c, mod.plan(c, p)) for p, c in cases]
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["bias"] for p, _ in cases} == {True, False}
    assert {(pl["EVEN_K"], pl["EVEN_N"]) for _, _, pl in plans} == {(a, b) for a in (True, False) for b in (True, False)}
    assert any(p["M"] % c["BLOCK_M"] and p["M"] > c["BLOCK_M"] for p, c in cases)
    assert any(p["M"] < c["BLOCK_M"] for p, c in cases) and any(p["M"] % c["BLOCK_M"] == 0 for p, c in cases)
    assert any(p["b_in"] < c["BLOCK_K"] for p, c in cases)
    assert any(pl["tiles_k"] > 1 and not pl["EVEN_K"] for _, _, pl in plans)
    assert {(p["b_in"] > p["b_out"]) - (p["b_in"] < p["b_out"]) for p, _ in cases} == {-1, 0, 1}
    assert any(pl["tiles_n"] > 1 for _, _, pl in plans) and any(p["G"] >= 5 for p, _ in cases)
    assert STRIDED in CASES[KERNEL] and TRANSPOSED in CASES[KERNEL]


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, the constexpr flags, the grid and the walk length; bytes_moved / flops; inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "block_diag_matmul", "plan"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and set(mod.BASELINE) == set(mod.TUNABLES)
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        M, G, bi, bo, dt = p["M"], p["G"], p["b_in"], p["b_out"], dts[p["dtype"]]
        for cfg in cfgs:
            bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["X"].shape == (M, G * bi) and args["X"].dtype == dt and args["X"].stride() == (G * bi, 1)
            assert args["W"].shape == (G, bi, bo) and args["W"].dtype == dt
            assert args["Y"].shape == (M, G * bo) and args["Y"].dtype == dt
            if p["bias"]:
                assert args["Bias"].shape == (G * bo,) and args["Bias"].dtype == dt
            else:
                assert args["Bias"] is args["X"]
            assert (args["M"], args["B_IN"], args["B_OUT"], args["stride_xm"], args["stride_ym"]) == (
                M, bi, bo, G * bi, G * bo)
            assert (args["stride_wg"], args["stride_wk"], args["stride_wn"]) == (bi * bo, bo, 1)
            assert args["HAS_BIAS"] == p["bias"] and args["EVEN_K"] == (bi % bk == 0)
            assert args["EVEN_N"] == (bo % bn == 0)
            assert (args["BLOCK_M"], args["BLOCK_N"], args["BLOCK_K"]) == (bm, bn, bk)
            assert mod.grid(cfg, p) == (-(-M // bm) * -(-bo // bn), G)
            assert mod.loop_iterations(cfg, p) == -(-bi // bk)
            assert H.meta_nbytes(args) < 4 * 2**30
        e = 2
        assert mod.bytes_moved(p) == e * (M * G * bi + G * bi * bo + M * G * bo + (G * bo if p["bias"] else 0))
        assert mod.flops(p) == 2 * M * G * bi * bo + (M * G * bo if p["bias"] else 0)
        # roughly 20 us - 5 ms on an H100 / H200: ~3.3-4.8 TB/s, ~0.6-0.9 PFLOP/s dense 16-bit
        t = max(mod.bytes_moved(p) / 4.8e12, mod.flops(p) / 0.9e15)
        assert 20e-6 < t and max(mod.bytes_moved(p) / 3.3e12, mod.flops(p) / 0.6e15) < 5e-3


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, scales, the seed; reference's and the baseline's shapes and
    dtypes; the reference is the block-diagonal product (a dense matmul with the blocks on the diagonal)."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(6, 3, 20, 12, True, "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["x"].shape == (6, 60) and inp["x"].dtype == torch.bfloat16
    assert inp["w"].shape == (3, 20, 12) and inp["w"].dtype == torch.bfloat16
    assert inp["bias"].shape == (36,) and inp["bias"].dtype == torch.bfloat16
    assert 0.1 < float(inp["w"].float().std()) < 0.4           # ~ 1 / sqrt(20)
    assert mod.make_inputs(_pt(6, 3, 20, 12), device="cpu")["bias"] is None
    ref = mod.reference(inp)
    assert ref.shape == (6, 36) and ref.dtype == torch.float32
    dense = torch.block_diag(*[inp["w"][g].double() for g in range(3)])
    want = inp["x"].double() @ dense + inp["bias"].double()
    assert torch.allclose(ref.double(), want, rtol=1e-6, atol=1e-6)
    base = mod.torch_baseline(inp)
    assert base.shape == (6, 36) and base.dtype == torch.bfloat16
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["w"], inp["w"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], inp["x"])


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(4, 64, dtype=torch.float16)
    w = torch.ones(2, 32, 32, dtype=torch.float16)
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.block_diag_matmul(x, w, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.block_diag_matmul(x, w, BLOCK_K=8)
    with pytest.raises(ValueError, match="BLOCK_N=64 exceeds b_out=32"):
        mod.block_diag_matmul(x, w, BLOCK_N=64)
    with pytest.raises(ValueError, match="BLOCK_K=64 exceeds b_in=32"):
        mod.block_diag_matmul(x, w, BLOCK_N=32, BLOCK_K=64)
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.block_diag_matmul(x.float(), w.float())
    with pytest.raises(ValueError, match="w must be"):
        mod.block_diag_matmul(x, w.bfloat16())
    with pytest.raises(ValueError, match="G\\*b_in"):
        mod.block_diag_matmul(x[:, :48], w)
    with pytest.raises(ValueError, match="bias must be"):
        mod.block_diag_matmul(x, w, torch.ones(32, dtype=torch.float16))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(2, 2, 16, 16, dtype="fp32"), device="cpu")
    with pytest.raises(ValueError, match="G=0"):
        mod.bytes_moved(_pt(2, 0, 16, 16))
    with pytest.raises(ValueError, match="BLOCK_N=128 exceeds"):
        mod.grid(_cfg(64, 128, 32), _pt(64, 4, 64, 64))


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_M 64 / 128 x BLOCK_N 64 / 128 x BLOCK_K 32 / 64 x 4 / 8
    warps x num_stages 2 / 3 / 4) with BASELINE among them; at every point each config is valid
    (its blocks within the point's b_in / b_out, EVEN_K and EVEN_N: no masked walk at the points),
    launches >= 132 CTAs, and its pipelined x and W tiles fit shared memory. (Every config was
    compiled for sm_90 with triton 3.6.0 and 3.9.0 at every point, 144 compiles each: all compile,
    none spills; 42-226 registers with 3.6 and 3.9 alike (42-217 at the b 192 and b 1024 points with 3.6,
    42-215 with 3.9), the most at BLOCK_M 128 x BLOCK_N 128 on 4
    warps (a 128 x 128 fp32 accumulator in 128 threads); shared memory exactly num_stages x
    (BLOCK_M + BLOCK_N) x BLOCK_K x 2 bytes, 16-128 KiB.)"""
    mod = load_example(KERNEL)
    try:
        configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    except KeyError:                      # the entry is not in SWEEPS yet
        configs, axes = None, SWEEP_AXES
    assert axes == SWEEP_AXES and set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    assert configs is None or len(configs) == len(cfgs)
    for p in mod.POINTS:
        for c in cfgs:
            pl = mod.plan(c, p)
            assert pl["EVEN_K"] and pl["EVEN_N"] and c["BLOCK_N"] <= p["b_out"] and c["BLOCK_K"] <= p["b_in"]
            assert pl["tiles_m"] * pl["tiles_n"] * p["G"] >= 132, (p, c)
            tile = 2 * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"]
            assert c["num_stages"] * tile <= H200_SMEM_PER_BLOCK
    # the points differ in character: rectangular / small square / large square blocks, both dtypes,
    # with and without the bias
    assert len({(p["G"], p["b_in"], p["b_out"]) for p in mod.POINTS}) == 3
    assert any(p["b_in"] != p["b_out"] for p in mod.POINTS)
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["bias"] for p in mod.POINTS} == {True, False}
    # arithmetic intensity: the small-block points memory-bound, the b 1024 one compute-bound
    intensity = sorted(mod.flops(p) / mod.bytes_moved(p) for p in mod.POINTS)
    assert intensity[0] < 200 and intensity[-1] > 400


def test_study_sweep_entry_matches():
    """scripts/rank_study.py's SWEEPS entry (once added) is this file's sweep."""
    try:
        configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    except KeyError:
        pytest.skip("no SWEEPS entry for block_diag_matmul yet")
    assert axes == SWEEP_AXES and len(configs) == 48


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE (at every point) and two more configs compile without spills, their
    shared memory the pipelined x and W tiles."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfgs = [mod.BASELINE] + COMPILE_CFGS[1:]
    for cfg, res in H.compile_results(KERNEL, cfgs, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        tile = 2 * (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg["BLOCK_K"]
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= max(cfg["num_stages"], 1) * tile + 1024, (cfg, res.shared)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0 and res.shared <= H200_SMEM_PER_BLOCK, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    for cfg, p in zip(SM120_CFGS, (mod.POINTS[0], mod.POINTS[2])):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_120",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against the reference (and torch_baseline), the output's
    contiguity and dtype, the strided operands' strides as launched; one JSON line."""
    H.patch_interpreter_index()

    def extra(name, point, inputs, out, ref):
        return {"contiguous": bool(out.is_contiguous()),
                "dtype": {"torch.float16": "fp16", "torch.bfloat16": "bf16"}.get(str(out.dtype)),
                "x_stride": inputs["x"].stride(0), "w_stride": list(inputs["w"].stride())}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, baseline=True, extra=extra)


if __name__ == "__main__":
    _run()
