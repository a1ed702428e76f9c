"""examples/hash_join_probe.py (the probe side of a GPU hash join / id -> row lookup: an open-addressing
table with linear probing -- table_keys [S] int32 / int64 with EMPTY = -1, table_vals [S] int32 / int64,
the murmur3 finalizer's home slot -- probed by probe_keys [Q] (any stride): out[q] the payload found or -1,
optionally the hit count; per program BLOCK_Q keys walking their probe sequences BUCKET aligned slots a
step until every key met its key or an EMPTY or covered max_probes slots; payloads gathered after the walk
or loaded every step) against its torch reference on the CPU through Triton's interpreter, its launcher
hooks against the shapes and the drawn data, its study sweep against the points, and a compile for sm_90
and sm_120 from its own ``example_args``.

As in test_examples_round30_a.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round31_a.py hash_join_probe``) that prints one JSON line. The subprocess
installs the harness's interpreter fix for runtime loop bounds under triton 3.6 with numpy >= 2.3.

Shapes are small, odd and ragged: the three key draws (dense TPC-H-style keys probed uniformly, sparse
orderkeys probed in ascending runs, random ids probed by a Zipf law with fresh misses); int32 and int64
keys with int32 and int64 payloads; loads 0.28-0.88 (a table of 8 slots read as one window of 8); hit
rates 0, 0.3-0.9 and 1; Q ragged against BLOCK_Q 16-512; BUCKET 1 / 2 / 4 / 8; payloads gathered after
the walk and loaded every step; the hit counter on and off. Hand-built tables: a cluster that runs past
the table's end (hits in wrapped slots, misses walking through the wrap to an EMPTY); keys all at their
home (max_probes 1), probed by misses homed inside the occupied run, so the walk ends at the max_probes
bound, not at an EMPTY. The probe keys a strided column of a wider buffer whose other columns hold table
keys (a stray read finds them), with EMPTY keys among them and one program's whole block EMPTY (it takes
no step).

Per case: launch's output equal to the reference's (the build side's sorted keys, no hash table) element
for element; out fresh, contiguous, in the payloads' dtype; the inputs unchanged; the hit count (the
wrapper's counter) equal to the keys found; max_probes None (the table's size as the bound) giving the
same; torch_baseline equal; an independent re-implementation of the kernel's walk (window by window on
the host) giving the same results, and its step counts equal to the launcher's `probe_steps` model (the
one cta_iterations reports); the flags the launch used as the case intends.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "hash_join_probe"
ROLE = "held-out-31"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
EXACT = {"int32": 0.0, "int64": 0.0}            # integer outputs: every element exact
EMPTY = -1

# the study's sweep (scripts/rank_study.py SWEEPS["hash_join_probe"] once the lead adds it)
SWEEP_AXES = {"BLOCK_Q": [128, 256, 512], "BUCKET": [1, 2, 4, 8], "EAGER": [0, 1], "num_warps": [4, 8],
              "num_stages": [1]}


def _cfg(bq, b, eager=0, w=4, st=1):
    return {"BLOCK_Q": bq, "BUCKET": b, "EAGER": eager, "num_warps": w, "num_stages": st}


def _pt(gen, N, S, Q, hit=1.0, keys="int64", dtype="int64", count=0, zipf=1.05):
    return {"gen": gen, "N": N, "S": S, "Q": Q, "hit": hit, "keys": keys, "dtype": dtype, "count": count,
            "zipf": zipf}


# case -> (point, cfg); comments: KEY64, payloads, load, hit, EAGER, HAS_COUNT, Q vs BLOCK_Q
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # TPC-H-style dense keys probed uniformly: int32 keys and payloads, load 0.59, 80 % hits, counted;
        # 1000 keys in blocks of 128 (the last ragged), windows of 4 (16-byte vectors)
        "uniform_i32_count": (_pt("uniform", 300, 512, 1000, 0.8, "int32", "int32", 1), _cfg(128, 4, 0, 4)),
        # sparse orderkeys probed in ascending runs (1-7 repeats): int64 keys, int32 payloads, load 0.59,
        # 30 % hits; payloads loaded every step (EAGER); windows of 8 int64 (64 bytes) on 8 warps
        "runs_i64_eager": (_pt("runs", 150, 256, 613, 0.3, "int64", "int32"), _cfg(64, 8, 1, 8)),
        # Zipf ids at load 0.8 (long clusters): int64 keys and payloads, 90 % hits, one slot a step
        "zipf_i64_b1": (_pt("zipf", 410, 512, 777, 0.9, "int64", "int64"), _cfg(256, 1, 0, 8)),
        # Zipf ids, int32 keys, int64 payloads, load 0.78, 70 % hits, counted; 512 keys a program (one
        # program, 500 keys), windows of 2, EAGER
        "zipf_i32_eager_count": (_pt("zipf", 200, 256, 500, 0.7, "int32", "int64", 1), _cfg(512, 2, 1, 4)),
        # no key found (hit 0, all misses end at an EMPTY), counted (0); int32 keys, int32 payloads
        "all_miss_i32": (_pt("uniform", 250, 512, 333, 0.0, "int32", "int32", 1), _cfg(256, 2, 0, 8)),
        # every key found, int64 keys and payloads, counted, windows of 8, EAGER
        "all_hit_i64": (_pt("uniform", 180, 256, 400, 1.0, "int64", "int64", 1), _cfg(128, 8, 1, 4)),
        # probe keys a strided column (stride 3) of a buffer holding table keys in its other columns; EMPTY
        # keys among them and a whole block of 32 EMPTY (a program of no step); EAGER, windows of 4
        "strided_empty_i64": (_pt("uniform", 100, 256, 300, 0.9, "int64", "int32"), _cfg(32, 4, 1, 4)),
        # a hand-built table whose cluster runs past the table's end (hits wrapped to slots 0.., misses
        # walking through the wrap); int32 keys, int64 payloads, windows of 8 in 64 slots
        "wrap_cluster_i32": (_pt("uniform", 30, 64, 200, 0.5, "int32", "int64"), _cfg(64, 8, 0, 4)),
        # a hand-built table of keys all at their home (max_probes 1) in a run of 40 slots, probed by keys
        # and by misses homed inside the run: the walk ends at the max_probes bound; windows of 2
        "cap_bound_i64": (_pt("uniform", 40, 64, 150, 0.5, "int64", "int64"), _cfg(64, 2, 0, 4)),
        # a table of 8 slots holding 7 keys (load 0.875) read as one window of 8; int32 keys, int64
        # payloads, 16 keys a program, num_stages 2 (nothing to pipeline: the same kernel)
        "tiny_table_b8": (_pt("uniform", 7, 8, 50, 0.5, "int32", "int64"), _cfg(16, 8, 1, 4, 2)),
    },
}
STRIDED, WRAP, CAP, TINY = "strided_empty_i64", "wrap_cluster_i32", "cap_bound_i64", "tiny_table_b8"
STRIDE, EMPTY_BLOCK = 3, 1           # the strided column's stride; the program whose block is all EMPTY


def _keys_homed(mod, S: int, homes, dtype, n_each: int, start: int = 1):
    """Keys (python ints, from `start` on) whose home slot in S slots is in `homes`: n_each of each."""
    import torch

    cand = torch.arange(start, start + 64 * S * n_each, dtype=dtype)
    h = mod.home_slots(cand, S)
    out = []
    for s in homes:
        out += [int(v) for v in cand[h == s][:n_each]]
    return out


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The hand-built tables and the strided / EMPTY probe keys (module doc), then copies of the inputs."""
    import torch

    mod = load_example(KERNEL)
    pk = inputs["probe_keys"]
    Q, S, dt = pk.shape[0], point["S"], pk.dtype
    vt = inputs["table_vals"].dtype
    gen = torch.Generator().manual_seed(len(name))
    if name in (WRAP, CAP):
        if name == WRAP:
            # 12 keys homed at S - 3 / S - 2 (their cluster wraps into slots 0..), 18 spread keys
            build = _keys_homed(mod, S, (S - 3, S - 2), dt, 6)
            build += _keys_homed(mod, S, range(10, 46, 2), dt, 1, start=10**6)
            # misses homed at S - 2 / S - 1 (walking through the wrap) and spread ones
            miss = _keys_homed(mod, S, (S - 2, S - 1), dt, 8, start=10**7)
            miss += _keys_homed(mod, S, range(20, 60, 4), dt, 1, start=2 * 10**7)
        else:
            # 40 keys at homes 0..39 (one each: every key sits at its home), misses homed in 3..36
            build = _keys_homed(mod, S, range(40), dt, 1)
            miss = _keys_homed(mod, S, range(3, 37), dt, 1, start=10**6)
        bk = torch.tensor(build, dtype=dt)
        bv = torch.randperm(len(build), generator=gen).to(vt) * 3 + 1
        tk, tv, mp = mod.build_table(bk, bv, S)
        mk = torch.tensor(miss, dtype=dt)
        pick = torch.rand(Q, generator=gen) < 0.5
        pk = torch.where(pick, bk[torch.randint(0, len(build), (Q,), generator=gen)],
                         mk[torch.randint(0, len(miss), (Q,), generator=gen)])
        order = torch.argsort(bk)
        inputs.update(table_keys=tk, table_vals=tv, max_probes=mp, build_keys=bk[order], build_vals=bv[order],
                      probe_keys=pk)
    if name == STRIDED:
        # column 1 of a [Q, 3] buffer whose other columns hold table keys (found if read by mistake)
        tkeys = inputs["build_keys"]
        buf = tkeys[torch.randint(0, tkeys.numel(), (Q, STRIDE), generator=gen)].clone()
        col = pk.clone()
        col[::7] = EMPTY
        bq = CASES[KERNEL][name][1]["BLOCK_Q"]
        col[EMPTY_BLOCK * bq:(EMPTY_BLOCK + 1) * bq] = EMPTY
        buf[:, 1] = col
        inputs["probe_keys"] = buf[:, 1]
    for k in ("probe_keys", "table_keys", "table_vals"):
        inputs[k + "0"] = inputs[k].clone()


