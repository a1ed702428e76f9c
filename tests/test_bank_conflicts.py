"""Shared-memory bank conflicts of a staged tile's loads (occmodel.bank_conflicts), by hand and on a
real compile: Triton stages a tile with two consumers into an unswizzled buffer, and each ldmatrix phase
then reads 8 rows from the same 4 banks (measured 7.2x the shared wavefronts: reports/GPU_NOTES.md 30)."""

from __future__ import annotations

import pytest

from occmodel.bank_conflicts import load_conflict, phase_wavefronts

NONE = ("#ttg.swizzled_shared", "vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]")
MMA = ("#ttg.nvidia_mma", "versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 2], instrShape = [16, 8]")
A_OP = ("#ttg.dot_op", "opIdx = 0, parent = #mma, kWidth = 2")


def test_a_phase_costs_the_most_distinct_words_one_bank_serves():
    assert phase_wavefronts([0] * 32, 4) == 1                       # one word: a broadcast
    assert phase_wavefronts([4 * t for t in range(32)], 4) == 1     # 32 banks, one word each
    assert phase_wavefronts([128 * t for t in range(32)], 4) == 32  # a column of a 128-byte-row matrix
    assert phase_wavefronts([16 * t for t in range(8)], 16) == 1    # ldmatrix: 8 rows of 16 B side by side
    assert phase_wavefronts([256 * t for t in range(8)], 16) == 8   # ... 256 B apart: the same 4 banks


def test_ldmatrix_from_an_unswizzled_tile_is_8_way_conflicted_and_triton_swizzle_is_free():
    # 16 x 128 fp16: rows of 256 B. Unswizzled, an ldmatrix phase's 8 rows share 4 banks.
    assert load_conflict([16, 128], 2, NONE, A_OP, MMA) == 8.0
    # Triton's own choice for such rows (vec 8, perPhase 1, maxPhase 8): each row's chunk XOR its row.
    swz = ("#ttg.swizzled_shared", "vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]")
    assert load_conflict([16, 128], 2, swz, A_OP, MMA) == 1.0
    # rows of 64 B: two 16-byte groups among 8 rows -> 4-way; perPhase 2, maxPhase 4 fixes it
    assert load_conflict([64, 32], 2, NONE, A_OP, MMA) == 4.0
    half = ("#ttg.swizzled_shared", "vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]")
    assert load_conflict([64, 32], 2, half, A_OP, MMA) == 1.0
    # B stored K-contiguous (order [0, 1]): the same rule along the other dimension
    swz_t = ("#ttg.swizzled_shared", "vec = 8, perPhase = 1, maxPhase = 8, order = [0, 1]")
    b_op = ("#ttg.dot_op", "opIdx = 1, parent = #mma, kWidth = 2")
    assert load_conflict([128, 16], 2, swz_t, b_op, MMA) == 1.0
    assert load_conflict([128, 16], 2, ("#ttg.swizzled_shared", "vec = 1, perPhase = 1, maxPhase = 1, order = [0, 1]"),
                         b_op, MMA) == 8.0


def test_a_k_split_slice_is_addressed_in_its_parent_rows():
    """Triton's prefetch splits K for mma.sync: `memdesc<128x16xf16, ..., 128x32>` reads 16 columns of
    rows 32 wide. Triton's swizzle for 64-byte rows (perPhase 2, maxPhase 4) is conflict-free there;
    measured at the slice's own 16-wide rows it would read 2-way (a false alarm)."""
    swz = ("#ttg.swizzled_shared", "vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]")
    assert load_conflict([128, 16], 2, swz, A_OP, MMA, full=[128, 32]) == 1.0
    assert load_conflict([128, 16], 2, NONE, A_OP, MMA, full=[128, 64]) == 8.0      # 128-byte rows, unswizzled


