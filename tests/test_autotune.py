"""occmodel.autotune.pruner, called the way triton's Autotuner calls early_config_prune
(CPU only: every config is compiled for sm_120, never launched)."""

import logging

import pytest
import torch
import triton

from occmodel import load_spec, occupancy
from occmodel.autotune import ROW_KEYS, pruner
from occmodel.compile import compile_kernel
from occmodel.errors import ConfigError, KernelError
from occmodel.kernels import matmul as mm
from occmodel.model import predict

import kernels_for_tests as K

SPEC = load_spec("sm_120")


@pytest.fixture(scope="module", autouse=True)
def _cache_dir(fresh_cache):
    return fresh_cache


def _cfg(m, n, k, warps, stages):
    return triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=warps, num_stages=stages)


# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); shared = (stages - 1) x (BM + BN) x BK x 2 B on sm_120
SWEEP = [
    _cfg(128, 128, 32, 4, 3),    # 32 KB
    _cfg(128, 128, 64, 4, 4),    # 96 KB: fits one block under the 99 KB opt-in limit
    _cfg(128, 128, 64, 4, 5),    # 128 KB: over the limit
    _cfg(256, 128, 64, 8, 4),    # 144 KB: over
    _cfg(128, 128, 128, 8, 2),   # 64 KB
    _cfg(128, 128, 128, 8, 3),   # 128 KB: over
    _cfg(64, 64, 32, 4, 2),
    _cfg(64, 64, 64, 4, 4),
    _cfg(128, 64, 32, 4, 3),
    _cfg(64, 128, 64, 8, 3),
    _cfg(128, 256, 64, 8, 3),    # 96 KB
    _cfg(32, 32, 32, 2, 2),
    _cfg(256, 128, 32, 4, 2),    # a 256 x 128 fp32 accumulator over 128 threads: spills
    _cfg(64, 64, 8, 4, 2),       # BLOCK_K = 8 < 16: tl.dot refuses it, the compile fails
]
M = N = K_DIM = 512


def _launch_args():
    a = torch.empty(M, K_DIM, dtype=torch.float16)
    b = torch.empty(K_DIM, N, dtype=torch.float16)
    c = torch.empty(M, N, dtype=torch.float16)
    return (a, b, c, M, N, K_DIM, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))


def _prune_like_triton(configs, prune, **launch_kwargs):
    """What triton's Autotuner.run does (3.6 and 3.9): nargs = the positional args by name, then
    prune_configs(kwargs) with the launch's keyword args plus grid and warmup."""
    tuned = triton.autotune(configs, key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune})(mm._kernel)
    tuned.nargs = dict(zip(tuned.arg_names, _launch_args()))
    try:
        return tuned.prune_configs({"grid": (1,), "warmup": False, **launch_kwargs})
    finally:
        tuned.nargs = None


def _fits_independently(config) -> bool:
    """Compile the config with the card's declared signature and judge fit by hand."""
    res = compile_kernel(mm._kernel, signature=mm.CARD.signature({"dtype": "fp16"}),
                         constexprs={**config.kwargs, "GROUP_M": 8}, arch="sm_120",
                         num_warps=config.num_warps, num_stages=config.num_stages)
    if not res.ok:
        return False
    occ = occupancy(SPEC, threads=32 * config.num_warps, regs=res.n_regs, smem=res.total_shared)
    return res.total_shared <= SPEC.sm.shared_memory_per_block_optin and res.n_spills == 0 and occ.blocks_per_sm >= 1


@pytest.fixture(scope="module")
def swept():
    prune = pruner(spec="sm_120")
    kept = _prune_like_triton(SWEEP, prune, GROUP_M=8)
    return prune, kept


@pytest.mark.slow
def test_keeps_every_feasible_config_and_drops_every_infeasible_one(swept):
    prune, kept = swept
    expected = [c for c in SWEEP if _fits_independently(c)]
    assert kept == expected
    assert all(k is c for k, c in zip(kept, expected))          # the caller's own Config objects
    rows = prune.decisions
    assert [r["kept"] for r in rows] == [c in expected for c in SWEEP]
    assert set(rows[0]) == set(ROW_KEYS)
    # the sweep exercises every reason
    reasons = {SWEEP.index(c): rows[SWEEP.index(c)]["reason"] for c in SWEEP if c not in expected}
    assert "per-block limit of sm_120" in reasons[3] and "147,456 B" in reasons[3]   # 3 x (256+128) x 64 x 2
    assert "compile failed (compile_error)" in reasons[13]
    assert "spills > max_spills=0" in reasons[12]
    assert rows[1]["kept"] and rows[1]["blocks_per_sm"] == 1                         # the 96 KB borderline


@pytest.mark.slow
def test_second_call_reuses_decisions_and_logs_every_drop(swept, caplog):
    prune, kept = swept
    with caplog.at_level(logging.INFO, logger="occmodel.autotune"):
        again = _prune_like_triton(SWEEP, prune, GROUP_M=8)
    assert again == kept
    dropped = [r for r in caplog.records if r.getMessage().startswith("dropped [")]
    assert len(dropped) == len(SWEEP) - len(kept)
    assert caplog.records[-1].getMessage() == f"kept {len(kept)} of {len(SWEEP)} configs for sm_120 (compile)"


