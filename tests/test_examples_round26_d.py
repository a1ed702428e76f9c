"""examples/fno_spectral_mul.py (the Fourier Neural Operator's spectral convolution core: for each
retained mode m, Y[b, o, m] = sum_i X[b, i, m] W[i, o, m], complex, on interleaved real / imaginary
pairs (torch.view_as_real) in fp32 / bf16 / fp16 with fp32 accumulation; a [BLOCK_B, BLOCK_O,
BLOCK_M] register tile a program, the input channels in a loop of BLOCK_I unrolled channels, 4 FFMAs
a complex multiply-add) against its torch reference on the CPU through Triton's interpreter, its
launcher hooks against the shapes, its study sweep against the points, and a compile for sm_90 and
sm_120 from its own ``example_args``.

As in test_examples_round25_a.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round26_d.py fno_spectral_mul``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 rounding; triton 3.6's runtime loop
bounds under numpy >= 2.3).

Shapes are small, odd and ragged: every EVEN_B x EVEN_O x EVEN_M x EVEN_I combination the loads
branch on (the four of EVEN_I x EVEN_M), and the unmasked store; a batch tile past B (3 rows of 4),
a channel tile past O (4 of 16), a mode tile past M (2 of 16; 30 of 32), a channel step past I (I = 1
against BLOCK_I 2; I = 5, 7 odd); one mode per corner (modes 1 x 1); the sweep's largest tile
(8 x 16 x 64 on 4 warps); complex64 and complex32 inputs (the launcher's complex path, a complex
result); x and w slices of wider buffers (batch, channel and mode offsets, pitches larger than the
data) and Y written into a caller's pitched buffer (its pad untouched); fp32, bf16 and fp16;
BLOCK_B 4 / 8, BLOCK_O 8 / 16, BLOCK_M 16-64, BLOCK_I 1 / 2, 2-8 warps, num_stages 1 / 2.

Per case: launch's output within the dtype's tolerance of the fp32 reference (the harness's
per-element check) and each element within its own error bound of a float64 product (the output
dtype's rounding of the element plus the fp32 sum's, scaled by sum_i |x| |w|); its shape, dtype
and strides; x and w unchanged; torch_baseline within tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "fno_spectral_mul"
ROLE = "held-out-26"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["fno_spectral_mul"] once the lead adds it)
SWEEP_AXES = {"BLOCK_B": [4, 8], "BLOCK_O": [8, 16], "BLOCK_M": [16, 32, 64], "BLOCK_I": [1, 2],
              "num_warps": [4, 8], "num_stages": [1]}


def _cfg(bb, bo, bm, bi=1, w=4, st=1):
    return {"BLOCK_B": bb, "BLOCK_O": bo, "BLOCK_M": bm, "BLOCK_I": bi, "num_warps": w, "num_stages": st}


def _pt(b, i, o, m1, m2, dtype="fp32"):
    return {"B": b, "I": i, "O": o, "modes1": m1, "modes2": m2, "dtype": dtype}


# case -> (point, cfg); comments: M = 2 m1 m2, EVEN_B / EVEN_O / EVEN_M / EVEN_I, grid, channel steps
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # M 16: no mask at all (the unmasked loads and store); 2 x 2 x 1 programs, 4 steps of 2 channels
        "even_fp32": (_pt(8, 8, 16, 2, 4, "fp32"), _cfg(4, 8, 16, 2, 4)),
        # M 30, every dimension ragged: B 5 = 4 + 1, O 10 = 8 + 2, M 30 = 16 + 14, I 7 = 3 x 2 + 1
        # (the last step one channel): 2 x 2 x 2 programs
        "ragged_all_bf16": (_pt(5, 7, 10, 3, 5, "bf16"), _cfg(4, 8, 16, 2, 4)),
        # M 30 in one mode tile of 32 (EVEN_M 0, the rest even); 8 warps, 6 steps of one channel
        "ragged_m_fp16": (_pt(8, 6, 8, 5, 3, "fp16"), _cfg(8, 8, 32, 1, 8)),
        # EVEN_M 1 (M 32), EVEN_I 0 (I 5: 3 steps of 2, the last one channel), B 3 in a tile of 4
        "ragged_i_b_fp32": (_pt(3, 5, 8, 2, 8, "fp32"), _cfg(4, 8, 32, 2, 8)),
        # complex64 x and w, modes 1 x 1 (M 2: one mode a corner, 2 of a 16-mode tile); O 4 of a
        # 16-channel tile; the launcher returns complex
        "complex64_fp32": (_pt(4, 4, 4, 1, 1, "fp32"), _cfg(4, 16, 16, 1, 4)),
        # complex32 x and w; B 6 = 4 + 2, M 8 of 16; 2 warps, num_stages 2 (no dot: no pipeline)
        "complex32_fp16": (_pt(6, 4, 8, 2, 2, "fp16"), _cfg(4, 8, 16, 2, 2, 2)),
        # x the batches 1:, channels 1:7, modes :12 of a [4, 8, 15, 2] buffer; w the channels :12,
        # modes 2:14 of a [6, 13, 17, 2] buffer; Y into the channels 1:13, modes :12 of a [3, 14, 16, 2]
        # buffer of SENTINEL: B 3 < 8, O 12 = 8 + 4, M 12 < 16
        "strided_pitched_bf16": (_pt(3, 6, 12, 2, 3, "bf16"), _cfg(8, 8, 16, 1, 4)),
        # the sweep's largest tile, 8 x 16 x 64 on 4 warps, BLOCK_I 2: B 9 = 8 + 1, the rest even;
        # 2 x 1 x 1 programs
        "wide_tile_fp32": (_pt(9, 4, 16, 4, 8, "fp32"), _cfg(8, 16, 64, 2, 4)),
        # I 1 against BLOCK_I 2: one step, its second channel masked; M 18 = 16 + 2; 8 warps
        "one_channel_fp16": (_pt(4, 1, 8, 3, 3, "fp16"), _cfg(4, 8, 16, 2, 8)),
    },
}
COMPLEX = ("complex64_fp32", "complex32_fp16")
STRIDED = "strided_pitched_bf16"
X_BUF, W_BUF, Y_BUF, SENTINEL = (4, 8, 15), (6, 13, 17), (3, 14, 16), -7.0

# configs compiled on sm_90 (BASELINE first): the largest tile on 4 warps (the most registers), the
# smallest on 8 warps, the widest mode tile on 8 warps
COMPILE_CFGS = [_cfg(8, 16, 32, 2, 4), _cfg(8, 16, 64, 2, 4), _cfg(4, 8, 16, 1, 8), _cfg(4, 16, 64, 1, 8)]
SM120_CFGS = [_cfg(8, 16, 32, 2, 4), _cfg(8, 16, 64, 2, 4), _cfg(4, 8, 16, 1, 8)]


def _out_tile_bytes(cfg) -> int:
    """The complex fp32 output tile, BLOCK_B x BLOCK_O x BLOCK_M x 8 B: a bound on the layout
    conversions' shared memory (the loaded rows, the epilogue's joined tile) in triton 3.6 and 3.9."""
    return cfg["BLOCK_B"] * cfg["BLOCK_O"] * cfg["BLOCK_M"] * 8


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """COMPLEX: x and w as complex tensors (complex64 / complex32 views of the pairs); STRIDED: x, w
    slices of wider buffers, Y a slice of a pitched buffer full of SENTINEL."""
    import torch

    x, w = inputs["x"], inputs["w"]
    B, I, M, _ = x.shape
    O = w.shape[1]
    if name in COMPLEX:
        inputs["x"] = torch.view_as_complex(x)
        inputs["w"] = torch.view_as_complex(w)
    if name == STRIDED:
        xb = torch.full((*X_BUF, 2), 9.0, dtype=x.dtype)
        xb[1:1 + B, 1:1 + I, :M] = x
        inputs["x"] = xb[1:1 + B, 1:1 + I, :M]
        wb = torch.full((*W_BUF, 2), 5.0, dtype=w.dtype)
        wb[:I, :O, 2:2 + M] = w
        inputs["w"] = wb[:I, :O, 2:2 + M]
        full = torch.full((*Y_BUF, 2), SENTINEL, dtype=x.dtype)
        inputs["out"] = full[:, 1:1 + O, :M]
        inputs["full"] = full


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


def _flags(p, c):
    """(EVEN_B, EVEN_O, EVEN_M, EVEN_I, programs, channel steps) of a case."""
    M = 2 * p["modes1"] * p["modes2"]
    n = -(-p["B"] // c["BLOCK_B"]) * -(-p["O"] // c["BLOCK_O"]) * -(-M // c["BLOCK_M"])
    return (int(p["B"] % c["BLOCK_B"] == 0), int(p["O"] % c["BLOCK_O"] == 0), int(M % c["BLOCK_M"] == 0),
            int(p["I"] % c["BLOCK_I"] == 0), n, -(-p["I"] // c["BLOCK_I"]))


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    B, O, M = p["B"], p["O"], 2 * p["modes1"] * p["modes2"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["dtype"] == p["dtype"], res
    assert res["n_loose"] == 0, res                       # each element within its own error bound
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["inputs_unchanged"] is True, res
    assert res["shape"] == [B, O, M, 2], res
    if name == STRIDED:
        assert res["x_strides"] == [X_BUF[1] * X_BUF[2] * 2, X_BUF[2] * 2, 2, 1], res
        assert res["w_strides"] == [W_BUF[1] * W_BUF[2] * 2, W_BUF[2] * 2, 2, 1], res
        assert res["out_strides"] == [Y_BUF[1] * Y_BUF[2] * 2, Y_BUF[2] * 2, 2, 1], res
        assert res["pad_untouched"] is True, res
    else:
        assert res["out_strides"] == [O * M * 2, M * 2, 2, 1], res
    if name in COMPLEX:
        assert res["complex_result"] == {"complex64_fp32": "torch.complex64",
                                         "complex32_fp16": "torch.complex32"}[name], res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values bracketing the sweep; the three dtypes, complex and pair inputs;
    the four load variants EVEN_I x EVEN_M and the unmasked store; each of B, O, M, I ragged
    somewhere, a tile past each whole dimension; one program and several; one step and several."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    fl = [(p, c, _flags(p, c)) for p, c in cases]
    assert {(f[3], f[2]) for _, _, f in fl} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert any(f[:4] == (1, 1, 1, 1) for _, _, f in fl)
    for k in range(4):
        assert {f[k] for _, _, f in fl} == {0, 1}, k
    assert any(p["B"] < c["BLOCK_B"] for p, c in cases) and any(p["O"] < c["BLOCK_O"] for p, c in cases)
    assert any(2 * p["modes1"] * p["modes2"] < c["BLOCK_M"] for p, c in cases)
    assert any(p["I"] < c["BLOCK_I"] for p, c in cases)
    assert {f[4] == 1 for _, _, f in fl} == {True, False} and {f[5] == 1 for _, _, f in fl} == {True, False}
    for k in ("BLOCK_B", "BLOCK_O", "BLOCK_M", "BLOCK_I", "num_warps", "num_stages"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)
    assert CASES[KERNEL]["wide_tile_fp32"][1] == _cfg(8, 16, 64, 2, 4)     # the sweep's largest tile


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, the EVEN_* flags, the tile counts, the grid and the channel steps; bytes_moved / flops;
    inputs < 4 GB; 4-7 GFLOP a point (roughly 100-250 us on an H200's fp32 FMA pipes)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "spectral_mul"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    assert mod.BASELINE["num_stages"] == 1
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, I, O, M, dt = p["B"], p["I"], p["O"], 2 * p["modes1"] * p["modes2"], p["dtype"]
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["X"].shape == (B, I, M, 2) and a["X"].dtype == dts[dt] and a["X"].is_contiguous()
            assert a["W"].shape == (I, O, M, 2) and a["W"].dtype == dts[dt] and a["W"].is_contiguous()
            assert a["Y"].shape == (B, O, M, 2) and a["Y"].dtype == dts[dt] and a["Y"].is_contiguous()
            n_bt, n_ot = -(-B // cfg["BLOCK_B"]), -(-O // cfg["BLOCK_O"])
            assert (a["B"], a["I"], a["O"], a["M"], a["n_bt"], a["n_ot"]) == (B, I, O, M, n_bt, n_ot)
            assert (a["stride_xb"], a["stride_xi"], a["stride_wi"], a["stride_wo"], a["stride_yb"],
                    a["stride_yo"]) == (2 * I * M, 2 * M, 2 * O * M, 2 * M, 2 * O * M, 2 * M)
            assert (a["EVEN_B"], a["EVEN_O"], a["EVEN_M"], a["EVEN_I"]) == (
                int(B % cfg["BLOCK_B"] == 0), int(O % cfg["BLOCK_O"] == 0), int(M % cfg["BLOCK_M"] == 0),
                int(I % cfg["BLOCK_I"] == 0))
            assert all(a[k] == cfg[k] for k in ("BLOCK_B", "BLOCK_O", "BLOCK_M", "BLOCK_I"))
            assert mod.grid(cfg, p) == (n_bt * n_ot * -(-M // cfg["BLOCK_M"]),)
            assert mod.loop_iterations(cfg, p) == -(-I // cfg["BLOCK_I"])
        assert mod.bytes_moved(p) == 2 * size[dt] * M * (B * I + I * O + B * O)
        assert mod.flops(p) == 8 * B * I * O * M
        assert mod.bytes_moved(p) < 4 * 2**30 and H.meta_nbytes(mod.example_args(mod.BASELINE, p)) < 4 * 2**30
        assert 4e9 <= mod.flops(p) <= 7e9, p
        assert 100e6 <= mod.bytes_moved(p) <= 500e6, p
    # the points differ: the dtype, the operand that dominates the traffic, the ragged block
    assert [p["dtype"] for p in mod.POINTS] == ["fp32", "bf16", "fp16"]
    xy = [p["B"] * (p["I"] + p["O"]) for p in mod.POINTS]
    ww = [p["I"] * p["O"] for p in mod.POINTS]
    assert xy[0] > 10 * ww[0] and ww[2] > 10 * xy[2]              # X / Y-bound; W-bound
    assert sorted(p["I"] for p in mod.POINTS) == [64, 128, 256] and all(p["I"] == p["O"] for p in mod.POINTS)
    flags = {(mod.example_args(c, p)["EVEN_B"], mod.example_args(c, p)["EVEN_M"]) for p in mod.POINTS for c in cfgs}
    assert {f[0] for f in flags} == {0, 1} and {f[1] for f in flags} == {0, 1}
    assert all(mod.example_args(c, p)["EVEN_O"] and mod.example_args(c, p)["EVEN_I"]
               for p in mod.POINTS for c in cfgs)
    assert [2 * p["modes1"] * p["modes2"] % 64 for p in mod.POINTS] == [32, 0, 0]     # 288: ragged at 64
    assert [p["B"] % 8 for p in mod.POINTS] == [4, 4, 0]                             # 500, 20: ragged at 8


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the spectrum's decay over the modes, the weights' scale;
    the mode order (corner-major, negative rows second); reference against a hand-made product;
    torch_baseline's dtype; bytes / flops / grid / steps by hand."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 3, 5, 2, 3, "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x, w = inp["x"], inp["w"]
    assert x.shape == (2, 3, 12, 2) and w.shape == (3, 5, 12, 2)
    assert x.dtype == w.dtype == torch.bfloat16 and x.is_contiguous() and w.is_contiguous()
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    k1, k2 = mod._mode_wavenumbers(2, 3)
    assert k1.tolist() == [0, 0, 0, 1, 1, 1, -2, -2, -2, -1, -1, -1] and k2.tolist() == [0, 1, 2] * 4
    big = mod.make_inputs(_pt(64, 32, 32, 8, 8, "fp32"), device="cpu")
    mag = torch.linalg.vector_norm(big["x"], dim=-1)                   # |X| per (b, i, m)
    kk, ll = mod._mode_wavenumbers(8, 8)
    low, high = mag[..., (kk == 0) & (ll == 0)].mean(), mag[..., (kk.abs() >= 6) & (ll >= 6)].mean()
    assert float(low) > 5 * float(high) > 0
    wstd = float(big["w"].std())
    assert 0.6 * (1 / 64) ** 0.5 < wstd < 1.4 * (1 / 64) ** 0.5
    # reference: one complex multiply-add chain by hand
    xc = torch.view_as_complex(x.float())
    wc = torch.view_as_complex(w.float())
    ref = mod.reference(inp)
    assert ref.shape == (2, 5, 12, 2) and ref.dtype == torch.float32
    hand = sum(xc[1, i, 7] * wc[i, 4, 7] for i in range(3))
    assert abs(complex(ref[1, 4, 7, 0], ref[1, 4, 7, 1]) - complex(hand)) < 1e-5
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.bfloat16 and base.shape == (2, 5, 12, 2)
    assert mod.bytes_moved(p) == 2 * 2 * 12 * (2 * 3 + 3 * 5 + 2 * 5)
    assert mod.flops(p) == 8 * 2 * 3 * 5 * 12
    assert mod.grid(_cfg(4, 8, 16), _pt(5, 7, 10, 3, 5)) == (2 * 2 * 2,)
    assert mod.loop_iterations(_cfg(4, 8, 16, 2), _pt(5, 7, 10, 3, 5)) == 4


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(2, 3, 8, 2)
    w = torch.ones(3, 4, 8, 2)
    with pytest.raises(ValueError, match="BLOCK_B=3"):
        mod.spectral_mul(x, w, BLOCK_B=3)
    with pytest.raises(ValueError, match="BLOCK_M=0"):
        mod.spectral_mul(x, w, BLOCK_M=0)
    with pytest.raises(ValueError, match="BLOCK_I=6"):
        mod.spectral_mul(x, w, BLOCK_I=6)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.spectral_mul(x, w, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.spectral_mul(x, w, num_stages=0)
    with pytest.raises(ValueError, match=r"real pairs \[..., 2\]"):
        mod.spectral_mul(torch.ones(2, 3, 8, 3), w)
    with pytest.raises(ValueError, match="complex64 / complex32"):
        mod.spectral_mul(x.double(), w)
    with pytest.raises(ValueError, match="complex64 / complex32"):
        mod.spectral_mul(torch.ones(2, 3, 8, dtype=torch.complex128), w)
    with pytest.raises(ValueError, match="expected complex x of 3 dims"):
        mod.spectral_mul(torch.ones(3, 8, dtype=torch.complex64), w)
    with pytest.raises(ValueError, match="w's element type"):
        mod.spectral_mul(x, w.half())
    with pytest.raises(ValueError, match=r"w must be \[I=3, O, M=8\]"):
        mod.spectral_mul(x, torch.ones(3, 4, 9, 2))
    with pytest.raises(ValueError, match="x must have contiguous mode rows"):
        mod.spectral_mul(torch.ones(2, 3, 16, 2)[:, :, ::2], w)
    with pytest.raises(ValueError, match="w must have contiguous mode rows"):
        mod.spectral_mul(x, torch.ones(3, 4, 2, 8).transpose(2, 3))
    with pytest.raises(ValueError, match=r"out must be \[2, 4, 8\]"):
        mod.spectral_mul(x, w, out=torch.empty(2, 4, 9, 2))
    with pytest.raises(ValueError, match="out must have contiguous mode rows"):
        mod.spectral_mul(x, w, out=torch.empty(2, 4, 2, 8).transpose(2, 3))
    with pytest.raises(ValueError, match="dtype 'fp64'"):
        mod.make_inputs(_pt(1, 2, 2, 1, 1, "fp64"), device="cpu")
    with pytest.raises(ValueError, match="modes1=0"):
        mod.grid(mod.BASELINE, _pt(1, 2, 2, 0, 1))
    with pytest.raises(ValueError, match="I=-1"):
        mod.flops(_pt(1, -1, 2, 1, 1))
    with pytest.raises(ValueError, match="BLOCK_O=24"):
        mod.grid(dict(mod.BASELINE, BLOCK_O=24), mod.POINTS[0])
    # empty batch or modes: nothing to launch; no input channels: Y = 0
    assert mod.spectral_mul(torch.ones(0, 3, 8, 2), w).shape == (0, 4, 8, 2)
    assert mod.spectral_mul(torch.ones(2, 3, 0, 2), torch.ones(3, 4, 0, 2)).shape == (2, 4, 0, 2)
    y = mod.spectral_mul(torch.ones(2, 0, 8, 2), torch.ones(0, 4, 8, 2))
    assert y.shape == (2, 4, 8, 2) and not y.any()


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_B 4 / 8 x BLOCK_O 8 / 16 x BLOCK_M 16-64 x BLOCK_I 1 / 2 x
    4 / 8 warps, num_stages 1) with BASELINE among them; at every point each config is valid, its two
    accumulators <= 128 fp32 registers a thread, its conversions' shared memory (at most the complex
    fp32 output tile, 4-64 KiB) within sm_90's 227 KiB, and it launches >= 2 waves of programs on an
    H200 (384 at the fewest: the W-bound FourCastNet-like point, B 8 in one batch tile). (Every
    config was compiled for sm_90 at every point with triton 3.6.0 and 3.9: all compile, none spills;
    3.6: 32-255 registers, shared memory 2-32 KiB; 3.9: 31-254 registers, 2-8 KiB; the most for the
    8 x 16 x 64 tile on 4 warps with BLOCK_I 2. BLOCK_I 4 on that tile spills 14 words at the fp32
    point under both, so BLOCK_I stops at 2; num_stages: no dot, the channel loop's loads are not
    pipelined, hence the one value.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            (n,) = mod.grid(c, p)
            assert 2 * H200_SMS <= n < 2**31, (p, c)
            assert _out_tile_bytes(c) <= SM90_SMEM_PER_BLOCK, c
            assert 2 * c["BLOCK_B"] * c["BLOCK_O"] * c["BLOCK_M"] <= 128 * 32 * c["num_warps"], c


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
    """On sm_90: BASELINE and three more at the first point (fp32, M 288: the masked mode tile at
    BLOCK_M 64), the 8 x 16 x 64 tile on 4 warps (the most registers) among them, compile without
    spills and with at most the fp32 output tile of shared memory; BASELINE and that tile at the
    other two (bf16 with a ragged batch tile; fp16, W-bound)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= _out_tile_bytes(cfg), (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in COMPILE_CFGS[:2]:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert 0 < res.shared <= _out_tile_bytes(cfg), (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the largest and the smallest tile compile without spills,
    the conversions' shared memory within the fp32 output tile."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= min(_out_tile_bytes(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and torch_baseline
    against reference; each element against a float64 product within its own bound; shapes, dtypes,
    strides, the inputs unchanged, the pitched buffer's pad; the complex cases' result type; one JSON
    line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def pairs(t):
        return torch.view_as_real(t) if t.is_complex() else t

    def extra(name, point, inputs, out, ref):
        x, w = pairs(inputs["x"]).double(), pairs(inputs["w"]).double()
        xc, wc = torch.view_as_complex(x.contiguous()), torch.view_as_complex(w.contiguous())
        exact = torch.view_as_real(torch.einsum("bim,iom->bom", xc, wc))
        absum = torch.einsum("bim,iom->bom", xc.abs(), wc.abs())[..., None]
        # the output's rounding (half an ulp of its dtype, relative) plus the fp32 sums' (I terms, a
        # few ulps of fp32 each, of sum |x| |w|)
        u = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -24}[out.dtype]
        bound = u * exact.abs() + (4 * x.shape[1] + 4) * 2.0 ** -24 * absum + 1e-30
        loose = (out.double() - exact).abs() > bound
        x0 = mod.make_inputs(point, seed=len(name), device="cpu")
        res = {"dtype": names.get(out.dtype), "n_loose": int(loose.sum()), "shape": list(out.shape),
               "out_strides": list(out.stride()), "x_strides": list(pairs(inputs["x"]).stride()),
               "w_strides": list(pairs(inputs["w"]).stride()),
               "inputs_unchanged": bool(torch.equal(pairs(inputs["x"]), x0["x"])
                                        and torch.equal(pairs(inputs["w"]), x0["w"])),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        if name in COMPLEX:
            c = CASES[KERNEL][name][1]
            y = mod.spectral_mul(inputs["x"], inputs["w"], **c)
            res["complex_result"] = str(y.dtype) if y.is_complex() else None
        if name == STRIDED:
            full = inputs["full"]
            pad = torch.ones(full.shape, dtype=torch.bool)
            pad[:, 1:1 + out.shape[1], :out.shape[2]] = False
            res["pad_untouched"] = bool((full[pad] == SENTINEL).all())
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
