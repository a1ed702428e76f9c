"""Occupancy rules: hand-worked golden cases, edges, the real driver, NVIDIA's header."""

import gzip
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from occmodel import load_spec, occupancy, occupancy_grid
from occmodel.errors import ConfigError
from occmodel.occupancy import LIMITERS, limits_arrays
from occmodel.spec import known_specs

DATA = Path(__file__).parent / "data"
SM120, SM90 = load_spec("sm_120"), load_spec("sm_90")


# ------------------------------------------------------------- golden cases
def test_seed_baseline_on_sm120_is_shared_memory_bound():
    # 128 threads = 4 warps; 96 regs * 32 = 3072 per warp (already a multiple of 256)
    # registers: 65536/4 = 16384 per sub-partition // 3072 = 5 warps -> 20 warps // 4 = 5 blocks
    # shared: 61440 + 1024 reserved = 62464 (multiple of 128); 102400 // 62464 = 1 block
    # warps: 48 // 4 = 12 blocks; block cap 24
    occ = occupancy(SM120, threads=128, regs=96, smem=61440)
    assert occ.limits == {"warps": 12, "blocks": 24, "registers": 5, "shared_memory": 1, "barriers": 24}
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (1, 4, "shared_memory")
    assert occ.occupancy == pytest.approx(4 / 48)
    # two blocks need 2 * (s + 1024) <= 102400  ->  s <= 50176, i.e. 61440 - 50176 = 11264 B fewer
    assert occ.headroom.smem_to_gain == 11264
    assert occ.headroom.smem_to_lose is None          # nothing below the 99 KB opt-in loses the last block


def test_register_rounding_per_warp_and_sub_partition():
    # sm_90, 256 threads = 8 warps. 32 regs: 1024/warp, 16384 // 1024 = 16 warps per sub-partition,
    # 64 per SM -> 8 blocks (ties with the warp limit 64 // 8 = 8).
    occ = occupancy(SM90, threads=256, regs=32, smem=0)
    assert occ.blocks_per_sm == 8 and occ.limiters == ("warps", "registers")
    assert occ.limiter == "warps"                      # hardware cap named first on a tie
    # 33 regs: 33*32 = 1056 -> rounded to 1280; 16384 // 1280 = 12 per sub-partition, 48 warps -> 6 blocks
    occ33 = occupancy(SM90, threads=256, regs=33, smem=0)
    assert occ33.blocks_per_sm == 6 and occ33.limiter == "registers"
    assert occ.headroom.regs_to_lose == 1


def test_shared_memory_allocation_unit_and_reserve():
    # sm_90: smem 1 B -> 1 + 1024 = 1025 -> 1152 (9 x 128); 233472 // 1152 = 202 -> capped at 32 blocks
    occ = occupancy(SM90, threads=32, regs=16, smem=1)
    assert occ.smem_per_block == 1152 and occ.limits["shared_memory"] == 202
    # 28160 + 1024 = 29184 = 228 x 128, and 233472 // 29184 = 8 exactly; one byte more -> 7
    assert occupancy(SM90, 64, 32, 28160).limits["shared_memory"] == 8
    assert occupancy(SM90, 64, 32, 28161).limits["shared_memory"] == 7


# -------------------------------------------------------------------- edges
def test_regs_255_fits_and_256_is_rejected():
    # 255 * 32 = 8160 -> 8192 per warp; 16384 // 8192 = 2 warps per sub-partition, 8 per SM -> 2 blocks
    assert occupancy(SM120, threads=128, regs=255, smem=0).blocks_per_sm == 2
    with pytest.raises(ConfigError, match=r"regs=256 .*0\.\.255"):
        occupancy(SM120, threads=128, regs=256, smem=0)


def test_1024_threads_fit_only_with_few_registers():
    # sm_120 has 48 warps per SM: one 32-warp block fits; 64 regs * 1024 threads = 65536 = the block limit
    assert occupancy(SM120, 1024, 64, 0).blocks_per_sm == 1
    big = occupancy(SM120, 1024, 65, 0)                # 65 regs -> 2304 per warp * 32 warps > 65536
    assert big.blocks_per_sm == 0 and big.limiter == "registers" and "per block" in big.reason
    with pytest.raises(ConfigError, match="threads=1025"):
        occupancy(SM120, 1025, 32, 0)


def test_smem_exactly_at_optin_limit_and_one_byte_over():
    limit = SM120.sm.shared_memory_per_block_optin     # 101376 = 99 KB
    assert occupancy(SM120, 128, 32, limit).blocks_per_sm == 1
    over = occupancy(SM120, 128, 32, limit + 1)
    assert over.blocks_per_sm == 0 and over.limiter == "shared_memory"
    assert "101376" in over.reason and not over.fits