@pytest.mark.slow
def test_top_k_keeps_most_resident_warps_then_fewest_spills(swept):
    _, kept = swept
    prune = pruner(spec="sm_120", top_k=3)
    top = _prune_like_triton(SWEEP, prune, GROUP_M=8)
    rows = {r["index"]: r for r in prune.decisions}
    feasible = [i for i, c in enumerate(SWEEP) if c in kept]
    ranked = sorted(feasible, key=lambda i: (-rows[i]["warps_per_sm"], rows[i]["n_spills"], i))
    assert top == [SWEEP[i] for i in sorted(ranked[:3])]
    assert all("not in top_k=3 by occupancy" in rows[i]["reason"] for i in ranked[3:])


def test_model_mode_follows_predict():
    configs = [_cfg(128, 128, 32, 4, 3), _cfg(128, 128, 64, 4, 5), _cfg(64, 64, 32, 4, 2), _cfg(256, 256, 64, 4, 3)]
    prune = pruner(spec="sm_120", use="model", card="matmul", log=None)
    kept = _prune_like_triton(configs, prune, GROUP_M=8)
    for c, row in zip(configs, prune.decisions):
        pred = predict(mm.CARD, SPEC, mm.CARD.resolve({**c.kwargs, "num_warps": c.num_warps,
                                                       "num_stages": c.num_stages}))
        assert row["shared"] == pred.shared and row["warps_per_sm"] == pred.occupancy.warps_per_sm
        assert row["kept"] == (pred.fits and not pred.spills_predicted), row
    assert kept == [configs[0], configs[2]]


def test_a_config_that_cannot_even_be_built_is_dropped_not_raised():
    configs = [triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 32, "NOPE": 1}, num_warps=4),
               triton.Config({"BLOCK": 32}, num_warps=4)]
    messages = []
    prune = pruner(spec="sm_120", kernel=K.failing_kernel, log=messages.append)
    kept = prune(configs, {"X": torch.empty(256)}, grid=(1,), warmup=False)
    assert kept == [configs[2]]
    rows = prune.decisions
    assert "BLOCK must be at most 64" in rows[0]["reason"] and rows[0]["status"] == "compile_error"
    assert "unknown parameter 'NOPE'" in rows[1]["reason"] and rows[1]["status"] == "error"
    assert len(messages) == 2 + 1 and messages[-1].startswith("kept 1 of 3")


def test_heuristics_and_custom_signature():
    tuned = triton.autotune([triton.Config({}, num_warps=w) for w in (1, 2, 4)], key=["N"],
                            prune_configs_by={"early_config_prune": pruner(
                                spec="sm_120", kernel_args_to_signature=lambda a: {
                                    "X": "*fp32", "Y": "*fp32", "Z": "*fp32", "N": "i32"})})(
        triton.heuristics({"BLOCK": lambda a: 64 * a["num_warps"]})(K.add_kernel))
    tuned.nargs = dict(zip(tuned.arg_names, (None, None, None, 1000)))   # the signature ignores the values
    kept = tuned.prune_configs({"grid": (1,), "warmup": False})
    assert len(kept) == 3
    rows = tuned.early_config_prune.decisions
    assert all(r["status"] == "ok" and r["kept"] for r in rows)


def test_nothing_fits_is_a_typed_error_and_bad_arguments_are_rejected():
    prune = pruner(spec="sm_120", kernel=K.failing_kernel, log=None)
    with pytest.raises(ConfigError, match="no config of 1 fits sm_120"):
        prune([triton.Config({"BLOCK": 128})], {"X": torch.empty(128)})
    with pytest.raises(KernelError, match="does not know its kernel"):
        pruner(spec="sm_120")([triton.Config({"BLOCK": 16})], {"X": torch.empty(16)})
    for kwargs, fragment in [({"use": "guess"}, "use='guess' is not allowed"),
                             ({"by": "speed"}, "by='speed' is not allowed"),
                             ({"top_k": 0}, "top_k=0 is not allowed"),
                             ({"use": "model"}, "use='model' needs card="),
                             ({"spec": "sm_12"}, "did you mean 'sm_120'")]:
        with pytest.raises(Exception, match=fragment):
            pruner(**kwargs)


@pytest.mark.requires_gpu
def test_on_a_gpu_triton_benchmarks_only_what_the_pruner_kept():
    major, minor = torch.cuda.get_device_capability()
    configs = [_cfg(64, 64, 32, 4, 3), _cfg(128, 128, 32, 4, 3),
               _cfg(256, 256, 128, 8, 5),        # >= 4 x 128 KB of operand ring: fits no GPU
               _cfg(256, 128, 32, 4, 2)]         # spills on sm_90 and sm_120
    prune = pruner(spec=f"sm_{major}{minor}")
    tuned = triton.autotune(configs, key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune})(mm._kernel)
    a = torch.randn(M, K_DIM, device="cuda", dtype=torch.float16)
    b = torch.randn(K_DIM, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    tuned[grid](a, b, c, M, N, K_DIM, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                GROUP_M=8)
    torch.cuda.synchronize()
    kept = [configs[r["index"]] for r in prune.decisions if r["kept"]]
    assert configs[0] in kept and configs[2] not in kept
    assert tuned.best_config in kept
    if len(kept) > 1:
        assert set(tuned.configs_timings) == set(kept)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-2)
