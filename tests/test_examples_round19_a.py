"""examples/lightning_indexer.py (DeepSeek-V3.2's lightning-indexer logits: score[b, i, j] =
k_scale[b, j] * sum_h w[b, i, h] relu(q[b, i, h] . k[b, j]), -inf past query i's causal limit;
a CTA holds BLOCK_Q queries' H heads as the M side of one tl.dot and walks KEYS_PER_CTA key tiles)
against its fp64 torch reference on the CPU through Triton's interpreter, its launcher hooks
against the shapes, its study sweep against the points, and a compile for sm_90 and sm_120 from
its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so the
cases run in a subprocess (this file run as a script: ``python tests/test_examples_round19_a.py
lightning_indexer``) that prints one JSON line; the tests assert per case. Every case writes into
an out= buffer filled with NaN (one a strided view of a wider buffer): an element no CTA writes
stays NaN, a mismatch.

Shapes are small, odd and ragged (H 16-64, D 32-128 instead of 64 / 128): causal prefill where
whole CTAs lie past the limit (the -inf-only path, no loads) and others hold live and dead tiles,
a chunked prefill (S_q < S_kv, every key before the chunk visible), decode batches with a
different kv_len per sequence (tiles past kv_len, S_q 1 and 2), S_kv not a multiple of BLOCK_K
(masked key columns), S_q not a multiple of BLOCK_Q (padding rows of the dot, clamped loads),
S_kv < BLOCK_K, q and k as views of wider buffers, both dtypes (bf16; fp8 e4m3 with k's per-token
scale applied after the head sum), every tunable at two or three values.

Tolerance (x max|finite ref|, absolute, per element; the -inf pattern must match exactly): the
reference is fp64 on the same bf16 / fp8 operands. Products of two 8- (bf16) or 4-bit (e4m3)
mantissas are exact in fp32; the dot's D-term sum errs ~D 2^-24 (2^-22 with Hopper's fp8 wgmma
accumulator) relative to sum_d |q_d k_d|, the relu / w / H-term sum ~H 2^-24 relative to
sum_h |w_h relu_h|, the scale one rounding. With Gaussian data these sums are within ~10x of
max|ref|, so the error is < ~1e-5 x max|ref|; 1e-4 bounds it with margin while any wrong head,
key or query (an O(1) relative error) fails. Measured under the interpreter: <= 1e-7 x max|ref|
for the kernel and the fp32 torch_baseline.
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
KERNEL = "lightning_indexer"
ROLE = "held-out-19"
TOL = 1e-4
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bq, bk, kpc, w, st):
    return {"BLOCK_Q": bq, "BLOCK_K": bk, "KEYS_PER_CTA": kpc, "num_warps": w, "num_stages": st}


def _pt(B, S_q, S_kv, H_, D, dtype, **kw):
    return {"B": B, "S_q": S_q, "S_kv": S_kv, "H": H_, "D": D, "dtype": dtype, **kw}


# case -> (point, cfg); the comments give the grid (query blocks x B * key splits)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # causal prefill, 23 x 2 CTAs: query block 0..14 x split 1 wholly past the limit (-inf only),
        # the diagonal CTAs with one live and one dead tile, the last block with one query
        "prefill_causal_bf16": (_pt(1, 45, 45, 16, 32, "bf16"), _cfg(2, 16, 2, 4, 2)),
        # chunked prefill, fp8: 7 queries, last of 53 keys; 2 x 2 CTAs, 4-query blocks (one padding row)
        "chunked_fp8": (_pt(1, 7, 53, 16, 64, "fp8"), _cfg(4, 32, 1, 8, 3)),
        # decode with MTP (2 queries a sequence), fp8, 5 sequences of 10-70 keys: 2 x 5 * 2 CTAs
        "decode_mtp_fp8": (_pt(5, 2, 70, 32, 32, "fp8", ctx_min=10), _cfg(1, 16, 3, 4, 3)),
        # decode, one query a sequence, BLOCK_Q 4 (three padding queries): 1 x 3 * 1 CTAs
        "decode_bq4_bf16": (_pt(3, 1, 40, 16, 32, "bf16", ctx_min=1), _cfg(4, 32, 2, 8, 2)),
        # q [.., H, D] inside [.., H, D + 16], k inside [.., D + 8], out inside [.., S_kv + 5]; S_kv a
        # multiple of BLOCK_K; 2 x 2 * 2 CTAs
        "strided_prefill_bf16": (_pt(2, 9, 32, 16, 32, "bf16"), _cfg(8, 16, 1, 4, 2)),
        # the real head shape (64 x 128), S_kv < BLOCK_K: 3 x 1 CTAs of one tile
        "full_heads_short_fp8": (_pt(1, 3, 20, 64, 128, "fp8"), _cfg(1, 64, 1, 8, 3)),
    },
}
STRIDED = "strided_prefill_bf16"

# configs compiled for each arch at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(2, 64, 8, 8, 3), _cfg(1, 32, 32, 4, 2), _cfg(4, 64, 8, 8, 2), _cfg(4, 32, 32, 4, 3)],
}
SM120_CFGS = [_cfg(2, 64, 8, 8, 2), _cfg(1, 64, 32, 4, 3), _cfg(4, 32, 8, 8, 2)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: q and k as views of wider buffers; a NaN-filled out= buffer."""
    import torch

    B, S_q, S_kv = point["B"], point["S_q"], point["S_kv"]
    if name == STRIDED:
        q, k = inputs["q"], inputs["k"]
        D = q.shape[3]
        wq = torch.zeros(q.shape[:3] + (D + 16,), dtype=q.dtype)
        wq[..., :D] = q
        wk = torch.zeros(k.shape[:2] + (D + 8,), dtype=k.dtype)
        wk[..., :D] = k
        inputs["q"], inputs["k"] = wq[..., :D], wk[..., :D]
        inputs["out"] = torch.full((B, S_q, S_kv + 5), float("nan"))[..., 2:S_kv + 2]
    else:
        inputs["out"] = torch.full((B, S_q, S_kv), float("nan"))