def test_ldmatrix_only_where_triton_uses_it():
    # a swizzle vector under 16 bytes: Triton loads with plain ld.shared, not modelled
    small = ("#ttg.swizzled_shared", "vec = 4, perPhase = 1, maxPhase = 8, order = [1, 0]")
    assert load_conflict([16, 128], 2, small, A_OP, MMA) == 1.0
    # an 8-bit operand read transposed (ldmatrix.trans is b16 only): not modelled
    b_op8 = ("#ttg.dot_op", "opIdx = 1, parent = #mma, kWidth = 4")
    assert load_conflict([64, 64], 1, NONE, b_op8, MMA) == 1.0
    # the swizzle's XOR wraps at the row end (Triton takes vec x phase modulo the row length)
    wrap = ("#ttg.swizzled_shared", "vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]")
    assert load_conflict([64, 32], 2, wrap, A_OP, MMA) == 2.0


def test_register_layouts_read_the_tile_by_their_lanes():
    # the mma.sync accumulator layout: lanes 4 apart are 8 rows apart -> 8-way on 256-byte rows
    assert load_conflict([16, 128], 2, NONE, MMA) == 8.0
    # a blocked layout reading whole 64-byte rows, 16 B a thread: conflict-free
    blk = ("#ttg.blocked", "sizePerThread = [1, 16], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]")
    assert load_conflict([64, 64], 1, NONE, blk) == 1.0
    # a blocked layout walking down a column of 128-byte rows, 4 B a thread: 32 rows, one bank
    col = ("#ttg.blocked", "sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]")
    assert load_conflict([128, 32], 4, NONE, col) == 32.0
    # two rows a thread (sizePerThread 2 along the slow dimension): every register row is read
    two = ("#ttg.blocked", "sizePerThread = [2, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]")
    assert load_conflict([64, 32], 2, NONE, two) == 2.0


@pytest.mark.parametrize("shared, result", [
    (("#ttg.nvmma_shared", "swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16"), A_OP),
    (NONE, ("#ttg.dot_op", "opIdx = 0, parent = #mma, kWidth = 4")),     # mixed-precision operand: not modelled
    (NONE, ("#ttg.linear", "register = [[0, 1]], lane = [[1, 0]]")),
])
def test_what_is_not_modelled_counts_as_conflict_free(shared, result):
    assert load_conflict([16, 128], 2, shared, result, MMA) == 1.0


def test_a_real_compile_a_pipelined_tile_with_two_consumers(tmp_path):
    """w4a16_splitk_gemv at 3 stages stages x (16 x 128 fp16) unswizzled: it feeds the dot and a row
    sum. The main loop's dot reads A 8-way conflicted (its shared reads count 8x); at 1 stage x goes
    through a swizzled conversion buffer and nothing is conflicted."""
    pytest.importorskip("triton")
    from pathlib import Path
    from occmodel.evidence import gather
    from occmodel.source import load_source
    from occmodel.spec import load_spec
    path = str(Path(__file__).resolve().parent.parent / "examples" / "w4a16_splitk_gemv.py")
    import importlib.util
    spec_ = importlib.util.spec_from_file_location("w4", path)
    mod = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(mod)
    kernel = load_source(f"{path}:_kernel", launcher=path).at_point(mod.POINTS[2])
    cfgs = [kernel.resolve({"BLOCK_N": 16, "BLOCK_K": 128, "SPLIT": 4, "num_warps": 8, "num_stages": s}) for s in (3, 1)]
    staged, plain = (ev.pipeline.main for ev in gather(kernel, load_spec("sm_90"), cfgs, compile=True, progress=False))
    assert [d.a_conflict for d in staged.dots] == [8.0] and [d.b_conflict for d in staged.dots] == [1.0]
    assert [(d.a_conflict, d.b_conflict) for d in plain.dots] == [(1.0, 1.0)]
    assert staged.shared_read_bytes > 5 * plain.shared_read_bytes
    # what `occmodel compile --pipeline` tells the user, with the dot's source line
    assert [c.split(" (")[0] for c in staged.conflicts()] == ["dot A 8-way"] and plain.conflicts() == []
    assert staged.conflicts()[0].endswith("w4a16_splitk_gemv.py:130)")
