"""examples/qk_norm_rope.py (Qwen3 / Gemma-3-style fused per-head RMSNorm of q and k followed by
NeoX RoPE, in place on the packed qkv projection output, v untouched) against its fp64 torch
reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its
study sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round19_d.py qk_norm_rope``) that prints one JSON line.
Shapes are small, odd and ragged: T not a multiple of BLOCK_T (masked token rows), Hq and Hkv not
multiples of HEADS_PER_CTA (masked head tails in the q and in the k chunks, Hkv < HEADS_PER_CTA: a
k chunk mostly empty), both grids (SPLIT_HEADS 0: a CTA loops over all chunks; 1: one chunk a
CTA), BLOCK_T 1 / 2 / 4 / 8, HEADS_PER_CTA 1 / 2 / 4 / 8, D 64 / 128 / 256, bf16 and fp16, a
decode batch (one token a sequence, random positions) and prefill batches (runs of consecutive
positions), MQA (Hkv 1), and qkv as a row-strided view of a wider buffer (whose padding columns
must come back untouched: the reference copies them from qkv0).

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same rounded inputs;
the kernel's sum of squares over D <= 256 fp32 terms errs ~sqrt(D) 2^-24 relative, rsqrt, the
weight and the rotation a few fp32 roundings more (< 1e-6 relative), then one rounding to the
16-bit output: half an ulp on the GPU, up to one ulp with the interpreter's truncating cast; an
ulp is at most 2^-7 = 7.8e-3 (bf16) / 2^-10 = 9.8e-4 (fp16) of an element <= max|ref|. bf16 1e-2
and fp16 2e-3 (the harness's defaults) bound that; v is copied bit for bit. torch_baseline (eager
fp32 then one rounding) stays inside them too. Measured: kernel <= ~0.6 % (bf16) of max|ref|.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "qk_norm_rope"
ROLE = "held-out-19"
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bt, hpc, split, w, st=1):
    return {"BLOCK_T": bt, "HEADS_PER_CTA": hpc, "SPLIT_HEADS": split, "num_warps": w, "num_stages": st}


def _pt(T, Hq, Hkv, D, dtype="bf16", seqs=1, max_pos=64):
    return {"T": T, "Hq": Hq, "Hkv": Hkv, "D": D, "dtype": dtype, "seqs": seqs, "max_pos": max_pos}


# case -> (point, cfg); comments: grid, chunks (q + k)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # grid (2, 1), 3 + 2 chunks looped, T tail 3 of 4, q tail (5 = 2 + 2 + 1), k tail (3 = 2 + 1)
        "token_grid_ragged_bf16": (_pt(7, 5, 3, 64, seqs=2), _cfg(4, 2, 0, 4)),
        # grid (4, 3): 2 q chunks (the second 1 of 4 heads), 1 k chunk of 2 heads; decode positions
        "split_grid_decode_bf16": (_pt(7, 5, 2, 64, seqs=7), _cfg(2, 4, 1, 4, 2)),
        # grid (5, 1), BLOCK_T 1 (vLLM's per-token CTA), 1-head chunks: 6 + 1 chunks, MQA
        "per_token_hpc1_fp16": (_pt(5, 6, 1, 128, "fp16", seqs=1), _cfg(1, 1, 0, 2)),
        # grid (2, 2): Hq 8 one full chunk, Hkv 3 in a chunk of 8; BLOCK_T 8, T tail 3 of 8
        "split_big_chunk_d256_bf16": (_pt(11, 8, 3, 256, seqs=3, max_pos=40), _cfg(8, 8, 1, 8)),
        # grid (3, 1), 2 q chunks (the second 4 of 8 heads) + 1 k chunk of 4 looped; 4 sequences; qkv a strided view
        "token_grid_strided_bf16": (_pt(9, 12, 4, 128, seqs=4), _cfg(4, 8, 0, 8, 2)),
        # grid (9, 4): 3 q chunks + 1 k chunk of 2 heads, decode positions, fp16
        "split_bt1_fp16": (_pt(9, 6, 2, 64, "fp16", seqs=9), _cfg(1, 2, 1, 2)),
    },
}
STRIDED = "token_grid_strided_bf16"

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(4, 4, 0, 4), _cfg(1, 8, 1, 2), _cfg(8, 8, 0, 8), _cfg(2, 2, 1, 4)]
SM120_CFGS = [_cfg(4, 4, 0, 4), _cfg(8, 4, 1, 8)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided case: qkv and qkv0 as [T, W] views of [T, W + 40] buffers whose extra columns
    hold a sentinel; the kernel must not touch them."""
    import torch

    if name == STRIDED:
        for key in ("qkv", "qkv0"):
            x = inputs[key]
            T, W = x.shape
            wide = torch.full((T, W + 40), 3.0, dtype=x.dtype)
            wide[:, :W] = x
            inputs[key] = wide[:, :W]
        inputs["wide"] = True


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["T"], (p["Hq"] + 2 * p["Hkv"]) * p["D"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")


def test_strided_padding_untouched():
    """The subprocess checks the sentinel columns of the strided case's wide buffer after the launch."""
    res = _results()[STRIDED]
    assert res.get("padding_ok") is True, res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values; both grids; token tails and head tails (q and k) masked; a k
    chunk with more masked than live heads; every D; both dtypes; decode and prefill positions."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {c["SPLIT_HEADS"] for _, c in cases} == {0, 1}
    assert {p["D"] for p, _ in cases} == {64, 128, 256}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert any(p["T"] % c["BLOCK_T"] for p, c in cases)
    assert any(p["Hq"] % c["HEADS_PER_CTA"] for p, c in cases)
    assert any(p["Hkv"] % c["HEADS_PER_CTA"] for p, c in cases)
    assert any(2 * p["Hkv"] < c["HEADS_PER_CTA"] for p, c in cases)
    assert {p["seqs"] == p["T"] for p, _ in cases} == {True, False}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep-ish config: example_args on meta with the launch's shapes, the grid
    and the chunk count, bytes_moved / flops, inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "qk_norm_rope"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1
    for cfg in [mod.BASELINE] + COMPILE_CFGS:
        for p in mod.POINTS:
            T, Hq, Hkv, D = p["T"], p["Hq"], p["Hkv"], p["D"]
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["QKV"].shape == (T, (Hq + 2 * Hkv) * D) and args["QKV"].dtype == torch.bfloat16
            assert args["POS"].dtype == torch.int64 and args["POS"].shape == (T,)
            assert args["COS_SIN"].shape == (p["max_pos"], D) and args["COS_SIN"].dtype == torch.float32
            assert (args["T"], args["HQ"], args["HKV"], args["HEAD_DIM"]) == (T, Hq, Hkv, D)
            assert args["stride_t"] == (Hq + 2 * Hkv) * D and args["stride_cs"] == D
            assert {k: args[k] for k in ("BLOCK_T", "HEADS_PER_CTA", "SPLIT_HEADS")} == \
                {k: cfg[k] for k in ("BLOCK_T", "HEADS_PER_CTA", "SPLIT_HEADS")}
            chunks = -(-Hq // cfg["HEADS_PER_CTA"]) + -(-Hkv // cfg["HEADS_PER_CTA"])
            g = mod.grid(cfg, p)
            assert g == (-(-T // cfg["BLOCK_T"]), chunks if cfg["SPLIT_HEADS"] else 1)
            assert mod.loop_iterations(cfg, p) == (1 if cfg["SPLIT_HEADS"] else chunks)
            assert mod.bytes_moved(p) == 4 * T * (Hq + Hkv) * D + 8 * T + 4 * T * D + 4 * D
            assert mod.flops(p) == 7 * T * (Hq + Hkv) * D
            assert H.meta_nbytes(args) < 4 * 2**30
            # the second copy make_inputs keeps (qkv0) doubles qkv: still < 4 GB
            assert 2 * args["QKV"].numel() * 2 + args["COS_SIN"].numel() * 4 < 4 * 2**30


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, positions as the sequences say, the seed's values; reference's
    and the baseline's shapes; the cos_sin table's rows."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(10, 3, 2, 64, seqs=3, max_pos=30)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["qkv"].shape == (10, 7 * 64) and inp["qkv"].dtype == torch.bfloat16
    assert inp["qkv"].data_ptr() != inp["qkv0"].data_ptr() and torch.equal(inp["qkv"], inp["qkv0"])
    pos = inp["positions"]
    assert pos.dtype == torch.int64 and int(pos.min()) >= 0 and int(pos.max()) < 30
    assert [int(d) for d in pos[1:3] - pos[0:2]] == [1, 1] and (pos[4:6] - pos[3:5]).tolist() == [1, 1]
    cs = inp["cos_sin"]
    assert cs.shape == (30, 64) and torch.allclose(cs[0], torch.cat((torch.ones(32), torch.zeros(32))))
    assert torch.allclose(cs[:, :32] ** 2 + cs[:, 32:] ** 2, torch.ones(30, 32), atol=1e-6)
    assert float(inp["qkv"].float().std()) > 0.5 and float(inp["q_w"].float().std()) > 0.1
    assert mod.reference(inp).shape == (10, 448) and mod.torch_baseline(inp).dtype == torch.bfloat16
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["qkv"], inp["qkv"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["qkv"], inp["qkv"])
    dec = mod.make_inputs(_pt(6, 2, 1, 64, seqs=6, max_pos=1000), device="cpu")["positions"]
    assert dec.shape == (6,) and len(set(dec.tolist())) > 1
    assert mod.make_inputs(_pt(4, 2, 1, 64, "fp16"), device="cpu")["qkv"].dtype == torch.float16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    qkv = torch.ones(4, 4 * 64, dtype=torch.bfloat16)
    w = torch.ones(64, dtype=torch.bfloat16)
    pos = torch.zeros(4, dtype=torch.int64)
    cs = torch.ones(8, 64)
    with pytest.raises(ValueError, match="BLOCK_T=3"):
        mod.qk_norm_rope(qkv, w, w, pos, cs, 2, 1, BLOCK_T=3)
    with pytest.raises(ValueError, match="SPLIT_HEADS=2"):
        mod.qk_norm_rope(qkv, w, w, pos, cs, 2, 1, SPLIT_HEADS=2)
    with pytest.raises(ValueError, match="qkv width"):
        mod.qk_norm_rope(qkv, w, w, pos, cs, 3, 1)
    with pytest.raises(ValueError, match="positions"):
        mod.qk_norm_rope(qkv, w, w, pos.int(), cs, 2, 1)
    with pytest.raises(ValueError, match="cos_sin"):
        mod.qk_norm_rope(qkv, w, w, pos, cs.double(), 2, 1)
    with pytest.raises(ValueError, match="bf16 / fp16"):
        mod.qk_norm_rope(qkv.float(), w, w, pos, cs, 2, 1)
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(4, 2, 1, 64, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="seqs=9"):
        mod.make_inputs(_pt(4, 2, 1, 64, seqs=9), device="cpu")


def test_sweep_fits_the_points():
    """The study sweep: 72 configs (BLOCK_T 1-8 x HEADS_PER_CTA 2-8 x both grids x 2 / 4 / 8 warps,
    num_stages 1) with BASELINE among them; at every point each config is valid and launches
    >= 132 CTAs, and its shared memory (only the row reduction's scratch) fits 227 KiB. (Every
    config was compiled for sm_90 with triton 3.6.0 at every point, 216 compiles in ~0.2-5 s each:
    all compile; registers 26-255 (26-213 at the D 128 points); shared memory 0-4 KiB (the reduction's scratch: <= 16 bytes a
    tile row); no spills except BLOCK_T 8 x HEADS_PER_CTA 8 on 2 warps at the D 256 point (134 / 128
    bytes spilled, both grids: a [8, 8, 128] fp32 pair of halves is 256 values a thread there).
    num_stages 1 and 3 gave the same registers and shared memory: the chunk loop has no dot and
    its loads are not pipelined, hence the one value.)"""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in axes.values()) >= len(axes) - 1
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= H200_SMS, (p, c)
            # the reduction's scratch: at most 4 bytes a [BLOCK_T, HEADS_PER_CTA] row a warp, far below 227 KiB
            assert 4 * c["BLOCK_T"] * c["HEADS_PER_CTA"] * c["num_warps"] <= H200_SMEM_PER_BLOCK
    # the points differ in character: T / heads / D
    assert len({(p["T"], p["Hq"], p["Hkv"], p["D"]) for p in mod.POINTS}) == 3
    assert {p["D"] for p in mod.POINTS} == {128, 256} and any(p["seqs"] == p["T"] for p in mod.POINTS)


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more (both grids, 1-8 tokens, 2-8 heads a chunk, 2 / 4 / 8 warps)
    compile without spills, a little shared memory; and at the D 256 point."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= 16 * 1024 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    cfg = COMPILE_CFGS[2]
    res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[2]), arch="sm_90",
                         num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    assert res.status == "ok" and res.n_spills == 0, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """H.run_cases, plus the strided case's padding check (sentinel columns untouched)."""
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
            results[name] = H.compare(out, ref, point["dtype"])
            results[name]["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"])
            if inputs.get("wide"):
                q = inputs["qkv"]
                T, W = q.shape
                pad = torch.as_strided(q, (T, 40), (q.stride(0), 1), q.storage_offset() + W)
                results[name]["padding_ok"] = bool((pad == 3.0).all())
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run()