def test_carveout_zero_grows_to_the_smallest_size_that_holds_one_block():
    # carveout 0 -> 0 KB preferred; a 10 KB block needs 11264 B -> next carveout 16 KB -> 1 block
    occ = occupancy(SM120, 128, 32, 10240, carveout=0)
    assert occ.smem_per_sm == 16 * 1024 and occ.blocks_per_sm == 1
    # carveout 50% of 100 KB = 50 KB -> rounded up to 64 KB -> 65536 // 11264 = 5 blocks
    assert occupancy(SM120, 128, 32, 10240, carveout=50).blocks_per_sm == 5
    # default: the whole 100 KB -> 102400 // 11264 = 9
    assert occupancy(SM120, 128, 32, 10240).blocks_per_sm == 9


@pytest.mark.parametrize("kwargs, message", [
    (dict(threads=0, regs=32, smem=0), "threads=0"),
    (dict(threads=128, regs=-1, smem=0), "regs=-1"),
    (dict(threads=128, regs=32, smem=-5), "smem=-5"),
    (dict(threads=128, regs=32, smem=0, carveout=101), "carveout=101"),
    (dict(threads=128.5, regs=32, smem=0), "threads must be an integer"),
])
def test_bad_values_name_themselves(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        occupancy(SM120, **kwargs)


# ---------------------------------------------------- agreement: real driver
def _driver_table():
    with gzip.open(DATA / "h200_driver_occupancy.csv.gz", "rt") as f:
        return np.loadtxt(f, delimiter=",", skiprows=1, dtype=np.int64)


def test_agrees_with_the_h200_driver_on_every_recorded_row():
    """tests/data/h200_driver_occupancy.csv.gz: cuOccupancyMaxActiveBlocksPerMultiprocessor on an
    H200 (driver 580.159.04), made by scripts/record_driver_occupancy.py; 261,888 rows over
    32 register counts (24..255), 4 static-shared probes, 22 block sizes, 31 dynamic sizes, 12 carveouts."""
    regs, static, threads, dyn, carve, blocks, status = _driver_table().T
    assert len(regs) > 200_000 and (status == 0).all()
    assert len(set(regs)) >= 28 and len(set(carve)) == 12
    got = limits_arrays(SM90, threads, regs, static + dyn, carve)["resident"]
    mismatch = np.flatnonzero(got != blocks)
    assert mismatch.size == 0, f"{mismatch.size} rows differ, first: {_driver_table()[mismatch[:5]]}"
    # the table is not trivial: it covers 0 blocks and the 32-block cap
    assert (blocks == 0).sum() > 1000 and (blocks == 32).sum() > 1000


# ----------------------------------------- agreement: NVIDIA's own header code
def _header_binary(tmp_path_factory):
    import triton
    include = Path(triton.__file__).parent / "backends" / "nvidia" / "include"
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None or not (include / "cuda_occupancy.h").exists():
        pytest.skip("needs a C++ compiler and cuda_occupancy.h from triton's wheel")
    exe = tmp_path_factory.mktemp("occh") / "occ_header"
    subprocess.run([compiler, "-O1", f"-I{include}", str(Path(__file__).parent / "harness" / "occ_header.cpp"),
                    "-o", str(exe)], check=True)
    return exe


@pytest.fixture(scope="module")
def header_exe(tmp_path_factory):
    return _header_binary(tmp_path_factory)


@pytest.mark.parametrize("name", known_specs())
def test_agrees_with_cuda_occupancy_header_for_every_spec(name, header_exe):
    spec = load_spec(name)
    sm = spec.sm
    rng = np.random.default_rng(len(name))
    n = 20_000
    regs = rng.integers(0, sm.max_registers_per_thread + 1, n)
    threads = rng.choice(np.r_[np.arange(1, 1025), [32, 64, 128, 256, 512, 1024] * 50], n)
    smem = np.where(rng.random(n) < 0.3, rng.choice([0, 1, 127, 128, 48 * 1024, sm.shared_memory_per_block_optin,
                                                     sm.shared_memory_per_block_optin + 1], n),
                    rng.integers(0, sm.shared_memory_per_block_optin + 2048, n))
    carve = rng.choice([-1, 0, 1, 7, 13, 25, 37, 50, 64, 80, 99, 100], n)
    header = (f"{spec.compute_capability[0]} {spec.compute_capability[1]} {sm.max_threads_per_block} "
              f"{sm.max_threads_per_sm} {sm.registers_per_block} {sm.registers_per_sm} {sm.shared_memory_per_block} "
              f"{sm.shared_memory_per_sm} {sm.shared_memory_per_block_optin} {sm.reserved_shared_memory_per_block}\n")
    rows = "".join(f"{r} {t} {s} {c}\n" for r, t, s, c in zip(regs, threads, smem, carve))
    out = subprocess.run([str(header_exe)], input=header + rows, capture_output=True, text=True, check=True).stdout
    ref = np.array([line.split() for line in out.splitlines()], dtype=np.int64)
    assert (ref[:, 5] == 0).all(), "the header rejected an input"
    lim = limits_arrays(spec, threads, regs, smem, carve)
    np.testing.assert_array_equal(lim["resident"], ref[:, 0])
    np.testing.assert_array_equal(lim["warps"], ref[:, 1])
    np.testing.assert_array_equal(np.minimum(lim["registers"], 2**31 - 1), ref[:, 2])
    np.testing.assert_array_equal(lim["shared_memory"], ref[:, 3])


# --------------------------------------------------------------- properties
specs = st.sampled_from(known_specs())
threads_st = st.integers(1, 1024)
regs_st = st.integers(0, 255)
smem_st = st.integers(0, 240 * 1024)
carve_st = st.one_of(st.none(), st.integers(0, 100))


def _fits_inputs(spec, smem):
    return min(smem, load_spec(spec).sm.shared_memory_per_block_optin + 512)


@settings(max_examples=300, deadline=None)
@given(specs, threads_st, regs_st, smem_st, carve_st, st.integers(1, 64))
def test_more_registers_never_raise_resident_blocks(spec, threads, regs, smem, carve, extra):
    smem = _fits_inputs(spec, smem)
    more = min(regs + extra, 255)
    assert occupancy(spec, threads, more, smem, carve, with_headroom=False).blocks_per_sm <= \
        occupancy(spec, threads, regs, smem, carve, with_headroom=False).blocks_per_sm


@settings(max_examples=300, deadline=None)
@given(specs, threads_st, regs_st, smem_st, carve_st, st.integers(1, 64 * 1024))
def test_more_shared_memory_never_raises_resident_blocks(spec, threads, regs, smem, carve, extra):
    smem = _fits_inputs(spec, smem)
    assert occupancy(spec, threads, regs, smem + extra, carve, with_headroom=False).blocks_per_sm <= \
        occupancy(spec, threads, regs, smem, carve, with_headroom=False).blocks_per_sm


@settings(max_examples=150, deadline=None)
@given(specs, threads_st, regs_st, smem_st, carve_st)
def test_headroom_is_exact_at_its_boundaries(spec, threads, regs, smem, carve):
    smem = _fits_inputs(spec, smem)
    occ = occupancy(spec, threads, regs, smem, carve)
    hr, now = occ.headroom, occ.blocks_per_sm
    blocks = lambda r=regs, s=smem: occupancy(spec, threads, r, s, carve, with_headroom=False).blocks_per_sm  # noqa
    if hr.regs_to_lose is not None:
        assert blocks(r=regs + hr.regs_to_lose) < now and blocks(r=regs + hr.regs_to_lose - 1) == now
    if hr.regs_to_gain is not None:
        assert blocks(r=regs - hr.regs_to_gain) > now and blocks(r=regs - hr.regs_to_gain + 1) == now
    if hr.smem_to_lose is not None:
        assert blocks(s=smem + hr.smem_to_lose) < now and blocks(s=smem + hr.smem_to_lose - 1) == now
    if hr.smem_to_gain is not None:
        assert blocks(s=smem - hr.smem_to_gain) > now and blocks(s=smem - hr.smem_to_gain + 1) == now


@settings(max_examples=100, deadline=None)
@given(specs, st.lists(st.tuples(threads_st, regs_st, smem_st, carve_st), min_size=1, max_size=20))
def test_vectorised_grid_equals_scalar(spec, rows):
    t, r, s, c = (np.array([row[i] if row[i] is not None else -1 for row in rows]) for i in range(4))
    grid = occupancy_grid(spec, t, r, s, c)
    for i, (ti, ri, si, ci) in enumerate(rows):
        one = occupancy(spec, ti, ri, si, ci, with_headroom=False)
        assert grid["blocks_per_sm"][i] == one.blocks_per_sm
        assert grid["warps_per_sm"][i] == one.warps_per_sm
        assert LIMITERS[grid["limiter"][i]] == one.limiter


@pytest.mark.parametrize("name", ["sm_120", "sm_90", "sm_80", "sm_86"])
def test_scalar_rules_agree_with_the_vectorised_ones(name):
    """occupancy() runs the rules on Python ints (no numpy import); the grid runs the same
    rules on arrays. Every limit, rounding and carveout must agree on a broad grid."""
    import itertools
    import random

    from occmodel.occupancy import _limits_scalar
    spec = load_spec(name)
    rng = random.Random(7)
    cases = list(itertools.product([32, 96, 128, 256, 640, 1024], [0, 24, 64, 96, 168, 255],
                                   [0, 1, 4096, 48 * 1024, 99 * 1024, 200 * 1024], [None, 0, 37, 100]))
    cases = rng.sample(cases, 200)
    for threads, regs, smem, carve in cases:
        arr = limits_arrays(spec, threads, regs, smem, carve)
        one = _limits_scalar(spec, threads, regs, smem, carve)
        assert {k: int(v) for k, v in arr.items()} == one, (threads, regs, smem, carve)
