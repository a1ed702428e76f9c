"""examples/sparse24_compress.py (2:4 semi-structured sparsity, magnitude prune + compress: W [M, K]
fp16 / bf16 -> the 2 largest-magnitude elements of every 4 along K as values [M, K / 2], their 2-bit
indices packed a nibble a group, 4 groups an int16, as meta [M, ceil(K / 16)], and optionally the
pruned dense W; a [BLOCK_M, BLOCK_K] tile a step, K_STEPS steps a program) against a torch
reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its
study sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round24_c.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round25_d.py sparse24_compress``) that prints one JSON line.
The subprocess installs the harness's interpreter fixes (bf16 rounding; under triton 3.6 with numpy
>= 2.3 the K loop's runtime bounds read as ints, see example_harness.patch_interpreter_index).

Shapes are small, odd and ragged: EVEN_M x EVEN_K all four ways; K a multiple of 16 and not (a
partial last meta int16: K 36, 200, 4, 48 + 8), K = 4 (one group); a chunk past K (its loop runs
only the real steps), several chunks with a ragged last one, a row tile wider than M; W a column
slice of a wider tensor (row pitch 136, read in place); many magnitude ties (values from
{-2, -1, -0, +0, 1, 2}: the lower index wins, +0 and -0 tie), infinities and NaN (NaN ranks above
inf); with and without the pruned dense output (WRITE_DENSE); fp16 and bf16; BLOCK_M 2-16, BLOCK_K
16-512, K_STEPS 1-16, 1-8 warps, num_stages 1 / 2.

Per case: values, meta and dense equal to the torch reference bit for bit (a selection and a
copy); values against the fp32 reference as the GPU study's gate sees it; shapes, dtypes,
contiguity; torch_baseline bit for bit.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "sparse24_compress"
ROLE = "held-out-25"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["sparse24_compress"] once the lead adds it)
SWEEP_AXES = {"BLOCK_M": [4, 8, 16], "BLOCK_K": [128, 256, 512], "K_STEPS": [1, 4, 16], "num_warps": [4, 8],
              "num_stages": [1]}


def _cfg(bm, bk, ks, w=4, st=1):
    return {"BLOCK_M": bm, "BLOCK_K": bk, "K_STEPS": ks, "num_warps": w, "num_stages": st}


def _pt(M, K, dtype="bf16", dense=0):
    return {"M": M, "K": K, "dtype": dtype, "write_dense": dense}


# case -> (point, cfg); comments: EVEN_M / EVEN_K, grid (row blocks x K chunks), steps
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # EVEN_M 1, EVEN_K 1: no mask at all; 2 x 2 programs of one 32-column step
        "even_bf16": (_pt(8, 64, "bf16"), _cfg(4, 32, 1)),
        # EVEN_M 0 (5 = 4 + 1), EVEN_K 0 (36 = 2 x 16 + 4: a partial last meta int16, 1 group of 4);
        # chunks of 2 x 16: 2 x 2 programs, the last chunk one step; the dense output; 2 warps
        "ragged_dense_fp16": (_pt(5, 36, "fp16", 1), _cfg(4, 16, 2, 2)),
        # a row tile of 8 past M = 3 (EVEN_M 0); one chunk of 16 x 16 past K = 200 (EVEN_K 0, 13
        # steps, the last 8 columns: half a meta int16); dense; 1 warp, num_stages 2
        "chunk_past_k_bf16": (_pt(3, 200, "bf16", 1), _cfg(8, 16, 16, 1, 2)),
        # the sweep's widest tile, 16 x 512 on 8 warps: one chunk of 4 x 512 whose loop runs 2 steps;
        # EVEN_M 1, EVEN_K 1; dense
        "wide_tile_dense_fp16": (_pt(16, 1024, "fp16", 1), _cfg(16, 512, 4, 8)),
        # W the columns 0:96 of a [6, 136] tensor (row pitch 136, read in place): EVEN_M 0, EVEN_K 1
        # (96 = 3 x 32); chunks of 2 x 32: 2 x 2 programs, the last chunk one step
        "strided_rows_bf16": (_pt(6, 96, "bf16"), _cfg(4, 32, 2)),
        # magnitudes from {0, 1, 2} (signs random, -0 among the zeros): most groups tie; EVEN 1 / 1;
        # 3 x 1 programs of one 128-column step; dense
        "ties_dense_fp16": (_pt(12, 128, "fp16", 1), _cfg(4, 128, 1)),
        # +-inf, NaN, +-0 and ties (bit for bit only: the gate refuses non-finite values); EVEN_M 1,
        # EVEN_K 0 (56 = 3 x 16 + 8); one chunk of 4 x 16 a row pair; dense
        "specials_dense_bf16": (_pt(4, 56, "bf16", 1), _cfg(2, 16, 4)),
        # K = 4: one group a row, one meta int16 holding it; a row tile of 8 over M = 9 (EVEN_M 0)
        "k4_fp16": (_pt(9, 4, "fp16"), _cfg(8, 16, 1, 1)),
        # the sweep's smallest tile on 8 warps (4 x 128: 2 elements a thread), 4 chunks of one step,
        # EVEN_K 0 (448 = 3 x 128 + 64), EVEN_M 1
        "thin_tile_bf16": (_pt(8, 448, "bf16"), _cfg(4, 128, 1, 8)),
    },
}
STRIDED, TIES, SPECIALS = "strided_rows_bf16", "ties_dense_fp16", "specials_dense_bf16"
PITCH = 136

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(8, 256, 4), _cfg(16, 512, 4, 4), _cfg(16, 512, 16, 8), _cfg(4, 128, 1, 8)]
SM120_CFGS = [_cfg(8, 256, 4), _cfg(16, 512, 4, 4)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: w the first K columns of an [M, PITCH] tensor; TIES: w's magnitudes from {0, 1, 2}
    with random signs (so -0 too); SPECIALS: w with +-inf, NaN, +-0 and ties placed in it."""
    import torch

    w = inputs["w"]
    M, K = w.shape
    gen = torch.Generator().manual_seed(7)
    if name == STRIDED:
        wide = torch.full((M, PITCH), 5.0, dtype=w.dtype)
        wide[:, :K] = w
        inputs["w"] = wide[:, :K]
    if name == TIES:
        mag = torch.randint(0, 3, (M, K), generator=gen).float()
        sign = torch.where(torch.rand((M, K), generator=gen) < 0.5, -1.0, 1.0)
        inputs["w"] = (mag * sign).to(w.dtype)
    if name == SPECIALS:
        x = w.clone()
        x[0, 0:4] = torch.tensor([float("nan"), 1.0, float("inf"), -2.0])
        x[0, 4:8] = torch.tensor([-float("inf"), float("inf"), float("nan"), 0.0])
        x[1, 0:4] = torch.tensor([0.0, -0.0, 0.0, -0.0])
        x[1, 4:8] = torch.tensor([-0.0, 0.0, 1e-3, -0.0])
        x[2, 8:12] = torch.tensor([3.0, -3.0, 3.0, -3.0])
        x[3, 52:56] = torch.tensor([-float("inf"), 1.0, -float("inf"), float("nan")])
        inputs["w"] = x


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


