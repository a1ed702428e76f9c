"""A static throughput model: rank configs before any GPU run.

A CTA runs its main loop n times; an SM holds c of them at once (c = B, the resident
CTAs/SM, in a full wave; fewer in the tail). Per loop iteration one CTA needs:

    d  DRAM bytes       bytes_moved / (grid x n)          (the card's unavoidable traffic), plus what
                                                           a later pass's re-read misses in L2 (below),
                                                           plus the lines its stores write in part that
                                                           the L2 lets go before their rest arrives
                                                           (partial_store_bytes: DRAM writes whole lines)
    t  L2 -> SM bytes   the tile its loop loads            (TTGIR slot bytes when compiled), plus the
                                                           bytes its plain loads' and stores' L2
                                                           requests carry unasked: each is a whole
                                                           128-byte line (occmodel.sectors: a gather
                                                           across channel planes uses 2 B of each)
    s  shared reads     the dots' operand reads            (TTGIR warp layouts, pipeline.LoopDot;
                                                            0 without a compile: unknown), and a staged
                                                           tile's other loads, each times its bank
                                                           conflicts (occmodel.bank_conflicts: an
                                                           unswizzled buffer's ldmatrix reads 8-way)
    f  tensor FLOPs     the dots' flops                    (TTGIR, counted at the fp16 rate: 1-byte
                                                           operands x 1/2, tf32 x 2; else flops / (grid x n))

and one iteration of the c co-resident CTAs takes about the slowest of (all times in seconds)::

    step(c) = pmax(lat,                         (a) latency: L / k with k = tiles ahead >= 1;
                                                   unpipelined (k = 0) a CTA waits L, then computes:
                                                   (b x h + g + r) x L + ||s / SMEM_sm, f / P_sm,
                                                   max(i x D, C) / clock||_2 (its shared reads, its
                                                   dots, its warps' own instruction stream: D cycles an
                                                   instruction -- in a loop with a dot max(1, W / 4),
                                                   its W warps on the 4 schedulers: DOT_LOOP_ISSUE --,
                                                   or one warp's chain C when longer, see
                                                   term (f); three phases its warps partly overlap,
                                                   combined as a 2-norm: COMPUTE_PHASE_P), b = the round trips
                                                   its register loads take (load_batches: words loaded
                                                   per thread / registers per thread, >= 1), h <= 1 the
                                                   waits per iteration left by ptxas issuing several
                                                   iterations' loads together (hoisting), g the loads
                                                   per iteration whose address waits for an earlier
                                                   load's data (a gather's index, a bag's offsets, an
                                                   index a depth-1 cp.async ring brought: LDGSTS ->
                                                   DEPBAR -> LDS -> LDG; sass_chain.dependent_loads),
                                                   each a latency more,
                                                   r the further rounds of a trip that uses each load
                                                   before it issues the next (the SASS replayed with
                                                   slow loads: sass_chain.load_waits, less b x h + g),
                                                   each weighted by the share of its loaded bytes that
                                                   are new, t over the register loads' bytes
                                                   (far_rounds: a convolution's overlapping taps hit L1)
                  c x d / (e x BW / SMs),      (b) its share of DRAM bandwidth; e <= 1 when a K loop reads
                                                   rows of fewer than 128 contiguous bytes per iteration
                                                   and the rest of them in its next ones (short_rows)
                  c x t / (BW_L2 / SMs),       (c) of L2 bandwidth
                  c x s / SMEM_sm,             (d) of shared-memory bandwidth (128 B/clk/SM)
                  c x f / P_sm,                (e) of the tensor cores (P_sm = P / SMs); at least one
                                                   CTA's chain f / P_sm + w x WGMMA_WAIT_CYCLES / clock
                                                   when its warpgroups wait w times an iteration for
                                                   every wgmma in flight to complete (ptxas's
                                                   serialized wgmma: a wait after each one)
                  max(c x W / 4 x i, C) / clock,
                                               (f) instruction issue: W warps per CTA each issue i
                                                   slots per iteration (the SASS loop's instructions,
                                                   XU ops x 8: special functions and the int <->
                                                   float conversions I2F / F2I / F2F, measured --
                                                   or its integer / logic ALU ops x 2
                                                   when more: the ALU pipe has 16 lanes a sub-partition
                                                   to sm_90, sass.issue_slots --, over u, the source iterations one trip
                                                   of the SASS loop covers: ptxas unrolls; a loop inside
                                                   the main loop counted as many trips as its evaluated
                                                   bounds say: nest_trips); 4 schedulers
                                                   per SM; a scheduler with few warps idles on their
                                                   dependent instructions: the term is at least one
                                                   warp's own trip, C = the cycles it takes alone
                                                   (sass_chain: in-order issue, each instruction waiting
                                                   its operands' latencies), i.e. max(c x W / 4 x i, C);
                                                   without a listing, one instruction per
                                                   D = DEPENDENT_ISSUE_CYCLES at best
                  c x W x x x K / clock,       (g) a cross-warp exchange: a main loop that holds a
                                                   block-wide barrier (BAR.SYNC: a reduction or layout
                                                   conversion across warps) sends its x shared loads and
                                                   stores per warp per iteration (the SASS loop's LDS /
                                                   STS over u) through the SM's one shared-memory pipe,
                                                   K cycles each: 1 (conflict-free), or, when the loop
                                                   reduces a VECTOR across warps (the TTGIR: a tt.reduce
                                                   whose axis spans warps and whose result holds > 1
                                                   element per thread), EXCHANGE_CYCLES_PER_OP (bank
                                                   conflicts of Triton's scratch: measured, see below);
                                                   a byte store (STS.U8: an 8-bit operand transposed for
                                                   the tensor cores) always pays that
                  c x Q / clock)               (h) the L1's lookups: Q = each warp instruction's distinct
                                                   128-byte lines, summed over the iteration's plain global
                                                   loads and stores (occmodel.sectors, from the compiled
                                                   TTGIR's layouts; 0 when not counted); the L1TEX unit
                                                   takes one line a cycle, so a warp whose lanes run down
                                                   8 rows of an image costs 8 cycles a load where lanes
                                                   along a row cost 1-2 (L1_LOOKUPS, below)

pmax is a smooth maximum, (sum of term^p)^(1/p) with p = OVERLAP_P: the SM's pipes and the memory
system overlap, but not perfectly -- two terms of similar size cost more than either alone (a pure
max ties every config at one roof and cannot say which of them is fastest). The bound named is the
largest term.

A pipelined CTA's warps meet at a barrier every iteration, so one CTA's own instruction issue, tensor
work and exchange overlap less than several CTAs' do (another CTA fills one's gaps): step(c) is at
least lockstep = (issue^q + tensor^q + exchange^q)^(1/q) of one CTA alone (terms (f), (e), (g) at
c = 1), q = LOCKSTEP_P when c >= 2 CTAs share the SM, and q = LOCKSTEP_ALONE_P = 1 (a plain sum) when
c = 1: with no other CTA on the SM nothing fills the gaps between its phases. It decides between one
big CTA per SM and two smaller ones when the loop's issue and tensor work are alike (a dequantizing
GEMM); unpipelined, term (a) already sums a CTA's work.

L is the DRAM latency: the calibration's latency curve read at LATENCY_LOAD_BYTES per SM (the
queueing past it is term (b)'s to charge), or its single figure when it has no curve.

A kernel whose loops are passes over the same data (a two-pass row kernel: pass 1 reads x for a
statistic, pass 2 reads x again to write y; pipeline.PipelineReport.passes) re-reads from L2 what
it read in pass 1 -- unless the bytes all resident CTAs stream between the two reads outgrow the
L2: d gains reread_miss(SMs x c x F, L2) x R / n per iteration (F: the bytes of the re-read
arguments one CTA's first pass loads; R: what its later passes load again), which bytes_moved
(each tensor once) leaves out. Each pass's iterations issue its own loop's instructions: terms (f)
and (g) take the mean over the passes of their SASS loops (pass_issue), not the main loop's alone.

Operand strips read again in a later wave (tile order): the compiled kernel's program-id arithmetic,
evaluated for every CTA (occmodel.tile_order), says which strip of each main-loop operand a CTA
streams (a GEMM's BLOCK_M rows of A over K, BLOCK_N columns of B); replaying the launch in waves of
SMs x B CTAs, a strip read again in a later wave after the waves in between streamed S bytes of
distinct strips misses L2 by reread_miss(S, L2) (the re-read ramp above) and d gains those bytes /
(grid x n) (Estimate.revisit_bytes). GROUP_M=1 on an operand larger than the L2 re-reads it every
wave; a grouped order keeps a wave's strips inside it. Strips that start apart but share tiles (a
sliding window's neighbouring query blocks: the same keys a few blocks on) are replayed tile by tile,
a tile being what the strip's pointer covers in one iteration, so a wave streams the union of its
windows, not their sum. A persistent kernel's tile loop is walked too:
each CTA's trip j is a virtual CTA, and the resident CTAs' trips j form one step of the replay. None
of this without a compile, the integer launch arguments (example_args) and a grid the kernel's
program ids can be placed on. An index tensor example_args gives with data (KernelCard.index_data: a MoE
routing's expert ids) is read where a CTA loads one scalar from it, so a gathered expert weight has strips
too; CTAs with no iterations (cta_iterations) take no part in the replay.

Global atomics that CTAs aim at the same lines (a histogram's counters, a split-K tile's partial sums)
queue in the L2, one line request at a time (occmodel.atomics traces each atomic's pointer per CTA
from the compiled TTGIR, as the tile order does): the launch's main kernel takes at least the busiest
line group's requests x ATOMIC_REQUEST_S, combined with the rest by the same smooth maximum (waves_s).

    cta(c)  = n x step(c) + L + w x L          the first tile's latency is never hidden (a pipelined
                                               loop's prologue; unpipelined, step(c) already waits it);
                                               w: the main loop's trip count is read from memory (a
                                               segment's offsets, a sequence's length: bound_waits) --
                                               the loop cannot start before that load returns, once
                                               per trip of the loop around it when that loop holds
                                               the load, else once a CTA
    kernel  = (waves - 1) x cta(B) + cta(ceil(tail / SMs))     waves = ceil(grid / (SMs x B))
    spill_s = threads x (m x n + o) x grid / BW_L2   (compiled only; m: the bytes a thread stores to and
                                               loads from local memory per main-loop iteration, the
                                               SASS loop's STL / LDL over its unroll; o: those outside
                                               it, once a CTA: a spill ptxas placed before or after
                                               the loop is paid once, not every iteration. Without
                                               the SASS, m = n_spills x 4 B x 2, o = 0)
    total   = kernel + secondary kernels + (1 + secondary kernels) x launch

A launch whose CTAs run different iteration counts (``cta_iterations(cfg, point)``: segments of
different lengths; 0 for a CTA that returns at once) is list-scheduled instead: in launch order onto
SMs x B slots, each CTA costing its iterations x step(c) (+ L when pipelined; L alone with no
iterations), c = the working CTAs per SM up to B; per-iteration bytes and flops divide by the
launch's total iterations.

A kernel's secondary kernels (``secondary_kernels(cfg, point)``, e.g. decode's split-KV
combine) are costed by the same step with their own grid, iterations and bytes; a loop
that reads what the main kernel just wrote waits the L2 latency per unpipelined iteration.
A kernel whose declared loop left no loop in the SASS (a tl.static_range, or ptxas unrolled it
fully) is costed from its whole listing spread over the n iterations (unrolled_body): issue
slots / n, and latency waits = its runs of loads (or register-files of loaded words) / n.

The workload facts (grid, loop iterations, bytes moved, flops) come from the kernel's
hooks (a card, or a bare kernel's launcher); rank names no kernel.

Constants come from a :class:`~occmodel.calibrate.Calibration` (measured, or the spec's
datasheet with stated defaults). Every term is in the :class:`Estimate`, so a wrong
ranking can be read off. Pure: no torch, no GPU (compiling is the caller's choice, see
:func:`compiled_resources`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping, NamedTuple, Sequence

from .calibrate import Calibration
from .card import Config, KernelCard, Secondary  # noqa: F401  (Secondary: re-exported for rank users)
from .errors import ConfigError
from .spec import HardwareSpec

BOUNDS = ("latency", "dram", "l2", "shared", "tensor", "issue", "exchange", "l1", "atomics")
# The load (bytes in flight per SM) at which the calibration's latency curve is read: one reference
# latency L for every config. Session 4 read the curve at each config's own DRAM load (never below this
# floor) and capped it by term (b); at saturation that makes L equal to term (b) -- the DRAM queue charged
# twice, every saturated config tied at the smooth maximum of two equal terms. Session 6 (all 55 measured
# H200 cases, development: reports/rank_study_h200.md) read it here instead: median Spearman 0.860 -> 0.874
# with measured constants (0.858/0.853 -> 0.874/0.872 with the other two calibrations), median
# |est/meas - 1| 0.17 -> 0.12; queueing is term (b)'s. 16 KB (~700 ns on an H200, within +-6 % across five
# machine starts) was chosen on matmul in session 4; 8 KB and 32 KB read 0.855 and 0.863.
LATENCY_LOAD_BYTES = 16 * 1024
# Cycles of the SM's shared-memory pipe per warp-level LDS / STS in a main loop that reduces a
# vector across warps (term (g)). Triton's scratch for such a reduction is bank-conflicted to a
# degree the SASS does not show (the addresses are computed from the thread id); a conflict-free
# access takes 1 cycle (what a scalar reduction or a layout conversion is charged). Measured
# on the H200 (session 5, development: moe_gather, reports/h200/rank_study_h200.json): over its 87
# configs with >= 3 barriers in the loop, (measured time per CTA iteration per SM, in cycles) /
# (warps x shared ops per iteration) has median 9.5, quartiles 5.6 / 14.4, range 3.0-18.7 -- the
# term is good to about 2x, enough to tell a 2.5-17x slower config from a roofline one.
# Byte stores (STS.U8 / .S8) pay it in any loop with a barrier (session 11, development: w8a8_gemm's
# [K, N]-weight point, round 12, transposes its int8 weight tile into shared memory with 64-128 STS.U8 per
# warp per iteration; its best configs ran 6.5-10.5 cycles per shared access, 4-9x slower than the 1-cycle
# estimate; with the rate Spearman 0.69 -> 0.86 there, #1 / best 1.57 -> 1.00, median |est/meas - 1|
# 0.83 -> 0.20. Not so: 16-bit stores of dequantized halves (w4a16_gemm's 64-128 STS.U16 per warp per
# iteration: charged 9.5 cycles, its decode point went 0.62 -> 0.37 and its estimates 2.3-2.7x too slow)
# and byte LOADS (w8a16_gemm's mma.sync operand reads, LDS.S8): both ran at about the 1-cycle rate.)
EXCHANGE_CYCLES_PER_OP = 9.5
# A warpgroup that waits for every wgmma in flight to complete (WARPGROUP.DEPBAR.LE gsb0, 0x0) before
# it goes on is exposed to one wgmma's latency beyond its execution: term (e)'s chain. ptxas serializes
# wgmma (a wait after every one) in some configs -- found on wgrad_gemm (round 17: split-K on 8 warps,
# 1.6-1.9x slower than its unserialized 4-warp twin, measured) and present, unmodelled until then, in 13
# development kernels (splitk_gemm's 8-warp configs ran 1.3-1.5x slower than estimated). Session 14,
# fitted on the 75 development cases of the kernels that use wgmma: mean Spearman 0.863 (no chain), 0.868
# (100 cycles), 0.870 (160), 0.866 (250); wgrad_gemm 0.62 / 0.74 / 0.64 -> 0.84 / 0.82 / 0.80.
WGMMA_WAIT_CYCLES = 160
# Work outside the main loop (session 12, development: 156 cases). A loop around the main loop (a
# per-segment loop: its offsets, its cross-warp sum, its store) costs its own issue slots and exchange
# per trip, shared over the main-loop iterations (loop_nest); the kernel body outside every loop (the
# prologue and epilogue, once per CTA) costs its exchange -- a row block's cross-warp sum after its loop:
# jagged_sum at 24-row segments Spearman -0.44 -> 0.53, #1 / best 3.32 -> 1.02; embedding_bag 0.42 /
# -0.02 / 0.25 -> 0.84 / 0.80 / 0.48 -- but not its issue slots: charging them too moved twenty streaming
# kernels down (median 0.866 -> 0.862, best in top 3 73 -> 71): the issue term's constants were read
# from loop bodies alone.
EPILOGUE_ISSUE = False
# A compute loop beside the main loop (PipelineReport.siblings: it loads nothing), run once per CTA, costs
# its trips' issue slots, chain and exchange, shared over the main-loop iterations like the loop around a
# main loop's own work. Found on delta_kkt_solve (round 26): its forward substitution, BLOCK_D - 1 serial
# steps after a 1-4-step K loop, was charged nothing; every config ran 1.8-16x slower than estimated.
SIBLING_LOOPS = True
# The L1's lookups (term (h), session 39). Round 35's median_filter2d ran every 8-row tile at 920-960 us at its
# 3 x 3 point whatever BLOCK_X, ROWS and warps (2- and 4-row tiles 406-590 us), 1.7-1.9 ms at both 5 x 5 points:
# its clamped column taps leave Triton no contiguity to read, so the loads' layout runs a warp's lanes down the
# columns first (threadsPerWarp [8, 4], order [0, 1]) and each byte load of an 8-row tile touches 8 lines. One
# line a cycle per SM gives 866 us for its 8 x 128 tile on 8 warps (2,330 lookups a CTA, 97,200 CTAs, 132 SMs at
# the calibration's 1.98 GHz), measured 923-944 us; 1.74 and 1.59 ms at the 5 x 5 points (H100 80GB HBM3, triton
# 3.6.0, torch 2.11.0+cu130: reports/GPU_NOTES.md 46). The L1TEX unit splits a warp's request into wavefronts, one a cycle, when its lines do
# not fit one (NVIDIA's description of the L1TEX pipeline, forums.developer.nvidia.com/t/165293).
L1_LOOKUPS = True
# Cycles between one warp's instructions at best, on average (term (f)): dependent arithmetic waits ~4
# cycles on sm_80..sm_120, and the SASS of a loop has some independent instructions. A scheduler needs
# this many warps to issue every cycle. Session 6, on all 67 measured H200 cases (development;
# reports/rank_study_h200.md): 1 (no such limit) median / mean Spearman 0.859 / 0.810, best in the top 3
# 28 of 67, #1 within 3 % 29; 2: 0.862 / 0.820, 29, 29; 3: 0.863 / 0.831, 32, 32; 4: 0.863 / 0.825, 30, 34
# (flash attention 0.79 -> 0.62: its HMMA loop is not issue-bound); 6: 0.840. group_norm's fp32 point,
# one CTA per SM, ran 2.2x slower on 4 warps than on 16 with the same bytes per iteration.
# The same D sets an unpipelined iteration's critical path (term (a)): a CTA waits its loads, then its
# warps run their instructions before the next loads issue (session 6, after round 6, on the 79 cases of
# rounds 1-6: median / mean Spearman 0.852 / 0.774 -> 0.872 / 0.806, best in the top 3 34 -> 37, #1
# within 3 % 36 -> 41; bias_gelu 0.16 -> 0.47, swiglu 0.63 -> 0.77, causal_conv1d 0.68 -> 0.79; D = 2 or 4
# with it: 0.869 / 0.852).
# Session 15 (development: rounds 1-18, 216 cases): with a listing, term (f)'s floor is one warp's own
# chain (sass_chain.trip_cycles) instead of i x D -- a 1-warp CTA of fused_recurrent_gla (1,100 instructions
# a step, 128 independent state updates a thread) ran a step in ~2,100 cycles, its chain 1,830, i x D 4,600
# -- median / mean Spearman 0.856 / 0.780 -> 0.857 / 0.783, best in the top 3 92 -> 99, #1 within 3 %
# 102 -> 105 (fused_recurrent_gla 0.10 / 0.33 / 0.47 -> 0.27 / 0.42 / 0.58, flash_attention's first point
# 0.71 -> 0.80). D stays in term (a): the chain there instead (an unpipelined CTA's compute phase) read
# bias_gelu 0.59 -> 0.10 and swiglu 0.77 -> 0.58 -- other CTAs' warps share the schedulers while one
# computes, which one warp's chain leaves out; there the chain is a floor only.
DEPENDENT_ISSUE_CYCLES = 3.0
# Term (a)'s dependent loads g (session 15, development: rounds 1-18, 216 cases, with the chain above): a
# load whose address comes from an earlier load's data waits a latency of its own. Median / mean Spearman
# 0.857 / 0.783 -> 0.857 / 0.782, best in the top 3 99 -> 102, #1 within 3 % 105 -> 109, median error
# 0.183 -> 0.178; only gathers move (embedding_bag's third point 0.49 -> 0.67, csr_spmm #1 within 3 % at
# two more points). Counting every full load wait the SASS replay finds instead (a load used before the
# next one issues, too) read 0.848 / 0.778, 103, 111 with b x h as a floor -- depthwise_conv2d's
# overlapping taps, L1 hits, charged a DRAM latency each (0.78 -> 0.21) -- and 0.834 in place of b x h.
# Session 16 (same 216 cases): (1) sass.unroll reads a trip's unroll from the bytes a thread loads (replicated
# elements included) -- selective_scan's trip was read as 6 chunks where it holds one; (2) term (a)'s further
# rounds r (far_rounds: the replay's full load waits beyond b x h + g, each weighted by the share of the
# iteration's loaded bytes that are new; none when the loop streams its data by async copies and its register
# loads are a block table's entries). Median / mean Spearman 0.857 / 0.782 -> 0.863 / 0.792, best in the top 3
# 102 -> 106, #1 within 3 % 109 -> 111, median error 0.178 -> 0.172 (selective_scan 0.21 / 0.22 / 0.19 -> 0.64
# / 0.62 / 0.61, gemv 0.80 / 0.63 / 0.70 -> 0.98 / 0.79 / 0.98, jagged_sum 0.53 / 0.27 / 0.12 -> 0.68 / 0.72 /
# 0.46, depthwise_conv2d 0.86 / 0.78 / 0.57 -> 0.91 / 0.84 / 0.75). Worse: deform_attn 0.81 / 0.34 / 0.58 ->
# 0.62 / 0.01 / 0.26 (the unroll: its BLOCK_P=2 trips were read as 2 iterations, which hid term (g)
# over-charging them), paged_decode 0.91 / 0.96 / 0.94 -> 0.85 / 0.92 / 0.86 (its unpipelined trips replay 2-8
# rounds of page-then-rows loads; they run 10-50 % slower than the pipelined ones, not 2-3x), rmsnorm_bwd 0.75 /
# 0.85 -> 0.59 / 0.73, embedding_bag's third point 0.67 -> 0.54. Unroll alone: 0.857 / 103 / 108; rounds alone
# (the old unroll): 0.857 / 103 / 110; rounds unweighted: the convolutions fall (depthwise_conv2d 0.86 / 0.78 ->
# 0.49 / 0.32), and charging the further rounds the L2 latency instead falls less but helps less
# (selective_scan 0.60); with rounds in async-copy loops too: paged_decode 0.71 / 0.87 / 0.74.
# Term (a)'s compute phase of an unpipelined CTA: its shared-memory operand reads, its dots' tensor chain and
# its warps' dependent instruction stream, combined as (sum of x^p)^(1/p). Session 23 (development: rounds
# 1-21, 252 cases, measured 1, triton 3.6.0): p = 1 (the plain sum it was) read the attention-like kernels'
# num_stages = 1 configs 1.1-1.8x slow against their pipelined twins -- within a case, the measured / estimated
# ratio of the stages-1 configs sat 0.1-0.6 (log) below the pipelined ones' in all of flash_attention,
# attn_bwd_dkdv, varlen_attn_fwd, block_sparse_attn, paged_decode, linear_attn_fwd, ssd_chunk_scan,
# csr_spmm: an unpipelined CTA's warps do not wait for each other's ldmatrix, mma and softmax streams to end
# before starting their own (ptxas interleaves them; the warps drift apart between barriers). Median / mean
# Spearman 0.8581 / 0.7845 -> 0.8671 / 0.7891, best in top 3 120 -> 120, #1 within 3 % 130 -> 130, median
# |est/meas - 1| 0.1808 -> 0.1859; 32 cases up by more than 0.005 (mla_decode's second point 0.68 -> 0.81,
# sliding_window_attn 0.70 / 0.74 / 0.71 -> 0.76 / 0.79 / 0.79, varlen_attn_fwd 0.82 / 0.84 -> 0.89 / 0.91,
# flash_attention 0.79 / 0.81 -> 0.84 / 0.87, attn_bwd_dkdv 0.88 / 0.89 -> 0.94 / 0.94), 10 down, none by more
# than 0.02. p = 1.5: 0.8648 / 120 / 129 / 0.1829; p = 3: 0.8671 / 120 / 130 / 0.1874 (2 kept, as
# LOCKSTEP_P's 2 for the same kind of partial overlap). The pipelined configs of the same kernels stay
# estimated 1.1-1.4x fast (not found yet).
COMPUTE_PHASE_P = 2.0
# DOT_LOOP_ISSUE -- term (a)'s instruction stream when the loop holds a tl.dot: an unpipelined CTA's warps issue
# their i slots at one a cycle on the 4 schedulers, i x max(1, W / 4) cycles (at least the chain C), not one per
# D = 3 cycles. A dot loop's listing is mostly independent work (the MMAs and ldmatrix of many fragments, the
# softmax's vector ops on them); a streaming loop's is each loaded value's dependent arithmetic, where D stays
# (charging it i x max(1, W / 4) read row_sort, dropout_add_layernorm, jsd_loss, moe_align and logits_penalty
# worse). Found on int8kv_decode_attn (round 23, held out; reports/h200/rank_study_round23_h200.json): at its
# 256-sequence point the num_stages = 2 configs (a one-slot ring, so the next tile's copy issues after the
# compute: unpipelined) ran as fast as their 3- and 4-stage twins (219 vs 224 us at BLOCK_N 128 / 4 warps) while
# estimated 1.6x slower (382 vs 231 us) -- 3,440 slots x 3 cycles a CTA-iteration where the pipelined twin
# is issue-bound at 2 CTAs x 4 warps / 4 x 3,440 cycles; the measured best ranked 36th of 54. Session 26,
# development (rounds 1-23 less the two legacy session-2 sweeps: 249 cases, measured 1, triton 3.6.0): median / mean
# Spearman 0.8472 / 0.7723 -> 0.8558 / 0.7776, best in top 3 118 -> 117, #1 within 3 % 125 -> 124, median
# |est/meas - 1| 0.196 -> 0.186; 27 cases up (int8kv_decode_attn 0.74 -> 0.95 at that point, ssd_chunk_scan
# 0.77-0.82 -> 0.85-0.90, sliding_window_attn +0.06, block_sparse_attn +0.03, w8a16_gemm +0.03-0.09), 4 down
# (paged_decode -0.01 / -0.02; knn_topk's first point loses its best from the top 3, its second gains its #1).
# Alternatives on the same cases: every loop with shared-memory reads (staged non-dot tiles too) 0.8567 / 115 /
# 123 (row_sort, dropout_add_layernorm, jsd_loss, moe_align, logits_penalty down); every loop whose chain is
# shorter than its slots 0.8485 / 117 / 124 (bias_gelu, swiglu, causal_conv1d down; the attention kernels'
# chains are longer than their slots, so they kept D).
# The smooth maximum's exponent (step(c) = (sum of term^p)^(1/p)). Chosen after rounds 1 and 2 on all
# 37 (kernel, point) cases measured so far (reports/rank_study_h200.md: median Spearman 0.835 with a
# pure max, 0.871-0.873 with p = 3-5, 0.862 at 6; the estimate's #1 within 3 % of the best in 8 of 37
# with max, 17-18 with p = 3-5): a broad optimum, not a fit to any one kernel. Judged on round 3.
OVERLAP_P = 4.0
# The lockstep floor's exponent and terms (module doc). Session 10, on the 120 cases of rounds 1-10
# (development, reports/rank_study_h200.md): without the floor median Spearman 0.870, best in the top 3
# 53 of 120, #1 within 3 % 65; q = 2 over issue, tensor, exchange: 0.870 / 54 / 66 (w8a16_gemm at M=128:
# #1/best 1.38 -> 1.03, the 1-CTA 64x128 tile no longer picked over 2 CTAs of 64x64). With shared reads
# too: 55 / 65 (fp8_scaled_mm's 1-CTA 128x256 best then loses); with the latency term: 50 / 64; q = 1
# (a plain sum): 0.819 / 44 / 57; q = 3: 54 / 65. A small effect, kept for the dequantizing GEMMs.
LOCKSTEP_P = 2.0
# The floor's exponent when the CTA is alone on its SM (c = 1: B = 1, or a tail wave of one CTA per SM).
# Session 18, on the 216 development cases of rounds 1-18 (measured 1): q = 2 at every c 0.863 / 106 / 111
# (median Spearman / best in top 3 / #1 within 3 %), median |est/meas - 1| 0.172; q = 1 alone 0.869 / 108
# / 117, 0.167; q = 1.5 alone 0.863 / 107 / 113. Gains: the dequantizing and block-scaled GEMMs
# (w8a16_gemm, fp8_blockscale_gemm), conv2d_nhwc (its 1-CTA 256 x 128 tiles were picked and run 10-70 %
# slower), paged_prefill_attn, linear_attn_fwd; loss: splitk_gemm (0.92 / 0.89 / 0.85 -> 0.84 / 0.83 /
# 0.72: its 1-CTA 4-stage tile, the best there, is now estimated about right -- 246 vs 238 us at M = 256 --
# while its 2-CTA 3-stage tiles stay ~30 % fast, 199 vs 281 us; why is not found).
LOCKSTEP_ALONE_P = 1.0
LOCKSTEP_TERMS = ("issue", "tensor", "exchange")
# DRAM bandwidth over short rows (short_rows): a K loop that reads r < DRAM_RUN_BYTES contiguous bytes of
# each row per iteration, and the rest of those rows in its next iterations, streams at r / DRAM_RUN_BYTES
# of the bandwidth. Found on w8a8_gemm (round 12, development since): at its decode point (M = 64, an
# [N, K] int8 weight of 470 MB streamed once) every BLOCK_K = 64 config ran 1.4-1.7x slower than its
# BLOCK_K = 128 twin (120 vs 199 us for 64 x 64 tiles: 3.9 vs 2.4 TB/s), which the model tied; with the
# term Spearman 0.34 -> 0.83 there, #1 / best 1.66 -> 1.01 (0.68 -> 0.85 at its prefill point; timings:
# reports/h200/rank_study_round12_h200.json, H200, triton 3.6.0, GPU_NOTES section 17). An
# exponent on the ratio (0.5, 0.75) read 0.75-0.79 at the prefill point; the plain ratio is kept. A
# [K, N] weight's 64-byte rows (w8a16_gemm's decode point) cost nothing: the loop steps to other rows
# and the neighbouring CTAs read the rest of them at the same time. The loads combine by the DRAM bytes
# each argument brings (the tile order's distinct strips): weighted by bytes per iteration instead, the
# matmul card at M = 128 (a 2 MB activation walked in 64-byte rows beside a 128 MB weight) went 0.93 ->
# 0.89 and gated_mlp's first point 0.82 -> 0.76; weighted so, neither moves. On the 144 development cases
# of rounds 1-12 (with the byte-store and atomics terms): median Spearman 0.865 -> 0.869, best in the top
# 3 65 -> 66, #1 within 3 % 73 -> 75.
DRAM_RUN_BYTES = 128
# Seconds the L2 takes per line request of global atomics that many CTAs aim at the same few lines
# (occmodel.atomics: a histogram's bins, a split-K tile's partial sums); the launch takes at least the
# busiest line group's requests x this. Measured on the H200 (session 11, development: expert_histogram,
# round 12, all CTAs adding into E = 256 / 128 int32 counters): over its 28 STEPS=1 configs where the
# atomics dominate (0.18-2.8 ms against a 34 us DRAM roof) 1.34-1.57 ns per request, median 1.42 --
# whether a CTA's 2, 4 or 8 warps split its counters into 32, 16 or 8 requests (timings:
# reports/h200/rank_study_round12_h200.json, H200, triton 3.6.0, torch 2.11.0+cu130; GPU_NOTES section 17,
# call 2). A datasheet gives no figure; other GPUs are assumed the same (the estimate says so).
ATOMIC_REQUEST_S = 1.42e-9


# A later pass's re-read hits L2 while the bytes streamed between the two reads (all resident CTAs'
# first passes) stay under REREAD_HIT_BELOW x the L2 size and misses entirely past REREAD_MISS_ABOVE x
# the L2 (linear between: other CTAs' output stores and a set-associative, partitioned L2 evict
# before the capacity is reached). Found on the H200's two-pass development kernels (session 6:
# softmax_online at N=32768 fp16 ran 1.30-1.34x slower with >= 8 rows of 64 KB resident per SM than
# with 2; reports/rank_study_h200.md); fitted on softmax_online, rmsnorm and layernorm_rows (10
# cases): a broad optimum (0.1-0.4 x 0.8-1.6 all read median Spearman 0.80-0.85), chosen in its middle.
REREAD_HIT_BELOW = 0.2
REREAD_MISS_ABOVE = 1.3


def reread_miss(working_set: Any, l2_bytes: float) -> Any:
    """The share of a later pass's re-read that misses L2 and goes to DRAM again: 0 while the bytes
    every resident CTA streams between its first read and its re-read (`working_set`) stay under
    REREAD_HIT_BELOW x the L2, 1 past REREAD_MISS_ABOVE x the L2, linear between; 0 when the L2 size
    is unknown (0). Elementwise on an array of working sets (the tile-order replay's revisits)."""
    import numpy as np
    lo, hi = REREAD_HIT_BELOW * l2_bytes, REREAD_MISS_ABOVE * l2_bytes
    ws = np.asarray(working_set, dtype=float)
    share = np.clip((ws - lo) / (hi - lo), 0.0, 1.0) if l2_bytes > 0 else np.zeros(ws.shape)
    return share if share.ndim else float(share)


def pmax(terms: Mapping[str, float]) -> float:
    """The smooth maximum of the step terms: (sum of t^p)^(1/p), p = OVERLAP_P; inf if any is inf."""
    if any(math.isinf(v) for v in terms.values()):
        return math.inf
    return _norm(list(terms.values()), OVERLAP_P)


@dataclass(frozen=True)
class Resources:
    """What one CTA of a config holds and streams (compiled or modelled)."""

    blocks_per_sm: int
    threads: int
    tile_bytes: int          # bytes the main loop loads per iteration per CTA
    ahead: int               # tiles the pipeline keeps in flight beyond the one consumed (0: none)
    n_spills: int            # 0 unless compiled
    source: str              # "model" | "compiled"
    shared_reads: int = 0    # dot-operand bytes read from shared memory per iteration (0: unknown)
    dot_flops: float = 0     # tensor FLOPs per iteration at the fp16 rate (0: use flops / (grid x n))
    unroll: int = 1          # source iterations per SASS loop trip (ptxas hoists their loads together)
    issue_per_iter: float = 0.0   # issue slots per warp per iteration (0: unknown, term (f) off)
    loop_barriers: int = 0   # block-wide barriers per trip of the SASS main loop
    exchange_cycles: float = 0.0  # (g): shared-pipe cycles per warp per iteration of a cross-warp exchange
    batches: float = 1.0     # round trips one unpipelined iteration's register loads take (see load_batches)
    passes: int = 1          # sibling loops that load (a two-pass row kernel: 2)
    reread_first: int = 0    # bytes per iteration the first pass loads of what a later pass loads again
    reread_again: int = 0    # bytes per iteration the later passes load again (0: no re-read)
    hoist: float = 1.0       # an unpipelined loop's latency waits per iteration (<= 1: ptxas issues several
                             # iterations' loads before the first use; see hoisting)
    strips: Any = None       # tile_order.Strips: which operand strip each CTA streams (None: not traced)
    dram_eff: float = 1.0    # share of DRAM bandwidth the main loop's row lengths reach (short_rows)
    atomic_requests: float = 0.0  # line requests the busiest line of the launch's global atomics receives
    mma_waits: float = 0.0   # waits for every wgmma in flight to complete, per iteration (_sass_loop)
    chain_cycles: float = 0.0     # cycles one warp alone takes per iteration (sass_chain; 0: unknown)
    gathers: float = 0.0     # loads per unpipelined iteration whose address waits for an earlier load's data
    rounds: float = 0.0      # r: further latency rounds per unpipelined iteration, weighted (far_rounds)
    bound_waits: float = 0.0  # w: latencies a CTA waits for its main loop's loaded bounds (bound_waits())
    spill_loop: float | None = None  # m: local-memory bytes a thread moves per main-loop iteration (None: unknown,
                                     # n_spills x 4 B x 2 then)
    spill_once: float = 0.0  # o: local-memory bytes a thread moves outside the main loop, once a CTA
    waste_bytes: float = 0.0  # the L2 requests' bytes per iteration the main loop's plain loads and stores
                              # do not ask for (whole 128-byte lines; occmodel.sectors; 0: none or not
                              # counted): term (c) adds them to tile_bytes
    store_lines: Any = None   # sectors.StoreLines: how whole the lines the main loop's stores write are (None:
                              # not counted)
    l1_lookups: float = 0.0   # Q: the L1's line lookups per CTA per iteration, each warp instruction's distinct
                              # 128-byte lines over the plain global loads and stores (occmodel.sectors), per
                              # declared iteration (declared_share; 0: not counted); term (h)
    atomic_targets: tuple = ()  # per argument the global atomics update: (bytes it spans, the main loop's line
                                # requests to it per CTA per iteration, None: not counted) (atomic_targets())


@dataclass(frozen=True)
class Estimate:
    config: Config
    point: dict[str, Any]
    fits: bool
    source: str
    blocks_per_sm: int
    grid: int
    slots: int
    waves: int
    tail_ctas: int
    iterations: int
    tiles_in_flight: int            # k: tiles ahead (0 = unpipelined)
    dram_per_iter: float            # d, bytes
    tile_per_iter: float            # t, bytes
    shared_per_iter: float          # s, bytes (0: unknown)
    flops_per_iter: float           # f
    latency_step_s: float           # (a)
    dram_step_s: float              # (b) at c = B
    l2_step_s: float                # (c)
    shared_step_s: float            # (d)
    tensor_step_s: float            # (e)
    issue_step_s: float             # (f)
    in_flight_bytes: float          # q: bytes in flight per SM at c = B
    latency_s: float                # L
    step_s: float                   # step(B)
    roofline_mem_s: float           # bytes_moved / BW (for reference)
    roofline_comp_s: float          # flops / P
    waves_s: float                  # the main kernel: (waves - 1) x cta(B) + cta(tail)
    tail_s: float                   # the tail wave's share of waves_s
    secondary_s: float              # the secondary kernels
    spill_s: float
    launch_s: float
    total_s: float                  # the estimate (inf when the config does not fit)
    bound: str                      # the largest term of step(B): one of BOUNDS, or "does not fit"
    loop_barriers: int = 0          # block-wide barriers per main-loop trip (a cross-warp exchange)
    exchange_step_s: float = 0.0    # (g) the exchange's shared-memory round trips (0 without a barrier)
    passes: int = 1                 # loops over the same data (a two-pass kernel: 2)
    reread_miss: float | None = None  # share of a later pass's re-read charged to DRAM (None: no re-read)
    hoist: float = 1.0              # latency waits per unpipelined iteration (< 1: ptxas hoists loads)
    revisit_bytes: float = 0.0      # DRAM bytes of operand strips read again after they left L2 (tile order)
    dram_eff: float = 1.0           # share of DRAM bandwidth the main loop's row lengths reach (short_rows)
    atomic_s: float = 0.0           # the busiest atomic line's requests x ATOMIC_REQUEST_S (a floor on the launch)
    issue_slots: float = 0.0        # i: issue slots per warp per iteration (term (f); 0: no SASS)
    chain_cycles: float = 0.0       # C: cycles one warp alone takes per iteration (term (f)'s floor; 0: no SASS)
    dependent_loads: float = 0.0    # g: loads per unpipelined iteration that wait for an earlier load (term (a))
    load_rounds: float = 0.0        # r: further latency rounds per unpipelined iteration (term (a), far_rounds)
    bound_waits: float = 0.0        # w: latencies per CTA before its main loop starts (loaded trip count)
    l2_waste_bytes: float = 0.0     # the L2 requests' bytes per iteration not asked for (whole lines of partly used
                                    # sectors; occmodel.sectors; 0: none or not counted); t = tile_bytes + this
    tile_bytes: float = 0.0         # the bytes the main loop's tile asks for per iteration
    partial_store_bytes: float = 0.0  # DRAM bytes per iteration of lines stored in part and evicted before
                                      # the rest of them is written (partial_store_bytes); in d
    l1_step_s: float = 0.0          # (h) the L1's line lookups (0: not counted)
    l1_lookups: float = 0.0         # Q: line lookups per CTA per iteration (term (h))
    atomic_fill_bytes: float = 0.0  # DRAM bytes of the launch that global atomics read back and write again from
                                    # a target the L2 let go (atomic_fill_bytes); in d, over the CTA-iterations

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------- resources
WORKLOAD_HOOKS = ("grid", "loop_iterations", "bytes_moved", "flops")


def workload(kernel: KernelCard, cfg: Config, point: Mapping[str, Any]) -> tuple[int, int, float, float]:
    """(grid, loop iterations per CTA, bytes moved, flops) of one launch; ConfigError naming
    the hooks the kernel (its card, or a bare kernel's launcher) does not provide."""
    values = {h: getattr(kernel, h)(cfg, point) for h in WORKLOAD_HOOKS}
    missing = [h for h, v in values.items() if v is None]
    if missing:
        raise ConfigError(f"rank needs {', '.join(missing)} of {kernel.name} at {dict(point)}: give the launcher "
                          f"{' and '.join(f'{h}(cfg, point)' if h in ('grid', 'loop_iterations') else f'{h}(point)' for h in missing)}")
    return (max(1, int(values["grid"])), max(1, int(values["loop_iterations"])), float(values["bytes_moved"]),
            float(values["flops"]))


def loop_tile_bytes(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], pipeline: Any = None) -> int:
    """Bytes one CTA loads per main-loop iteration: the compiled main loop's pipelined slots,
    else the kernel's own `loop_tile_bytes`, else bytes_moved / (grid x iterations)."""
    main = pipeline.main if pipeline is not None else None
    piped = sum(ld.slot_bytes for ld in (main.loads if main else ()) if ld.pipelined)
    if piped:
        return piped
    own = kernel.loop_tile_bytes(cfg)
    if own is not None:
        return int(own)
    grid, n, nbytes, _ = workload(kernel, cfg, point)
    return max(1, int(nbytes) // (grid * n))


def resources(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], ev: Any, alu_cycles: float = 1.0) -> Resources:
    """Resources from a config's Evidence (occmodel.evidence): resident CTAs; compiled: n_spills
    and, from the TTGIR, the main loop's ring depth, slot bytes, dot operand reads and dot flops.
    From a model: tiles ahead num_stages - 1 (0 unpipelined), operand reads unknown (0).
    alu_cycles: a warp's cycles per ALU-pipe op on the target (sass.issue_slots)."""
    threads = 32 * int(cfg["num_warps"])
    blocks = ev.blocks_per_sm or 0
    ahead, reads, flops = max(int(cfg["num_stages"]) - 1, 0), 0, 0
    rep = getattr(ev, "pipeline", None)
    if rep is not None:
        ahead = rep.ahead
        if rep.main is not None:
            reads, flops = rep.main.shared_read_bytes, rep.main.dot_fp16_flops
    source = "compiled" if ev.source == "compiled" else "model"
    its = kernel.cta_iterations(cfg, point)
    nest = loop_nest(kernel, cfg, point, ev, rep, its)
    u, issue, barriers, exchange, waits, chain, gathers, load_waits, spill, spill_once = _sass_loop(
        getattr(ev, "result", None), threads, rep, *nest, alu_cycles=alu_cycles)
    plain = sum(ld.slot_bytes for ld in rep.main.loads if not ld.pipelined) if rep is not None and rep.main else 0
    passes = rep.passes() if rep is not None else None
    flat = unrolled_body(getattr(ev, "result", None), kernel.loop_iterations(cfg, point) or 1, ev.regs, alu_cycles) \
        if not issue else None
    tile = loop_tile_bytes(kernel, cfg, point, rep)
    if flat is not None:
        issue, hoist, batches, chain, gathers, rounds = flat[0], flat[1], 1.0, flat[2], 0.0, 0.0
    else:
        batches = load_batches(plain, threads, ev.regs)
        hoist = hoisting(getattr(ev, "result", None), passes) if passes and not ahead else 1.0
        streamed = 0 if rep is not None and rep.main is not None and any(ld.pipelined for ld in rep.main.loads) else tile
        rounds = far_rounds(load_waits, batches * hoist + gathers, streamed, plain)
    strips = operand_strips(kernel, cfg, point, ev, rep, its)
    waste, lookups = loop_traffic(kernel, cfg, point, ev, rep)
    if lookups:
        lookups *= declared_share(kernel, cfg, point, ev, rep, its)
    return Resources(blocks, threads, tile, ahead, int(ev.spills or 0), source,
                     reads, flops, u, issue, barriers, exchange, batches,
                     max(1, passes.count) if passes else 1, passes.first_bytes if passes else 0,
                     passes.again_bytes if passes else 0, hoist, strips,
                     short_rows(rep.main.loads if rep is not None and rep.main else (),
                                strips.distinct_bytes() if strips is not None else None),
                     atomic_requests(kernel, cfg, point, ev), waits, chain, 0.0 if ahead else gathers,
                     0.0 if ahead else rounds, bound_waits=bound_waits(getattr(ev, "result", None), rep, nest[1]),
                     spill_loop=spill, spill_once=spill_once, waste_bytes=waste, l1_lookups=lookups,
                     store_lines=stored_lines(kernel, cfg, point, ev, rep),
                     atomic_targets=atomic_targets(kernel, cfg, point, ev, rep))