def _walk(inputs, bucket: int):
    """The kernel's walk, re-implemented on the host key by key: (slot found or -1, steps, ended by the
    max_probes bound) per probe key, window by window (the aligned window of `bucket` slots holding the next
    slot; the first window's slots before home not compared; a match or an EMPTY ends it; at most
    (max_probes + 2 bucket - 2) // bucket windows)."""
    mod = load_example(KERNEL)
    tk = inputs["table_keys"].tolist()
    S = len(tk)
    mp = inputs["max_probes"]
    pk = inputs["probe_keys"]
    homes = mod.home_slots(pk, S).tolist()
    n_win = (mp + 2 * bucket - 2) // bucket
    res, steps, capped = [], [], []
    for key, home in zip(pk.tolist(), homes):
        if key == EMPTY:
            res.append(-1), steps.append(0), capped.append(False)
            continue
        r = home & (bucket - 1)
        start, found, done, t = home - r, -1, False, 0
        while not done and t < n_win:
            for jj in range(bucket):
                if t == 0 and jj < r:
                    continue
                pos = (start + t * bucket + jj) & (S - 1)
                if tk[pos] == key:
                    found, done = pos, True
                    break
                if tk[pos] == EMPTY:
                    done = True
                    break
            t += 1
        res.append(found), steps.append(t), capped.append(not done)
    return res, steps, capped


