"""examples/adam8bit_blockwise.py (one bitsandbytes-style 8-bit AdamW step on a flat buffer: params
and grads fp32 / bf16, m and v as uint8 codes of the signed / unsigned dynamic tables with one fp32
absmax per 256-element quant block each; a [BLOCKS, 256] tile a step, STEPS steps a CTA, the
state re-quantized per block by a binary search over the table scaled by the new absmax) against
its torch reference on the CPU through Triton's interpreter, its launcher hooks against the
shapes, its study sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round24_c.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round25_b.py adam8bit_blockwise``) that prints one JSON line.
The subprocess installs the harness's interpreter fixes (bf16 rounding; triton 3.6's runtime loop
bounds under numpy >= 2.3).

Shapes are small, odd and ragged: a buffer shorter than one quant block; whole chunks only (no
masked CTA); a ragged last block with tile rows past the end (their absmax neither read nor
written); a buffer of whole quant blocks whose last CTA runs fewer, partly empty tiles; one chunk
wider than the whole buffer (a single masked CTA); all-zero quant blocks (absmax 0) in a full chunk
and in the masked one; beta1 = 0 with gradients placed on exact midpoints of the scaled table
(the tie rule: the lower code) and on its ends (1.0 -> code 255, -1 -> code 0); the in-place
step (outputs aliasing the inputs) equal to the out-of-place one; step 1 without weight decay;
fp32 and bf16; BLOCKS 1-8, STEPS 1-16, 1-8 warps, num_stages 1 / 2.

Per case: the new codes and absmax equal the reference's bit for bit, the params within the
dtype's tolerance (and, in fp32 / after the bf16 cast, within the update's rounding: _rounding_apart),
the inputs untouched by the out-of-place launch, the output dtypes; torch_baseline within tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "adam8bit_blockwise"
ROLE = "held-out-25"
H200_SMS = 132
QB = 256

# the study's sweep (scripts/rank_study.py SWEEPS["adam8bit_blockwise"] once the lead adds it)
SWEEP_AXES = {"BLOCKS": [1, 2, 4, 8], "STEPS": [1, 2, 4, 8, 16], "num_warps": [4, 8], "num_stages": [1]}


def _cfg(b, s, w=4, st=1):
    return {"BLOCKS": b, "STEPS": s, "num_warps": w, "num_stages": st}


def _pt(n, dtype="fp32"):
    return {"n": n, "dtype": dtype}


# case -> (point, cfg); comments: chunk = BLOCKS x STEPS x 256 elements, the CTAs, the last one's tiles
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 100 elements < one quant block: one masked CTA, one tile, its one row short
        "below_one_block_fp32": (_pt(100), _cfg(1, 1, 4)),
        # 6144 = 3 chunks of 2 x 4 x 256: three full CTAs, no masked path
        "whole_chunks_bf16": (_pt(6144, "bf16"), _cfg(2, 4, 4)),
        # chunk 2048: 2 full CTAs + one with 300 elements: one tile, row 0 full, row 1 44 elements,
        # rows 2 and 3 past the last quant block; 8 warps
        "ragged_rows_past_end_fp32": (_pt(2 * 2048 + 300), _cfg(4, 2, 8)),
        # 11 whole quant blocks, chunk 2048: CTA 1 holds 3 blocks, 2 tiles, the second with one row
        "whole_blocks_short_cta_bf16": (_pt(11 * QB, "bf16"), _cfg(2, 4, 4, 2)),
        # BLOCKS 1, STEPS 16 (chunk 4096): one full CTA and a masked one of 16 tiles, the last 251 long
        "steps16_fp32": (_pt(8187), _cfg(1, 16, 4)),
        # BLOCKS 8 (chunk 2048): 2 full CTAs; the third: 4 full rows, one of 24, three past the end
        "blocks8_bf16": (_pt(5144, "bf16"), _cfg(8, 1, 8)),
        # blocks 1 (a full chunk) and 9 (the masked CTA) all zero: absmax 0, the 0.0 codes; 2 warps
        "zero_blocks_fp32": (_pt(2 * 1024 + 700), _cfg(2, 2, 2, 2)),
        # beta1 = 0 (m = g exactly): block 0's gradients on exact midpoints and ends of the scaled
        # signed table; 1 warp
        "ties_beta1_zero_fp32": (_pt(4 * QB + 77), _cfg(4, 1, 1)),
        # the in-place step against the out-of-place one; BLOCKS 1, STEPS 2 on 8 warps
        "inplace_bf16": (_pt(1500, "bf16"), _cfg(1, 2, 8)),
        # step 1 (bias corrections at their extreme), no weight decay; one chunk of 8 x 16 blocks wider
        # than the buffer: a single masked CTA of 2 tiles
        "step1_wide_chunk_bf16": (_pt(3000, "bf16"), _cfg(8, 16, 4)),
    },
}
ZERO, TIES, INPLACE, STEP1 = "zero_blocks_fp32", "ties_beta1_zero_fp32", "inplace_bf16", "step1_wide_chunk_bf16"
ZERO_BLOCKS = (1, 9)

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(2, 4, 4), _cfg(8, 16, 4), _cfg(8, 1, 8), _cfg(1, 16, 8), _cfg(1, 1, 4)]
SM120_CFGS = [_cfg(2, 4, 4), _cfg(8, 16, 8), _cfg(4, 4, 4)]


def _tie_grads(code):
    """256 fp32 values for block 0 of TIES (scale 1: its absmax is 1.0, the first value): 1.0, -1.0,
    then exact midpoints (c[i] + c[i + 1]) / 2 of the signed table where that is an fp32 value with
    equal fp32 distances to both, then 0.0."""
    import torch

    c = code.double()
    vals = [1.0, -1.0]
    for i in range(255):
        mid = (c[i] + c[i + 1]) / 2
        m32 = torch.tensor(float(mid), dtype=torch.float32)
        if float(m32) == float(mid) and float(code[i + 1] - m32) == float(m32 - code[i]):
            vals.append(float(mid))
    vals = vals[:QB]
    n_ties = len(vals) - 2
    vals += [0.0] * (QB - len(vals))
    return torch.tensor(vals, dtype=torch.float32), n_ties


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """ZERO: grads and both states zero in ZERO_BLOCKS (codes of 0.0, absmax 0); TIES: beta1 = 0 and
    block 0's grads from _tie_grads; STEP1: step 1, weight_decay 0."""
    import torch

    mod = load_example(KERNEL)
    if name == ZERO:
        zero1 = int(torch.searchsorted(inputs["code1"], torch.tensor(0.0)))
        for b in ZERO_BLOCKS:
            sl = slice(b * QB, (b + 1) * QB)
            inputs["grads"][sl] = 0
            inputs["state1"][sl] = zero1
            inputs["state2"][sl] = 0
            inputs["absmax1"][b] = 0
            inputs["absmax2"][b] = 0
    if name == TIES:
        inputs["beta1"] = 0.0
        inputs["grads"][:QB] = _tie_grads(inputs["code1"])[0].to(inputs["grads"].dtype)
    if name == STEP1:
        inputs["step"] = 1
        inputs["weight_decay"] = 0.0
    assert mod.n_blocks(inputs["params"].numel()) == inputs["absmax1"].numel()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


