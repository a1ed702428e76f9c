"""examples/polyphase_resample.py (audio sample-rate conversion by torchaudio's Hann-windowed sinc in compact
polyphase form: y[c, t] = sum_j h[t mod L, j] x[c, (t M) // L + j - pad], fp32 accumulation; a 2-d grid of
(BLOCK_T outputs, BLOCK_C channels) programs, each walking the T taps BLOCK_J at a time) against its float64
reference on the CPU through Triton's interpreter, the bank against a float64 transcription of torchaudio's
resample (its full conv1d kernel), its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 (every sweep config at every point) and sm_120 from its own ``example_args``.

As in test_examples_round33_c.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round34_c.py polyphase_resample``) that prints one JSON line; the subprocess
installs the harness's interpreter fixes (bf16 rounding; the runtime loop bound -- the tap walk's trip count is
the runtime T).

Shapes are small and odd: 1-5 channels (BLOCK_C 1 / 2 / 4 with a partial channel block), 5-700 samples (a signal
shorter than the filter's half-width: every output's window padded on both sides; several output tiles with a
partial last one), ratios 160/147 (44.1 -> 48 kHz, T 15), 1/3 (48 -> 16 kHz, T 39: 16 taps a step leave a
partial last step), 3/2 (T 15), 441/160 (16 -> 44.1 kHz), 320/441 (22.05 -> 16 kHz, T 19) and 1/1 (a plain
low-pass); fp32 / fp16 / bf16. A strided case: x a column slice of a NaN-padded [C, 7 + n + 5] buffer (a stray
read past the signal's ends shows as NaN).

Per case: launch's output against the module's reference (the harness's tolerance) and against the torchaudio
transcription here (float64 conv1d over the full [L, 1, 2 width + M] kernel built as torchaudio builds it);
shape, dtype, contiguity; the inputs unchanged (their whole buffers); the grid; torch_baseline within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "polyphase_resample"
ROLE = "held-out-34"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["polyphase_resample"] once the lead adds it)
SWEEP_AXES = {"BLOCK_T": [32, 64, 128], "BLOCK_J": [4, 8, 16], "BLOCK_C": [1, 2], "num_warps": [4, 8, 16],
              "num_stages": [1]}
ESIZE = {"fp32": 4, "fp16": 2, "bf16": 2}


def _cfg(bt, bj, bc, w=4, st=1):
    return {"BLOCK_T": bt, "BLOCK_J": bj, "BLOCK_C": bc, "num_warps": w, "num_stages": st}


def _pt(C, n, orig, new, dtype="fp32"):
    return {"C": C, "n_in": n, "orig": orig, "new": new, "dtype": dtype}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


# case -> (point, cfg); comments: L/M, T
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 160/147, T 15: BASELINE, 3 channels in blocks of 2 (one partial), one 128-output tile
        "baseline_fp32": (_pt(3, 101, 44100, 48000, "fp32"), _cfg(128, 8, 2, 4)),
        # 1/3, T 39 walked 16 a step (a partial last step), 5 channels in blocks of 4, 8 warps
        "down3_fp16": (_pt(5, 200, 48000, 16000, "fp16"), _cfg(64, 16, 4, 8)),
        # 3/2, T 15 walked 4 a step, one channel a program, 32-output tiles (4, the last partial)
        "up3_2_bf16": (_pt(2, 77, 16000, 24000, "bf16"), _cfg(32, 4, 1, 4)),
        # 320/441, T 19: the strided NaN-padded x (module doc), 8 warps
        "strided_nan_fp32": (_pt(3, 90, 22050, 16000, "fp32"), _cfg(64, 8, 2, 8)),
        # 441/160, T 15: a signal of 5 samples (shorter than pad 7), num_stages 2 (nothing to pipeline)
        "short_fp16": (_pt(2, 5, 16000, 44100, "fp16"), _cfg(32, 16, 2, 4, 2)),
        # 1/3: 234 outputs of one channel in 8 tiles of 32 on 16 warps
        "long_down3_bf16": (_pt(1, 700, 48000, 16000, "bf16"), _cfg(32, 8, 1, 16)),
        # 1/1, T 15: a plain low-pass, 4 channels in one block
        "same_rate_fp32": (_pt(4, 50, 16000, 16000, "fp32"), _cfg(64, 4, 4, 4)),
    },
}
STRIDED = "strided_nan_fp32"
JUNK_L, JUNK_R = 7, 5                               # NaN columns before / after x in the strided case's buffer

SM120_CFGS = [_cfg(128, 8, 2, 4), _cfg(128, 16, 2, 4), _cfg(32, 4, 1, 16)]


def _root(t):
    """The whole buffer under a view, 1-d."""
    return t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)


def torchaudio_resample64(x, orig_freq: int, new_freq: int, lowpass_filter_width: int = 6,
                          rolloff: float = 0.99):
    """torchaudio.functional.resample (sinc_interp_hann) transcribed in float64: its full [new, 1, 2 width +
    orig] kernel, x padded by (width, width + orig), one conv1d of stride orig, cut to ceil(new n / orig)."""
    import torch

    g = math.gcd(orig_freq, new_freq)
    orig, new = orig_freq // g, new_freq // g
    base = min(orig, new) * rolloff
    width = math.ceil(lowpass_filter_width * orig / base)
    idx = torch.arange(-width, width + orig, dtype=torch.float64)[None, None] / orig
    t = torch.arange(0, -new, -1, dtype=torch.float64)[:, None, None] / new + idx
    t = (t * base).clamp(-lowpass_filter_width, lowpass_filter_width)
    window = torch.cos(t * math.pi / lowpass_filter_width / 2) ** 2
    t = t * math.pi
    kern = torch.where(t == 0, torch.tensor(1.0, dtype=torch.float64), t.sin() / t) * window * (base / orig)
    n = x.shape[-1]
    xp = torch.nn.functional.pad(x.double(), (width, width + orig))
    y = torch.nn.functional.conv1d(xp[:, None], kern, stride=orig).transpose(1, 2).reshape(x.shape[0], -1)
    return y[:, :math.ceil(new * n / orig)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided variant (module doc), then copies of the inputs' buffers."""
    import torch

    if name == STRIDED:
        x = inputs["x"]
        buf = torch.full((x.shape[0], JUNK_L + x.shape[1] + JUNK_R), float("nan"), dtype=x.dtype)
        buf[:, JUNK_L:JUNK_L + x.shape[1]] = x
        inputs["x"] = buf[:, JUNK_L:JUNK_L + x.shape[1]]
    for k in ("x", "h"):
        inputs[k + "_root0"] = _root(inputs[k]).clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    mod = load_example(KERNEL)
    L, M = mod.ratio(p["orig"], p["new"])
    n_out = math.ceil(p["n_in"] * L / M)
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [p["C"], n_out] and res["dtype"] == p["dtype"], res
    assert res["contiguous"] is True and res["inputs_unchanged"] is True, res
    tol = H.TOL[p["dtype"]]
    assert res["torchaudio_err"] <= tol * res["scale"], res            # the torchaudio transcription
    assert res["ref_vs_torchaudio"] <= 1e-12, res                       # the reference's bank is torchaudio's
    assert res["baseline_err"] <= 4 * tol * res["scale"], res
    assert res["grid"] == [math.ceil(n_out / cfg["BLOCK_T"]), math.ceil(p["C"] / cfg["BLOCK_C"])], res
    if name == STRIDED:
        assert res["x_stride0"] == JUNK_L + p["n_in"] + JUNK_R, res