def _compare(out, ref) -> dict:
    import torch

    fin = torch.isfinite(ref)
    scale = float(ref[fin].abs().max())
    diff = (out[fin] - ref[fin]).abs()
    bad = int(((diff > TOL * scale) | ~torch.isfinite(out[fin])).sum())
    inf_ok = bool(torch.equal(out[~fin], ref[~fin]))        # -inf exactly where the reference has it
    return {"n_bad": bad + (0 if inf_ok else 1), "inf_ok": inf_ok, "numel": out.numel(),
            "n_inf": int((~fin).sum()), "max_err": float(diff.max()), "tol": TOL * scale, "scale": scale,
            "shape": list(out.shape)}


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


def _sweep():
    return H.study_sweeps([KERNEL], ROLE)[KERNEL]      # (configs, points, axes) of scripts/rank_study.py SWEEPS


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    p = CASES[kernel][name][0]
    assert res["shape"] == [p["B"], p["S_q"], p["S_kv"]] and res["same_buffer"]
    assert res["n_inf"] > 0
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["inf_ok"], f"{kernel}/{name} {what}: the -inf pattern differs from the causal mask"
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_cases_cover_every_code_path():
    """Each tunable takes at least two values; both dtypes; CTAs that only write -inf, CTAs with live
    and dead tiles, CTAs with all tiles live; S_kv not a multiple of BLOCK_K and S_q not a
    multiple of BLOCK_Q, and multiples of both; S_q 1 and > 1; equal and differing kv_len."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    seen = set()
    for p, c in cases:
        its = mod.cta_iterations(c, p)
        live = _live_tiles(mod, c, p)
        assert [x or 1 for x in live] == its
        seen |= {"dead_cta"} if 0 in live else set()
        seen |= {"all_live"} if c["KEYS_PER_CTA"] in live else set()
        seen |= {"partly_live"} if any(0 < x < c["KEYS_PER_CTA"] for x in live) else set()
        seen |= {"ragged_k"} if p["S_kv"] % c["BLOCK_K"] else {"even_k"}
        seen |= {"ragged_q"} if p["S_q"] % c["BLOCK_Q"] else {"even_q"}
        seen |= {"varlen"} if len(set(mod.kv_lens(p, seed=0))) > 1 else set()
        seen |= {"s_q_1"} if p["S_q"] == 1 else set()
    assert seen == {"dead_cta", "all_live", "partly_live", "ragged_k", "even_k", "ragged_q", "even_q", "varlen",
                    "s_q_1"}, seen


def _live_tiles(mod, cfg, p) -> list[int]:
    """Each CTA's live key tiles, by brute force over the keys (x fastest): a tile is live when
    some valid query of the CTA sees one of its keys."""
    nq, ny = mod.grid(cfg, p)
    splits = ny // p["B"]
    BK, KPC, BQ, S_q = cfg["BLOCK_K"], cfg["KEYS_PER_CTA"], cfg["BLOCK_Q"], p["S_q"]
    out = []
    for n in mod.kv_lens(p, seed=0):
        for sp in range(splits):
            for pq in range(nq):
                live = 0
                for t in range(KPC):
                    keys = range((sp * KPC + t) * BK, min((sp * KPC + t + 1) * BK, p["S_kv"]))
                    qs = range(pq * BQ, min(pq * BQ + BQ, S_q))
                    live += any(j < n - S_q + i + 1 for i in qs for j in keys)
                out.append(live)
    return out


def _smem_bound(cfg, point) -> int:
    """Shared memory a config may use, an upper bound of what the sm_90 compiles showed: the held q
    tile (BLOCK_Q H x D), num_stages k tiles (D x BLOCK_K) and the [BLOCK_Q H, BLOCK_K] fp32 tile's
    layout conversion for the head reduction."""
    es = 1 if point["dtype"] == "fp8" else 2
    M = cfg["BLOCK_Q"] * point["H"]
    return M * point["D"] * es + cfg["num_stages"] * point["D"] * cfg["BLOCK_K"] * es + 4 * M * cfg["BLOCK_K"] + 4096


def test_sweep_fits_the_points():
    """The study sweep: 48 configs over the TUNABLES with BASELINE among them (BLOCK_K 128 left out:
    it spills at BLOCK_Q 4); at every POINT each config is valid, launches >= 4 waves of 132 CTAs,
    and its shared memory fits an H200's 227 KiB per block.
    (Every config was compiled for sm_90 with triton 3.6.0 at every point: all 144 compile, none
    spills, in ~1-2 s each (~4 min in all on a loaded 2-core machine). bf16 prefill: 33-116 KiB of
    shared memory (the held q tile, 16-64 KiB, plus the k stages and the head reduction's
    staging), registers 40-220 (BLOCK_Q 4 x BLOCK_K 64 on 4 warps 217-220); the fp8 points: 16-60
    KiB, registers 35-246 (246 at BLOCK_Q 4 x BLOCK_K 64 on 4 warps). BLOCK_K 128, left out,
    spills 4 bytes at BLOCK_Q 4 on 4 and 8 warps and needs 212-246 registers at BLOCK_Q 2.)"""
    cfgs, points, axes = _sweep()
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in axes.values()) >= len(axes) - 1
    every = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert cfgs == every and 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    assert points == mod.POINTS
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c, p["H"])
            gx, gy = mod.grid(c, p)
            its = mod.cta_iterations(c, p)
            assert len(its) == gx * gy and sum(x > 0 for x in its) >= 4 * H200_SMS, (p, c)
            assert _smem_bound(c, p) <= H200_SMEM_PER_BLOCK, (p, c)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes and types of a launch (meta tensors but
    kv_len, the seed-0 lengths on the CPU), bytes_moved / flops match a count from the shapes,
    grid and cta_iterations agree; inputs < 4 GB; the points differ in dtype and S_q / S_kv."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "lightning_indexer"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == {"bf16", "fp8"}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            B, S_q, S_kv, Hh, D = p["B"], p["S_q"], p["S_kv"], p["H"], p["D"]
            fp8 = p["dtype"] == "fp8"
            dt = torch.float8_e4m3fn if fp8 else torch.bfloat16
            assert args["Q"].shape == (B, S_q, Hh, D) and args["Q"].dtype == args["K"].dtype == dt
            assert args["K"].shape == (B, S_kv, D) and args["OUT"].shape == (B, S_q, S_kv)
            assert args["W"].shape == (B, S_q, Hh) and args["HAS_KSCALE"] == fp8
            assert args["KV_LEN"].device.type == "cpu" and args["KV_LEN"].tolist() == mod.kv_lens(p)
            assert all(v.device.type == "meta" for k, v in args.items() if hasattr(v, "device") and k != "KV_LEN")
            assert args["H"] == Hh and args["D"] == D and args["S_Q"] == S_q and args["S_KV"] == S_kv
            assert H.meta_nbytes(args) < 4 * 2**30
            gx, gy = mod.grid(cfg, p)
            splits = -(-S_kv // (cfg["BLOCK_K"] * cfg["KEYS_PER_CTA"]))
            assert (gx, gy) == (-(-S_q // cfg["BLOCK_Q"]), B * splits)
            its = mod.cta_iterations(cfg, p)
            assert len(its) == gx * gy and max(its) == mod.loop_iterations(cfg, p) == cfg["KEYS_PER_CTA"]
            assert min(its) >= 1
            lens = mod.kv_lens(p)
            es = 1 if fp8 else 2
            pairs = sum(S_q * (n - S_q) + S_q * (S_q + 1) // 2 for n in lens)
            assert mod.flops(p) == 2 * Hh * D * pairs
            assert mod.bytes_moved(p) == (B * S_q * Hh * D * es + 4 * B * S_q * Hh + sum(lens) * D * es
                                          + (4 * sum(lens) if fp8 else 0) + 4 * B + 4 * B * S_q * S_kv)
    # prefill: kv_len = S_kv; decode: lengths in [ctx_min, S_kv], not all equal
    assert mod.kv_lens(mod.POINTS[0]) == [4096]
    lens = mod.kv_lens(mod.POINTS[2])
    assert len(lens) == 128 and min(lens) >= 8192 and max(lens) <= 16384 and len(set(lens)) > 100


def test_hooks_on_small_inputs():
    """make_inputs' tensors (shapes, dtypes, the fp8 scales folded as the docstring says, the seed's),
    the reference's and the baseline's shapes, dtypes and masks."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 2, 40, 16, 32, "fp8", ctx_min=5)
    inputs = mod.make_inputs(p, seed=1, device="cpu")
    q, k, w, ks, kv = inputs["q"], inputs["k"], inputs["w"], inputs["k_scale"], inputs["kv_len"]
    assert q.shape == (3, 2, 16, 32) and q.dtype == k.dtype == torch.float8_e4m3fn and k.shape == (3, 40, 32)
    assert w.shape == (3, 2, 16) and w.dtype == torch.float32 and ks.shape == (3, 40) and ks.dtype == torch.float32
    assert kv.dtype == torch.int32 and kv.tolist() == mod.kv_lens(p, seed=1)
    assert float(q.float().abs().amax()) == mod.FP8_MAX and float(q.float().std()) > 10
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["k"].float(), k.float())
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["k"].float(), k.float())
    ref = mod.reference(inputs)
    assert ref.shape == (3, 2, 40) and ref.dtype == torch.float32
    for b, n in enumerate(kv.tolist()):
        for i in range(2):
            row = ref[b, i]
            assert torch.isfinite(row[:n - 2 + i + 1]).all() and torch.isinf(row[n - 2 + i + 1:]).all()
    base = mod.torch_baseline(inputs)
    assert base.shape == ref.shape and base.dtype == torch.float32
    bf = mod.make_inputs(_pt(1, 4, 4, 16, 32, "bf16"), device="cpu")
    assert bf["q"].dtype == torch.bfloat16 and bf["k_scale"] is None and bf["kv_len"].tolist() == [4]
    r = mod.reference(bf)[0]
    assert torch.equal(torch.isinf(r), torch.ones(4, 4).triu(1).bool())


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    q = torch.ones(1, 4, 16, 32, dtype=torch.bfloat16)
    k = torch.ones(1, 8, 32, dtype=torch.bfloat16)
    w = torch.ones(1, 4, 16)
    kv = torch.tensor([8], dtype=torch.int32)
    with pytest.raises(ValueError, match="BLOCK_K=24"):
        mod.lightning_indexer(q, k, w, kv, BLOCK_K=24)
    with pytest.raises(ValueError, match="BLOCK_Q=3"):
        mod.lightning_indexer(q, k, w, kv, BLOCK_Q=3)
    with pytest.raises(ValueError, match="KEYS_PER_CTA=0"):
        mod.lightning_indexer(q, k, w, kv, KEYS_PER_CTA=0)
    with pytest.raises(ValueError, match="both be bf16 or both fp8"):
        mod.lightning_indexer(q, k.float(), w, kv)
    with pytest.raises(ValueError, match="k_scale"):
        mod.lightning_indexer(q, k, w, kv, torch.ones(1, 8))
    with pytest.raises(ValueError, match="w must be"):
        mod.lightning_indexer(q, k, w.double(), kv)
    with pytest.raises(ValueError, match="kv_len must be"):
        mod.lightning_indexer(q, k, w, kv.long())
    with pytest.raises(ValueError, match="expected q"):
        mod.lightning_indexer(q, k[..., :16], w, kv)
    with pytest.raises(ValueError, match="out must be"):
        mod.lightning_indexer(q, k, w, kv, out=torch.empty(1, 4, 9))
    with pytest.raises(ValueError, match="dtype 'fp16'"):
        mod.make_inputs(_pt(1, 4, 8, 16, 32, "fp16"), device="cpu")
    with pytest.raises(ValueError, match="H=12"):
        mod.example_args(mod.BASELINE, _pt(1, 4, 8, 12, 32, "bf16"))
    with pytest.raises(ValueError, match="ctx_min=2"):
        mod.make_inputs(_pt(2, 4, 8, 16, 32, "bf16", ctx_min=2), device="cpu")


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles_sm90(shared_cache, kernel):
    """On sm_90: BASELINE and three more (BLOCK_Q 1 / 4, BLOCK_K 32 / 64, 4 and 8 warps, 2 and 3
    stages) compile without spills inside 227 KiB; the dot runs as a bf16 wgmma."""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], "sm_90"):
        assert res.status == "ok", f"{kernel} {cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and 0 < res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0
        assert res.shared <= _smem_bound(cfg, mod.POINTS[0]), cfg
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=8, num_stages=3, keep_ir=True)
    assert res.status == "ok", res.message
    assert "wgmma.mma_async" in res.ptx and ".bf16" in res.ptx


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) the BASELINE and two more compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The fp8 points (chunked prefill, decode: S_q 2) at the BASELINE; on sm_90 an fp8 (e4m3) wgmma."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"], keep_ir=True)
        assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
        assert res.shared <= (H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK)
        if arch == "sm_90":
            assert "wgmma.mma_async" in res.ptx and ".e4m3" in res.ptx


# ----------------------------------------------------------------- the subprocess side
def _run_cases(kernel: str) -> None:
    """Under TRITON_INTERPRET=1: each case into its NaN-filled out= buffer, against the reference
    (and the torch baseline against it too); one JSON line."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(H.TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(kernel)
    results = {}
    for name, (point, cfg) in CASES[kernel].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            buf = inputs.pop("out")
            got = mod.lightning_indexer(inputs["q"], inputs["k"], inputs["w"], inputs["kv_len"], inputs["k_scale"],
                                        out=buf, **cfg)
            ref = mod.reference(inputs)
            results[name] = _compare(got, ref)
            results[name]["same_buffer"] = got.data_ptr() == buf.data_ptr()
            results[name]["baseline"] = _compare(mod.torch_baseline(inputs), ref)
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run_cases(sys.argv[1])