def _n_ctas(n, c):
    return -(-(-(-n // QB)) // (c["BLOCKS"] * c["STEPS"]))


def _tail(n, c):
    """(elements in the last CTA's chunk, its tiles, whether that CTA is masked)."""
    chunk = c["BLOCKS"] * c["STEPS"] * QB
    rest = n - (_n_ctas(n, c) - 1) * chunk
    return rest, -(-rest // (c["BLOCKS"] * QB)), rest < chunk


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["n"]] and res["dtype"] == p["dtype"], res
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["n_differ_state1"] == 0 and res["n_differ_state2"] == 0, res
    assert res["absmax1_equal"] and res["absmax2_equal"], res
    assert res["n_differ_params"] == 0, res                 # after the cast to the params' dtype
    assert res["inputs_untouched"], res
    assert res["out_dtypes"] == [p["dtype"], "uint8", "uint8", "fp32", "fp32"], res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    # the absmax element of every block gets the table's end: code 255 (1.0) or code 0 (the lowest)
    assert res["absmax_codes_at_ends"], res
    if name == ZERO:
        assert res["zero_blocks"] == {"absmax": [0.0, 0.0, 0.0, 0.0], "codes1_zero": True, "codes2_zero": True}, res
    if name == TIES:
        assert res["n_ties"] >= 100 and res["ties_to_lower"] == res["n_ties"], res
        assert res["ends"] == [255, 0], res
    if name == INPLACE:
        assert res["inplace_equal"], res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values bracketing the sweep; both dtypes; a CTA masked and none; a ragged
    last row and whole rows only; tile rows past the last block; a chunk wider than the buffer; a
    last CTA running fewer tiles than STEPS."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    tails = [(p["n"], c, _tail(p["n"], c)) for p, c in cases]
    assert {t[2] for _, _, t in tails} == {True, False}
    assert any(n % QB for n, _, _ in tails) and any(n % QB == 0 and t[2] for n, _, t in tails)
    # a masked tile whose last rows lie past the last quant block
    assert any(t[2] and -(-(t[0] - (t[1] - 1) * c["BLOCKS"] * QB) // QB) < c["BLOCKS"] for _, c, t in tails)
    assert any(_n_ctas(n, c) == 1 and t[2] for n, c, t in tails)                  # a chunk wider than n
    assert any(t[2] and 1 < t[1] < c["STEPS"] for _, c, t in tails)               # fewer tiles than STEPS
    assert any(n < QB for n, _, _ in tails)
    for k in ("BLOCKS", "STEPS", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)
    assert {c["num_stages"] for _, c in cases} == {1, 2}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes and dtypes, N,
    the tunables, the step's scalars; grid and loop_iterations; bytes_moved / flops; inputs < 4 GB;
    100 MB - 2 GB of traffic (roughly 30 us - 0.5 ms on an H200)."""
    import math

    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "reference_step", "bytes_moved", "flops", "grid",
               "loop_iterations", "example_args", "torch_baseline", "adam8bit_step", "create_dynamic_map"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1 and mod.ROLE == ROLE
    assert mod.SWEEP_AXES == SWEEP_AXES and mod.QBLOCK == QB
    dts = {"bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"bf16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    want_n = {"bert_base_seqcls": 109_483_778, "llama2_7b": 105_287_744, "llama3_70b": 34_450_052}
    h = mod.HPARAMS
    for p in mod.POINTS:
        n = mod.numel(p)
        assert n == want_n[p["model"]]
        nb = -(-n // QB)
        dt = dts[p["dtype"]]
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            for k in ("P", "G", "P_OUT"):
                assert a[k].shape == (n,) and a[k].dtype == dt, k
            for k in ("S1", "S2", "S1_OUT", "S2_OUT"):
                assert a[k].shape == (n,) and a[k].dtype == torch.uint8, k
            for k in ("A1", "A2", "A1_OUT", "A2_OUT"):
                assert a[k].shape == (nb,) and a[k].dtype == torch.float32, k
            for k in ("CODE1", "CODE2"):
                assert a[k].shape == (256,) and a[k].dtype == torch.float32, k
            assert a["N"] == n and a["QB"] == QB
            assert (a["BLOCKS"], a["STEPS"]) == (cfg["BLOCKS"], cfg["STEPS"])
            assert a["beta1"] == h["beta1"] and a["omb2"] == pytest.approx(1 - h["beta2"])
            assert a["step_size"] == pytest.approx(h["lr"] / (1 - h["beta1"] ** h["step"]))
            assert a["inv_sqrt_bc2"] == pytest.approx(1 / math.sqrt(1 - h["beta2"] ** h["step"]))
            assert a["decay"] == pytest.approx(1 - h["lr"] * h["weight_decay"])
            assert mod.grid(cfg, p) == -(-nb // (cfg["BLOCKS"] * cfg["STEPS"]))
            assert mod.loop_iterations(cfg, p) == cfg["STEPS"]
        e = size[p["dtype"]]
        assert mod.bytes_moved(p) == n * (3 * e + 4) + 16 * nb
        assert mod.flops(p) == 25 * n
        assert H.meta_nbytes(mod.example_args(mod.BASELINE, p)) < 4 * 2**30
        assert 100e6 <= mod.bytes_moved(p) <= 2e9
    # the points differ: the dtype, the size (3x), the ragged last block
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert sorted(mod.numel(p) % QB for p in mod.POINTS) == [2, 64, 132]
    assert mod.loop_iterations(_cfg(8, 16), _pt(3000)) == 2 and mod.grid(_cfg(8, 16), _pt(3000)) == 1


def test_hooks_on_small_points_and_inputs():
    """The code tables (bitsandbytes' create_dynamic_map: 256 sorted distinct values, the signed one
    [-0.99297, 1] with 127 negatives, the unsigned [0, 1]); the nearest-code rule (ties to the
    lower code); make_inputs: shapes, dtypes, the seed, states that decode to a sensible m and v;
    reference_step's codes re-quantize its own moments; torch_baseline's dtype."""
    import torch

    mod = load_example(KERNEL)
    c1, c2 = mod.create_dynamic_map(True), mod.create_dynamic_map(False)
    for c in (c1, c2):
        assert c.shape == (256,) and c.dtype == torch.float32 and bool((c.diff() > 0).all())
        assert float(c[-1]) == 1.0 and 0.0 in c.tolist()
    assert float(c1[0]) == pytest.approx(-0.99296875, abs=1e-6) and int((c1 < 0).sum()) == 127
    assert float(c2[0]) == 0.0 and float(c2[1]) == pytest.approx(0.325e-6, rel=1e-5)
    assert float(c1[128]) == pytest.approx(0.55e-6, rel=1e-5)       # the smallest positive signed code
    # per decade 1e-6 .. 1e0: 1, 2, 4, ..., 64 positive signed values; 2, 4, ..., 128 unsigned ones
    for k in range(7):
        lo, hi = 10.0 ** (k - 7), 10.0 ** (k - 6)
        assert int(((c1 > lo) & (c1 < hi)).sum()) == 2 ** k and int(((c2 > lo) & (c2 < hi)).sum()) == 2 ** (k + 1)
    # the rule: nearest by fp32 distance, an exact tie to the lower code, below code[0] to 0
    y = torch.tensor([[0.0, 1.0, -1.0, float((c2[5] + c2[6]) / 2), float(c2[5]), float(c2[6]) * 0.999]])
    got = mod.nearest_code(y, c2, torch.ones(1)).tolist()[0]
    assert got[:2] == [0, 255] and got[2] == 0 and got[4] == 5 and got[5] == 6 and got[3] in (5, 6)
    if float(c2[6] - y[0, 3]) == float(y[0, 3] - c2[5]):
        assert got[3] == 5
    y1 = torch.tensor([[-1.0, -0.9999, 0.0, 1.0]])
    assert mod.nearest_code(y1, c1, torch.ones(1)).tolist()[0] == [0, 0, int((c1 == 0).nonzero()), 255]
    # the scaled table: the same code for x * s against code * s when s is a power of two
    x = torch.linspace(-1, 1, 997).view(1, -1)
    assert torch.equal(mod.nearest_code(x * 0.125, c1, torch.tensor([0.125])), mod.nearest_code(x, c1, torch.ones(1)))
    p = _pt(1000, "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["params"].shape == (1000,) and inp["params"].dtype == torch.bfloat16
    assert inp["grads"].dtype == torch.bfloat16 and inp["state1"].dtype == torch.uint8
    assert inp["absmax1"].shape == (4,) and inp["absmax2"].dtype == torch.float32
    assert inp["params_out"].shape == (1000,) and inp["absmax2_out"].shape == (4,)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["state1"], inp["state1"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["grads"], inp["grads"])
    blk = torch.arange(1000) // QB
    m = c1[inp["state1"].long()] * inp["absmax1"][blk]
    v = c2[inp["state2"].long()] * inp["absmax2"][blk]
    assert 3e-4 < float(m.std()) < 3e-3 and bool((v >= 0).all()) and float(v.max()) > 1e-7
    assert len(set(inp["state1"].tolist())) > 100
    ref = mod.reference_step(inp)
    assert ref["params"].dtype == torch.float32 and ref["params"].shape == (1000,)
    assert ref["state1"].dtype == torch.uint8 and ref["absmax1"].shape == (4,)
    m_new = 0.9 * m + 0.1 * inp["grads"].float()
    pad = torch.zeros(1024)
    pad[:1000] = m_new.abs()
    assert torch.allclose(ref["absmax1"], pad.view(4, 256).amax(1), rtol=1e-5)
    s1, a1 = mod.quantize_blockwise(c1[ref["state1"].long()] * ref["absmax1"][blk], c1)
    # re-quantizing the decoded state gives the same codes (the absmax shrinks to 0.99297 x where the
    # block's largest |m| was negative: code 0 decodes to -0.99297 absmax)
    assert torch.equal(s1, ref["state1"]) and torch.allclose(a1, ref["absmax1"], rtol=0.0071)
    assert float((ref["params"] - inp["params"].float()).abs().max()) < 1e-2     # lr-sized steps
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.bfloat16 and base.shape == (1000,)
    assert mod.bytes_moved(_pt(1000, "bf16")) == 1000 * 10 + 16 * 4


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(_pt(600), device="cpu")
    args = [inp[k] for k in ("params", "grads", "state1", "state2", "absmax1", "absmax2", "code1", "code2")]
    kw = dict(lr=1e-3, step=3)

    def call(*a, **k):
        return mod.adam8bit_step(*a, **{**kw, **k})

    with pytest.raises(ValueError, match="BLOCKS=3"):
        call(*args, BLOCKS=3)
    with pytest.raises(ValueError, match="num_warps=6"):
        call(*args, num_warps=6)
    with pytest.raises(ValueError, match="STEPS=0"):
        call(*args, STEPS=0)
    with pytest.raises(ValueError, match="num_stages=0"):
        call(*args, num_stages=0)
    with pytest.raises(ValueError, match="step=0"):
        call(*args, step=0)
    with pytest.raises(ValueError, match=r"betas=\(0.9, 1.0\)"):
        call(*args, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="eps=0"):
        call(*args, eps=0)
    with pytest.raises(ValueError, match="params must be fp32 / bf16"):
        call(args[0].half(), *args[1:])
    with pytest.raises(ValueError, match="grads must be a contiguous 1-D torch.float32 tensor of 600"):
        call(args[0], args[1][:599], *args[2:])
    with pytest.raises(ValueError, match="grads must be a contiguous 1-D torch.float32"):
        call(args[0], args[1].bfloat16(), *args[2:])
    with pytest.raises(ValueError, match="state1 must be a contiguous 1-D torch.uint8"):
        call(*args[:2], args[2].to(torch.int8), *args[3:])
    with pytest.raises(ValueError, match="state2 must be .* strides"):
        call(*args[:3], torch.zeros(1200, dtype=torch.uint8)[::2], *args[4:])
    with pytest.raises(ValueError, match="absmax1 must be a contiguous 1-D torch.float32 tensor of 3"):
        call(*args[:4], args[4][:2], *args[5:])
    with pytest.raises(ValueError, match="code2 must be .* of 256"):
        call(*args[:7], args[7][:255])
    with pytest.raises(ValueError, match=r"out must be \(params, state1"):
        call(*args, out=(args[0],))
    with pytest.raises(ValueError, match="out absmax2 must be"):
        call(*args, out=(args[0].clone(), args[2].clone(), args[3].clone(), args[4].clone(), args[5][:1].clone()))
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(64, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="dtype 'fp16'"):
        mod.bytes_moved(_pt(64, "fp16"))
    with pytest.raises(ValueError, match="model 'gpt5'"):
        mod.grid(mod.BASELINE, {"model": "gpt5", "dtype": "bf16"})
    with pytest.raises(ValueError, match="shard=0"):
        mod.bytes_moved({"model": "llama2_7b", "shard": 0, "dtype": "bf16"})
    with pytest.raises(ValueError, match="n=0"):
        mod.grid(mod.BASELINE, _pt(0))
    with pytest.raises(ValueError, match="BLOCKS=6"):
        mod.grid(_cfg(6, 1), _pt(1000))


def test_sweep_fits_the_points():
    """The study sweep: 40 configs (BLOCKS 1-8 quant blocks a tile x STEPS 1-16 tiles a CTA x 4 / 8
    warps, num_stages 1: tiles of 256-2048 elements, 1-16 a thread) with BASELINE among them; at
    every point each config is valid and launches >= 4 waves' worth of CTAs on an H200 (1052 CTAs at
    the fewest: the 70B shard at 8 x 16). (Every config was compiled for sm_90 at every point with
    triton 3.6.0 and with 3.9: all compile; 32-168 registers under 3.6 (32-167 under 3.9), the most
    at 8 x 256 on 4 warps (16 elements a thread); shared memory 32 B - 8 KiB (16 B - 8 KiB), the
    row maxima across warps and the layout changes between the fp32 / bf16 and uint8 accesses. No
    spills but where ptxas trims a small kernel's registers to an occupancy step: under 3.6, 2 x 1
    and 4 x 2 on 8 warps at the two fp32 points (32 / 48 registers, 8 B of local memory); under
    3.9, 2 x 1 on 4 warps at the fp32 points (40 registers, 8 B) and 4 x 4 / 4 x 8 / 4 x 16 on 4
    warps at the bf16 point (56 registers, 16 B). 32 elements a thread, 8 x 256 on 2 warps, takes
    255 registers and spills (16 B under 3.6, 64 B under 3.9): the sweep stops at 16. num_stages:
    no dot, the loop's loads are not pipelined, hence the one value.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 36 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) >= 4 * H200_SMS, (p, c)
            assert c["BLOCKS"] * QB <= 32 * 16 * c["num_warps"]          # <= 16 elements a thread


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
    """On sm_90: BASELINE and four more at the first point (fp32: BLOCKS 8 on 4 and 8 warps, BLOCKS 1
    with 16 steps on 8 warps, the smallest CTA), then BASELINE and the largest tile on 4 warps at
    the other two; no spills, registers <= 255, shared memory <= 8 KiB (the cross-warp row maxima
    and the conversions between the uint8 codes' and the fp32 / bf16 layouts). (A few other sweep
    configs get 8-16 B of local memory at 32-56 registers: see test_sweep_fits_the_points.)"""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0 and res.shared <= 8192, (
            cfg, res.n_regs, res.n_spills, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], COMPILE_CFGS[1]):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, res.message
            assert 0 < res.n_regs <= 255 and res.shared <= 8192, (cfg, res.n_regs, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (consumer Blackwell) at the first point: BASELINE, the largest tile on 8 warps and 4 x
    256 on 4 warps, without spills. (There ptxas trims some kernels' registers to an occupancy step
    and spills a little: 4 x 16 on 8 warps, 48 registers and 8 B under 3.6; 8 x 16 on 4 warps, 128
    registers and 64 B under 3.9.)"""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0 and res.shared <= 8192, (cfg, res.n_regs, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _rounding_apart(a, b, p_in) -> int:
    """Elements of a and b (the new params, one float dtype) further apart than the update's own rounding:
    2 eps x (|old param| + |b|), eps the dtype's (2^-23 fp32, 2^-8 bf16). p - step x m / (...) cancels, so its
    rounding is relative to the operands, not to the result. On an AMD EPYC host (session 37) 1-10 of 100-8,187
    params landed 1e-10-9e-10 from torch's (states, absmax and every other param bit for bit: the interpreter's
    float32 arithmetic rounds by the CPU's vector code); the GPU study's gate is the tolerance check."""
    import torch

    eps = {torch.float32: 2.0 ** -23, torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -10}[a.dtype]
    bound = 2 * eps * (p_in.double().abs() + b.double().abs())
    return int(((a.double() - b.double()).abs() > bound).sum())


def _run() -> None:
    """Every case through launch against reference (as the GPU study's gate) and against
    reference_step (codes and absmax bit for bit, params after the cast within the update's rounding); the
    inputs untouched; the case-specific checks (zero blocks, ties, in place); one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.uint8: "uint8"}
    keys = ("params", "grads", "state1", "state2", "absmax1", "absmax2")
    snap: dict = {}

    def prepare(name, point, inputs):
        _prepare(name, point, inputs)
        snap[name] = {k: inputs[k].clone() for k in keys}

    def extra(name, point, inputs, out, ref):
        r = mod.reference_step(inputs)
        outs = {"params": inputs["params_out"], "state1": inputs["state1_out"], "state2": inputs["state2_out"],
                "absmax1": inputs["absmax1_out"], "absmax2": inputs["absmax2_out"]}
        res = {"dtype": names.get(out.dtype),
               "out_dtypes": [names.get(outs[k].dtype) for k in ("params", "state1", "state2", "absmax1", "absmax2")],
               "n_differ_state1": int((outs["state1"] != r["state1"]).sum()),
               "n_differ_state2": int((outs["state2"] != r["state2"]).sum()),
               "absmax1_equal": bool(torch.equal(outs["absmax1"], r["absmax1"])),
               "absmax2_equal": bool(torch.equal(outs["absmax2"], r["absmax2"])),
               "n_differ_params": _rounding_apart(outs["params"], r["params"].to(out.dtype), inputs["params"]),
               "inputs_untouched": all(bool(torch.equal(inputs[k], snap[name][k])) for k in keys),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        # every nonzero block's absmax element decodes to +-absmax: code 255 (1.0) or 0 (the lowest)
        n = out.numel()
        code1, code2 = inputs["code1"], inputs["code2"]
        ends = True
        for b in range(mod.n_blocks(n)):
            sl = slice(b * QB, min(n, (b + 1) * QB))
            if float(outs["absmax1"][b]) > 0:
                ends &= bool(((outs["state1"][sl] == 255) | (outs["state1"][sl] == 0)).any())
            if float(outs["absmax2"][b]) > 0:
                ends &= bool((outs["state2"][sl] == 255).any())
        res["absmax_codes_at_ends"] = ends
        if name == ZERO:
            zero1 = int(torch.searchsorted(code1, torch.tensor(0.0)))
            zb = [float(outs[a][b]) for b in ZERO_BLOCKS for a in ("absmax1", "absmax2")]
            res["zero_blocks"] = {
                "absmax": zb,
                "codes1_zero": all(bool((outs["state1"][b * QB:(b + 1) * QB] == zero1).all()) for b in ZERO_BLOCKS),
                "codes2_zero": all(bool((outs["state2"][b * QB:(b + 1) * QB] == 0).all()) for b in ZERO_BLOCKS)}
        if name == TIES:
            g, n_ties = _tie_grads(code1)
            got = outs["state1"][:QB].long()
            mids = g[2:2 + n_ties].double()
            lower = torch.searchsorted(code1.double(), mids) - 1          # the code just below each midpoint
            res["n_ties"] = n_ties
            res["ties_to_lower"] = int((got[2:2 + n_ties] == lower).sum())
            res["ends"] = [int(got[0]), int(got[1])]
        if name == INPLACE:
            bufs = {k: snap[name][k].clone() for k in keys}
            cfg = CASES[KERNEL][name][1]
            mod.adam8bit_step(bufs["params"], bufs["grads"], bufs["state1"], bufs["state2"], bufs["absmax1"],
                              bufs["absmax2"], code1, code2, lr=inputs["lr"], betas=(inputs["beta1"], inputs["beta2"]),
                              eps=inputs["eps"], weight_decay=inputs["weight_decay"], step=inputs["step"],
                              BLOCKS=cfg["BLOCKS"], STEPS=cfg["STEPS"], num_warps=cfg["num_warps"])
            res["inplace_equal"] = all(bool(torch.equal(bufs[k], outs[k])) for k in outs)
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=prepare, extra=extra)


if __name__ == "__main__":
    _run()
