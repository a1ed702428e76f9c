"""examples/knn_topk.py against exact (fp64) distances on the CPU through Triton's interpreter,
its launcher hooks against the shapes, its bad inputs, its study sweep against the points, and
compiles for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round19_d.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python
tests/test_examples_round20_c.py knn_topk``) that prints one JSON line; the tests assert per case.

Shapes are small and odd, and together take every path: SPLIT 1 (the CTA sorts and writes its
top-K) and SPLIT > 1 (workspace + merge kernel), more splits than database tiles (splits that
walk nothing and write only sentinels), M and N not multiples of BLOCK_M / BLOCK_N, N <
BLOCK_N, N == K (every row reported), K = 1, K not a power of two (spare slots), K 40, D not a
power of two (48, 96: the dot's pad) and D 16, both dtypes, both metrics, and exact duplicate
database rows (with queries equal to database rows: distance-0 ties, and inner-product ties).
N < K is refused (a ValueError), not handled.

Why not example_harness.compare: the output is a set of indices plus their distances, and two
database rows whose exact distances differ by less than the fp32 rounding of the kernel's
expansion ||q||^2 + ||x||^2 - 2 q.x may be reported in either order, or one of them in place of
the other at the K-th place. So check_neighbours (below) checks, per query, with a tolerance
tol = 2e-5 x (||q||^2 + max ||x||^2) for l2 and 2e-5 x ||q|| max ||x|| for ip (the fp32 expansion
errs a few 2^-24 of those; the interpreter's fp32 dot likewise; measured < 1e-6 relative):
  1. indices in [0, N) and distinct in each row; dist finite;
  2. each reported distance is the exact distance of its reported index, within tol;
  3. the r-th reported distance is the exact r-th best distance, within tol (so every reported
     index is a true r-th neighbour up to a near-tie), and every index whose exact distance beats
     the K-th best by more than 2 tol is reported (no clear neighbour missing);
  4. the order: distances ascending (l2) / descending (ip), and where two reported distances are
     exactly equal the smaller index comes first;
  5. ties of duplicates: where database rows a < b are identical (the kernel computes the same fp32
     distance for both), b reported implies a reported, before b.
The torch baseline's values are held to check 3's value part.
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
KERNEL = "knn_topk"
ROLE = "held-out-20"
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
TOL_REL = 2e-5
TIE_SLACK = 0.1          # a distance this share of the tolerance from the k-th is well inside the top k


def _cfg(bm, bn, split, w, st=1):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "SPLIT": split, "num_warps": w, "num_stages": st}


def _pt(M, N, D, K, dtype="fp16", metric="l2"):
    return {"M": M, "N": N, "D": D, "K": K, "dtype": dtype, "metric": metric}


# case -> (point, cfg); comments: grid, tiles, splits
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # grid (2, 1): M tail 3 of 16, 7 tiles, N tail 11 of 32, D 48 padded to 64, K 7 (K_PAD 8)
        "final_l2_ragged_fp16": (_pt(19, 203, 48, 7), _cfg(16, 32, 1, 4)),
        # grid (2, 3): 7 tiles split 3 / 3 / 1, merge of 30 candidates, inner product
        "split3_ip_bf16": (_pt(19, 203, 64, 10, "bf16", "ip"), _cfg(16, 32, 3, 4, 2)),
        # grid (1, 5): 3 tiles over 5 splits (2 walk nothing: all-sentinel partials), N tail 8 of 16
        "more_splits_than_tiles_fp16": (_pt(5, 40, 32, 8), _cfg(16, 16, 5, 8)),
        # grid (1, 2): exact duplicate rows, queries equal to database rows (distance-0 ties), D 64
        "dup_rows_l2_fp16": (_pt(20, 150, 64, 16), _cfg(32, 64, 2, 4)),
        # grid (1, 1): duplicates under inner product, D 96 padded to 128, BLOCK_N 16 (9 tiles)
        "dup_rows_ip_bf16": (_pt(9, 130, 96, 12, "bf16", "ip"), _cfg(64, 16, 1, 8)),
        # grid (1, 1): N == K (every row reported), K 24 (K_PAD 32), D 16, N < BLOCK_N
        "k_equals_n_bf16": (_pt(3, 24, 16, 24, "bf16"), _cfg(16, 32, 1, 4, 3)),
        # grid (2, 4): K 40 (K_PAD 64), 5 tiles over 4 splits (2 / 2 / 1 / 0), D 128
        "k40_split4_fp16": (_pt(33, 300, 128, 40), _cfg(32, 64, 4, 8)),
        # grid (1, 2): K 1, ip, fp16
        "k1_split2_ip_fp16": (_pt(7, 100, 64, 1, "fp16", "ip"), _cfg(64, 32, 2, 4)),
    },
}
DUPS = {"dup_rows_l2_fp16", "dup_rows_ip_bf16", "k40_split4_fp16"}

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(64, 128, 8, 8), _cfg(16, 64, 1, 4), _cfg(32, 128, 32, 4), _cfg(64, 64, 128, 4)]
SM120_CFGS = [_cfg(64, 128, 8, 8), _cfg(16, 128, 1, 4)]


def _prepare(name: str, point: dict, inputs: dict) -> list:
    """Duplicate cases: a third of the database rows copied over later rows (identical vectors
    at scattered indices, in both orders of first / second copy), the first queries set equal to
    duplicated database rows, the norms recomputed. Returns the identical pairs (a < b)."""
    import torch

    if name not in DUPS:
        return []
    x, q = inputs["database"], inputs["queries"]
    N = x.shape[0]
    gen = torch.Generator().manual_seed(7)
    perm = torch.randperm(N, generator=gen)
    src, dst = perm[: N // 3], perm[N // 3: 2 * (N // 3)]
    x[dst] = x[src]
    for i in range(min(4, q.shape[0])):
        q[i] = x[src[i]]
    inputs["db_norms"] = x.float().pow(2).sum(1)
    pairs = set()
    for a, b in zip(src.tolist(), dst.tolist()):
        pairs.add((min(a, b), max(a, b)))
    return sorted(pairs)


def check_neighbours(inputs, dist, idx, pairs=()) -> dict:
    """Checks 1-5 of the module docstring; counts of violations and the largest errors."""
    import torch

    K = inputs["k"]
    ip = inputs["metric"] == "ip"
    ex = H_exact(inputs)                                     # [M, N] fp64
    M, N = ex.shape
    q2 = inputs["queries"].double().pow(2).sum(1)
    x2max = float(inputs["database"].double().pow(2).sum(1).max())
    tol = TOL_REL * ((q2.sqrt() * x2max ** 0.5) if ip else (q2 + x2max))      # [M]
    ref_d = torch.sort(ex, dim=1, descending=ip)[0][:, :K]
    dist = dist.double()
    res = {"shape": list(dist.shape), "idx_shape": list(idx.shape), "bad_range": 0, "bad_dup_idx": 0,
           "bad_value": 0, "bad_rank": 0, "missing": 0, "bad_order": 0, "bad_tie": 0, "max_err": 0.0}
    if not torch.isfinite(dist).all():
        res["bad_range"] += int((~torch.isfinite(dist)).sum())
    ok_range = (idx >= 0) & (idx < N)
    res["bad_range"] += int((~ok_range).sum())
    if res["bad_range"]:
        return res
    for i in range(M):
        row = idx[i].tolist()
        res["bad_dup_idx"] += K - len(set(row))
        e_rep = ex[i, idx[i]]
        err = (dist[i] - e_rep).abs()
        res["max_err"] = max(res["max_err"], float(err.max()))
        res["bad_value"] += int((err > tol[i]).sum())
        res["bad_rank"] += int(((dist[i] - ref_d[i]).abs() > tol[i]).sum())
        kth = ref_d[i, K - 1]
        clear = (ex[i] > kth + 2 * tol[i]) if ip else (ex[i] < kth - 2 * tol[i])
        res["missing"] += len(set(torch.nonzero(clear).flatten().tolist()) - set(row))
        d = dist[i]
        step = (d[:-1] - d[1:]) if ip else (d[1:] - d[:-1])
        res["bad_order"] += int((step < 0).sum())
        res["bad_tie"] += int(((d[1:] == d[:-1]) & (idx[i, 1:] <= idx[i, :-1])).sum())
        pos = {j: r for r, j in enumerate(row)}
        for a, b in pairs:
            # identical rows: a (the lower index) first. Only where the kernel's own distances could tie: the
            # interpreter's dot rounds by the CPU's BLAS, which on some hosts (an AMD EPYC, session 37) gives
            # identical rows distances one rounding apart -- then the order by distance is the right one
            if b in pos and a in pos and pos[a] > pos[b] and d[pos[a]] == d[pos[b]]:
                res["bad_tie"] += 1
            elif b in pos and a not in pos and abs(float(d[pos[b]] - d[K - 1])) > TIE_SLACK * tol[i]:
                res["bad_tie"] += 1           # b well inside the top k, its twin a left out
    res["tol_max"] = float(tol.max())
    res["n_bad"] = sum(res[k] for k in ("bad_range", "bad_dup_idx", "bad_value", "bad_rank", "missing",
                                        "bad_order", "bad_tie"))
    return res


def H_exact(inputs):
    return load_example(KERNEL).exact_scores(inputs)


def baseline_values(inputs, vals) -> dict:
    """torch_baseline's values against the exact r-th best distances (check 3's value part)."""
    import torch

    ip = inputs["metric"] == "ip"
    ex = H_exact(inputs)
    ref_d = torch.sort(ex, dim=1, descending=ip)[0][:, :inputs["k"]]
    q2 = inputs["queries"].double().pow(2).sum(1)
    x2max = float(inputs["database"].double().pow(2).sum(1).max())
    tol = TOL_REL * ((q2.sqrt() * x2max ** 0.5) if ip else (q2 + x2max))
    # the baseline's S is rounded to the inputs' 16-bit dtype (torch's half matmul output)
    tol = tol * (2 ** 12 if inputs["queries"].dtype == torch.bfloat16 else 2 ** 9)
    return {"n_bad": int(((vals.double() - ref_d).abs() > tol[:, None]).sum())}


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["M"], p["K"]] and res["idx_shape"] == [p["M"], p["K"]]
    assert res["n_bad"] == 0, f"{name}: {res}"
    assert res["baseline"]["n_bad"] == 0, f"{name} torch_baseline: {res['baseline']}"
    assert res["ref_ok"], f"{name}: reference() / reference_indices() disagree with check_neighbours"


def test_duplicates_were_reported():
    """The duplicate cases really exercise ties: some identical pair lands in a top-K."""
    res = _results()
    assert sum(res[n]["pairs_in_topk"] for n in DUPS) > 0, {n: res[n] for n in DUPS}


def test_cases_cover_every_code_path():
    H.assert_tunables_covered({KERNEL: {n: c for n, c in CASES[KERNEL].items()}}, baseline=True)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {c["SPLIT"] == 1 for _, c in cases} == {True, False}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["metric"] for p, _ in cases} == set(mod.METRICS)
    assert any(p["M"] % c["BLOCK_M"] for p, c in cases)
    assert any(p["N"] % c["BLOCK_N"] for p, c in cases)
    assert any(p["N"] < c["BLOCK_N"] for p, c in cases)
    assert any(p["K"] == p["N"] for p, _ in cases) and any(p["K"] == 1 for p, _ in cases)
    assert any(p["K"] & (p["K"] - 1) for p, _ in cases)
    assert any(p["D"] & (p["D"] - 1) for p, _ in cases)
    # a split that walks no tile
    assert any(c["SPLIT"] * mod.plan(c, p)["TILES_PER_SPLIT"] - mod.plan(c, p)["n_tiles"]
               >= mod.plan(c, p)["TILES_PER_SPLIT"] for p, c in cases)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, the grid,
    the tiles a CTA walks, the merge, bytes_moved / flops, inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "reference_indices", "bytes_moved", "flops", "grid",
               "loop_iterations", "cta_iterations", "example_args", "torch_baseline", "secondary_kernels", "knn_topk"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3
    _, _, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    for p in mod.POINTS:
        M, N, D, K = p["M"], p["N"], p["D"], p["K"]
        for cfg in cfgs:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["Q"].shape == (M, D) and args["X"].shape == (N, D) and args["X"].dtype == dts[p["dtype"]]
            assert args["OUT_D"].shape == (M, K) and args["OUT_D"].dtype == torch.float32
            assert args["OUT_I"].shape == (M, K) and args["OUT_I"].dtype == torch.int64
            if p["metric"] == "l2":
                assert args["XN"].shape == (N,) and args["XN"].dtype == torch.float32
            n_tiles = -(-N // cfg["BLOCK_N"])
            per = -(-n_tiles // cfg["SPLIT"])
            assert (args["M"], args["N"], args["D"], args["K"]) == (M, N, D, K)
            assert args["TILES_PER_SPLIT"] == per and args["FINAL"] == (cfg["SPLIT"] == 1)
            assert args["K_PAD"] >= K and args["BLOCK_D"] >= D
            if cfg["SPLIT"] > 1:
                assert args["WS"].shape == (M, cfg["SPLIT"] * K) and args["WS"].dtype == torch.int64
            g = mod.grid(cfg, p)
            assert g == (-(-M // cfg["BLOCK_M"]), cfg["SPLIT"])
            assert mod.loop_iterations(cfg, p) == per
            ci = mod.cta_iterations(cfg, p)
            assert len(ci) == g[0] * g[1] and sum(ci) == n_tiles * g[0] and max(ci) == per
            sec = mod.secondary_kernels(cfg, p)
            if cfg["SPLIT"] == 1:
                assert sec == []
            else:
                assert len(sec) == 1 and sec[0]["name"] == "_merge_kernel" and sec[0]["grid"] == M
                assert sec[0]["iterations"] == K and sec[0]["dram_bytes"] == 0
            assert H.meta_nbytes(args) < 4 * 2**30
        norms = 4 * N if p["metric"] == "l2" else 0
        assert mod.bytes_moved(p) == 2 * (M + N) * D + norms + 12 * M * K
        assert mod.flops(p) == 2 * M * N * D


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(6, 300, 40, 5)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["queries"].shape == (6, 40) and inp["database"].shape == (300, 40)
    assert inp["queries"].dtype == torch.float16 and inp["db_norms"].dtype == torch.float32
    assert torch.equal(inp["db_norms"], inp["database"].float().pow(2).sum(1))
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["database"], inp["database"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["database"], inp["database"])
    ref = mod.reference(inp)
    ri = mod.reference_indices(inp)
    assert ref.shape == (6, 5) and ref.dtype == torch.float32 and ri.dtype == torch.int64
    assert (ref[:, 1:] >= ref[:, :-1]).all()
    assert mod.torch_baseline(inp).shape == (6, 5)
    ip = mod.make_inputs(_pt(4, 50, 32, 3, "bf16", "ip"), device="cpu")
    assert ip["database"].dtype == torch.bfloat16
    assert torch.allclose(ip["database"].float().norm(dim=1), torch.ones(50), atol=2e-2)
    assert (mod.reference(ip)[:, 1:] <= mod.reference(ip)[:, :-1]).all()


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    q = torch.ones(4, 64, dtype=torch.float16)
    x = torch.ones(32, 64, dtype=torch.float16)
    cases = [
        (dict(k=33), "K=33 > N=32"),
        (dict(k=0), "K=0"),
        (dict(k=129), "K=129"),
        (dict(BLOCK_M=8), "BLOCK_M=8"),
        (dict(BLOCK_N=48), "BLOCK_N=48"),
        (dict(SPLIT=0), "SPLIT=0"),
        (dict(k=32, SPLIT=1024), "merge"),
        (dict(metric="cos"), "metric 'cos'"),
        (dict(db_norms=torch.ones(32, dtype=torch.float16)), "db_norms"),
        (dict(db_norms=torch.ones(31)), "db_norms"),
    ]
    for kw, msg in cases:
        args = dict(k=4)
        args.update(kw)
        k = args.pop("k")
        with pytest.raises(ValueError, match=msg):
            mod.knn_topk(q, x, k, **args)
    with pytest.raises(ValueError, match="fp16 or bf16"):
        mod.knn_topk(q.float(), x.float(), 4)
    with pytest.raises(ValueError, match="differs"):
        mod.knn_topk(q, x.bfloat16(), 4)
    with pytest.raises(ValueError, match="D=64 differs"):
        mod.knn_topk(q, x[:, :32], 4)
    with pytest.raises(ValueError, match="D=300"):
        mod.knn_topk(torch.ones(4, 300, dtype=torch.float16), torch.ones(32, 300, dtype=torch.float16), 4)
    with pytest.raises(ValueError, match="2-D"):
        mod.knn_topk(q[0], x, 4)
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(4, 64, 32, 4, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="K=70 > N=64"):
        mod.make_inputs(_pt(4, 64, 32, 70), device="cpu")
    with pytest.raises(ValueError, match="BLOCK_N=100"):
        mod.grid(_cfg(64, 100, 1, 4), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_M 16 / 32 / 64 x BLOCK_N 64 / 128 x SPLIT 1 / 8 / 32 / 128 x
    4 / 8 warps, num_stages 1) with BASELINE among them; valid at every point (SPLIT K within the
    merge's limit, no split empty at the points). Every config was compiled for sm_90 with triton
    3.6.0 at every point (144 compiles, 0.3-4 s each): all compile, 64-220 registers, 6-48 KiB
    shared memory (the Q tile, one X tile, the reductions' scratch); num_stages 1, 2 and 3 give the
    same registers and shared memory (the walk's nested while loop: not pipelined). Spills: 4 bytes
    (32 x 64 on 4 warps at the 16-query point, SPLIT 1) and 2 bytes (32 x 128 on 8 warps there,
    SPLIT > 1); the rest none. Triton 3.9.0: all 144 compile, 61-221 registers, the same shared
    memory, 8 keep 2-8 bytes local. sm_120 (triton 3.9, first point, SPLIT 1 / 8): all fit, 64 x 64
    on 8 warps and 64 x 128 on 4 warps (SPLIT 1) spill 4 / 24 bytes."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in axes.values()) >= len(axes) - 1
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs and len(configs) == len(cfgs)
    for p in mod.POINTS:
        for c in cfgs:
            pl = mod.plan(c, p)
            assert pl["TILES_PER_SPLIT"] * (c["SPLIT"] - 1) < pl["n_tiles"], (p, c)     # no empty split
            # Q tile + one X tile (16-bit) + reduction scratch: far below 227 KiB
            assert 2 * (c["BLOCK_M"] + c["BLOCK_N"]) * pl["BLOCK_D"] + 8 * c["BLOCK_M"] * 64 <= H200_SMEM_PER_BLOCK
    # the points differ in character: few queries (split needed) / many; l2 / ip; K 10 / 32 / 64
    assert {p["metric"] for p in mod.POINTS} == {"l2", "ip"}
    assert sorted(p["K"] for p in mod.POINTS) == [10, 32, 64]
    assert min(p["M"] for p in mod.POINTS) < 64 <= max(p["M"] for p in mod.POINTS)


def test_examples_import_without_torch():
    proc = H.imports_without_torch([KERNEL])
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more (SPLIT 1 and > 1, 16-64 queries, 4 / 8 warps) compile
    without spills at the first point; the merge kernel and the K 64 point compile too."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= 64 * 1024 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    cfg = COMPILE_CFGS[0]
    res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[2]), arch="sm_90",
                         num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    assert res.status == "ok" and res.n_spills == 0, res.message
    import torch
    p = mod.POINTS[2]
    pl = mod.plan(cfg, p)
    ws = torch.empty((p["M"], pl["NC"]), dtype=torch.int64, device="meta")
    od = torch.empty((p["M"], p["K"]), dtype=torch.float32, device="meta")
    oi = torch.empty((p["M"], p["K"]), dtype=torch.int64, device="meta")
    res = compile_kernel(mod._merge_kernel, args=mod._merge_kernel_args(ws, od, oi, p["K"], pl), arch="sm_90",
                         num_warps=pl["merge_warps"], num_stages=1)
    assert res.status == "ok" and res.n_spills == 0, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(HERE.parent))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            pairs = _prepare(name, point, inputs)
            dist, idx = mod.run(inputs, cfg)
            res = check_neighbours(inputs, dist, idx, pairs)
            res["baseline"] = baseline_values(inputs, mod.torch_baseline(inputs))
            # the reference's own pair passes the same check (the check is fair to exact answers)
            res["ref_ok"] = check_neighbours(inputs, mod.reference(inputs), mod.reference_indices(inputs),
                                             pairs)["n_bad"] == 0
            rep = [set(r) for r in idx.tolist()]
            res["pairs_in_topk"] = sum(1 for a, b in pairs for r in rep if a in r and b in r)
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run()
