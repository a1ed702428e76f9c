"""examples/logits_penalty.py (an LLM sampler's repetition / frequency / presence penalties applied
in place to logits rows, vLLM semantics: a scatter of the packed token lists into an int32
workspace by atomics, then a streaming pass over the rows) against its fp64 torch reference on the
CPU through Triton's interpreter, its launcher hooks against the shapes, its study sweep against
the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round19_d.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round20_b.py logits_penalty``) that prints one JSON line.
Shapes are small, odd and ragged: V not a multiple of BLOCK_V (masked tails), BLOCK_V > V (one
partial tile), chunks with fewer tiles than TILES_PER_CTA, empty output lists (and a batch with
no tokens at all: the launcher returns before any kernel), lists longer than the scatter's
BLOCK_T (several chunks a list, raised counts), Zipf token draws (duplicates everywhere: every
count > 1 exercised), pad ids (V, vLLM's pad, and -1) skipped, rows without penalties (both
kernels return at once: those rows bit-exact), fp32 / bf16 / fp16 logits, int32 / int64 ids and
offsets, logits as a row-strided view (its padding columns must come back untouched), a caller's
persistent workspace larger than B x V, max lengths given or computed from the offsets. After each
launch the workspace must be all zero again (the main kernel clears it).

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same rounded inputs;
the kernel computes in fp32 (a division with <= 2 ulp error, two multiply-subtracts: a few 2^-24
relative), then one rounding to the logits' dtype: half an ulp on the GPU, up to one ulp with the
interpreter's truncating cast: 2^-7 (bf16) / 2^-10 (fp16) of an element <= max|ref|. The
harness's 1e-4 (fp32), 1e-2 (bf16), 2e-3 (fp16) bound that; the counts are integers (exact).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "logits_penalty"
ROLE = "held-out-20"
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bv, tiles, ls, w, st=1):
    return {"BLOCK_V": bv, "TILES_PER_CTA": tiles, "LOOP_STAGES": ls, "num_warps": w, "num_stages": st}


def _pt(B, V, dtype="fp32", ids="int32", out=(0, 300), prompt=(1, 200), neutral=0.3):
    return {"B": B, "V": V, "dtype": dtype, "ids": ids, "out_min": out[0], "out_max": out[1],
            "prompt_min": prompt[0], "prompt_max": prompt[1], "neutral": neutral}


# case -> (point, cfg); comments: _kernel's grid (chunks, B), tiles
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # grid (2, 5): 4 tiles of 256 (last 232 wide), 2 a chunk; empty outputs likely (0-700), neutral rows
        "fp32_int64_ragged": (_pt(5, 1000, ids="int64", out=(0, 700), prompt=(3, 300)), _cfg(256, 2, 2, 4)),
        # grid (7, 4): 7 tiles of 128 (last 9 wide), one a CTA; every row penalized; bf16
        "bf16_tile_per_cta": (_pt(4, 777, "bf16", out=(1, 400), prompt=(0, 90), neutral=0.0), _cfg(128, 1, 1, 8, 2)),
        # grid (1, 3): BLOCK_V 512 > V 300 (one partial tile, chunk of 4 holds 1); lists of 1100-2500
        # tokens (2-3 scatter chunks of 1024), counts up to hundreds; fp16
        "fp16_long_lists": (_pt(3, 300, "fp16", out=(1100, 2500), prompt=(1030, 1100), neutral=0.0),
                            _cfg(512, 4, 1, 16)),
        # grid (3, 6): 16 tiles of 128 (last 37), 6 a chunk (last chunk 4); no outputs (prompt only:
        # repetition alone, counts 0); max lengths computed from the offsets (a sync)
        "prompt_only_sync": (_pt(6, 1957, out=(0, 0), prompt=(5, 60), neutral=0.0), _cfg(128, 6, 2, 4)),
        # no tokens at all: the launcher returns before any kernel, logits unchanged
        "no_tokens": (_pt(3, 500, "bf16", out=(0, 0), prompt=(0, 0), neutral=0.0), _cfg(256, 1, 1, 4)),
        # every row neutral: both kernels return at once, logits bit-exact
        "all_neutral": (_pt(4, 640, out=(10, 50), prompt=(10, 50), neutral=1.0), _cfg(128, 2, 1, 8)),
        # grid (4, 7): logits a row-strided view, pad ids (V and -1) in both lists, int64 offsets, a
        # persistent 1-D workspace larger than B x V, bf16
        "strided_padded_bf16": (_pt(7, 999, "bf16", ids="int64", out=(0, 120), prompt=(2, 70), neutral=0.3),
                                _cfg(256, 1, 2, 4)),
    },
}
STRIDED = "strided_padded_bf16"
SYNC = "prompt_only_sync"

# configs compiled at the module's points (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(2048, 4, 2, 8), _cfg(4096, 16, 2, 4), _cfg(1024, 1, 1, 16), _cfg(4096, 1, 1, 4)]
SM120_CFGS = [_cfg(2048, 4, 2, 8), _cfg(4096, 4, 2, 4)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided case: logits / logits0 as [B, V] views of [B, V + 24] buffers whose extra columns
    hold a sentinel; every 5th id of both lists replaced by V or -1 (pads to skip); int64 offsets; a
    persistent workspace of B x V + 100 words. The sync case: max lengths left to the launcher."""
    import torch

    if name == STRIDED:
        for key in ("logits", "logits0"):
            x = inputs[key]
            B, V = x.shape
            wide = torch.full((B, V + 24), 3.0, dtype=x.dtype)
            wide[:, :V] = x
            inputs[key] = wide[:, :V]
        V = point["V"]
        for key in ("output_tokens", "prompt_tokens"):
            t = inputs[key]
            t[0::5] = V
            t[2::5] = -1
        for key in ("output_offsets", "prompt_offsets"):
            inputs[key] = inputs[key].long()
        inputs["workspace"] = torch.zeros((point["B"] * point["V"] + 100,), dtype=torch.int32)
        inputs["wide"] = True
    if name == SYNC:
        inputs["max_output_len"] = None
        inputs["max_prompt_len"] = None


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["B"], p["V"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_workspace_cleared_and_untouched_entries_exact(name):
    """After the launch the workspace is all zero; every logit of a neutral row and every unseen
    token's logit is bit-exact; the strided case's sentinel columns are untouched; the launch
    returned logits itself (in place)."""
    res = _results()[name]
    assert res["ws_zero"] is True and res["in_place"] is True, res
    assert res["untouched_exact"] is True, res
    if name == STRIDED:
        assert res.get("padding_ok") is True, res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values; V tails and BLOCK_V > V; chunks shorter than TILES_PER_CTA;
    empty output lists and no tokens at all; lists over one scatter chunk; neutral and penalized
    rows (the seed draws say which); every dtype and id type."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["ids"] for p, _ in cases} == set(mod.IDS)
    assert any(p["V"] % c["BLOCK_V"] for p, c in cases)
    assert any(c["BLOCK_V"] > p["V"] for p, c in cases)
    assert any(-(-p["V"] // c["BLOCK_V"]) % c["TILES_PER_CTA"] for p, c in cases)
    assert any(p["out_min"] == 0 for p, _ in cases) and any(p["prompt_max"] == 0 for p, _ in cases)
    assert any(p["out_min"] > mod.SCATTER_BLOCK_T and p["prompt_min"] > mod.SCATTER_BLOCK_T for p, _ in cases)
    kinds = set()
    for name, (p, _) in CASES[KERNEL].items():
        d = mod._draw(p, len(name))
        neutral = (d["presence"] == 0) & (d["frequency"] == 0) & (d["repetition"] == 1)
        kinds |= set(neutral.tolist())
        if p["out_max"] > 0 and p["neutral"] < 1:
            tok = d["output_tokens"]
            assert tok.unique().numel() < tok.numel(), f"{name}: no duplicate ids"
    assert kinds == {True, False}


def test_launcher_hooks_agree_with_shapes():
    """At every point and a few sweep configs: example_args on meta with the launch's shapes, the
    grid, each CTA's tiles, bytes_moved / flops, the scatter as the secondary kernel, inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "secondary_kernels", "logits_penalty"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1
    for p in mod.POINTS:
        B, V = p["B"], p["V"]
        st = mod.point_stats(p)
        active = [not n for n in st["neutral"]]
        assert 0 < sum(active) <= B and len(st["seen"]) == B
        for cfg in [mod.BASELINE] + COMPILE_CFGS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["LOGITS"].shape == (B, V) and args["LOGITS"].dtype == mod._torch_dtype(p["dtype"])
            assert args["WS"].shape == (B, V) and args["WS"].dtype == torch.int32
            assert (args["V"], args["stride_l"]) == (V, V)
            assert {k: args[k] for k in ("BLOCK_V", "TILES_PER_CTA", "LOOP_STAGES")} == \
                {k: cfg[k] for k in ("BLOCK_V", "TILES_PER_CTA", "LOOP_STAGES")}
            tiles = -(-V // cfg["BLOCK_V"])
            chunks = -(-tiles // cfg["TILES_PER_CTA"])
            assert mod.grid(cfg, p) == (chunks, B)
            its = mod.cta_iterations(cfg, p)
            assert len(its) == chunks * B and sum(its) == tiles * sum(active)
            assert max(its) == mod.loop_iterations(cfg, p) == min(cfg["TILES_PER_CTA"], tiles)
            sec = mod.secondary_kernels(cfg, p)
            assert len(sec) == 1 and sec[0]["name"] == "_scatter_kernel"
            assert 0 < sec[0]["dram_bytes"] <= sec[0]["tile_bytes"] and sec[0]["grid"] >= sum(active)
            assert H.meta_nbytes(args) < 4 * 2**30
        # the workspace streamed (4 B a column of every penalized row) and the ids dominate; the
        # touched logits add 2 x element bytes a distinct token
        ids = 8 if p["ids"] == "int64" else 4
        floor = sum(4 * V + ids * (o + q) for a, o, q in zip(active, st["out_len"], st["prompt_len"]) if a)
        assert floor < mod.bytes_moved(p) < floor + 16 * sum(st["seen"]) + 20 * B + 8
        assert mod.flops(p) >= V * sum(active)
        sargs = mod.scatter_example_args(None, p)
        assert sargs["OUT_TOK"].numel() == sum(st["out_len"]) and sargs["PROMPT_TOK"].numel() == sum(st["prompt_len"])
        assert sargs["OUT_TOK"].dtype == mod._ids_dtype(p["ids"]) and sargs["V"] == V


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, ragged lengths in range, offsets, ids in [0, V), a zeroed
    workspace, logits0 a copy, the seed's values; reference and baseline shapes."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(6, 400, "bf16", ids="int64", out=(3, 40), prompt=(0, 25), neutral=0.5)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["logits"].shape == (6, 400) and inp["logits"].dtype == torch.bfloat16
    assert inp["logits"].data_ptr() != inp["logits0"].data_ptr() and torch.equal(inp["logits"], inp["logits0"])
    assert float(inp["logits"].float().std()) > 1.0
    for key, (lo, hi) in (("output", (3, 40)), ("prompt", (0, 25))):
        off, tok = inp[f"{key}_offsets"], inp[f"{key}_tokens"]
        lens = off[1:] - off[:-1]
        assert off.dtype == torch.int32 and int(off[0]) == 0 and int(off[-1]) == tok.numel()
        assert int(lens.min()) >= lo and int(lens.max()) <= hi and tok.dtype == torch.int64
        assert int(tok.min()) >= 0 and int(tok.max()) < 400
    assert inp["max_output_len"] == int((inp["output_offsets"][1:] - inp["output_offsets"][:-1]).max())
    assert inp["workspace"].shape == (6, 400) and not inp["workspace"].any()
    assert all(inp[k].shape == (6,) and inp[k].dtype == torch.float32 for k in ("presence", "frequency", "repetition"))
    assert float(inp["repetition"].min()) >= 1.0 and float(inp["presence"].min()) >= 0.0
    assert mod.reference(inp).shape == (6, 400) and mod.torch_baseline(inp).dtype == torch.bfloat16
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["output_tokens"], inp["output_tokens"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["logits"], inp["logits"])
    # the reference on a hand case: token 1 twice in the output, token 3 in the prompt only
    x = torch.tensor([[2.0, -2.0, 4.0, -1.0]])
    hand = {"logits0": x, "output_tokens": torch.tensor([1, 1, 2]), "output_offsets": torch.tensor([0, 3]),
            "prompt_tokens": torch.tensor([3]), "prompt_offsets": torch.tensor([0, 1]),
            "presence": torch.tensor([0.5]), "frequency": torch.tensor([0.25]), "repetition": torch.tensor([2.0])}
    want = torch.tensor([[2.0, -4.0 - 0.5 - 0.5, 2.0 - 0.25 - 0.5, -2.0]])
    assert torch.allclose(mod.reference(hand), want) and torch.allclose(mod.torch_baseline(hand), want)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    lg = torch.zeros(2, 64)
    tok = torch.zeros(4, dtype=torch.int32)
    off = torch.tensor([0, 2, 4], dtype=torch.int32)
    pen = torch.zeros(2)
    ok = (tok, off, tok, off, pen, pen, pen + 1)
    with pytest.raises(ValueError, match="BLOCK_V=100"):
        mod.logits_penalty(lg, *ok, BLOCK_V=100)
    with pytest.raises(ValueError, match="TILES_PER_CTA=0"):
        mod.logits_penalty(lg, *ok, TILES_PER_CTA=0)
    with pytest.raises(ValueError, match="LOOP_STAGES=0"):
        mod.logits_penalty(lg, *ok, LOOP_STAGES=0)
    with pytest.raises(ValueError, match="BLOCK_T=100"):
        mod.logits_penalty(lg, *ok, BLOCK_T=100)
    with pytest.raises(ValueError, match="logits must be a 2-D"):
        mod.logits_penalty(lg.double(), *ok)
    with pytest.raises(ValueError, match="unit column stride"):
        mod.logits_penalty(torch.zeros(64, 2).t(), *ok)
    with pytest.raises(ValueError, match="output_tokens"):
        mod.logits_penalty(lg, tok.float(), *ok[1:])
    with pytest.raises(ValueError, match="prompt_offsets must be 3"):
        mod.logits_penalty(lg, tok, off, tok, off[:2], *ok[4:])
    with pytest.raises(ValueError, match="repetition_penalties"):
        mod.logits_penalty(lg, *ok[:6], torch.ones(3))
    with pytest.raises(ValueError, match="workspace"):
        mod.logits_penalty(lg, *ok, workspace=torch.zeros(2, 64, dtype=torch.int64))
    with pytest.raises(ValueError, match="workspace"):
        mod.logits_penalty(lg, *ok, workspace=torch.zeros(100, dtype=torch.int32))
    with pytest.raises(ValueError, match="non-decreasing"):
        mod.logits_penalty(lg, tok, torch.tensor([0, 3, 2], dtype=torch.int32), *ok[2:])
    with pytest.raises(ValueError, match="max_output_len"):
        mod.logits_penalty(lg, *ok, max_output_len=-1)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(2, 64, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="ids 'int16'"):
        mod.make_inputs(_pt(2, 64, ids="int16"), device="cpu")
    with pytest.raises(ValueError, match="out_min"):
        mod.make_inputs(_pt(2, 64, out=(5, 3)), device="cpu")
    with pytest.raises(ValueError, match="neutral"):
        mod.make_inputs(_pt(2, 64, neutral=1.5), device="cpu")


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_V 1024-4096 x TILES_PER_CTA 1 / 4 / 16 x LOOP_STAGES 1-2 x
    4 / 8 / 16 warps, num_stages 1) with BASELINE among them; at every point each config is valid and
    its shared memory (LOOP_STAGES - 1 workspace tiles ahead, plus a layout conversion's scratch)
    fits 227 KiB. (Every config was compiled for sm_90 with triton 3.6.0 at the fp32 and the bf16
    specializations, 108 compiles plus the scatter at each point: all compile, registers 18-225
    (225 at BLOCK_V 4096 / LOOP_STAGES 2 / 4 warps, fp32), shared memory 0-32 KiB, no spills; with
    triton 3.9 18-168 registers, no spills; sm_120 likewise, <= 32 KiB. LOOP_STAGES 3 was left out:
    BLOCK_V 4096 on 4 warps spills 56-60 words at the fp32 points.)"""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in axes.values()) >= len(axes) - 1
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and len(configs) == len(cfgs) and mod.BASELINE in cfgs
    assert [dict(p) for p in points] == [dict(p) for p in mod.POINTS]
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            chunks, rows = mod.grid(c, p)
            assert chunks >= 1 and rows == p["B"] and chunks * rows >= 64, (p, c)
            assert c["LOOP_STAGES"] * c["BLOCK_V"] * 4 + 4 * c["BLOCK_V"] <= H200_SMEM_PER_BLOCK
    # the points differ in character: batch, vocabulary, dtype, list lengths, neutral share
    assert len({(p["B"], p["V"]) for p in mod.POINTS}) == 3
    assert {p["dtype"] for p in mod.POINTS} == {"fp32", "bf16"} and {p["ids"] for p in mod.POINTS} == set(mod.IDS)
    assert {p["neutral"] > 0 for p in mod.POINTS} == {True, False}


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more (1-16 tiles, 1-2 loop stages, 4 / 8 / 16 warps) compile
    without spills at the fp32 and the bf16 point; the scatter at every point."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= 32 * 1024 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    for cfg in COMPILE_CFGS[:2]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[1]), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, res.message
    for p in mod.POINTS:
        res = compile_kernel(mod._scatter_kernel, args=mod.scatter_example_args(None, p), arch="sm_90",
                             num_warps=mod.SCATTER_WARPS, num_stages=1)
        assert res.status == "ok" and res.n_spills == 0, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Each case: launch, compare with the reference (and the baseline), then the workspace, the
    in-place return, the bit-exact untouched entries and the strided case's sentinel columns."""
    import json
    import os

    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            out = mod.launch(inputs, cfg)
            ref = mod.reference(inputs)
            res = H.compare(out, ref, point["dtype"])
            res["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"])
            res["ws_zero"] = not bool(inputs["workspace"].any())
            res["in_place"] = out.data_ptr() == inputs["logits"].data_ptr()
            B, V = out.shape
            seen = (mod._bins(inputs["output_tokens"], inputs["output_offsets"], B, V)
                    + mod._bins(inputs["prompt_tokens"], inputs["prompt_offsets"], B, V)) > 0
            neutral = (inputs["presence"] == 0) & (inputs["frequency"] == 0) & (inputs["repetition"] == 1)
            keep = ~seen | neutral[:, None]
            res["untouched_exact"] = bool(torch.equal(out[keep], inputs["logits0"][keep]))
            if inputs.get("wide"):
                x = inputs["logits"]
                pad = torch.as_strided(x, (B, 24), (x.stride(0), 1), x.storage_offset() + V)
                res["padding_ok"] = bool((pad == 3.0).all())
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run()