# A main loop whose trip count is read from memory (bound_waits). Session 19, development (rounds 1-18, 216
# cases, measured 1): found on jagged_sum at 24-row segments, whose estimate's #1 (16 x 64 rows, SEGS = 2 on
# 8 warps, 8 CTAs/SM) ran 3.2x slower than the best: each segment waits for its offsets before its first row
# load, and the model charged those waits nowhere, so halving the CTAs per SM looked free. Median / mean
# Spearman 0.8686 / 0.7995 -> 0.8687 / 0.8011, best in top 3 110 -> 110, #1 within 3 % 117 -> 118, median
# |est/meas - 1| 0.164 -> 0.163; jagged_sum #1 / best 3.19 / 1.26 / 1.16 -> 1.02 / 1.04 / 1.27, varlen_attn_fwd's
# second point Spearman 0.80 -> 0.85, csr_spmm's first 0.81 -> 0.79. Rejected beside it: every load wait in the
# code outside the loops (0.858 / 108 / 108: an unrolled loop's remainder, peeled out of the loop, counted as a
# prologue's -- rmsnorm 0.81 -> 0.55); the same plus reading hoisted waits over unrolled copies of the row loop
# (0.8687 / 110 / 117).
def bound_waits(result: Any, rep: Any, share: tuple[float | None, float | None]) -> float:
    """w: latencies a CTA waits before its main loop can start because the loop's trip count is read from
    memory (tile_order.loaded_bounds: a segment's offsets, a sequence's length): one per trip of the loop
    around the main loop when that loop holds the load (loop_nest's share over the iterations: its trips a
    CTA), else one a CTA. 0 when the bounds are not loaded."""
    from .tile_order import loaded_bounds
    where = loaded_bounds(getattr(result, "ttgir", None) or "", rep) if rep is not None else None
    if where is None:
        return 0.0
    around, once = share
    if where >= 0 and where == rep.main.parent and around and once:
        return around / once
    return 1.0