def _flags(p, c):
    """(EVEN_M, EVEN_K, K chunks, steps in the last chunk) of a case."""
    M, K = p["M"], p["K"]
    chunk = c["BLOCK_K"] * c["K_STEPS"]
    last = K - (-(-K // chunk) - 1) * chunk
    return int(M % c["BLOCK_M"] == 0), int(K % c["BLOCK_K"] == 0), -(-K // chunk), -(-last // c["BLOCK_K"])


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    M, K = p["M"], p["K"]
    assert res["shape"] == [M, K // 2] and res["dtype"] == p["dtype"], res
    if name != SPECIALS:
        assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["values_equal"] and res["meta_equal"], res                       # bit for bit
    assert res["meta_shape"] == [M, -(-K // 16)] and res["meta_dtype"] == "int16", res
    assert res["contiguous"], res
    if p["write_dense"]:
        assert res["dense_equal"] is True and res["dense_shape"] == [M, K], res
        if name not in (TIES, SPECIALS):                                         # no zeros in w
            assert res["kept_per_group"] == [2], res                            # nonzero bit patterns
    else:
        assert res["dense_equal"] is None, res
    assert res["baseline_equal"], res
    assert res["groups_tied"] > 0 or name not in (TIES, SPECIALS), res
    if name == STRIDED:
        assert res["w_strides"] == [PITCH, 1], res
    if name == SPECIALS:
        assert res["n_nan_values"] == 3 and res["n_inf_values"] == 3, res


def test_cases_cover_the_kernel():
    """Every code path and every tunable's range: the four mask variants, a partial last meta int16,
    a chunk past K and a ragged last chunk, a row tile past M, the dense output on and off, both
    dtypes, BLOCK_K's and the other tunables' sweep ranges, num_stages 1 / 2."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["write_dense"] for p, _ in cases} == {0, 1}
    fl = [(p, c, _flags(p, c)) for p, c in cases]
    assert {(f[0], f[1]) for _, _, f in fl} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert any(f[2] > 1 and f[3] < c["K_STEPS"] for _, c, f in fl)                 # a ragged last chunk
    assert any(c["BLOCK_K"] * c["K_STEPS"] > p["K"] and f[3] > 1 for p, c, f in fl)   # a chunk past K, looping
    assert any(c["BLOCK_M"] > p["M"] for p, c in cases)
    assert any(p["K"] % 16 for p, _ in cases) and any(p["K"] == 4 for p, _ in cases)
    for k in ("BLOCK_M", "BLOCK_K", "K_STEPS", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)
    assert 16 in {c["BLOCK_K"] for _, c in cases}                                # one meta int16 a step
    assert {c["num_stages"] for _, c in cases} == {1, 2}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, the derived WRITE_DENSE / EVEN_M / EVEN_K, the grid and the K steps; bytes_moved /
    flops; inputs < 4 GB; 100 MB - 2 GB of traffic (roughly 20 us - 0.5 ms on an H200)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "prune_compress_24", "reference_all"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1 and mod.ROLE == ROLE
    assert mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        M, K, wd = p["M"], p["K"], p["write_dense"]
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["W"].shape == (M, K) and a["W"].dtype == dts[p["dtype"]] and a["W"].is_contiguous()
            assert a["VAL"].shape == (M, K // 2) and a["VAL"].dtype == dts[p["dtype"]] and a["VAL"].is_contiguous()
            assert a["META"].shape == (M, -(-K // 16)) and a["META"].dtype == torch.int16
            if wd:
                assert a["DENSE"].shape == (M, K) and a["DENSE"].dtype == dts[p["dtype"]]
            else:
                assert a["DENSE"] is a["VAL"]
            chunks = -(-K // (cfg["BLOCK_K"] * cfg["K_STEPS"]))
            assert (a["M"], a["K"], a["n_kc"]) == (M, K, chunks)
            assert (a["stride_wm"], a["stride_vm"], a["stride_mm"], a["stride_dm"]) == (K, K // 2, -(-K // 16), K)
            assert (a["WRITE_DENSE"], a["EVEN_M"], a["EVEN_K"]) == (
                wd, int(M % cfg["BLOCK_M"] == 0), int(K % cfg["BLOCK_K"] == 0))
            assert (a["BLOCK_M"], a["BLOCK_K"], a["K_STEPS"]) == (cfg["BLOCK_M"], cfg["BLOCK_K"], cfg["K_STEPS"])
            assert mod.grid(cfg, p) == (-(-M // cfg["BLOCK_M"]) * chunks,)
            assert mod.loop_iterations(cfg, p) == min(cfg["K_STEPS"], -(-K // cfg["BLOCK_K"]))
        assert mod.bytes_moved(p) == M * K * 2 + M * K + M * -(-K // 16) * 2 + wd * M * K * 2
        assert mod.flops(p) == 0
        assert 2 * M * K < 4 * 2**30
        assert 100e6 <= mod.bytes_moved(p) <= 2e9
    # the points differ: K (4096, 28672, 4544), the dtype, the dense output
    assert sorted(p["K"] for p in mod.POINTS) == [4096, 4544, 28672]
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["write_dense"] for p in mod.POINTS} == {0, 1}
    # a BLOCK_K dividing K and not, a ragged last chunk, somewhere in the sweep
    flags = {(mod.example_args(c, p)["EVEN_K"]) for p in mod.POINTS for c in cfgs}
    assert flags == {0, 1}
    assert any(p["K"] % (c["BLOCK_K"] * c["K_STEPS"]) for p in mod.POINTS for c in cfgs)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shape, dtype, the seed; reference_all against hand-made groups (ties, signed
    zeros, the packing of 4 nibbles, a partial last int16); torch_baseline; bytes_moved."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 20, "fp16", 1)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    w = inp["w"]
    assert w.shape == (3, 20) and w.dtype == torch.float16 and w.is_contiguous() and inp["write_dense"] is True
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["w"], w)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["w"], w)
    assert 0.005 < float(w.float().std()) < 0.05
    rows = [[1.0, -3.0, 3.0, 0.5, 2.0, 2.0, 2.0, 2.0, 0.0, -0.0, 1.0, 0.0, -1.0, 4.0, 0.5, -5.0, 0.0, 0.0, 7.0, 8.0]]
    x = torch.tensor(rows, dtype=torch.bfloat16)
    vals, meta, dense = mod.reference_all({"w": x})
    # groups: (1, 2) tie kept both; (0, 1) all tie; (0, 2) +0 / -0 tie, lower wins; (1, 3); (2, 3)
    assert vals.tolist() == [[-3.0, 3.0, 2.0, 2.0, 0.0, 1.0, 4.0, -5.0, 7.0, 8.0]]
    nibs = [1 | 2 << 2, 0 | 1 << 2, 0 | 2 << 2, 1 | 3 << 2, 2 | 3 << 2]
    word0 = nibs[0] | nibs[1] << 4 | nibs[2] << 8 | nibs[3] << 12                  # 0xD849: negative int16
    assert meta.dtype == torch.int16 and meta.shape == (1, 2)
    assert meta.tolist() == [[word0 - 2**16, nibs[4]]]
    assert dense.tolist() == [[0.0, -3.0, 3.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 4.0, 0.0, -5.0,
                               0.0, 0.0, 7.0, 8.0]]
    ref = mod.reference(inp)
    assert ref.shape == (3, 10) and ref.dtype == torch.float32
    base = mod.torch_baseline(inp)
    assert base[0].dtype == torch.float16 and torch.equal(base[0].float(), ref)
    assert base[1].shape == (3, 2) and base[2].shape == (3, 20)
    assert mod.torch_baseline({"w": w, "write_dense": False})[2] is None
    assert mod.bytes_moved(_pt(16, 1024, "fp16", 1)) == 16 * 1024 * (2 + 1 + 2) + 16 * 64 * 2


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    w = torch.ones(8, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="BLOCK_M=3"):
        mod.prune_compress_24(w, BLOCK_M=3)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.prune_compress_24(w, BLOCK_K=8)
    with pytest.raises(ValueError, match="BLOCK_K=48"):
        mod.prune_compress_24(w, BLOCK_K=48)
    with pytest.raises(ValueError, match="num_warps=6"):
        mod.prune_compress_24(w, num_warps=6)
    with pytest.raises(ValueError, match="K_STEPS=0"):
        mod.prune_compress_24(w, K_STEPS=0)
    with pytest.raises(ValueError, match="K=6"):
        mod.prune_compress_24(torch.ones(2, 6, dtype=torch.float16))
    with pytest.raises(ValueError, match="expected w"):
        mod.prune_compress_24(torch.ones(2, 4, 4, dtype=torch.float16))
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.prune_compress_24(w.float())
    with pytest.raises(ValueError, match="unit column stride"):
        mod.prune_compress_24(torch.ones(64, 8, dtype=torch.float16).t())
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(4, 16, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="M=0"):
        mod.grid(mod.BASELINE, _pt(0, 16))
    with pytest.raises(ValueError, match="K=18"):
        mod.bytes_moved(_pt(4, 18))
    with pytest.raises(ValueError, match="write_dense=2"):
        mod.example_args(mod.BASELINE, _pt(4, 16, "bf16", 2))


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_M 4-16 rows x BLOCK_K 128-512 columns x K_STEPS 1 / 4 / 16
    x 4 / 8 warps, num_stages 1: tiles of 512-8192 elements, 2-64 a thread) with BASELINE among
    them; at every point each config is valid and launches >= 4 waves of programs on an H200 (2048
    at the fewest). (Every config was compiled for sm_90 at every point with triton 3.6.0 and 3.9:
    all compile, none spills; 25-198 registers under 3.6 (25-180 under 3.9), the most for 16 x 512
    on 4 warps at the fp16 dense-output point; shared memory 64 B - 8 KiB, the values tile's and the
    meta's layout conversions. num_stages: no dot, the K loop's loads are not pipelined, hence the
    one value.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 36 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            (n,) = mod.grid(c, p)
            assert 4 * H200_SMS <= n < 2**31, (p, c)
            assert c["BLOCK_M"] * c["BLOCK_K"] <= 64 * 32 * c["num_warps"]     # <= 64 elements a thread


def test_sweep_matches_the_study():
    """scripts/rank_study.py's SWEEPS entry: the same axes, every config valid at the points."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


def _values_tile_bytes(cfg) -> int:
    return cfg["BLOCK_M"] * cfg["BLOCK_K"]           # [BLOCK_M, BLOCK_K / 2] of 2-byte values


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more at the first point (the widest tile on 4 and on 8 warps, the
    smallest on 8), and BASELINE and the widest tile at the other two (the fp16 dense output; K =
    4544, masked), compile without spills. Shared memory: at most one values tile -- the kept
    pairs joined back come out 4 a thread, the store's coalesced layout takes 8 (16-byte vectors),
    a convert_layout through shared memory; the packed meta's layout is converted too."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0 and res.shared <= _values_tile_bytes(cfg), (
            cfg, res.n_regs, res.n_spills, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], COMPILE_CFGS[1]):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, res.message
            assert res.n_regs > 0 and res.shared <= _values_tile_bytes(cfg), (cfg, res.n_regs, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0
        assert res.shared <= min(_values_tile_bytes(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (as the GPU study's gate) and, through the
    wrapper, values / meta / dense bit for bit against reference_all and torch_baseline; shapes,
    dtypes, strides; the ties and specials seen; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16"}

    def bits(t):
        return t.view(torch.int16)

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        wd = bool(point["write_dense"])
        vals, meta, dense = mod.prune_compress_24(inputs["w"], write_dense=wd, **cfg)
        rv, rm, rd = mod.reference_all(inputs)
        bv, bm, bd = mod.torch_baseline(inputs)
        w = inputs["w"]
        g = w.reshape(w.shape[0], -1, 4).view(torch.int16) & 0x7FFF
        tied = (g.unsqueeze(-1) == g.unsqueeze(-2)).sum((-1, -2)) > 4               # some pair ties
        res = {"dtype": names.get(out.dtype), "w_strides": list(w.stride()),
               "values_equal": bool(torch.equal(bits(out), bits(rv)) and torch.equal(bits(vals), bits(rv))),
               "meta_equal": bool(torch.equal(meta, rm)), "meta_shape": list(meta.shape),
               "meta_dtype": str(meta.dtype).replace("torch.", ""),
               "contiguous": bool(out.is_contiguous() and meta.is_contiguous()
                                  and (dense is None or dense.is_contiguous())),
               "dense_equal": None if dense is None else bool(torch.equal(bits(dense), bits(rd))),
               "dense_shape": None if dense is None else list(dense.shape),
               "baseline_equal": bool(torch.equal(bits(bv), bits(out)) and torch.equal(bm, meta)
                                      and (bd is None) == (dense is None)
                                      and (bd is None or torch.equal(bits(bd), bits(dense)))),
               "groups_tied": int(tied.sum()),
               "n_nan_values": int(torch.isnan(out).sum()), "n_inf_values": int(torch.isinf(out).sum())}
        if dense is not None:
            nz = (bits(dense) != 0).reshape(dense.shape[0], -1, 4).sum(-1)
            res["kept_per_group"] = sorted(set(nz.flatten().tolist()))
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