def test_every_tunable_is_covered():
    H.assert_tunables_covered(CASES)


def test_bank_matches_torchaudio():
    """The compact bank through the module's float64 reference equals torchaudio's resample (transcribed above)
    to float64 rounding for common ratios; T and pad as the module doc says; each phase's taps sum to 1 within
    0.1 % (the filter's DC gain, up- and down-sampling alike)."""
    import torch

    mod = load_example(KERNEL)
    g = torch.Generator().manual_seed(3)
    for orig, new, T in ((44100, 48000, 15), (48000, 16000, 39), (16000, 24000, 15), (16000, 44100, 15),
                         (22050, 16000, 19), (8000, 8000, 15), (48000, 44100, 15)):
        L, M = mod.ratio(orig, new)
        h, pad = mod.filter_bank(orig, new)
        assert h.shape == (L, T) and h.dtype == torch.float32 and h.is_contiguous() and pad == T // 2
        assert mod.taps(L, M) == (T, pad)
        x = torch.randn(2, 333, generator=g, dtype=torch.float64)
        ref = mod.reference({"x": x, "h": h, "L": L, "M": M, "pad": pad})
        want = torchaudio_resample64(x, orig, new)
        assert ref.shape == want.shape == (2, mod.out_length(333, L, M))
        assert float((ref - want).abs().max()) < 1e-12, (orig, new)
        dc = h.double().sum(1)
        assert float((dc - 1.0).abs().max()) < 1e-3, (orig, new, dc)