def short_rows(loads: Sequence[Any], dram_bytes: Mapping[str, float] | None = None) -> float:
    """The share of DRAM bandwidth a main loop's loads reach: a load whose tile rows are r contiguous bytes
    in global memory (pipeline.LoopLoad.run_bytes) that the loop walks on along next iteration
    (walks_rows) streams at min(1, r / DRAM_RUN_BYTES) of the bandwidth; the loads combine by the DRAM
    bytes each brings (a harmonic mean): `dram_bytes` per kernel argument (the tile order's distinct
    strips: a decode GEMM's activation rows are a few MB read from L2 again and again, its weight the
    whole stream) when the tile order traced every one of them, else each load's bytes per iteration.
    1 when no row length is known."""
    loads = [ld for ld in loads if ld.run_bytes > 0 and ld.slot_bytes > 0]
    if dram_bytes and all(ld.root in dram_bytes for ld in loads):    # else bytes per iteration for all: one unit
        share = {r: sum(1 for ld in loads if ld.root == r) for r in {ld.root for ld in loads}}
        weight = lambda ld: dram_bytes[ld.root] / share[ld.root]     # an argument loaded twice shares its bytes
    else:
        weight = lambda ld: ld.slot_bytes
    known = [(weight(ld), ld.run_bytes if ld.walks_rows else DRAM_RUN_BYTES) for ld in loads]
    if not known:
        return 1.0
    total = sum(b for b, _ in known)
    return total / sum(b / min(1.0, r / DRAM_RUN_BYTES) for b, r in known)