def _stop_distances(inputs):
    """Per probe key, the slots from its home to its key or to the first EMPTY (brute force)."""
    mod = load_example(KERNEL)
    tk = inputs["table_keys"].tolist()
    S = len(tk)
    pk = inputs["probe_keys"]
    out = []
    for key, home in zip(pk.tolist(), mod.home_slots(pk, S).tolist()):
        d = 0
        while tk[(home + d) & (S - 1)] not in (key, EMPTY):
            d += 1
        out.append(d)
    return out


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["exact"] is True and res["shape"] == [p["Q"]] and res["dtype"] == p["dtype"], res
    assert res["contiguous"] is True and res["inputs_unchanged"] is True, res
    assert res["hits"] == res["n_found"], res
    assert res["unbounded_equal"] is True and res["baseline_exact"] is True, res
    assert res["walk_equal"] is True and res["steps_model_equal"] is True, res
    fl = res["flags"]
    assert fl["KEY64"] == int(p["keys"] == "int64") and fl["HAS_COUNT"] == p["count"], fl
    assert fl["EAGER"] == cfg["EAGER"] and fl["BUCKET"] == cfg["BUCKET"] and fl["BLOCK_Q"] == cfg["BLOCK_Q"], fl
    assert fl["SMASK"] == p["S"] - 1 and fl["stride_q"] == (STRIDE if name == STRIDED else 1), fl
    assert fl["MAX_PROBES"] == res["max_probes"] >= 1, fl
    Q = p["Q"]
    if name not in (WRAP, CAP, STRIDED):
        # the drawn hit rate: within 4 sigma of the point's (exact for 0 and 1; "runs" probes an order's
        # key 1-7 times: 4 sigma of the orders, about Q / 4 of them)
        h = p["hit"]
        n = Q / 4 if p["gen"] == "runs" else Q
        assert abs(res["n_found"] / Q - h) <= 4 * math.sqrt(h * (1 - h) / n) + 1e-9, res
    else:
        assert 0 < res["n_found"] < Q, res
    if name == STRIDED:
        assert res["n_empty_keys"] > Q // 7 and res["zero_step_programs"] >= 1, res
    if name == WRAP:
        assert res["wrapped_hits"] > 0 and res["wrapped_walks"] > 0, res
    if name == CAP:
        assert res["max_probes"] == 1 and res["capped"] > 0, res
    if name == TINY:
        assert res["max_probes"] <= 8 and res["n_found"] > 0, res