def test_points_are_realistic():
    """Three points of different character (a fractional up-sampling of stereo music in fp32, a 1/3 ASR
    down-sampling in fp16, a 3/2 TTS up-sampling in bf16), each moving 0.3-1 GB: >= 50 us at 4.8 TB/s."""
    mod = load_example(KERNEL)
    P = mod.POINTS
    assert len(P) == 3 and {p["dtype"] for p in P} == set(mod.DTYPES)
    assert [mod.ratio(p["orig"], p["new"]) for p in P] == [(160, 147), (1, 3), (3, 2)]
    for p in P:
        C, n_in, n_out, T, L, M = mod._shape(p)
        e = ESIZE[p["dtype"]]
        assert n_out == math.ceil(n_in * L / M)
        want = e * C * (n_in + n_out) + 4 * L * T
        assert mod.bytes_moved(p) == want and mod.flops(p) == 2 * C * n_out * T
        assert 0.3e9 <= want <= 1.2e9 and want / 4.8e12 >= 50e-6, p
        assert mod.flops(p) / 60e12 < want / 4.8e12, p                   # memory-bound on an H200's FMA units
    assert [mod._shape(p)[3] for p in P] == [15, 39, 15]


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, not constant; reference by hand on a tiny case; torch_baseline;
    grid / loop_iterations / example_args against the shapes."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 500, 44100, 48000, "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x, h = inp["x"], inp["h"]
    assert x.shape == (3, 500) and x.dtype == torch.bfloat16 and x.is_contiguous()
    assert h.shape == (160, 15) and h.dtype == torch.float32 and (inp["L"], inp["M"], inp["pad"]) == (160, 147, 7)
    assert 0.1 < float(x.float().std()) < 1.0 and float(x.float().abs().max()) < 2.0
    assert float((x[:, 1:].float() - x[:, :-1].float()).abs().mean()) > 0.01            # not constant
    again = mod.make_inputs(p, seed=1, device="cpu")
    assert torch.equal(again["x"], x) and torch.equal(again["h"], h)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    # by hand: L/M 1/1 with a 3-tap bank [1, 2, 3] and pad 1 -- y[t] = x[t-1] + 2 x[t] + 3 x[t+1]
    hand = {"x": torch.tensor([[1.0, 10.0, 100.0]]), "h": torch.tensor([[1.0, 2.0, 3.0]]), "L": 1, "M": 1,
            "pad": 1}
    assert torch.equal(mod.reference(hand), torch.tensor([[32.0, 321.0, 210.0]], dtype=torch.float64))
    # 2/1 with phases [[0, 1, 0], [0.5, 0, 0.5]]... -- phase 1 reads x[(t M) // L - 1] and x[(t M) // L + 1]
    hand2 = {"x": torch.tensor([[1.0, 10.0, 100.0]]), "h": torch.tensor([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]]),
             "L": 2, "M": 1, "pad": 1}
    assert torch.equal(mod.reference(hand2), torch.tensor([[1.0, 5.0, 10.0, 50.5, 100.0, 5.0]],
                                                          dtype=torch.float64))
    assert torch.equal(mod.torch_baseline(hand2), torch.tensor([[1.0, 5.0, 10.0, 50.5, 100.0, 5.0]]))
    ref = mod.reference(inp)
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.bfloat16 and base.shape == ref.shape == (3, 545)
    assert float((base.float() - ref).abs().max()) < 0.02 * float(ref.abs().max())
    # the hooks
    q = _pt(5, 1000, 48000, 16000, "fp16")
    assert mod.grid(_cfg(64, 8, 4), q) == (6, 2) and mod.grid(_cfg(32, 8, 1), q) == (11, 5)
    assert mod.loop_iterations(_cfg(64, 8, 4), q) == 5 and mod.loop_iterations(_cfg(64, 16, 1), q) == 3
    assert mod.loop_iterations(_cfg(64, 4, 1), _pt(1, 10, 44100, 48000)) == 4
    a = mod.example_args(_cfg(64, 8, 4), q)
    assert a["X"].device.type == "meta" and a["X"].shape == (5, 1000) and a["X"].dtype == torch.float16
    assert a["OUT"].shape == (5, 334) and a["H"].device.type == "cpu" and a["H"].shape == (1, 39)
    assert (a["C"], a["n_in"], a["n_out"], a["T"], a["PAD"], a["L"], a["M"]) == (5, 1000, 334, 39, 19, 1, 3)
    assert (a["stride_xc"], a["stride_oc"], a["BLOCK_T"], a["BLOCK_J"], a["BLOCK_C"]) == (1000, 334, 64, 8, 4)
    assert H.meta_nbytes(a) == 2 * 5 * (1000 + 334) + 4 * 39
    assert mod.out_length(441_000, 160, 147) == 480_000


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(2, 10)
    h, pad = mod.filter_bank(16000, 24000)

    def call(*a, **kw):
        a = a or (x, h, 3, 2, pad)
        return mod.polyphase_resample(*a, **kw)

    with pytest.raises(ValueError, match="BLOCK_T=48"):
        call(BLOCK_T=48)
    with pytest.raises(ValueError, match="BLOCK_J=3"):
        call(BLOCK_J=3)
    with pytest.raises(ValueError, match="BLOCK_C=0"):
        call(BLOCK_C=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        call(num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        call(num_stages=0)
    with pytest.raises(ValueError, match="x must be a 2-d fp32 / fp16 / bf16 tensor"):
        call(x[0], h, 3, 2, pad)
    with pytest.raises(ValueError, match="x must be a 2-d"):
        call(x.double(), h, 3, 2, pad)
    with pytest.raises(ValueError, match="unit time stride"):
        call(torch.ones(10, 2).t(), h, 3, 2, pad)
    with pytest.raises(ValueError, match="n_in >= 1"):
        call(torch.ones(2, 0), h, 3, 2, pad)
    with pytest.raises(ValueError, match="L=0"):
        call(x, h, 0, 2, pad)
    with pytest.raises(ValueError, match="M=2.0"):
        call(x, h, 3, 2.0, pad)
    with pytest.raises(ValueError, match="L/M = 6/4 must be reduced"):
        call(x, h, 6, 4, pad)
    with pytest.raises(ValueError, match=r"h must be a contiguous float32 \[L=3, T\]"):
        call(x, h.double(), 3, 2, pad)
    with pytest.raises(ValueError, match=r"h must be a contiguous float32 \[L=2, T\]"):
        call(x, h, 2, 3, pad)
    with pytest.raises(ValueError, match="h must be a contiguous"):
        call(x, torch.ones(15, 3).t(), 3, 2, pad)
    with pytest.raises(ValueError, match="pad=15 must be an int from 0 to T - 1 = 14"):
        call(x, h, 3, 2, 15)
    with pytest.raises(ValueError, match="h must be on x's device"):
        call(x, h.to("meta"), 3, 2, pad)
    with pytest.raises(ValueError, match="orig_freq=0"):
        mod.filter_bank(0, 16000)
    with pytest.raises(ValueError, match="new_freq=16000.5"):
        mod.filter_bank(16000, 16000.5)
    with pytest.raises(ValueError, match="reduces to L/M = 40001/40000"):
        mod.filter_bank(40000, 40001)
    with pytest.raises(ValueError, match="rolloff=0"):
        mod.filter_bank(16000, 24000, rolloff=0)
    with pytest.raises(ValueError, match="lowpass_filter_width=0"):
        mod.filter_bank(16000, 24000, lowpass_filter_width=0)
    with pytest.raises(ValueError, match="T=5821 taps"):
        mod.filter_bank(48000, 100)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 10, 16000, 24000, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="C=0"):
        mod.bytes_moved(_pt(0, 10, 16000, 24000))
    with pytest.raises(ValueError, match="n_in=2.5"):
        mod.flops(_pt(1, 2.5, 16000, 24000))
    with pytest.raises(ValueError, match="C=True"):
        mod.example_args(mod.BASELINE, _pt(True, 10, 16000, 24000))
    with pytest.raises(ValueError, match="BLOCK_C=3"):
        mod.grid(dict(mod.BASELINE, BLOCK_C=3), mod.POINTS[0])
    with pytest.raises(ValueError, match="BLOCK_J=None"):
        mod.loop_iterations(dict(mod.BASELINE, BLOCK_J=None), mod.POINTS[0])
    with pytest.raises(ValueError, match="channel blocks; at most 65535"):
        mod.grid(_cfg(64, 8, 1), _pt(70000, 10, 16000, 24000))
    with pytest.raises(ValueError, match="outputs; at most"):
        mod.grid(mod.BASELINE, _pt(1, 2**31 - 2**20, 16000, 24000))


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_T 32 / 64 / 128, BLOCK_J 4 / 8 / 16, BLOCK_C 1 / 2, 4 / 8 / 16 warps,
    num_stages 1: the tap loop's loads feed only their own step) with BASELINE among them; at every point each
    config is valid and launches >= 10 waves of programs on an H200. (Every config was compiled for sm_90 at
    every point with triton 3.6.0 and 3.9: all 162 compile, none spills -- the register and shared-memory
    ranges are in the module doc. Left out for spills: BLOCK_C 4 -- 128 outputs x 16 taps x 4 channels on 4
    warps spills 12 under 3.6.0 -- and BLOCK_T 256 -- 256 x 16 x 4 on 4 warps 144 spills under 3.9, 256 x 16 x 1
    on 8 warps 2.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and "num_warps" in axes
    cfgs = _cfgs()
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 10 * H200_SMS and gy <= 65535, (p, c)
            assert mod.loop_iterations(c, p) == math.ceil(mod._shape(p)[3] / c["BLOCK_J"])


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
@pytest.mark.parametrize("pi", [0, 1, 2])
def test_example_compiles_sm90(shared_cache, pi):
    """On sm_90 at each point: every config of the sweep compiles from example_args without spills, within a few
    KiB of shared memory (the layout conversions of the tap gather and the reduction)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[pi]
    for cfg in _cfgs():
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{cfg} at point {pi} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (pi, cfg, res.n_regs, res.n_spills)
        assert res.shared <= min(16384, SM90_SMEM_PER_BLOCK), (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the register-heaviest and a small-tile config at the first point
    (44.1 -> 48 kHz, fp32) compile without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(16384, SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance), the torchaudio transcription,
    the inputs' buffers, the grid, torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def same(a, b):
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        ta = torchaudio_resample64(inputs["x"], point["orig"], point["new"])
        base = mod.torch_baseline(inputs).float()
        return {"dtype": names.get(out.dtype), "contiguous": out.is_contiguous(),
                "torchaudio_err": float((out.double() - ta).abs().max()),
                "ref_vs_torchaudio": float((ref - ta).abs().max()),
                "baseline_err": float((base - ref).abs().max()),
                "inputs_unchanged": all(same(_root(inputs[k]), inputs[k + "_root0"]) for k in ("x", "h")),
                "grid": list(mod._grid(out.shape[1], out.shape[0], cfg)), "x_stride0": inputs["x"].stride(0)}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