def atomic_requests(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], ev: Any) -> float:
    """Line requests the busiest line of the launch's global atomics receives (occmodel.atomics), from
    the compiled TTGIR, the integer launch arguments and the launch grid at `point`; 0 when any is unknown
    or the kernel has no atomic whose pointer is arithmetic on the program id."""
    ttgir = getattr(getattr(ev, "result", None), "ttgir", None)
    facts = _launch_facts(kernel, cfg, point, ev) if ttgir and "tt.atomic_" in ttgir else None
    if facts is None:
        return 0.0
    from .atomics import contention
    hot = contention(ttgir, facts[2], facts[1])
    return hot.requests if hot is not None else 0.0


def _launch_facts(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], ev: Any) -> tuple[str, Any, Any] | None:
    """(compiled TTGIR, launch grid, integer launch arguments) at `point`: what the walks over the kernel's
    program-id arithmetic need (tile order, loop trips, atomics); None when any is unknown."""
    ttgir = getattr(getattr(ev, "result", None), "ttgir", None)
    if not ttgir:
        return None
    dims, args = kernel.launch_grid(cfg, point), kernel.scalar_args(cfg, point)
    return None if dims is None or args is None else (ttgir, dims, args)


def loop_traffic(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], ev: Any, rep: Any) -> tuple[float, float]:
    """(waste, lookups) per CTA per iteration of the main loop's plain global loads and stores, from the
    compiled TTGIR, the launch's scalar arguments and the tensors the launcher gives with data
    (occmodel.sectors.traffic): waste, the bytes they make the L2 move without asking for them (its requests
    are whole 128-byte lines: SectorTraffic.waste_bytes, term (c)); lookups, each warp instruction's
    distinct lines summed (load_requests + store_requests, term (h)). A kernel without a main loop: its body's
    over the iterations it declares (loop_iterations: a tl.static_range unrolled away). (0, 0) when not
    counted."""
    facts = _launch_facts(kernel, cfg, point, ev)
    if facts is None or rep is None:
        return 0.0, 0.0
    from .sectors import traffic
    ttgir, dims, args = facts
    tr = traffic(ttgir, rep, args, dims, kernel.float_args(cfg, point), data=kernel.tensor_data(cfg, point))
    if tr is None:
        return 0.0, 0.0
    per = 1 if rep.main is not None else max(1, kernel.loop_iterations(cfg, point) or 1)
    return tr.waste_bytes / per, (tr.load_requests + tr.store_requests) / per