def test_cases_cover_every_code_path():
    """KEY64 both ways with both payload dtypes and both EAGER; HAS_COUNT both ways; every BUCKET of the
    sweep and every BLOCK_Q (plus 16-64); 4 and 8 warps; num_stages 1 and 2; every key draw; hit rates 0
    and 1; a strided probe column with EMPTY keys and a program of no step; wrapped walks; walks ended by
    max_probes; Q ragged against BLOCK_Q."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    res = _results()
    cases = CASES[KERNEL]
    assert {p["gen"] for p, _ in cases.values()} == set(mod.GENS)
    assert {(p["keys"], p["dtype"]) for p, _ in cases.values()} == set(itertools.product(mod.KEY_DTYPES, mod.DTYPES))
    fl = {n: r["flags"] for n, r in res.items()}
    assert {(f["KEY64"], f["EAGER"]) for f in fl.values()} == set(itertools.product((0, 1), repeat=2))
    assert {f["HAS_COUNT"] for f in fl.values()} == {0, 1}
    assert {f["BUCKET"] for f in fl.values()} >= {1, 2, 4, 8}
    assert {p["hit"] for p, _ in cases.values()} >= {0.0, 1.0}
    assert any(p["Q"] % c["BLOCK_Q"] for p, c in cases.values())
    assert any(c["BLOCK_Q"] > p["Q"] for p, c in cases.values())            # one program, partly empty
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    assert {16, 32, 64} <= {c["BLOCK_Q"] for _, c in cases.values()}
    assert 2 in {c["num_stages"] for _, c in cases.values()}
    assert res[STRIDED]["zero_step_programs"] >= 1 and res[WRAP]["wrapped_hits"] > 0 and res[CAP]["capped"] > 0


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (the probe keys and the table's keys with data on the
    CPU -- make_inputs' seed-0 draw --, the payloads, out and the counter on meta) with the launch's shapes,
    dtypes, flags and the drawn table's max_probes; the grid (cdiv(Q, BLOCK_Q) programs, >= 4 waves) and the
    loop length (the mean of cta_iterations, rounded up); bytes_moved / flops; the drawn data (hit rate,
    load, the index data under 30M elements)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "hash_join_probe", "build_table"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"int32": torch.int32, "int64": torch.int64}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        Q, S, N = p["Q"], p["S"], p["N"]
        kt, vt = dts[p["keys"]], dts[p["dtype"]]
        d = mod._data(mod._items(mod._check_point(p)), 0)
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            data = {k for k, v in a.items() if getattr(v, "device", None) is not None and v.device.type == "cpu"}
            assert data == {"PROBE", "TKEYS"}, data
            assert all(v.device.type == "meta" for k, v in a.items() if hasattr(v, "device") and k not in data)
            assert a["PROBE"].shape == (Q,) and a["PROBE"].dtype == kt and a["PROBE"] is d["probe_keys"]
            assert a["TKEYS"].shape == (S,) and a["TKEYS"].dtype == kt and a["TKEYS"] is d["table_keys"]
            assert a["TVALS"].shape == (S,) and a["TVALS"].dtype == vt
            assert a["OUT"].shape == (Q,) and a["OUT"].dtype == vt
            if p["count"]:
                assert a["COUNT"].shape == (1,) and a["COUNT"].dtype == torch.int64
            assert (a["Q"], a["SMASK"], a["MAX_PROBES"], a["stride_q"]) == (Q, S - 1, d["max_probes"], 1)
            assert (a["KEY64"], a["HAS_COUNT"], a["EAGER"]) == (int(p["keys"] == "int64"), p["count"], cfg["EAGER"])
            assert (a["BLOCK_Q"], a["BUCKET"]) == (cfg["BLOCK_Q"], cfg["BUCKET"])
            g = mod.grid(cfg, p)
            assert g == -(-Q // cfg["BLOCK_Q"]) >= 4 * H200_SMS
            ci = mod.cta_iterations(cfg, p)
            assert len(ci) == g and min(ci) >= 1
            assert max(ci) <= (d["max_probes"] + 2 * cfg["BUCKET"] - 2) // cfg["BUCKET"]
            assert mod.loop_iterations(cfg, p) == -(-sum(ci) // g)
        kb, vb = (4 if p["keys"] == "int32" else 8), (4 if p["dtype"] == "int32" else 8)
        assert mod.bytes_moved(p) == (Q + S) * (kb + vb) + 8 * p["count"]
        assert mod.flops(p) == 8 * Q
        # the drawn data: the table holds the N keys, the hit rate is the point's, the index data small
        tk = d["table_keys"]
        assert int((tk != EMPTY).sum()) == N and d["n_hit"] == pytest.approx(p["hit"] * Q, rel=0.01)
        assert Q + S <= 30_000_000
        assert 0.3 <= N / S <= 0.85
    # the points differ: key draws, key and payload dtypes, loads, hit rates, the counter
    P = mod.POINTS
    assert [p["gen"] for p in P] == list(mod.GENS) and {p["keys"] for p in P} == set(mod.KEY_DTYPES)
    assert {p["dtype"] for p in P} == set(mod.DTYPES) and {p["count"] for p in P} == {0, 1}
    assert sorted(p["hit"] for p in P) == [0.152, 0.9, 1.0]
    # the load-0.8 table's clusters: its max_probes is far above the others'
    mps = [mod._data(mod._items(mod._check_point(p)), 0)["max_probes"] for p in P]
    assert mps[2] > 4 * max(mps[:2]), mps


def test_hooks_on_small_points_and_inputs():
    """The hash (an independent murmur3 fmix32 / fmix64), the build (every key reachable from its home
    without an EMPTY between, its payload beside it, max_probes its longest displacement + 1); make_inputs
    (dtypes, the seed, the draws' shapes: runs ascending, Zipf ids skewed); the drawn stop distances and
    cta_iterations against the host walk; reference by hand; build_table's errors."""
    import torch

    mod = load_example(KERNEL)
    M32, M64 = 2**32 - 1, 2**64 - 1

    def fmix32(x):
        x &= M32
        x ^= x >> 16
        x = (x * 0x85EBCA6B) & M32
        x ^= x >> 13
        x = (x * 0xC2B2AE35) & M32
        return x ^ (x >> 16)

    def fmix64(x):
        x &= M64
        x ^= x >> 33
        x = (x * 0xFF51AFD7ED558CCD) & M64
        x ^= x >> 33
        x = (x * 0xC4CEB9FE1A85EC53) & M64
        return x ^ (x >> 33)

    assert fmix32(1) == 0x514E28B7                     # murmur3's published fmix32(1)
    vals = [0, 1, 2, 7, 12345, 2**31 - 2, -5, -(2**31)]
    for S in (8, 1024, 2**20):
        h = mod.home_slots(torch.tensor(vals, dtype=torch.int32), S).tolist()
        assert h == [fmix32(v) & (S - 1) for v in vals]
        v64 = vals + [2**62 + 3, -(2**63), 2**63 - 1]
        h = mod.home_slots(torch.tensor(v64, dtype=torch.int64), S).tolist()
        assert h == [fmix64(v) & (S - 1) for v in v64]
    # the build at load 0.8: each key reachable, its payload beside it, max_probes = longest displacement + 1
    gen = torch.Generator().manual_seed(5)
    keys = torch.randperm(10**6, generator=gen)[:819].to(torch.int64) + 3
    vals = torch.arange(819, dtype=torch.int32) * 7
    tk, tv, mp = mod.build_table(keys, vals, 1024)
    assert tk.dtype == torch.int64 and tv.dtype == torch.int32 and int((tk != EMPTY).sum()) == 819
    assert bool((tv[tk == EMPTY] == -1).all())
    homes = mod.home_slots(keys, 1024).tolist()
    tkl = tk.tolist()
    disp = []
    for key, v, h in zip(keys.tolist(), vals.tolist(), homes):
        d = 0
        while tkl[(h + d) % 1024] != key:
            assert tkl[(h + d) % 1024] != EMPTY
            d += 1
        assert int(tv[(h + d) % 1024]) == v
        disp.append(d)
    assert mp == max(disp) + 1 and max(disp) >= 8                # clusters at load 0.8
    # make_inputs
    p = _pt("runs", 120, 256, 500, 0.25, "int64", "int32")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    pk, bk = inp["probe_keys"], inp["build_keys"]
    assert pk.shape == (500,) and pk.dtype == torch.int64 and inp["table_keys"].shape == (256,)
    assert inp["table_vals"].dtype == torch.int32 and inp["count"] == 0
    assert bool((pk[1:] >= pk[:-1]).all())                       # lineitem's ascending orderkeys
    assert bool(((pk - 1) % 32 < 8).all()) and bool(((bk - 1) % 32 < 8).all())     # TPC-H's sparse keys
    assert bool((bk[1:] > bk[:-1]).all()) and torch.equal(inp["build_vals"].sort().values, torch.arange(120,
                                                                                       dtype=torch.int32))
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["probe_keys"], pk)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["probe_keys"], pk)
    inp["probe_keys"][0] = 12345                                 # a copy: the cache is untouched
    assert not torch.equal(mod.make_inputs(p, seed=1, device="cpu")["probe_keys"], inp["probe_keys"])
    z = mod.make_inputs(_pt("zipf", 400, 512, 4000, 0.9, "int64", "int64", zipf=1.05), seed=3, device="cpu")
    _, counts = torch.unique(z["probe_keys"], return_counts=True)
    assert int(counts.max()) > 100 and bool((z["probe_keys"] >= 0).all())          # a hot id
    u = mod.make_inputs(_pt("uniform", 300, 512, 2000, 0.5, "int32", "int32", 1), seed=3, device="cpu")
    assert u["count"] == 1 and bool((u["build_keys"] == torch.arange(1, 301, dtype=torch.int32)).all())
    # the drawn stop distances and cta_iterations against the host walk (seed 0, as example_args draws)
    for q in (p, _pt("zipf", 400, 512, 700, 0.9, "int32", "int64", zipf=1.05)):
        P = mod._check_point(q)
        d = mod._data(mod._items(P), 0)
        inp0 = mod.make_inputs(q, seed=0, device="cpu")
        assert d["stop"].tolist() == _stop_distances(inp0)
        assert d["n_hit"] == int((mod.reference(inp0) >= 0).sum())
        for cfg in (_cfg(64, 1), _cfg(128, 8), _cfg(32, 2)):
            _, steps, _ = _walk(inp0, cfg["BUCKET"])
            bq = cfg["BLOCK_Q"]
            per = [max(steps[i:i + bq]) for i in range(0, len(steps), bq)]
            assert mod.cta_iterations(cfg, q) == per
            assert mod.loop_iterations(cfg, q) == -(-sum(per) // len(per))
    # reference by hand (and torch_baseline): found keys' payloads, -1 elsewhere, EMPTY never found
    hand = {"build_keys": torch.tensor([2, 5, 9]), "build_vals": torch.tensor([10, 50, 90], dtype=torch.int32),
            "probe_keys": torch.tensor([9, 1, 5, 10, -1, 2, 2])}
    want = torch.tensor([90, -1, 50, -1, -1, 10, 10], dtype=torch.int32)
    assert torch.equal(mod.reference(hand), want) and torch.equal(mod.torch_baseline(hand), want)
    # grid / loop hooks on a small point; bytes / flops
    c = _cfg(128, 4)
    assert mod.grid(c, p) == 4 and len(mod.cta_iterations(c, p)) == 4
    assert mod.bytes_moved(p) == (500 + 256) * (8 + 4) and mod.flops(p) == 4000
    # build_table's errors
    k3 = torch.tensor([3, 4, 5])
    with pytest.raises(ValueError, match="distinct"):
        mod.build_table(torch.tensor([3, 4, 3]), k3, 8)
    with pytest.raises(ValueError, match="EMPTY sentinel"):
        mod.build_table(torch.tensor([3, -1, 4]), k3, 8)
    with pytest.raises(ValueError, match="S=4 must be a power of two"):
        mod.build_table(torch.arange(4), torch.arange(4), 4)
    with pytest.raises(ValueError, match="S=12"):
        mod.build_table(k3, k3, 12)
    with pytest.raises(ValueError, match="keys must be a 1-d int32 / int64"):
        mod.build_table(k3.float(), k3, 8)
    with pytest.raises(ValueError, match="vals must be a 1-d int32 / int64 tensor of N=3"):
        mod.build_table(k3, k3[:2], 8)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    tk, tv, mp = mod.build_table(torch.tensor([5, 6, 7]), torch.tensor([0, 1, 2], dtype=torch.int32), 8)
    pk = torch.tensor([5, 9, 7])
    for kw, msg in ((dict(BLOCK_Q=100), "BLOCK_Q=100"), (dict(BLOCK_Q=8192), "BLOCK_Q=8192"),
                    (dict(BUCKET=3), "BUCKET=3"), (dict(BUCKET=128), "BUCKET=128"),
                    (dict(BLOCK_Q=4096, BUCKET=8), "at most 16384"), (dict(EAGER=2), "EAGER=2"),
                    (dict(num_warps=3), "num_warps=3"), (dict(num_stages=0), "num_stages=0"),
                    (dict(BUCKET=16), "BUCKET=16 slots a step exceed the table's S=8")):
        with pytest.raises(ValueError, match=msg):
            mod.hash_join_probe(pk, tk, tv, mp, **kw)
    with pytest.raises(ValueError, match=r"table_keys must be a 1-d int32 / int64 tensor \[S\]"):
        mod.hash_join_probe(pk, tk.view(2, 4), tv, mp)
    with pytest.raises(ValueError, match="table_keys must be a 1-d int32 / int64"):
        mod.hash_join_probe(pk.float(), tk.float(), tv, mp)
    with pytest.raises(ValueError, match="S=12 slots must be a power of two"):
        mod.hash_join_probe(pk, torch.full((12,), -1), torch.full((12,), -1), 4)
    with pytest.raises(ValueError, match="table_vals must be a 1-d int32 / int64 tensor of S=8"):
        mod.hash_join_probe(pk, tk, tv[:4], mp)
    with pytest.raises(ValueError, match="table_vals must be a 1-d int32 / int64"):
        mod.hash_join_probe(pk, tk, tv.float(), mp)
    with pytest.raises(ValueError, match="must be contiguous"):
        mod.hash_join_probe(pk, torch.full((16,), -1)[::2], tv, mp)
    with pytest.raises(ValueError, match="probe_keys must be a 1-d torch.int64"):
        mod.hash_join_probe(pk.int(), tk, tv, mp)
    with pytest.raises(ValueError, match="probe_keys must be a 1-d torch.int64"):
        mod.hash_join_probe(pk.view(3, 1), tk, tv, mp)
    for bad in (0, 9, 2.0, True):
        with pytest.raises(ValueError, match=f"max_probes={bad!r} must be an int from 1 to S=8"):
            mod.hash_join_probe(pk, tk, tv, bad)
    with pytest.raises(ValueError, match="probe_keys must be on table_keys' device"):
        mod.hash_join_probe(pk.to("meta"), tk, tv, mp)
    with pytest.raises(ValueError, match="table_vals must be on table_keys' device"):
        mod.hash_join_probe(pk, tk, tv.to("meta"), mp)
    with pytest.raises(ValueError, match="exceed the kernel's int32 indices"):
        mod.hash_join_probe(torch.empty(2**31, dtype=torch.int64, device="meta"), tk.to("meta"),
                            tv.to("meta"), mp)
    # the points and hooks
    base = _pt("uniform", 100, 256, 1000)
    for kw, msg in ((dict(gen="sorted"), "gen 'sorted'"), (dict(S=100), "S=100 slots must be a power of two"),
                    (dict(N=256), "N=256 keys in S=256"), (dict(N=240), "at most 0.9"), (dict(Q=0), "Q=0"),
                    (dict(N=2.5), "N=2.5"), (dict(hit=1.5), "hit=1.5"), (dict(keys="int16"), "keys 'int16'"),
                    (dict(dtype="float32"), "dtype 'float32'"), (dict(count=2), "count=2"),
                    (dict(zipf=-1), "zipf=-1"), (dict(gen="runs", hit=0.0), "gen 'runs' needs hit=0.0"),
                    (dict(Q=2**31), "Q=2147483648 probe keys exceed"),
                    (dict(gen="runs", N=600_000_000, S=2**30, hit=0.1, keys="int32"), "orderkeys past int32")):
        with pytest.raises(ValueError, match=msg):
            mod.bytes_moved(dict(base, **kw))
    with pytest.raises(ValueError, match="keys 'int8'"):
        mod.make_inputs(dict(base, keys="int8"), device="cpu")
    with pytest.raises(ValueError, match="BUCKET=8 slots a step exceed the point's S=4"):
        mod.grid(_cfg(128, 8), _pt("uniform", 3, 4, 100))
    with pytest.raises(ValueError, match="BLOCK_Q=96"):
        mod.grid(_cfg(96, 4), base)
    with pytest.raises(ValueError, match="EAGER=3"):
        mod.example_args(_cfg(128, 4, 3), base)
    with pytest.raises(ValueError, match="BUCKET=0"):
        mod.loop_iterations(_cfg(128, 0), base)
    # nothing to probe: an empty out (and a zero count), nothing launched
    e, hits = mod.hash_join_probe(pk[:0], tk, tv, mp, count=True)
    assert e.shape == (0,) and e.dtype == torch.int32 and int(hits) == 0


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_Q 128 / 256 / 512, BUCKET 1 / 2 / 4 / 8, EAGER 0 / 1, 4 / 8 warps,
    num_stages 1: a `while` loop, nothing to pipeline) with BASELINE among them; at every point each config
    is valid, launches >= 4 waves of programs on an H200 (23,112 at the fewest: 512 keys a program over the
    DLRM step's 11.8M ids) and its shared-memory bound (8 BLOCK_Q + 256 bytes: the key column's layout
    change) fits sm_90's. (Every config was compiled for sm_90 at every point with triton 3.6.0 and 3.9.0:
    all compile, none spills; registers 18-214 under 3.6 and 18-242 under 3.9, the most for 512 keys x 8
    int64 slots with the payloads loaded every step on 4 warps at the DLRM point (4 threads a key: 16 keys'
    state a thread), 18-48 for one slot a step; shared memory 16-4096 bytes under both.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(mod.grid(c, p) for p in mod.POINTS for c in cfgs)
    assert fewest == 23112
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) >= 4 * H200_SMS, (p, c)
            assert 8 * c["BLOCK_Q"] + 256 <= SM90_SMEM_PER_BLOCK, (p, c)


