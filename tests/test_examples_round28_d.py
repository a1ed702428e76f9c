"""examples/fully_fused_mlp.py (tiny-cuda-nn's FullyFusedMLP forward as instant-ngp and nerfacto run it:
x [N, D_in] fp16 / bf16 -> relu(x W_in^T) -> H - 1 hidden relu(h W^T) -> act(h W_out^T) [N, D_out], no
biases, the hidden activations rounded to x's dtype; fp32 or fp16 (tcnn's) accumulation; the weights
resident a program, persistent over TILES row blocks of BLOCK_N) against its torch reference on the CPU
through Triton's interpreter, its launcher hooks against the shapes, its study sweep against the
points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round27_c.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round28_d.py fully_fused_mlp``) that prints one JSON line. The subprocess
installs the harness's interpreter fixes (bf16 dot operands widened to fp32; bf16 rounding; under
triton 3.6 with numpy >= 2.3 the runtime loop bounds read as ints).

Shapes are small, odd and ragged: every (EVEN_N, X_MODE) way of the x load (6: whole rows D_in = K_IN;
ragged D_in masked; a wider row pitch's pad columns read and zeroed) and every (EVEN_N, EVEN_OUT) way
of the store (4); N 1 (one row), N 70-300 with BLOCK_N not dividing it, a grid whose programs take 3 and
2 row blocks (5 tiles, TILES 4); D_in 3-64 (K_IN 16-64), D_out 1-32 (N_OUT 16-32); widths 16 / 32 / 64
/ 128; 0-3 hidden W x W matrices (tcnn's n_hidden_layers 1-4); every output activation (none / relu /
sigmoid / exp); fp32 and fp16 accumulation; fp16 and bf16; x a column slice of a NaN-filled wider
buffer (its pad columns NaN: read and zeroed, X_MODE 2; or, where the last row's pad would lie past
the storage, masked, X_MODE 1), w_in a transposed view, w_hid a slice of a NaN-filled stack, w_out
the first rows of a NaN-filled padded [16, W] output layer (a stray read poisons the result);
BLOCK_N 32 / 64 / 128, TILES 1 / 2 / 4 / 16, 4 / 8 warps, num_stages 1 / 2 / 3.

Per case: launch's output within the dtype's tolerance of the fp64 reference (the harness's per-element
check: hidden activations rounded as the kernel rounds them) and each element within half an ulp of
its own value plus a bound on the accumulation's and the roundings' error (a few units of x's dtype
times the sum of the terms' magnitudes; a per-K-step fp16 rounding more with fp16 accumulation); the
output fresh, contiguous, [N, D_out], in x's dtype; a second launch equal bit for bit; the inputs
unchanged; the hidden ReLUs mattering; torch_baseline (eager F.linear layers) within tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "fully_fused_mlp"
ROLE = "held-out-28"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["fully_fused_mlp"] once the lead adds it)
SWEEP_AXES = {"BLOCK_N": [64, 128], "TILES": [1, 2, 4, 16], "num_warps": [4, 8], "num_stages": [1, 2, 3]}


def _cfg(bn, tiles, w=4, st=1):
    return {"BLOCK_N": bn, "TILES": tiles, "num_warps": w, "num_stages": st}


def _pt(N, d_in, width, hidden, d_out, act="none", dtype="fp16", acc="fp32", **kw):
    return {"N": N, "d_in": d_in, "width": width, "hidden": hidden, "d_out": d_out, "out_act": act,
            "dtype": dtype, "acc": acc, **kw}


# case -> (point, cfg); comments: EVEN_N / X_MODE / EVEN_OUT, N_HID, tiles and programs
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 1 / 0 / 1, N_HID 0: instant-ngp's density net (32 -> 64 -> 16); 4 tiles, one program
        "density_even_fp16": (_pt(256, 32, 64, 1, 16), _cfg(64, 4, 4, 2)),
        # 0 / 1 / 0, N_HID 1: 31 -> 64 -> 64 -> 3 sigmoid; 5 tiles of 32 (157 = 4 x 32 + 29) over 2
        # programs (tiles 0, 2, 4 and 1, 3)
        "colour_ragged_fp16": (_pt(157, 31, 64, 2, 3, "sigmoid"), _cfg(32, 4, 4, 3)),
        # 0 / 2 / 0, N_HID 1: nerfacto-big's head, 63 of a 64-pitched buffer (pad column NaN) -> 128 ->
        # 128 -> 3 sigmoid, fp16 accumulation; 2 tiles of 128, 2 programs, 8 warps
        "big_pad_read_fp16acc": (_pt(200, 63, 128, 2, 3, "sigmoid", acc="fp16", x_pitch=64), _cfg(128, 1, 8, 1)),
        # 1 / 0 / 0, N_HID 3: 16 -> 32 x 4 hidden layers -> 4 exp, bf16; 4 tiles of 32, one program
        "deep_exp_bf16": (_pt(128, 16, 32, 4, 4, "exp", "bf16"), _cfg(32, 16, 8, 1)),
        # 1 / 1 / 1, N_HID 1: width 16, 20 -> 16 -> 16 -> 16 relu; 3 programs of one tile
        "narrow_relu_fp16": (_pt(96, 20, 16, 2, 16, "relu"), _cfg(32, 1, 4, 2)),
        # 0 / 1 / 0, N_HID 0: one row (3 -> 32 -> 1 sigmoid), fp16 accumulation
        "one_row_fp16acc": (_pt(1, 3, 32, 1, 1, "sigmoid", acc="fp16"), _cfg(64, 2, 4, 3)),
        # 0 / 2 / 0, N_HID 2: x the columns 5 .. 29 of a [100, 40] NaN buffer (its K_IN 32 columns
        # 5 .. 37 read, 29 .. 37 NaN, zeroed), the weights strided NaN-padded views; 2 tiles, one program
        "strided_pad_read_fp16": (_pt(100, 24, 64, 3, 8), _cfg(64, 16, 8, 2)),
        # 1 / 0 / 1, N_HID 0: 64 -> 128 -> 32, bf16; 3 tiles, one program, 8 warps
        "wide_out_bf16": (_pt(192, 64, 128, 1, 32, dtype="bf16"), _cfg(64, 4, 8, 3)),
        # 0 / 0 / 1, N_HID 0: 300 rows in 3 tiles of 128 (300 = 2 x 128 + 44), fp16 accumulation
        "ragged_rows_fp16acc": (_pt(300, 32, 64, 1, 16, acc="fp16"), _cfg(128, 16, 4, 2)),
        # 0 / 1 / 0, N_HID 1: x the columns 12 .. 32 of a [70, 40] NaN buffer: the last row's pad
        # (columns 32 .. 44) would pass the storage's end, so the pad is masked; 2 tiles, one program
        "strided_tail_masked_fp16": (_pt(70, 20, 32, 2, 5, "relu"), _cfg(64, 2, 4, 1)),
        # 1 / 2 / 0, N_HID 0: 12 of a 16-pitched buffer (K_IN 16), 32 wide, 2 outputs relu, bf16; 2
        # programs of one tile
        "pad_read_even_bf16": (_pt(128, 12, 32, 1, 2, "relu", "bf16", x_pitch=16), _cfg(64, 1, 4, 1)),
    },
}
STRIDED, TAIL = "strided_pad_read_fp16", "strided_tail_masked_fp16"
X_BUF, X_COL0 = {STRIDED: 40, TAIL: 40}, {STRIDED: 5, TAIL: 12}
ULP = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8}       # unit roundoff (half an ulp at 1)

# configs compiled at the module's first POINT on sm_90 (BASELINE first): the most registers (128 rows
# on 4 warps, one stage), the most shared memory (128 rows, 3 stages, 8 warps), the fewest (64 rows, 8
# warps); the other points compile BASELINE and their heaviest (128 rows on 4 warps, 3 stages)
COMPILE_CFGS = [_cfg(128, 4, 4, 2), _cfg(128, 16, 4, 1), _cfg(128, 1, 8, 3), _cfg(64, 2, 8, 1)]
SM120_CFGS = [_cfg(128, 4, 4, 2), _cfg(128, 16, 8, 3), _cfg(64, 1, 4, 1)]


def _pad(d: int) -> int:
    return max(16, 1 << (d - 1).bit_length())


def _flags(name: str) -> tuple[int, int, int]:
    """(EVEN_N, X_MODE, EVEN_OUT) of a case. X_MODE: 0 D_in = K_IN; 2 a row pitch >= K_IN whose last row's
    pad lies inside the storage (x_pitch points, STRIDED); 1 else (TAIL: the last row's pad past the end)."""
    p, c = CASES[KERNEL][name]
    k_in = _pad(p["d_in"])
    if p["d_in"] == k_in:
        mode = 0
    elif name == STRIDED or (p["N"] > 1 and p.get("x_pitch", p["d_in"]) >= k_in):
        mode = 2
    else:
        mode = 1
    return int(p["N"] % c["BLOCK_N"] == 0), mode, int(p["d_out"] == _pad(p["d_out"]))


def _weight_bytes(p) -> int:
    W = p["width"]
    return 2 * (_pad(p["d_in"]) * W + (p["hidden"] - 1) * W * W + W * _pad(p["d_out"]))


def _smem_bound(cfg, p) -> int:
    """An upper bound of a config's shared memory at a point: the resident weights, a ring of up to
    num_stages x tiles [BLOCK_N, K_IN] (cp.async) and one more for the tile's own copy (the first dot's A
    operand or the pad-zeroing round trip), and 4 KB for the layout conversions' scratch."""
    x = cfg["BLOCK_N"] * _pad(p["d_in"]) * 2
    return _weight_bytes(p) + (cfg["num_stages"] + 1) * x + 4096


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED / TAIL: x a column slice of a NaN-filled [N, 40] buffer; w_in a transposed view of a
    [D_in, W] tensor, w_hid layers 1 .. H - 1 of a NaN-filled stack of H + 1 (its last two dims
    swapped), w_out the first D_out rows of a NaN-filled [16, W] buffer. Then the inputs' copies."""
    import torch

    if name in (STRIDED, TAIL):
        x = inputs["x"]
        N, d_in = x.shape
        buf = torch.full((N, X_BUF[name]), float("nan"), dtype=x.dtype)
        buf[:, X_COL0[name]:X_COL0[name] + d_in] = x
        inputs["x"] = buf[:, X_COL0[name]:X_COL0[name] + d_in]
        w_in = inputs["w_in"]
        inputs["w_in"] = w_in.t().contiguous().t()
        wh = inputs["w_hid"]
        stack = torch.full((wh.shape[0] + 2, wh.shape[1], wh.shape[2]), float("nan"), dtype=wh.dtype)
        stack[1:1 + wh.shape[0]] = wh.transpose(1, 2)
        inputs["w_hid"] = stack[1:1 + wh.shape[0]].transpose(1, 2)
        wo = inputs["w_out"]
        ob = torch.full((16, wo.shape[1]), float("nan"), dtype=wo.dtype)
        ob[:wo.shape[0]] = wo
        inputs["w_out"] = ob[:wo.shape[0]]
    for k in ("x", "w_in", "w_hid", "w_out"):
        inputs[k + "0"] = None if inputs[k] is None else inputs[k].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    N, d_out = p["N"], p["d_out"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [N, d_out] and res["dtype"] == p["dtype"], res
    assert res["out_strides"] == [d_out, 1], res
    assert res["n_loose"] == 0, res                 # half an ulp + the accumulation's bound
    assert res["repeat_equal"] is True, res
    assert res["inputs_unchanged"] is True and res["nonzero"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["relu_matters"] is True, res
    assert res["x_mode"] == _flags(name)[1], res
    if name in (STRIDED, TAIL):
        W = p["width"]
        assert res["x_strides"] == [X_BUF[name], 1] and res["w_in_strides"] == [1, W], res
        assert res["w_hid_strides"] == [W * W, 1, W] and res["w_out_strides"] == [W, 1], res


def test_cases_cover_every_code_path():
    """Every (EVEN_N, X_MODE) way of the x load and (EVEN_N, EVEN_OUT) way of the store; N_HID 0-3; every
    output activation, both accumulations, both dtypes, every width; N 1; a program with several tiles
    and a grid of several programs; every sweep value of every tunable, BLOCK_N 32 too."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    fl = [_flags(n) for n in CASES[KERNEL]]
    assert {f[:2] for f in fl} == set(itertools.product((0, 1), (0, 1, 2)))
    assert {(f[0], f[2]) for f in fl} == set(itertools.product((0, 1), repeat=2))
    assert {p["hidden"] - 1 for p, _ in cases} >= {0, 1, 2, 3}
    assert {p["out_act"] for p, _ in cases} == set(mod.ACTIVATIONS)
    assert {p["acc"] for p, _ in cases} == {"fp32", "fp16"} and {p["width"] for p, _ in cases} == set(mod.WIDTHS)
    assert any(p["N"] == 1 for p, _ in cases)
    multi = [(p, c) for p, c in cases if -(-p["N"] // c["BLOCK_N"]) > c["TILES"] > 1]
    assert multi and any(-(-p["N"] // c["BLOCK_N"]) % c["TILES"] for p, c in multi)    # programs 3 and 2 tiles
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k
    assert any(c["BLOCK_N"] == 32 for _, c in cases)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides (x a 63-column slice of a 64-pitched buffer at the nerfacto-big point), the constexprs, the
    grid, the row blocks a program (each program's too); bytes_moved / flops; 0.2-0.6 GB moved and
    12-230 GFLOP a point; inputs under 1 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "fully_fused_mlp"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        N, d_in, W, Hd, d_out = p["N"], p["d_in"], p["width"], p["hidden"], p["d_out"]
        pitch = p.get("x_pitch", d_in)
        k_in, n_out = _pad(d_in), _pad(d_out)
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["X"].shape == (N, d_in) and a["X"].stride() == (pitch, 1) and a["X"].dtype == torch.float16
            assert a["W_IN"].shape == (W, d_in) and a["W_IN"].is_contiguous()
            if Hd > 1:
                assert a["W_HID"].shape == (Hd - 1, W, W) and a["W_HID"].is_contiguous()
                assert (a["stride_wh_l"], a["stride_wh_o"], a["stride_wh_i"]) == (W * W, W, 1)
            else:
                assert a["W_HID"] is a["W_IN"] and a["stride_wh_l"] == 0
            assert a["W_OUT"].shape == (d_out, W) and a["O"].shape == (N, d_out) and a["O"].is_contiguous()
            assert (a["stride_wi_o"], a["stride_wi_i"], a["stride_wo_o"], a["stride_wo_i"]) == (d_in, 1, W, 1)
            assert (a["N"], a["X_PITCH"], a["D_IN"], a["D_OUT"], a["K_IN"], a["N_OUT"]) == (N, pitch, d_in, d_out,
                                                                                           k_in, n_out)
            assert (a["WIDTH"], a["N_HID"], a["BLOCK_N"]) == (W, Hd - 1, cfg["BLOCK_N"])
            assert a["OUT_ACT"] == mod.ACTIVATIONS.index(p["out_act"]) and a["ACC_F16"] == int(p["acc"] == "fp16")
            assert a["EVEN_N"] == int(N % cfg["BLOCK_N"] == 0) and a["EVEN_OUT"] == int(d_out == n_out)
            assert a["X_MODE"] == (0 if d_in == k_in else 2 if pitch >= k_in else 1)
            tiles = -(-N // cfg["BLOCK_N"])
            g = -(-tiles // cfg["TILES"])
            assert mod.grid(cfg, p) == (g,)
            assert mod.loop_iterations(cfg, p) == -(-tiles // g) <= cfg["TILES"]
            its = mod.cta_iterations(cfg, p)
            assert len(its) == g and sum(its) == tiles and max(its) == mod.loop_iterations(cfg, p)
            assert H.meta_nbytes(a) < 2**30
        weights = d_in * W + (Hd - 1) * W * W + W * d_out
        x_cols = k_in if d_in < k_in <= pitch else d_in
        assert mod.bytes_moved(p) == 2 * (N * (x_cols + d_out) + weights)
        assert mod.flops(p) == 2 * N * (k_in * W + (Hd - 1) * W * W + W * n_out)
        assert 0.2e9 <= mod.bytes_moved(p) <= 0.6e9 and 12e9 <= mod.flops(p) <= 230e9, p
    # the points differ: the width, the depth, the x layout (X_MODE 0 / 1 / 2), the output, the accumulation
    a = [mod.example_args(mod.BASELINE, p) for p in mod.POINTS]
    assert [x["X_MODE"] for x in a] == [0, 1, 2] and [x["N_HID"] for x in a] == [0, 1, 1]
    assert [p["width"] for p in mod.POINTS] == [64, 64, 128] and [x["ACC_F16"] for x in a] == [0, 0, 1]
    assert [x["EVEN_OUT"] for x in a] == [1, 0, 0] and {p["out_act"] for p in mod.POINTS} == {"none", "sigmoid"}


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the pitched buffer's NaN pad, the weights' scale; reference by
    hand on a 2-wide network (the hidden rounding, each activation); torch_baseline; the grid, the row
    blocks of each program; bytes / flops."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(5, 6, 16, 3, 2, "sigmoid")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x, wi, wh, wo = inp["x"], inp["w_in"], inp["w_hid"], inp["w_out"]
    assert x.shape == (5, 6) and wi.shape == (16, 6) and wh.shape == (2, 16, 16) and wo.shape == (2, 16)
    assert all(t.dtype == torch.float16 and t.is_contiguous() for t in (x, wi, wh, wo))
    assert inp["out_act"] == "sigmoid" and inp["acc"] == "fp32"
    assert float(x.abs().max()) <= 1 and float(wi.abs().max()) <= (6 / 6) ** 0.5 + 1e-3
    assert float(wh.abs().max()) <= (6 / 16) ** 0.5 + 1e-3
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["w_hid"], wh)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    assert mod.make_inputs(_pt(3, 4, 16, 1, 1), device="cpu")["w_hid"] is None
    q = mod.make_inputs(_pt(3, 5, 16, 1, 1, dtype="bf16", x_pitch=8), device="cpu")
    assert q["x"].stride() == (8, 1) and q["x"].dtype == torch.bfloat16
    assert bool(q["x"].isfinite().all()) and bool(q["x"].as_strided((3, 8), (8, 1)).isnan()[:, 5:].all())
    # by hand: x = [[1, -2]], w_in = [[1, 1], [2, 0.5]] -> h1 = relu([-1, 1]) = [0, 1]; w_hid = [[3, 1],
    # [1, -1]] -> h2 = relu([1, -1]) = [1, 0]; w_out = [[2, 5]] -> z = 2
    t = {"x": torch.tensor([[1.0, -2.0]]), "w_in": torch.tensor([[1.0, 1.0], [2.0, 0.5]]),
         "w_hid": torch.tensor([[[3.0, 1.0], [1.0, -1.0]]]), "w_out": torch.tensor([[2.0, 5.0]])}
    for act, want in (("none", 2.0), ("relu", 2.0), ("exp", 7.38905609893065), ("sigmoid", 0.8807970779778823)):
        out = mod.reference(dict(t, out_act=act))
        assert out.dtype == torch.float32 and out.shape == (1, 1) and abs(float(out) - want) < 1e-6, (act, out)
    assert float(mod.reference(dict(t, w_out=-t["w_out"], out_act="relu"))) == 0.0
    # the hidden activation rounded to x's dtype: 1 + 2^-12 -> 1 in fp16, w_out 2^12 -> 2^12 (not 2^12 + 1)
    r = {"x": torch.tensor([[1.0, 2.0 ** -12]], dtype=torch.float16), "w_in": torch.tensor([[1.0, 1.0]]).half(),
         "w_hid": None, "w_out": torch.tensor([[4096.0]]).half()}
    assert float(mod.reference(r)) == 4096.0
    assert float(mod.mlp_forward(r, torch.float64)) == 4097.0
    base = mod.torch_baseline(dict({k: (v.half() if v is not None else None) for k, v in t.items()}, out_act="none"))
    assert base.dtype == torch.float16 and float(base) == 2.0
    assert mod.grid(_cfg(32, 4), _pt(157, 31, 64, 2, 3)) == (2,)
    assert mod.loop_iterations(_cfg(32, 4), _pt(157, 31, 64, 2, 3)) == 3
    assert mod.cta_iterations(_cfg(32, 4), _pt(157, 31, 64, 2, 3)) == [3, 2]
    assert mod.cta_iterations(_cfg(64, 1), _pt(100, 8, 16, 1, 1)) == [1, 1]
    assert mod.bytes_moved(p) == 2 * (5 * (6 + 2) + 6 * 16 + 2 * 256 + 16 * 2)
    assert mod.bytes_moved(_pt(5, 6, 16, 1, 2, x_pitch=16)) == 2 * (5 * (16 + 2) + 6 * 16 + 16 * 2)
    assert mod.flops(p) == 2 * 5 * (16 * 16 + 2 * 256 + 16 * 16)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(8, 32, dtype=torch.float16)
    wi = torch.ones(64, 32, dtype=torch.float16)
    wh = torch.ones(1, 64, 64, dtype=torch.float16)
    wo = torch.ones(3, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.fully_fused_mlp(x, wi, wh, wo, BLOCK_N=48)
    with pytest.raises(ValueError, match="TILES=0"):
        mod.fully_fused_mlp(x, wi, wh, wo, TILES=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.fully_fused_mlp(x, wi, wh, wo, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.fully_fused_mlp(x, wi, wh, wo, num_stages=0)
    with pytest.raises(ValueError, match="past 128"):
        mod.fully_fused_mlp(x, torch.ones(128, 32).half(), None, torch.ones(3, 128).half(), BLOCK_N=256)
    with pytest.raises(ValueError, match="width=48"):
        mod.fully_fused_mlp(x, torch.ones(48, 32).half(), None, torch.ones(3, 48).half())
    with pytest.raises(ValueError, match="expected x"):
        mod.fully_fused_mlp(x[0], wi, wh, wo)
    with pytest.raises(ValueError, match="expected w_in"):
        mod.fully_fused_mlp(x, wi, wh[0], wo)
    with pytest.raises(ValueError, match=r"must be \[W, D_in=32\]"):
        mod.fully_fused_mlp(x, wi[:, :16], wh, wo)
    with pytest.raises(ValueError, match=r"\[H - 1, W=64, W=64\]"):
        mod.fully_fused_mlp(x, wi, wh[:, :32], wo)
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.fully_fused_mlp(x.float(), wi.float(), wh.float(), wo.float())
    with pytest.raises(ValueError, match="in x's dtype"):
        mod.fully_fused_mlp(x, wi.bfloat16(), wh, wo)
    with pytest.raises(ValueError, match="out_act 'tanh'"):
        mod.fully_fused_mlp(x, wi, wh, wo, out_act="tanh")
    with pytest.raises(ValueError, match="acc 'fp16' needs dtype fp16"):
        mod.fully_fused_mlp(x.bfloat16(), wi.bfloat16(), wh.bfloat16(), wo.bfloat16(), acc="fp16")
    with pytest.raises(ValueError, match="acc 'int8'"):
        mod.fully_fused_mlp(x, wi, wh, wo, acc="int8")
    with pytest.raises(ValueError, match="unit column stride"):
        mod.fully_fused_mlp(torch.ones(32, 8, dtype=torch.float16).t(), wi, wh, wo)
    with pytest.raises(ValueError, match="d_in=300"):
        mod.fully_fused_mlp(torch.ones(2, 300).half(), torch.ones(64, 300).half(), None, wo)
    with pytest.raises(ValueError, match="weights take"):
        mod.fully_fused_mlp(torch.ones(2, 16).half(), torch.ones(128, 16).half(), torch.ones(5, 128, 128).half(),
                            torch.ones(16, 128).half())
    big = torch.empty_strided((4, 32), (2**26, 1), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="int32 in-tile offsets"):                      # meta: never launched
        mod.fully_fused_mlp(big, wi.to("meta"), wh.to("meta"), wo.to("meta"), BLOCK_N=64)
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(4, 4, 16, 1, 1, dtype="fp32"), device="cpu")
    with pytest.raises(ValueError, match="hidden=0"):
        mod.bytes_moved(_pt(4, 4, 16, 0, 1))
    with pytest.raises(ValueError, match="x_pitch=3"):
        mod.flops(_pt(4, 4, 16, 1, 1, x_pitch=3))
    with pytest.raises(ValueError, match="N=0"):
        mod.grid(mod.BASELINE, _pt(0, 4, 16, 1, 1))
    with pytest.raises(ValueError, match="TILES=2.5"):
        mod.grid(dict(mod.BASELINE, TILES=2.5), mod.POINTS[0])
    # no rows: nothing launched, an empty output
    e = mod.fully_fused_mlp(torch.ones(0, 32, dtype=torch.float16), wi, wh, wo)
    assert e.shape == (0, 3) and e.dtype == torch.float16


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (tiles of 64 / 128 rows, 1 / 2 / 4 / 16 of them a program, 4 / 8
    warps, num_stages 1 / 2 / 3) with BASELINE among them; at every point each config is valid, launches
    >= 4 waves of programs on an H200 (768 at the fewest: nerfacto's 1.5 M rows in 12288 tiles of 128, 16
    a program), at most 64 accumulator registers a thread, and its shared memory bound (the resident
    weights, 6-53 KB, and the x ring) fits sm_90's. (Every config was compiled for sm_90 at every point
    with triton 3.6.0 and 3.9.0: all compile, none spills; 58-212 registers under 3.6 and 58-192 under
    3.9, the most at the nerfacto-big point's 128 x 128 fp16 tiles on 4 warps; shared memory 10-100 KiB,
    the most at that point's 3-stage ring. Tiles of 32 rows -- mma.sync, the warps along the rows only --
    spilled 6 registers on 8 warps at the 128-wide point under 3.6, hence 64 / 128.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        acc_bytes = 2 if p["acc"] == "fp16" else 4
        for c in cfgs:
            mod._check_cfg(c, p["width"], p["acc"])
            (g,) = mod.grid(c, p)
            assert g >= 4 * H200_SMS, (p, c)
            assert c["BLOCK_N"] * p["width"] * acc_bytes // (4 * 32 * c["num_warps"]) <= 64, c
            assert _smem_bound(c, p) <= SM90_SMEM_PER_BLOCK, c


def test_sweep_matches_the_study():
    """scripts/rank_study.py's SWEEPS entry: the same axes, every config valid at the points."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more at the first point (instant-ngp's density net on 2^21 cells) --
    the most registers (128 rows on 4 warps, one stage), the most shared memory (128 rows, 3 stages),
    the fewest (64 rows on 8 warps) -- compile without spills, their shared memory within the bound; and
    BASELINE and the 128-row 4-warp 3-stage config at the other two (nerfacto's ragged 63 columns;
    nerfacto-big's 128-wide fp16-accumulating head)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    p0 = mod.POINTS[0]
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert _weight_bytes(p0) < res.shared <= _smem_bound(cfg, p0), (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], _cfg(128, 16, 4, 3)):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert _weight_bytes(p) < res.shared <= _smem_bound(cfg, p), (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block, mma.sync): BASELINE, 128 rows on 8 warps with 3 stages and 64 rows on
    4 warps with one compile without spills within its shared memory, at the first point."""
    mod = load_example(KERNEL)
    p0 = mod.POINTS[0]
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= min(_smem_bound(cfg, p0), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _error_bound(inputs, point):
    """(z, dz): the output's pre-activation as the reference computes it (fp64, the hidden activations
    rounded to x's dtype) and a bound on the kernel's distance from it, carried through the layers: a
    layer's sum errs by its inputs' error times |W| plus its accumulation's rounding (K 2^-24 of the sum
    of its terms' magnitudes in fp32; in fp16 a unit of fp16 a K step of 16 and one more: the partial
    sums rounded once an MMA), and the rounding of its ReLU output to x's dtype may then fall the other
    way (one ulp, 2u |h|)."""
    import torch

    wide = torch.float64
    u = ULP[point["dtype"]]
    ws = [inputs["w_in"]] + ([] if inputs["w_hid"] is None else list(inputs["w_hid"].unbind(0)))
    h = inputs["x"].to(wide)
    e = torch.zeros_like(h)

    def layer(h, e, w):
        w = w.to(wide)
        k = _pad(w.shape[1])
        c = (k // 16 + 1) * u if point["acc"] == "fp16" else k * 2.0 ** -24
        return h @ w.t(), e @ w.abs().t() + c * (h.abs() @ w.abs().t())

    for w in ws:
        zl, dzl = layer(h, e, w)
        h = zl.clamp_min(0).to(inputs["x"].dtype).to(wide)
        e = dzl * (1 + 2 * u) + 2 * u * h.abs()
    return layer(h, e, inputs["w_out"])


def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and against half an ulp of
    each element plus the accumulation's bound; a second launch; torch_baseline against reference; the
    output's strides, the inputs unchanged, the ReLUs' effect; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        x = inputs["x"]
        wide = torch.float64
        z, dz = _error_bound(inputs, point)
        act = point["out_act"]
        if act == "sigmoid":
            dy = dz / 4
        elif act == "exp":
            dy = torch.exp(z) * torch.expm1(dz)
        else:
            dy = dz
        u = ULP[point["dtype"]]
        loose = ~((out.to(wide) - ref.to(wide)).abs() <= u * ref.to(wide).abs() + dy + 1e-30)   # NaN: loose
        same = all((inputs[k] is None and inputs[k + "0"] is None) or
                   torch.equal(inputs[k].nan_to_num(7.0), inputs[k + "0"].nan_to_num(7.0))
                   for k in ("x", "w_in", "w_hid", "w_out"))
        again = mod.launch(inputs, CASES[KERNEL][name][1])
        # the ReLUs matter: the same network without them differs (the hidden activations do go negative)
        with_relu = mod.mlp_forward(inputs, wide, pre_act=True)
        no_relu = x.to(wide) @ inputs["w_in"].to(wide).t()
        for w in ([] if inputs["w_hid"] is None else inputs["w_hid"].unbind(0)):
            no_relu = no_relu @ w.to(wide).t()
        no_relu = no_relu @ inputs["w_out"].to(wide).t()
        res = {"dtype": names.get(out.dtype), "out_strides": list(out.stride()), "n_loose": int(loose.sum()),
               "max_loose_ratio": float(((out.to(wide) - ref.to(wide)).abs() / (u * ref.to(wide).abs() + dy)).max()),
               "repeat_equal": bool(torch.equal(again, out)), "inputs_unchanged": bool(same),
               "nonzero": bool((ref != 0).any()), "relu_matters": bool((with_relu - no_relu).abs().max() > 0.1),
               "x_mode": mod._x_mode(x, _pad(point["d_in"])),
               "x_strides": list(x.stride()), "w_in_strides": list(inputs["w_in"].stride()),
               "w_hid_strides": None if inputs["w_hid"] is None else list(inputs["w_hid"].stride()),
               "w_out_strides": list(inputs["w_out"].stride()),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