def declared_share(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], ev: Any, rep: Any,
                   its: Sequence[int] | None = None) -> float:
    """The compiled main loop's trips per CTA over the iterations the kernel declares per CTA (cta_iterations'
    mean, else loop_iterations), at most 1: a loop over a filter's rows whose columns are a tl.static_range
    makes one trip of several declared iterations (depthwise_conv2d: 7 trips of 7 taps, 49 declared), and a
    per-trip count (term (h)'s lookups) is shared over them. 1 when either is unknown or there is no main loop."""
    facts = _launch_facts(kernel, cfg, point, ev)
    if facts is None or rep is None or rep.main is None:
        return 1.0
    from .tile_order import loop_trips
    ttgir, dims, args = facts
    trips = loop_trips(ttgir, rep, args, dims) or {}
    idx = [i for i, lp in enumerate(rep.loops) if lp is rep.main]
    t = trips.get(idx[0]) if idx else None
    n = sum(its) / max(1, len(its)) if its else (kernel.loop_iterations(cfg, point) or 0)
    return min(1.0, t / n) if t and n else 1.0


def l2_waste_bytes(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], ev: Any, rep: Any) -> float:
    """loop_traffic's waste alone: the bytes per CTA per iteration term (c) adds to the tile (0: not counted)."""
    return loop_traffic(kernel, cfg, point, ev, rep)[0]


def atomic_targets(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], ev: Any, rep: Any) -> tuple:
    """Per kernel argument the global atomics update (the TTGIR's, pipeline.PipelineReport.atomic_roots):
    (the bytes the tensor spans at `point`, the main loop's line requests to it per CTA per iteration --
    occmodel.sectors.atomic_lines, a loop-less kernel's body as one iteration -- None when not counted).
    () when no atomic or no size is known."""
    roots = getattr(rep, "atomic_roots", ()) if rep is not None else ()
    sizes = kernel.tensor_bytes(cfg, point) if roots else None
    if not sizes:
        return ()
    counted, facts = None, _launch_facts(kernel, cfg, point, ev)
    if facts is not None:
        from .sectors import atomic_lines
        ttgir, dims, args = facts
        counted = atomic_lines(ttgir, rep, args, dims, kernel.float_args(cfg, point), data=kernel.tensor_data(cfg, point))
    return tuple((float(sizes[r]), (counted or {}).get(r)) for r in roots if r in sizes)


# The read-modify-write of an atomic target the L2 cannot hold (atomic_fill_bytes). Found on
# maxpool_bwd_scatter (round 21, development since): at its NCHW point (N 64, C 64, 147 x 147, fp32) the scatter
# configs (GATHER 0: an fp32 atomic add per grad_out element into a zero-filled 354 MB grad_in) ran 555-615 us
# on an H100 while the model put them at 288-362 us, among the fastest, beside gather configs that ran
# 313-460 us (Spearman -0.47; reports/h200/rank_study_round21_h100.json). An atomic is done in the L2 on
# the line's data: a line the zero-fill wrote and the L2 let go before its first add is read from DRAM again
# and written back once more. The launcher's bytes_moved counts the target written once (the zero-fill's
# secondary kernel declares it), not that read and second write. Only a target such a kernel of the launch
# wrote (its secondary kernels' DRAM bytes cover it) is charged: where the atomics add into a tensor the
# caller gives (embedding_bwd's gradient accumulation), the first touch of each line is a read the launcher
# counts already (its payload), and charging it again moved that kernel's third point 0.41 -> 0.03.
def atomic_fill_bytes(targets: Sequence[tuple], work: float, l2_bytes: float, filled: float) -> float:
    """Extra DRAM bytes of a launch whose global atomics update a target larger than the L2 that the launch
    wrote just before (a zero-fill: its secondary kernels write `filled` DRAM bytes, at least the target's):
    per such target (atomic_targets), twice (read back and written again) the lines its atomics touch --
    the target's span, or fewer when the main loop's counted requests over the launch's `work`
    CTA-iterations are fewer -- times the share of them the L2 has let go (reread_miss of the target's
    bytes). 0 without targets, without such a fill or without an L2 size."""
    from .sectors import LINE
    total = 0.0
    for span, requests in targets:
        if span > filled:
            continue
        touched = span if requests is None else min(span, requests * LINE * work)
        total += 2.0 * float(reread_miss(span, l2_bytes)) * touched
    return total


def stored_lines(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], ev: Any, rep: Any) -> Any:
    """How whole the lines are that the main loop's stores write (occmodel.sectors.store_lines, from the
    compiled TTGIR and the launch's scalar arguments); None when not counted."""
    facts = _launch_facts(kernel, cfg, point, ev)
    if facts is None or rep is None:
        return None
    from .sectors import WALKED_GRANULE, store_lines
    ttgir, dims, args = facts
    fa, data = kernel.float_args(cfg, point), kernel.tensor_data(cfg, point)
    found = store_lines(ttgir, rep, args, dims, fa, data=data)
    if found is not None and found.walks:     # its own next iterations write the rest: pieces of WALKED_GRANULE
        found = store_lines(ttgir, rep, args, dims, fa, granule=WALKED_GRANULE, data=data)
    return found


# Lines stored in part (partial_store_bytes). Found on hashgrid_encode (round 28, development since): with the
# level outermost in the grid (LEVEL_MAJOR 1) and one level a program (LEVELS 1), each program writes 16 of
# each 256-byte output row and programs a level later write the rest; at its neuralangelo point (a 550 MB
# output) those configs ran 3.5x slower than the best (1.8 ms vs 0.49 ms; 32-byte pieces 0.7-1.0 ms, 64-byte
# 0.52-0.60 ms: H200, triton 3.6.0, reports/h200/rank_study_round28_h200.json) while the model put them among
# the fastest. Read as DRAM writing whole 128-byte lines (DRAM_RUN_BYTES, as short_rows reads loads): a line
# evicted from the L2 before its other bytes arrive costs the line, and its other parts cost it again.
def partial_store_bytes(lines: Any, tile: float, resident: int, launch_bytes: float, l2_bytes: float) -> float:
    """Extra DRAM bytes per CTA per iteration of the main loop's partly written lines (sectors.StoreLines):
    asked x (1 / f - 1) for the line fill f the CTA and its launch neighbours reach at once (fill_near),
    times the share of those lines the L2 evicts before the rest of them arrives (reread_miss of the bytes
    streamed meanwhile): the launch's DRAM bytes (`launch_bytes`) over the launch distance that completes
    them (reach); when the loop walks on along its rows, at most the `resident` CTAs' `tile` bytes (plus
    their stores) over the ceil(1 / f) iterations a line takes. 0 when the lines are whole or not counted."""
    if lines is None or lines.fill_near >= 1.0 or lines.asked <= 0:
        return 0.0
    f = max(lines.fill_near, 1.0 / 128)
    between = launch_bytes * lines.reach
    if lines.walks:
        between = min(between, resident * (tile + lines.asked) * math.ceil(1.0 / f))
    return float(reread_miss(between, l2_bytes)) * lines.asked * (1.0 / f - 1.0)


def operand_strips(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], ev: Any, rep: Any,
                   its: Sequence[int] | None = None) -> Any:
    """The main loop's operand strips per CTA in launch order (tile_order.strips) from the compiled
    TTGIR, the kernel's integer launch arguments and launch grid at `point`; None when any is unknown.
    Index tensors the launcher gives with data (index_data: a MoE routing's expert ids) are read where
    the kernel loads a scalar from them; CTAs with no iterations (`its`: cta_iterations) are left out."""
    facts = _launch_facts(kernel, cfg, point, ev)
    if facts is None or rep is None:
        return None
    from .tile_order import strips
    ttgir, dims, args = facts
    return strips(ttgir, rep, args, dims, kernel.loop_iterations(cfg, point) or 1, kernel.index_data(cfg, point),
                  [n > 0 for n in its] if its is not None else None)