def test_sweep_matches_the_study():
    """scripts/rank_study.py's SWEEPS entry: the same axes, every config valid at the points."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


# configs compiled on sm_90: BASELINE, the register-heaviest corner (512 keys x 8 slots, EAGER, 4 warps) at
# the int64 points, one slot a step on 8 warps
COMPILE_CFGS = {0: [_cfg(256, 4, 0, 4), _cfg(128, 1, 0, 8)],
                1: [_cfg(512, 8, 0, 4), _cfg(256, 2, 1, 8)],
                2: [_cfg(512, 8, 1, 4), _cfg(128, 4, 1, 4)]}
SM120_CFGS = [_cfg(256, 4, 0, 4), _cfg(512, 8, 1, 4), _cfg(128, 1, 0, 8)]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90 at each point: BASELINE, the register-heaviest configs and 8-warp corners compile without
    spills, their shared memory within the bound (8 BLOCK_Q + 256 bytes)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0][0] == mod.BASELINE
    for pi, cfgs in COMPILE_CFGS.items():
        p = mod.POINTS[pi]
        for cfg in cfgs:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok", f"{cfg} at point {pi} on sm_90: {res.status}: {res.message}"
            assert 0 < res.n_regs <= 255 and res.n_spills == 0, (pi, cfg, res.n_regs, res.n_spills)
            assert 0 < res.shared <= 8 * cfg["BLOCK_Q"] + 256, (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, 512 keys x 8 slots with EAGER on 4 warps and one slot a step on
    8 warps compile at the first point (TPC-H lineitem x part, int32 keys) without spills within the
    shared-memory bound. (All 48 sweep configs compile there at every point without spills under triton
    3.9.0 (16-233 registers); under 3.6.0 all but one: 512 keys x 8 int64 slots, EAGER, on 4 warps at the
    DLRM point reaches 255 registers and spills 40 bytes -- sm_90's 214.)"""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= min(8 * cfg["BLOCK_Q"] + 256, SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (exact), the wrapper's counter and unbounded walk,
    torch_baseline, the host walk and the step model; one JSON line."""
    import torch

    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.int32: "int32", torch.int64: "int64"}

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        tune = {k: cfg[k] for k in ("BLOCK_Q", "BUCKET", "EAGER", "num_warps", "num_stages")}
        pk, tk, tv, mp = (inputs[k] for k in ("probe_keys", "table_keys", "table_vals", "max_probes"))
        _, hits = mod.hash_join_probe(pk, tk, tv, mp, count=True, **tune)
        unb = mod.hash_join_probe(pk, tk, tv, None, **tune)
        a = mod._kernel_args(pk, tk, tv, out, hits if point["count"] else None, mp, cfg)
        flags = {k: a[k] for k in ("KEY64", "HAS_COUNT", "EAGER", "BUCKET", "BLOCK_Q", "SMASK", "MAX_PROBES",
                                   "stride_q")}
        slots, steps, capped = _walk(inputs, cfg["BUCKET"])
        walk_out = torch.tensor([int(tv[s]) if s >= 0 else -1 for s in slots], dtype=tv.dtype)
        model = mod.probe_steps(mod.home_slots(pk, tk.shape[0]).numpy().astype("int32"),
                                torch.tensor(_stop_distances(inputs), dtype=torch.int32).numpy(), mp,
                                cfg["BUCKET"])
        model[(pk == EMPTY).numpy()] = 0
        bq = cfg["BLOCK_Q"]
        per = [max(steps[i:i + bq]) for i in range(0, len(steps), bq)]
        homes = mod.home_slots(pk, tk.shape[0]).tolist()
        unchanged = all(torch.equal(inputs[k], inputs[k + "0"]) for k in ("probe_keys", "table_keys", "table_vals"))
        return {"exact": bool(torch.equal(out, ref)), "dtype": names.get(out.dtype), "contiguous": out.is_contiguous(),
                "inputs_unchanged": unchanged, "n_found": int((ref >= 0).sum()), "hits": int(hits[0]),
                "unbounded_equal": bool(torch.equal(unb, ref)),
                "baseline_exact": bool(torch.equal(mod.torch_baseline(inputs), ref)),
                "walk_equal": bool(torch.equal(walk_out, ref)), "steps_model_equal": model.tolist() == steps,
                "flags": flags, "max_probes": mp, "n_empty_keys": int((pk == EMPTY).sum()),
                "zero_step_programs": sum(1 for s in per if s == 0),
                "wrapped_hits": sum(1 for s, h in zip(slots, homes) if 0 <= s < h),
                "wrapped_walks": sum(1 for h, st in zip(homes, steps) if st and h >= tk.shape[0] - 2),
                "capped": sum(capped)}

    H.run_cases(KERNEL, CASES[KERNEL], tol_table=EXACT, prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