def unrolled_body(result: Any, n: int, regs: int | None, alu_cycles: float = 1.0
                  ) -> tuple[float, float, float] | None:
    """(issue slots per warp per iteration, latency waits per iteration, chain cycles per iteration) of a kernel whose n declared
    loop iterations were unrolled away (a tl.static_range: its SASS has no loop): the whole listing
    spread over the n iterations. Its loads issue together, so one CTA waits the latency once per
    run of loads that a store separates (sass.straight_line's load_waves), or once per register-file
    of loaded words when they outnumber the registers (load_batches' limit) -- not n times. Found on
    moe_combine (round 8, topk 8: configs with little in flight ran 1.2-2.3x faster than an n-waits
    estimate). A kernel with no loop at all (n = 1) is costed the same way: its whole listing is its one
    iteration (until session 10 it got no issue cost, so expert_histogram's STEPS=1 configs -- a
    256-bin tl.histogram of 512-4,096 ids, no loop -- all sat at the DRAM roof while running 1-26x
    slower; on the 142 development cases only that kernel moves: Spearman -0.23 / 0.17 / -0.03 ->
    0.23 / 0.42 / 0.48, #1 / best 13.5 / 1.50 / 5.00 -> 3.61 / 1.10 / 1.04). None when the SASS has a
    loop or is missing."""
    from . import sass as S
    body = S.straight_line(getattr(result, "sass", None) or "")
    if body is None or n < 1:
        return None
    words = body.global_load_bytes / 4
    waits = max(1.0, body.load_waves, words / regs if regs else 0.0)
    return S.issue_slots(body, alu_cycles) / n, min(1.0, waits / n), body.chain / n


def hoisting(result: Any, passes: Any) -> float:
    """Latency waits per iteration of an unpipelined loop, averaged over its passes (<= 1). ptxas
    unrolls a loop and issues u iterations' loads together unless a store sits between them (a load
    may alias an earlier store): a pass whose SASS loop loads B bytes per thread per trip in w runs
    that stores separate, where one source iteration loads b bytes per thread (its layout), waits
    w / u = w x b / B times per iteration. The passes are the main loop's sibling loops matched in
    order to the SASS's innermost loops that load; 1 when they do not match or a size is unknown."""
    from . import sass as S
    loops = [lp for lp in S.sass_loops(getattr(result, "sass", None) or "") if lp.inner and lp.global_loads]
    loops.sort(key=lambda lp: lp.start)
    if not loops or len(loops) != len(passes.thread_bytes) or not all(passes.thread_bytes):
        return 1.0
    waits = [min(1.0, lp.load_waves * b / lp.global_load_bytes) for lp, b in zip(loops, passes.thread_bytes)]
    return sum(waits) / len(waits)


def pass_issue(loops: Sequence[Any], passes: Any, threads: int, alu_cycles: float = 1.0
               ) -> tuple[float, float, float, float] | None:
    """(issue slots, exchange cycles, chain cycles, dependent loads) per warp per source iteration of a kernel whose main loop is one
    of several passes over its data (pipeline.Passes: a row kernel's max pass, sum pass and output
    pass): the mean over the passes of each pass's SASS loop per iteration (its trip over its unroll
    u = the trip's load bytes per thread over one iteration's; 1 when pipelined or unknown) -- the
    passes share the declared iterations equally (loop_iterations counts every pass). The passes pair
    in order with the innermost SASS loops that load (LDG or LDGSTS); None when there is one pass or
    the counts differ. Found on jsd_loss (round 16): costing every iteration at the main loop's rate
    made the estimate's #1 -- the one config whose main loop was its cheapest pass, unrolled 4x --
    1.36x slower than the best, measured."""
    from . import sass as S
    if passes is None or passes.count < 2:
        return None
    walks = sorted((lp for lp in loops if lp.inner and (lp.global_loads or lp.async_copies)), key=lambda lp: lp.start)
    if len(walks) != passes.count:
        return None
    per = passes.thread_bytes if len(passes.thread_bytes) == len(walks) else (0.0,) * len(walks)
    elements = passes.exchange_elements if len(passes.exchange_elements) == len(walks) else (0.0,) * len(walks)
    issue = cycles = chain = gathers = 0.0
    for lp, b, e in zip(walks, per, elements):
        u = max(1, round(lp.global_load_bytes / b)) if b and lp.global_load_bytes and not lp.async_copies else 1
        issue += S.issue_slots(lp, alu_cycles) / u
        cycles += _exchange_cycles(lp, e) / u
        chain += lp.chain / u
        gathers += lp.dependent_loads / u
    n = len(walks)
    return issue / n, cycles / n, chain / n, gathers / n


def far_rounds(waits: float, counted: float, new_bytes: float, loaded_bytes: float) -> float:
    """Latency rounds an unpipelined iteration waits beyond the `counted` ones (b x h + g): the SASS
    replay's full load waits (sass_chain.load_waits over the unroll: a trip that uses each load before
    it issues the next waits once per load) less those, each weighted by the share of the iteration's
    register-loaded bytes that are new to the SM -- `new_bytes` (t, the tile the loop brings in) over
    `loaded_bytes` (its register loads' slot bytes), at most 1. A scan that loads five fresh tiles one
    after another waits five latencies; a convolution whose taps re-read what its neighbour tap just
    loaded (L1 hits: t / loaded ~ 1 / taps) waits about none more. 0 when nothing more is waited; the caller
    passes new_bytes 0 for a loop that streams its data by async copies (its register loads are indices)."""
    if waits <= counted:
        return 0.0
    share = min(1.0, new_bytes / loaded_bytes) if loaded_bytes > 0 else 1.0
    return (waits - counted) * share


def load_batches(plain_bytes: int, threads: int, regs: int | None) -> float:
    """Latency round trips of one unpipelined iteration: a thread can hold no more loaded words than it
    has registers, so an iteration whose register loads (the main loop's plain tt.loads) bring W words
    per thread waits the latency W / regs times (at least once). Found on gemv (session 5, after its
    held-out evaluation): fp32, BLOCK_K=512 on 2 warps loads 128-256 words per thread into 50-64
    registers and ran 2.9-5.9x slower than the model said; no other measured kernel changes."""
    words = plain_bytes / 4 / max(1, threads)
    if not regs or words <= 0:
        return 1.0
    return max(1.0, words / regs)


class LoopWork(NamedTuple):
    """What one main-loop iteration costs one warp, from the compiled main loop (_sass_loop)."""
    unroll: int         # source iterations per SASS loop trip
    issue: float        # issue slots per warp per iteration (sass.issue_slots over the unroll)
    barriers: int       # block-wide barriers per trip
    exchange: float     # shared-pipe cycles per warp per iteration: 0 unless the loop holds a barrier, term (g)
    waits: float        # waits per iteration for every wgmma in flight to complete: term (e)'s chain
    chain: float = 0.0  # cycles one warp alone takes per iteration (sass_chain): term (f)'s floor
    gathers: float = 0.0  # loads per iteration whose address waits for an earlier load (term (a))
    load_waits: float = 0.0  # full load latencies one warp waits out per iteration (sass_chain.load_waits)
    spill: float | None = None  # bytes a thread moves to / from local memory per iteration in the main loop
                                # (STL / LDL over the unroll); None without the SASS
    spill_once: float = 0.0  # the same outside the main loop, over the whole listing once (a CTA's prologue,
                             # epilogue and other loops, each instruction once)


def _sass_loop(result: Any, threads: int, rep: Any, trips: Sequence[float | None] | None = None,
               share: tuple[float | None, float | None] = (None, None), siblings: Sequence[float | None] | None = None,
               alu_cycles: float = 1.0) -> LoopWork:
    """The LoopWork of the compiled main loop, its inner loops run `trips` times each (nest_trips),
    plus, per iteration, share[0] trips of the work the loop around it does on its own, share[1]
    of the work outside every loop and siblings[i] trips of the i-th compute loop beside it (loop_nest;
    sibling_loops); LoopWork(1, 0.0, 0, 0.0, 0.0) without SASS."""
    from . import sass as S
    loops = S.sass_loops(getattr(result, "sass", None) or "")
    loop = S.main_loop(loops)
    if loop is None:
        return LoopWork(1, 0.0, 0, 0.0, 0.0)
    once = max(0, S.local_bytes(result.sass) - loop.local_bytes)
    beside = sibling_loops(loops, loop, rep, siblings)      # before nest_trips: it pairs by the listing's loops
    outer = S.enclosing(loops, loop)
    inside = S.nested(loops, loop)
    loop = nest_trips(loop, inside, trips)
    main = rep.main if rep is not None else None
    loads = main.loads if main is not None else ()
    # The unroll compares the trip's LDG bytes with the register loads' own (an async copy is an LDGSTS).
    # Session 19: counting a one-slot cp.async ring's tile too fell back to slot bytes over threads and
    # read fused_recurrent_gla's LOOP_STAGES=2 trips as ~26 iterations (every such config 1.5-2.5x fast);
    # development (216 cases): mean Spearman 0.796 -> 0.800, best in top 3 108 -> 110, median error
    # 0.167 -> 0.164 (fused_recurrent_gla 0.44 / 0.40 / 0.60 -> 0.75 / 0.59 / 0.66, mla_decode's second
    # point 0.58 -> 0.66).
    registers = [ld for ld in loads if not ld.pipelined]
    # without a thread's bytes, S.unroll falls back to every load's slot bytes over the threads: over the
    # register loads alone it read decode_attention's and block_sparse_attn's trips as unrolled (session 19,
    # development: #1 within 3 % 118 -> 114)
    per_iter = sum(ld.slot_bytes for ld in loads)
    per_thread = sum(ld.thread_bytes for ld in registers) if registers and all(ld.thread_bytes > 0 for ld in registers) else 0.0
    u = S.unroll(loop, threads, per_iter, per_thread) if not (rep is not None and rep.ahead) else 1
    if main is not None and main.unroll > 1 and loop.global_load_bytes <= 0 and not loop.async_copies:
        u = main.unroll             # nothing loaded to read the unroll from: Triton's own (LoopInfo.unroll)
    elif u == 1 and main is not None and not rep.ahead and loop.global_load_bytes <= 0 and loop.commits \
            and main.groups_per_iteration:
        u = async_unroll(loop.commits, main.groups_per_iteration)
    issue, barriers, chain = S.issue_slots(loop, alu_cycles) / u, float(loop.barriers), loop.chain / u
    gathers = 0.0 if inside else loop.dependent_loads / u
    cycles = _exchange_cycles(loop, main.exchange_elements if main is not None else 0.0) / u
    walks = pass_issue(loops, rep.passes() if rep is not None else None, threads, alu_cycles)
    if walks is not None and not inside:
        issue, cycles, chain, gathers = walks
    parts = []
    if share[0] and outer is not None and main is not None and main.parent >= 0:
        parts.append((share[0], S.own(outer, loops), rep.loops[main.parent].exchange_elements, True))
    body = S.outside(getattr(result, "sass", None) or "") if share[1] else None
    if body is not None:            # its exchange only: see EPILOGUE_ISSUE
        parts.append((share[1], body, rep.exchange_elements if rep is not None else 0.0, EPILOGUE_ISSUE))
    for (lp, i), r in zip(beside, siblings or ()):
        parts.append((r, lp, rep.loops[i].exchange_elements, True))
    for r, own, elements, issues in parts:
        issue += r * S.issue_slots(own, alu_cycles) if issues else 0.0
        chain += r * own.chain if issues else 0.0
        barriers += r * own.barriers
        cycles += r * _exchange_cycles(own, elements)
    rounds = 0.0 if inside or walks is not None else loop.load_waits / u
    return LoopWork(u, issue, round(barriers), cycles, loop.mma_waits / u, chain, gathers, rounds,
                    loop.local_bytes / u, once)


def async_unroll(commits: int, groups: int) -> int:
    """Source iterations one SASS trip covers in a loop that loads only by async copies (no LDG to read
    the unroll from): the trip's committed groups (LDGDEPBAR) over the source iteration's
    (ttg.async_commit_group); 1 unless that is a whole number. Found on lora_expand (session 35): ptxas
    unrolls its depth-1 cp.async ring (num_stages 2, not pipelined) 4x, 8 commits a trip for 2 an
    iteration, and the trip's four waits read as four an iteration."""
    return commits // groups if commits >= groups and commits % groups == 0 else 1


def sibling_loops(loops: Sequence[Any], main: Any, rep: Any, trips: Sequence[float | None] | None) -> list[tuple[Any, int]]:
    """The SASS loops of the main loop's compute siblings, each with its source loop's index: the outermost
    loops that neither hold the main loop nor sit in it and load nothing (no LDG, no async copy), paired in
    order with PipelineReport.siblings when the counts agree and every sibling's trips are known; [] else
    (ptxas unrolled a sibling fully into straight-line code, or split it into a loop and a remainder)."""
    from . import sass as S
    if not trips or any(t is None for t in trips) or rep is None:
        return []
    top = [lp for lp in S.beside(loops, main) if not (lp.global_loads or lp.async_copies)]
    index = rep.siblings()
    return list(zip(top, index)) if len(top) == len(index) == len(trips) else []


def _exchange_cycles(loop: Any, elements: float) -> float:
    """Shared-pipe cycles per warp of one SASS loop trip's cross-warp exchange (term (g)): its LDS / STS,
    at EXCHANGE_CYCLES_PER_OP when its source reduces a vector across warps (`elements` per thread > 1:
    pipeline.LoopInfo.exchange_elements), else 1; byte stores always at that rate. 0 when the trip holds
    no barrier."""
    if not loop.barriers:
        return 0.0
    k = EXCHANGE_CYCLES_PER_OP if elements > 1 else 1.0
    return (loop.shared_ops - loop.narrow_stores) * k + loop.narrow_stores * EXCHANGE_CYCLES_PER_OP


def loop_nest(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], ev: Any, rep: Any,
              its: Sequence[int] | None = None) -> tuple[tuple | None, tuple[float | None, float | None], tuple | None]:
    """From one walk of the compiled kernel at `point` (tile_order.loop_trips): the trips of each loop
    inside the main loop (for nest_trips; None when unknown or there is none), and per main-loop
    iteration, over the mean iterations per CTA n (`its`: cta_iterations, else loop_iterations), (trips
    of the loop around the main loop / n -- how often a per-segment loop's own work, its offsets,
    cross-warp sum and store, runs --, 1 / n: the CTA's work outside every loop, once); None where a
    figure is unknown or the main loop sits in no loop; then the trips of each of the main loop's
    compute siblings (PipelineReport.siblings) / n, None when there are none."""
    ttgir = getattr(getattr(ev, "result", None), "ttgir", None)
    main = rep.main if rep is not None else None
    if not ttgir or main is None:
        return None, (None, None), None
    facts = _launch_facts(kernel, cfg, point, ev)
    from .tile_order import inside_main, loop_trips
    siblings = rep.siblings() if SIBLING_LOOPS else ()
    trips = (loop_trips(ttgir, rep, facts[2], facts[1], through=bool(siblings)) or {}) if facts is not None else {}
    shares = _shares(kernel, cfg, point, its, trips.get(main.parent) if main.parent >= 0 else None)
    once = shares[1]
    sib = tuple(trips[i] * once if once and trips.get(i) is not None else None for i in siblings) or None
    return inside_main(rep, trips) or None, shares, sib


def _shares(kernel: KernelCard, cfg: Config, point: Mapping[str, Any], its: Sequence[int] | None,
            around: float | None) -> tuple[float | None, float | None]:
    """(trips of the loop around the main loop, once for the CTA), each over the mean iterations per CTA."""
    n = sum(its) / len(its) if its else (kernel.loop_iterations(cfg, point) or 0)
    if n <= 0:
        return None, None
    return (around / n if around else None), 1.0 / n


def nest_trips(loop: Any, inner: Sequence[Any], trips: Sequence[float | None] | None) -> Any:
    """One trip of the SASS main loop with the loops inside it run as often as the source says: the
    listing holds each inner body once, a source loop inside the main loop runs t trips per iteration
    (tile_order.loop_trips; a top-k's k selection passes over the chunk it loaded). One source loop
    may compile to several SASS loops (ptxas unrolls a loop of unknown trip count and keeps a
    remainder loop): its t trips are costed at the smallest of them (one source iteration), the others
    not at all; several source loops pair with the SASS loops in order when the counts agree. `loop`
    unchanged when nothing pairs. Found on row_topk (round 13: k = 50 passes per chunk costed once,
    every config estimated 10-20x too fast)."""
    from . import sass as S
    if not inner or not trips or any(t is None for t in trips):
        return loop
    if len(trips) == 1:
        one = min(inner, key=lambda lp: lp.instructions)
        pairs = [(lp, trips[0] if lp is one else 0.0) for lp in inner]
    elif len(trips) == len(inner):
        pairs = list(zip(inner, trips))
    else:
        return loop
    return S.with_trips(loop, pairs)


# ------------------------------------------------------------------ model
@dataclass(frozen=True)
class _Rates:
    sms: int
    bw: float          # DRAM B/s
    l2: float          # L2 -> SM B/s
    smem: float        # shared-memory B/s, all SMs
    peak: float        # tensor FLOP/s
    lat: float         # loaded DRAM latency, s (the single figure)
    l2_lat: float      # L2 hit latency, s
    clock: float       # SM clock, Hz (shared bandwidth / (128 B x SMs))
    cal: Any = None    # the Calibration, for its latency curve

    def latency(self) -> float:
        """L, seconds: the calibration's latency curve read at LATENCY_LOAD_BYTES per SM; the single
        figure when the calibration has no curve."""
        from .calibrate import latency_at
        if self.cal is None or not self.cal.latency_curve:
            return self.lat
        return latency_at(self.cal, LATENCY_LOAD_BYTES) * 1e-9


@dataclass(frozen=True)
class _Loop:
    """What one main-loop iteration of one CTA needs (see the module doc's names)."""
    d: float           # DRAM bytes
    t: float           # L2 -> SM bytes
    s: float           # shared-memory operand reads
    f: float           # tensor FLOPs
    k: int             # tiles ahead (0: unpipelined)
    u: int = 1         # source iterations per SASS loop trip (informational: the issue term is per iteration)
    warps: int = 0     # warps per CTA (0: terms (f) and (g) off)
    batches: float = 1.0   # latency round trips per unpipelined iteration (load_batches)
    hoist: float = 1.0     # latency waits per unpipelined iteration from ptxas's hoisting (hoisting)
    issue: float = 0.0 # issue slots per warp per iteration
    exchange: float = 0.0  # shared-pipe cycles per warp per iteration of a cross-warp exchange (term (g))
    dram_eff: float = 1.0  # share of DRAM bandwidth reached (short_rows)
    waits: float = 0.0     # waits for every wgmma in flight to complete per iteration (term (e)'s chain)
    chain: float = 0.0     # cycles one warp alone takes per iteration (term (f)'s floor; 0: unknown -> D)
    gathers: float = 0.0   # extra latency waits per unpipelined iteration: dependent loads (term (a))
    rounds: float = 0.0    # and further load rounds, weighted by the share of new bytes (far_rounds)
    bound_waits: float = 0.0   # w: latencies per CTA waited for the main loop's loaded bounds
    dots: bool = False     # the loop holds a tl.dot (term (a)'s instruction stream: DOT_LOOP_ISSUE)
    l1: float = 0.0        # Q: the L1's line lookups (term (h); 0: not counted)


def in_flight(c: int, lp: _Loop) -> float:
    """q: bytes in flight per SM with c CTAs resident (k tiles each; unpipelined, the tiles ptxas's
    hoisting issues together: 1 / hoist). Reported, not costed: L is read at one load."""
    return c * (lp.k if lp.k >= 1 else 1.0 / lp.hoist) * lp.t


def step(r: _Rates, c: int, lp: _Loop, lat: float | None = None) -> float:
    """step(c): the smooth maximum of the terms, at least one pipelined CTA's lockstep (module doc)."""
    s = pmax(_steps(r, c, lp, lat))
    if lp.k >= 1 and lp.warps:
        one = _steps(r, 1, lp, lat)
        s = max(s, _norm([one[t] for t in LOCKSTEP_TERMS], LOCKSTEP_ALONE_P if c == 1 else LOCKSTEP_P))
    return s


def _norm(vals: Sequence[float], p: float) -> float:
    """(sum of v^p)^(1/p) over the positive values; 0 when none."""
    vals = [v for v in vals if v > 0]
    if not vals:
        return 0.0
    top = max(vals)
    return top * sum((v / top) ** p for v in vals) ** (1.0 / p)


def _steps(r: _Rates, c: int, lp: _Loop, lat: float | None = None) -> dict[str, float]:
    """The eight per-iteration terms for c co-resident CTAs (see the module doc); `lat` overrides
    L (a secondary kernel reading what was just written waits the L2 latency)."""
    per = r.sms
    L = r.latency() if lat is None else lat
    chain = lp.f / (r.peak / per) + lp.waits * WGMMA_WAIT_CYCLES / r.clock
    warps = c * lp.warps
    if lp.chain:
        issue = max(lp.issue * warps / 4, lp.chain) / r.clock if warps and lp.issue else 0.0
    else:
        issue = lp.issue * max(warps / 4, DEPENDENT_ISSUE_CYCLES) / r.clock if warps and lp.issue else 0.0
    cyc = max(1.0, lp.warps / 4) if lp.dots else DEPENDENT_ISSUE_CYCLES     # cycles an instruction (DOT_LOOP_ISSUE)
    serial = max(lp.issue * cyc, lp.chain) / r.clock if lp.warps else 0.0
    own = _norm([lp.s / (r.smem / per), chain, serial], COMPUTE_PHASE_P)     # an unpipelined CTA's compute phase
    return {"latency": L / lp.k if lp.k >= 1 else (lp.batches * lp.hoist + lp.gathers + lp.rounds) * L + own,
            "dram": c * lp.d / (r.bw / per) / lp.dram_eff,
            "l2": c * lp.t / (r.l2 / per), "shared": c * lp.s / (r.smem / per), "tensor": max(c * lp.f / (r.peak / per), chain if lp.waits else 0.0),
            "issue": issue, "exchange": warps * lp.exchange / r.clock,
            "l1": c * lp.l1 / r.clock if L1_LOOKUPS else 0.0}


@dataclass(frozen=True)
class _Kernel:
    waves: int
    tail_ctas: int
    total_s: float
    tail_s: float
    terms: dict[str, float]      # the step terms of the first wave (full, or the only one)


def _kernel(r: _Rates, grid: int, blocks: int, n: int, lp: _Loop, lat: float | None = None) -> _Kernel:
    """One kernel's waves: (waves - 1) x cta(blocks) + cta(CTAs per SM of the tail); the first
    tile's latency L is never hidden, nor the w latencies a CTA waits for its loop's loaded bounds."""
    slots = r.sms * blocks
    waves = -(-grid // slots)
    tail = grid - (waves - 1) * slots
    c_tail = -(-tail // r.sms)

    def cta(c: int) -> float:
        L = r.latency() if lat is None else lat
        return n * step(r, c, lp, lat) + (L if lp.k >= 1 else 0.0) + lp.bound_waits * L

    tail_s = cta(c_tail)
    return _Kernel(waves, tail, (waves - 1) * cta(blocks) + tail_s, tail_s,
                   _steps(r, blocks if waves > 1 else c_tail, lp, lat))


def _ragged(r: _Rates, iters: Sequence[int], blocks: int, lp: _Loop) -> _Kernel:
    """CTAs of different lengths (cta_iterations), list-scheduled in launch order onto SMs x blocks
    slots -- each slot starts the next CTA when its last one ends -- the makespan. A CTA costs its
    iterations x step(c) plus the first tile's latency L when pipelined and w x L for its loaded bounds
    (bound_waits); one with no iterations L, or w x L when more (it reads its bounds and returns). c: the CTAs with work per SM, at most `blocks` (a launch whose
    working CTAs fill less than a wave shares each SM among fewer); the thinning tail is not costed."""
    import heapq
    slots = r.sms * blocks
    live = sum(1 for it in iters if it)
    s, L = step(r, max(1, min(blocks, -(-live // r.sms))), lp), r.latency()
    first = L if lp.k >= 1 else 0.0
    free = [0.0] * max(1, min(slots, len(iters)))
    for it in iters:
        heapq.heapreplace(free, free[0] + (it * s + first + lp.bound_waits * L if it else max(1.0, lp.bound_waits) * L))
    waves = -(-len(iters) // slots)
    return _Kernel(waves, len(iters) - (waves - 1) * slots, max(free), 0.0, _steps(r, blocks, lp))


def rates(cal: Calibration, peak_flops: float) -> _Rates:
    from .calibrate import SHARED_BYTES_PER_CLOCK
    clock = cal.shared_bandwidth_gbs * 1e9 / (SHARED_BYTES_PER_CLOCK * cal.sms)
    return _Rates(cal.sms, cal.bandwidth_gbs * 1e9, cal.l2_bandwidth_gbs * 1e9, cal.shared_bandwidth_gbs * 1e9,
                  peak_flops, cal.latency_ns * 1e-9, cal.l2_latency_ns * 1e-9, clock, cal)


def estimate(card: KernelCard, cal: Calibration, cfg: Config, point: Mapping[str, Any],
             res: Resources, peak_flops: float, l2_bytes: float = 0.0) -> Estimate:
    """The estimate and its terms (see the module docstring for the formula); `l2_bytes` (0: unknown)
    decides how much of a later pass's re-read misses L2 (reread_miss)."""
    point = dict(point)
    r = rates(cal, peak_flops)
    grid, n, nbytes, flops = workload(card, cfg, point)
    ragged = card.cta_iterations(cfg, point)
    work = grid * n if ragged is None else max(1, sum(ragged))     # CTA-iterations of the launch
    extra = list(card.secondary_kernels(cfg, point))
    launch_s = (1 + len(extra)) * cal.launch_us * 1e-6
    B = res.blocks_per_sm
    k = min(res.ahead, n)
    d = max(0.0, nbytes - sum(x.grid * x.iterations * x.dram_bytes for x in extra)) / work
    miss = None
    if res.reread_again and B > 0:
        trips = n / max(1, res.passes)                # each pass's iterations (passes of equal length)
        resident = min(grid, r.sms * B)               # CTAs streaming their rows at once
        miss = reread_miss(resident * res.reread_first * trips, l2_bytes)
        d += miss * res.reread_again / max(1, res.passes)
    revisit = 0.0
    if res.strips is not None and B > 0:
        import numpy as np
        rv = res.strips.revisits(r.sms * B)
        revisit = sum(b * float(np.sum(reread_miss(st, l2_bytes))) for b, st in zip(rv.nbytes, rv.streamed))
        d += revisit / work
    t = float(res.tile_bytes) + res.waste_bytes
    partial = partial_store_bytes(res.store_lines, t, min(grid, r.sms * B), nbytes, l2_bytes) if B > 0 else 0.0
    d += partial
    fill = atomic_fill_bytes(res.atomic_targets, work, l2_bytes, sum(x.grid * x.iterations * x.dram_bytes for x in extra))
    d += fill / work
    s = float(res.shared_reads)
    f = float(res.dot_flops) if res.dot_flops else flops / work
    common = dict(config=dict(cfg), point=point, source=res.source, blocks_per_sm=B, grid=grid, iterations=n,
                  tiles_in_flight=k, dram_per_iter=d, tile_per_iter=t, shared_per_iter=s, flops_per_iter=f,
                  roofline_mem_s=nbytes / r.bw, roofline_comp_s=flops / r.peak, launch_s=launch_s,
                  passes=res.passes, reread_miss=miss, hoist=res.hoist, revisit_bytes=revisit, dram_eff=res.dram_eff,
                  issue_slots=res.issue_per_iter, chain_cycles=res.chain_cycles, dependent_loads=res.gathers,
                  load_rounds=res.rounds, bound_waits=res.bound_waits, l2_waste_bytes=res.waste_bytes,
                  tile_bytes=float(res.tile_bytes), partial_store_bytes=partial, atomic_fill_bytes=fill,
                  l1_lookups=res.l1_lookups)
    if B <= 0:
        inf = math.inf
        return Estimate(fits=False, slots=0, waves=0, tail_ctas=0, latency_step_s=inf, dram_step_s=inf,
                        l2_step_s=inf, shared_step_s=inf, tensor_step_s=inf, issue_step_s=inf, exchange_step_s=inf, l1_step_s=inf,
                        in_flight_bytes=0.0,
                        latency_s=inf, step_s=inf, waves_s=inf, tail_s=inf,
                        secondary_s=0.0, spill_s=0.0, total_s=inf, bound="does not fit", **common)
    lp = _Loop(d, t, s, f, k, max(1, res.unroll), res.threads // 32, res.batches, res.hoist, res.issue_per_iter,
               res.exchange_cycles, res.dram_eff, res.mma_waits, res.chain_cycles, res.gathers, res.rounds, res.bound_waits,
               bool(res.dot_flops), res.l1_lookups)
    main = _kernel(r, grid, B, n, lp) if ragged is None else _ragged(r, ragged, B, lp)
    second = sum(_kernel(r, x.grid, x.blocks_per_sm, x.iterations,
                         _Loop(float(x.dram_bytes), float(x.tile_bytes), 0.0, 0.0, min(x.ahead, x.iterations)),
                         None if x.dram_bytes else r.l2_lat).total_s
                 for x in extra)
    # Session 21, development (rounds 1-20, 240 cases, measured 1): spills charged where ptxas put their STL /
    # LDL, not n_spills x 8 B every iteration. attn_bwd_dq's 128 x 64 / 8 warps / 4 stages (its measured best at
    # both causal points) spills 6 words before and after its loop: charged 117 us per launch before, 3 us now.
    # Median Spearman 0.8646 -> 0.8686, best in top 3 117 -> 118, #1 within 3 % 126 -> 126, median |est/meas - 1|
    # 0.171 -> 0.173 (attn_bwd_dkdv's causal #1 within 3 % at both points, linear_attn_fwd into the top 3 at two;
    # attn_bwd_dq's non-causal point out of it: its 128 x 64 / 4-warp configs, spilling outside the loop, now
    # estimated best, while 2 and 3 stages measure 1.16-1.37x slower than 4).
    if res.spill_loop is None:
        spill_s = res.n_spills * 4 * 2 * res.threads * work / r.l2
    else:
        spill_s = res.threads * (res.spill_loop * work + res.spill_once * grid) / r.l2
    atomic_s = res.atomic_requests * ATOMIC_REQUEST_S
    waves_s = _norm([main.total_s, atomic_s], OVERLAP_P) if atomic_s else main.total_s
    terms = main.terms
    c_first = min(B, max(1, -(-grid // r.sms)))        # CTAs per SM of the first wave
    return Estimate(fits=True, slots=r.sms * B, waves=main.waves, tail_ctas=main.tail_ctas,
                    latency_step_s=terms["latency"], dram_step_s=terms["dram"], l2_step_s=terms["l2"],
                    shared_step_s=terms["shared"], tensor_step_s=terms["tensor"], issue_step_s=terms["issue"],
                    exchange_step_s=terms["exchange"], l1_step_s=terms["l1"],
                    in_flight_bytes=in_flight(c_first, lp), latency_s=r.latency(),
                    step_s=step(r, B if main.waves > 1 else -(-main.tail_ctas // r.sms), lp),
                    waves_s=waves_s, tail_s=main.tail_s, secondary_s=second, spill_s=spill_s,
                    total_s=waves_s + second + spill_s + launch_s,
                    bound="atomics" if atomic_s > main.total_s else max(terms, key=terms.get),
                    loop_barriers=res.loop_barriers, atomic_s=atomic_s, **common)


def peak_flops(spec: HardwareSpec, product: str | None = None) -> float:
    """Dense fp16 tensor-core peak of the spec's product (FLOP/s)."""
    return spec.product(product).fp16_tensor_tflops * 1e12


def estimate_many(card: KernelCard, spec: HardwareSpec, cal: Calibration, cfgs: Sequence[Config],
                  points: Sequence[Mapping[str, Any]], evidence: Sequence[Any],
                  product: str | None = None) -> list[list[Estimate]]:
    """estimates[i][j] for config i at point j from `evidence[i]` (occmodel.evidence.Evidence)."""
    peak = peak_flops(spec, product)
    l2 = spec.product(product).l2_mb * 2 ** 20
    alu = spec.sm.warp_size / spec.sm.alu_lanes_per_partition
    return [[estimate(card, cal, cfg, pt, resources(card, cfg, pt, evidence[i], alu), peak, l2) for pt in points]
            for i, cfg in enumerate(cfgs)]


# ---------------------------------------------------------------- ranking
def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank (smallest value = rank 1)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for m in range(i, j + 1):
            out[order[m]] = (i + j) / 2 + 1
        i = j + 1
    return out


def standing(values: Sequence[float], rel: float = 1e-9) -> list[int]:
    """Competition ranks of `values` (smallest first): equal values (within `rel`) share the rank of
    the first of them, the next distinct value skips past them (1, 1, 1, 4, ...). inf ranks last."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0] * len(values)
    for pos, i in enumerate(order):
        prev = order[pos - 1] if pos else None
        same = prev is not None and (values[i] == values[prev] or (
            math.isfinite(values[i]) and abs(values[i] - values[prev]) <= rel * abs(values[prev])))
        out[i] = out[prev] if same else pos + 1
    return out


def tie_note(values: Sequence[float], k: int) -> str:
    """'' or how ties cross the top-k cut, e.g. '3-way tie at #1' or 'the #5 place is a 4-way tie: 2 of
    them are past the top 5' (the estimate cannot order them: measure them all)."""
    st = standing(values)
    order = sorted(range(len(values)), key=lambda i: (st[i], i))
    notes = []
    for r in sorted({st[i] for i in order[:k]}):
        n = st.count(r)
        if n > 1:
            inside = sum(1 for i in order[:k] if st[i] == r)
            notes.append(f"{n}-way tie at #{r}" + (f" ({n - inside} of them past the top {k})" if inside < n else ""))
    return "; ".join(notes)


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson on tie-averaged ranks); nan if < 2 values or constant."""
    if len(a) != len(b):
        raise ValueError(f"spearman needs equal lengths, got {len(a)} and {len(b)}")
    if len(a) < 2:
        return math.nan
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / math.sqrt(va * vb) if va > 0 and vb > 0 else math.nan


def top_k(estimated: Sequence[float], k: int = 3) -> list[int]:
    """Indices of the k smallest estimates, ties at the k-th place counted inside (so possibly more than k)."""
    if not estimated:
        return []
    cut = sorted(estimated)[min(k, len(estimated)) - 1]
    return [i for i, e in enumerate(estimated) if e <= cut]


def best_in_top(measured: Sequence[float], estimated: Sequence[float], k: int = 3) -> bool:
    """Is the measured-fastest item among the k smallest estimates (top_k: ties at the cut inside)?"""
    if not measured:
        return False
    return min(range(len(measured)), key=lambda i: measured[i]) in top_k(estimated, k)


def aggregate_rank(per_point_totals: Sequence[Sequence[float]]) -> list[float]:
    """One score per config over points: the geometric mean of total / best total at each
    point (1.0 = fastest everywhere); inf for a config that does not fit somewhere."""
    n_cfg = len(per_point_totals)
    if not n_cfg:
        return []
    n_pt = len(per_point_totals[0])
    logs = [0.0] * n_cfg
    for j in range(n_pt):
        col = [per_point_totals[i][j] for i in range(n_cfg)]
        best = min((v for v in col if math.isfinite(v)), default=math.inf)
        for i, v in enumerate(col):
            logs[i] += math.log(v / best) if math.isfinite(v) and math.isfinite(best) else math.inf
    return [math.exp(s / max(1, n_pt)) if math.isfinite(s) else math.inf for s in logs]
