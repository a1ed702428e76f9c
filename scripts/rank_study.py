"""Does the static rank model (occmodel.rank) order configs of kernels it has never seen?

Two steps, so the model can be developed and judged without the GPU in the loop:

    # on the GPU: time every config of every sweep, calibrate (several times), write raw data
    PYTHONPATH=$PWD python3 scripts/rank_study.py measure --out $OUT/study.json \
        [--kernels flash_attention,splitk_gemm,...] [--samples 7] [--calibrations 2]

    # anywhere (no GPU): compile every (config, point) for the GPU's arch with the triton the
    # GPU ran, estimate with the model as it is now, compare; --kernels picks which to judge
    python3 scripts/rank_study.py evaluate reports/h200/rank_study_h200.json \
        --out reports/h200/rank_study_eval [--role held-out] [--calibration measured|datasheet|...]

The sweeps (SWEEPS) and the development / held-out split are the ones declared in
reports/kernels_dev_heldout.md before any of them was timed. `measure` times each config
at each point with occmodel.gpu.Bench (CUDA-graph replays after an L2 flush, rotating
input sets; configs in random order, round-robin over `--samples` rounds so drift spreads
over all of them), checks each config's output against the kernel's torch reference once
per point, and keeps every sample. One failing config (compile, launch, wrong output) is a
row with its error, never the end of the sweep; the JSON is rewritten after every kernel.
A config whose launch kills the CUDA context (an illegal address) is recorded as 'fault: ...';
`faults FILE` lists every failed config and prints the `probe` commands (plain, then under
compute-sanitizer) that replay the first fault.
Importing this module needs no torch (the tests use its pure parts on the CPU).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# kernel -> where it lives, its role (reports/kernels_dev_heldout.md), the swept axes
SWEEPS: dict[str, dict[str, Any]] = {
    "flash_attention": {"file": "examples/flash_attention.py", "role": "held-out",
                        "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [32, 64, 128], "num_warps": [4, 8],
                                 "num_stages": [1, 2, 3, 4]}},
    "splitk_gemm": {"file": "examples/splitk_gemm.py", "role": "held-out",
                    "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [64], "SPLIT_K": [1, 2, 4, 8],
                             "num_warps": [4, 8], "num_stages": [3, 4]}},
    "moe_gather": {"file": "examples/moe_gather.py", "role": "held-out",
                   "axes": {"BLOCK_T": [1, 2, 4, 8], "BLOCK_D": [64, 128, 256, 512], "num_warps": [1, 2, 4, 8],
                            "num_stages": [2]}},
    "softmax_online": {"file": "examples/softmax_online.py", "role": "held-out",
                       "axes": {"BLOCK_N": [128, 256, 512, 1024, 2048, 4096, 8192, 16384],
                                "num_warps": [1, 2, 4, 8, 16], "num_stages": [2]}},
    "rmsnorm": {"file": "examples/rmsnorm.py", "role": "development",
                "axes": {"BLOCK_N": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16],
                         "num_stages": [1, 2]}},
    "layernorm_rows": {"file": "examples/layernorm_rows.py", "role": "held-out-2",
                       "axes": {"BLOCK_M": [1, 2, 4, 8], "BLOCK_N": [256, 512, 1024, 2048, 4096],
                                "num_warps": [4, 8, 16], "num_stages": [2]}},
    "bmm": {"file": "examples/bmm.py", "role": "held-out-2",
            "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8],
                     "num_stages": [2, 3, 4]}},
    "swiglu": {"file": "examples/swiglu.py", "role": "held-out-2",
               "axes": {"BLOCK_N": [128, 256, 512, 1024, 2048, 4096, 8192, 16384],
                        "num_warps": [1, 2, 4, 8, 16], "num_stages": [2]}},
    "gemv": {"file": "examples/gemv.py", "role": "held-out-3",
             "axes": {"BLOCK_N": [4, 8, 16, 32, 64], "BLOCK_K": [64, 128, 256, 512], "num_warps": [2, 4, 8],
                      "num_stages": [2]}},
    "paged_decode": {"file": "examples/paged_decode.py", "role": "held-out-3",
                     "axes": {"BLOCK_N": [16, 32, 64, 128, 256], "num_warps": [2, 4, 8], "num_stages": [1, 2, 3]}},
    "grouped_gemm": {"file": "examples/grouped_gemm.py", "role": "held-out-3",
                     "axes": {"BLOCK_M": [32, 64, 128], "BLOCK_N": [64, 128, 256], "BLOCK_K": [32, 64], "GROUP_M": [8],
                              "num_warps": [4, 8], "num_stages": [3, 4]}},
    "cross_entropy": {"file": "examples/cross_entropy.py", "role": "held-out-3",
                      "axes": {"BLOCK_V": [256, 512, 1024, 2048, 4096, 8192, 16384, 32768],
                               "num_warps": [2, 4, 8, 16, 32], "num_stages": [2]}},
    "w8a16_gemm": {"file": "examples/w8a16_gemm.py", "role": "held-out-4",
                   "axes": {"BLOCK_M": [16, 64], "BLOCK_N": [64, 128, 256], "BLOCK_K": [64, 128], "num_warps": [4, 8],
                            "num_stages": [2, 3, 4]}},
    "causal_conv1d": {"file": "examples/causal_conv1d.py", "role": "held-out-4",
                      "axes": {"BLOCK_D": [2, 4, 8, 16], "BLOCK_L": [64, 128, 256, 512], "num_warps": [4, 8],
                               "num_stages": [1, 3]}},
    "group_norm": {"file": "examples/group_norm.py", "role": "held-out-5",
                   "axes": {"BLOCK_SIZE": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [2, 4, 8, 16],
                            "num_stages": [1, 2]}},
    "rope": {"file": "examples/rope.py", "role": "held-out-5",
             "axes": {"BLOCK_T": [1, 2, 4, 8], "BLOCK_H": [1, 2, 4, 8], "num_warps": [1, 2, 4, 8],
                      "num_stages": [1]}},
    "gated_mlp": {"file": "examples/gated_mlp.py", "role": "held-out-5",
                  "axes": {"BLOCK_M": [16, 64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "GROUP_M": [8],
                           "num_warps": [4, 8], "num_stages": [2, 3, 4]}},
    "embedding_gather": {"file": "examples/embedding_gather.py", "role": "held-out-5",
                         "axes": {"BLOCK_T": [1, 2, 4, 8, 16], "BLOCK_D": [128, 256, 512, 1024],
                                  "num_warps": [2, 4, 8], "num_stages": [2]}},
    "kv_quant": {"file": "examples/kv_quant.py", "role": "held-out-6",
                 "axes": {"BLOCK_T": [1, 2, 4, 8, 16], "BLOCK_H": [1, 2, 4, 8], "num_warps": [2, 4, 8],
                          "num_stages": [1]}},
    "transpose": {"file": "examples/transpose.py", "role": "held-out-6",
                  "axes": {"BLOCK_M": [32, 64, 128], "BLOCK_N": [32, 64, 128], "TILES_PER_CTA": [1, 4],
                           "num_warps": [2, 4, 8], "num_stages": [1]}},
    "chunk_cumsum": {"file": "examples/chunk_cumsum.py", "role": "held-out-6",
                     "axes": {"BLOCK_R": [1, 2, 4, 8], "BLOCK_L": [256, 512, 1024, 2048], "num_warps": [4, 8],
                              "num_stages": [1, 2]}},
    "bias_gelu": {"file": "examples/bias_gelu.py", "role": "held-out-6",
                  "axes": {"BLOCK_M": [1, 2, 4, 8], "BLOCK_N": [512, 1024, 2048, 4096], "num_warps": [4, 8],
                           "num_stages": [1, 2]}},
    "fused_add_rmsnorm": {"file": "examples/fused_add_rmsnorm.py", "role": "held-out-7",
                          "axes": {"BLOCK_M": [1, 2, 4], "BLOCK_N": [512, 1024, 2048, 4096], "num_warps": [4, 8],
                                   "num_stages": [1, 2]}},
    "reshape_and_cache": {"file": "examples/reshape_and_cache.py", "role": "held-out-7",
                          "axes": {"BLOCK_T": [1, 2, 4, 8, 16], "BLOCK_H": [1, 2, 4, 8], "num_warps": [2, 4, 8],
                                   "num_stages": [1]}},
    "fp8_scaled_mm": {"file": "examples/fp8_scaled_mm.py", "role": "held-out-8",
                      "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [128, 256], "BLOCK_K": [64, 128], "GROUP_M": [1, 8],
                               "num_warps": [4, 8], "num_stages": [3, 4]}},
    "layernorm_bwd": {"file": "examples/layernorm_bwd.py", "role": "held-out-8",
                      "axes": {"ROWS_PER_CTA": [16, 32, 64], "BLOCK_M": [1, 2], "BLOCK_N": [1024, 2048, 4096, 8192],
                               "num_warps": [4, 8, 16], "num_stages": [1]}},
    "moe_combine": {"file": "examples/moe_combine.py", "role": "held-out-8",
                    "axes": {"BLOCK_T": [1, 2, 4, 8], "BLOCK_D": [128, 256, 512, 1024, 2048], "num_warps": [2, 4, 8],
                             "num_stages": [1]}},
    "vocab_sample_stats": {"file": "examples/vocab_sample_stats.py", "role": "held-out-8",
                           "axes": {"BLOCK_V": [1024, 2048, 4096, 8192], "SPLIT_V": [1, 2, 4, 8, 16],
                                    "num_warps": [4, 8, 16], "num_stages": [1]}},
    "conv2d_nhwc": {"file": "examples/conv2d_nhwc.py", "role": "held-out-9",
                    "axes": {"BLOCK_M": [64, 128, 256], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8],
                             "num_stages": [2, 3, 4]}},
    "fp8_blockscale_gemm": {"file": "examples/fp8_blockscale_gemm.py", "role": "held-out-9",
                            "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128, 256], "GROUP_M": [1, 8],
                                     "num_warps": [4, 8], "num_stages": [3, 4]}},
    "jagged_sum": {"file": "examples/jagged_sum.py", "role": "held-out-9",
                   "axes": {"BLOCK_L": [8, 16, 32, 64], "BLOCK_D": [64, 128, 256], "SEGS": [1, 2, 4], "num_warps": [4, 8],
                            "num_stages": [1]}},
    "embedding_bwd": {"file": "examples/embedding_bwd.py", "role": "held-out-9",
                      "axes": {"BLOCK_T": [1, 2, 4, 8], "BLOCK_D": [256, 512, 1024, 2048], "num_warps": [2, 4, 8],
                               "num_stages": [1]}},
    "persistent_gemm": {"file": "examples/persistent_gemm.py", "role": "held-out-10",
                        "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [128, 256], "BLOCK_K": [32, 64], "GROUP_M": [1, 8],
                                 "num_warps": [4, 8], "num_stages": [3, 4]}},
    "w4a16_gemm": {"file": "examples/w4a16_gemm.py", "role": "held-out-10",
                   "axes": {"BLOCK_M": [16, 64, 128], "BLOCK_N": [64, 128, 256], "BLOCK_K": [64, 128],
                            "num_warps": [4, 8], "num_stages": [2, 3]}},
    "depthwise_conv2d": {"file": "examples/depthwise_conv2d.py", "role": "held-out-10",
                         "axes": {"BLOCK_P": [1, 2, 4, 8], "BLOCK_Q": [8, 16], "BLOCK_C": [32, 64], "num_warps": [2, 4, 8],
                                  "num_stages": [1]}},
    # num_warps=1 left out of the helper's sweep before timing: 1-warp configs spill up to 2,320 words and
    # take ptxas up to 2 minutes each (the study compiles serially on the GPU machine)
    "moe_topk_router": {"file": "examples/moe_topk_router.py", "role": "held-out-10",
                        "axes": {"BLOCK_T": [1, 2, 4, 8, 16, 32, 64], "PACKED": [0, 1], "num_warps": [2, 4, 8],
                                 "num_stages": [1]}},
    # round 11 (held out; the helpers' sweeps, every config compiled for sm_90 with triton 3.6.0 first)
    "lora_shrink": {"file": "examples/lora_shrink.py", "role": "held-out-11",
                    "axes": {"BLOCK_M": [16, 64], "BLOCK_N": [16, 64], "BLOCK_K": [64, 256], "SPLIT_K": [1, 4],
                             "num_warps": [4, 8], "num_stages": [2, 3]}},
    # warps from 4: the scan's [BLOCK_D, 16, BLOCK_L] tensors live in registers (2 warps at 8 x 64 spill 310 words);
    # num_stages 1 only: no dot, and 1, 2, 3 give the same cubin
    "selective_scan": {"file": "examples/selective_scan.py", "role": "held-out-11",
                       "axes": {"BLOCK_D": [1, 2, 4, 8], "BLOCK_L": [8, 16, 32, 64], "num_warps": [4, 8, 16],
                                "num_stages": [1]}},
    # BLOCK_T 128 left out (spills 60-530 words at K = 128 with a decay; some need > 227 KiB of shared memory)
    "linear_attn_fwd": {"file": "examples/linear_attn_fwd.py", "role": "held-out-11",
                        "axes": {"BLOCK_T": [16, 32, 64], "BLOCK_V": [16, 32, 64, 128], "num_warps": [4, 8],
                                 "num_stages": [1, 2, 3]}},
    # num_warps 1 left out (8 x 8 groups spill 70-94 words); num_stages 1 only: the same cubin for 1, 2, 3
    "group_quant_fp8": {"file": "examples/group_quant_fp8.py", "role": "held-out-11",
                        "axes": {"BLOCK_T": [1, 2, 4, 8], "BLOCK_G": [1, 2, 4, 8], "num_warps": [2, 4, 8],
                                 "num_stages": [1]}},
    # round 12 (held out; the helpers' sweeps, every config compiled for sm_90 with triton 3.6.0 first)
    # BLOCK_N 256 left out: a 128 x 256 tile on 4 warps spills 174-254 words (the int32 accumulator alone is
    # 256 registers a thread)
    "w8a8_gemm": {"file": "examples/w8a8_gemm.py", "role": "held-out-12",
                  "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [64, 128], "GROUP_M": [1, 8],
                           "num_warps": [4, 8], "num_stages": [3, 4]}},
    # num_stages 1 only: no dot, and 1, 2, 3 give the same cubin
    "expert_histogram": {"file": "examples/expert_histogram.py", "role": "held-out-12",
                         "axes": {"BLOCK": [512, 1024, 2048, 4096], "STEPS": [1, 4, 16], "num_warps": [2, 4, 8, 16],
                                  "num_stages": [1]}},
    # num_stages 1 only: no dot, and 1, 2, 3 give the same cubin
    "embedding_bag": {"file": "examples/embedding_bag.py", "role": "held-out-12",
                      "axes": {"BLOCK_D": [64, 128, 256], "BLOCK_I": [8, 16, 32], "BLOCK_B": [1, 4], "num_warps": [2, 4, 8],
                               "num_stages": [1]}},
    # BLOCK_N 128 and BLOCK_M 128 left out: at D = 128 on 4 warps they spill 144-572 words (the fp32 dK, dV
    # accumulators alone are 2 x BLOCK_N x 128 / 128 registers a thread)
    "attn_bwd_dkdv": {"file": "examples/attn_bwd_dkdv.py", "role": "held-out-12",
                      "axes": {"BLOCK_M": [16, 32, 64], "BLOCK_N": [32, 64], "num_warps": [4, 8], "num_stages": [1, 2, 3, 4]}},
    # round 13 (held out; the helpers' sweeps, every config compiled for sm_90 with triton 3.6.0 first)
    # BLOCK_K 64 only (128^3 bf16 tiles need 256 KiB at 4 stages); BLOCK_N 256 left out (128 x 256 on 4 warps spills)
    "fused_moe_gemm": {"file": "examples/fused_moe_gemm.py", "role": "held-out-13",
                       "axes": {"BLOCK_M": [16, 64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [64], "GROUP_M": [1, 16],
                                "num_warps": [4, 8], "num_stages": [3, 4, 5]}},
    # BLOCK_M 4, num_warps 4 left out (at N = 8192 they spill 26-1,850 words); num_stages 1 only (LOOP_STAGES pipelines)
    "rmsnorm_bwd": {"file": "examples/rmsnorm_bwd.py", "role": "held-out-13",
                    "axes": {"BLOCK_M": [1, 2], "PROGRAMS_PER_SM": [1, 2, 4, 8], "LOOP_STAGES": [1, 2, 3], "num_warps": [8, 16], "num_stages": [1]}},
    # BLOCK_V 16384 left out (fp32 on 4 warps spills 52-194 words: 128 int64 keys a thread); num_stages 1: same cubin
    "row_topk": {"file": "examples/row_topk.py", "role": "held-out-13",
                 "axes": {"BLOCK_V": [1024, 2048, 4096, 8192], "CHUNKS_PER_CTA": [1, 2, 4, 8], "num_warps": [4, 8, 16],
                          "num_stages": [1]}},
    # num_stages 4 left out (BLOCK_N 128 x 4 stages needs 278-288 KiB at D 128, > 227); BLOCK_N 16, 2 / 16 warps: to stay <= 72
    "varlen_attn_fwd": {"file": "examples/varlen_attn_fwd.py", "role": "held-out-13",
                        "axes": {"BLOCK_M": [32, 64, 128], "BLOCK_N": [32, 64, 128], "num_warps": [4, 8], "num_stages": [1, 2, 3]}},
    # round 14 (held out; the helpers' sweeps, every config compiled for sm_90 with triton 3.6.0 first)
    # 4 warps left out (BLOCK_H 64's fp32 64 x 512 acc spills 272-410 words), BLOCK_N 64 (to stay <= 72; 16 warps spill at BLOCK_H 64); 7 configs keep 1-2 words in local memory outside the loop
    "mla_decode": {"file": "examples/mla_decode.py", "role": "held-out-14",
                 "axes": {"BLOCK_H": [16, 32, 64], "BLOCK_N": [16, 32], "NUM_SPLITS": [1, 4, 16], "num_warps": [8, 16], "num_stages": [2, 3]}},
    # BLOCK_N 256, BLOCK_NNZ 64 left out (64 x 256 tiles spill on 4 warps; N = 128 would mask half a 256 tile); BLOCK_ROWS 4, 2 warps, num_stages 2: to stay <= 72
    "csr_spmm": {"file": "examples/csr_spmm.py", "role": "held-out-14",
                 "axes": {"BLOCK_ROWS": [1, 16], "BLOCK_NNZ": [16, 32], "BLOCK_N": [64, 128], "DOT": [0, 1], "num_warps": [4, 8], "num_stages": [1, 3]}},
    # BLOCK_KEYS 16384 left out (spills 48-404 words on 4 / 8 warps: 64-128 int64 keys a thread); 32 warps, PROGRAMS_PER_SM 8: to stay <= 72; num_stages 1 only (LOOP_STAGES pipelines)
    "row_sort": {"file": "examples/row_sort.py", "role": "held-out-14",
                 "axes": {"BLOCK_KEYS": [2048, 4096, 8192], "PROGRAMS_PER_SM": [0, 1, 2, 4], "LOOP_STAGES": [1, 2], "num_warps": [4, 8, 16], "num_stages": [1]}},
    # BLOCK 4096 left out (spills 2-164 words: on 2 warps, or 8 with LOOP_STAGES >= 2); 2 / 16 warps to stay <= 72; num_stages 1 only (LOOP_STAGES pipelines)
    "fused_adam": {"file": "examples/fused_adam.py", "role": "held-out-14",
                 "axes": {"CHUNK": [4096, 16384, 65536], "BLOCK": [512, 1024, 2048], "LOOP_STAGES": [1, 2, 3], "num_warps": [4, 8], "num_stages": [1]}},
    # round 15 (held out; the helpers' sweeps, every config compiled for sm_90 with triton 3.6.0 first)
    # BLOCK_N 256 left out (128 x 256 spills 258 words on 4 warps), BLOCK_N 64 (half the MACs an operand byte), PROGRAMS_PER_SM 3 / num_stages 2: to stay <= 72; all 192 compiles spill-free
    "streamk_gemm": {"file": "examples/streamk_gemm.py", "role": "held-out-15",
                 "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [128], "BLOCK_K": [32, 64], "PROGRAMS_PER_SM": [1, 2], "HYBRID": [0, 1], "num_warps": [4, 8], "num_stages": [3, 4]}},
    # BLOCK_M 16 left out (4 CTAs re-gather each query block's K/V; m16 mma.sync tiles), num_stages 4 (64 x 128 tiles need 273 KiB at D 128), 16 warps (to stay <= 72); 3 configs (BLOCK_M 64, BLOCK_N 128, 4 warps, 2-3 stages) spill 2-4 words at D 128
    "block_sparse_attn": {"file": "examples/block_sparse_attn.py", "role": "held-out-15",
                 "axes": {"BLOCK_M": [32, 64], "BLOCK_N": [32, 64, 128], "HEADS_FASTEST": [0, 1], "num_warps": [4, 8], "num_stages": [1, 2, 3]}},
    # BLOCK_M held at 64 (= P, one wgmma M; 32 halves the dot to mma.sync and reads B twice) and BLOCK_N 32 left out (x read 4x) to keep SCALE_X, 3 BLOCK_K and 3 stages within 72
    "ssd_chunk_state": {"file": "examples/ssd_chunk_state.py", "role": "held-out-15",
                 "axes": {"BLOCK_M": [64], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64, 128], "SCALE_X": [0, 1], "num_warps": [4, 8], "num_stages": [2, 3, 4]}},
    # BLOCK_M 4 left out (in the chunk loop 4 x 4096 spills 20-292 words on 4-16 warps, 4 x 2048 20-42 on 4); 6 of 162 compiles keep 2-18 words (BLOCK_M 2 on 4 warps); num_stages 1 only (LOOP_STAGES pipelines)
    "dropout_add_layernorm": {"file": "examples/dropout_add_layernorm.py", "role": "held-out-15",
                 "axes": {"BLOCK_M": [1, 2], "BLOCK_N": [1024, 2048, 4096], "LOOP_STAGES": [1, 2, 3], "num_warps": [4, 8, 16], "num_stages": [1]}},
    # round 16 (held out; the helpers' sweeps, every config compiled for sm_90 with triton 3.6.0 first)
    # BLOCK_N 128 left out (64 x 128 spills 14-22 words on 4 warps, 145 KiB; to stay <= 48), BLOCK_M 32 (between 16 and 64); 10 of 144 compiles spill: BLOCK_M 128 on 4 warps 4-114 words, 16 x 64 on 8 warps / 2 stages 2
    "paged_prefill_attn": {"file": "examples/paged_prefill_attn.py", "role": "held-out-16",
                 "axes": {"BLOCK_M": [16, 64, 128], "BLOCK_N": [32, 64], "PACK_GQA": [0, 1], "num_warps": [4, 8], "num_stages": [2, 3]}},
    # BLOCK_Q 32 / BLOCK_P 16 / 2 warps left out (fp32 steps of > 32 samples a warp spill: 4 corners x D 32 in registers); num_stages 1 only (nothing pipelined, 2 compiles the same); 2 of 162 compiles keep 2 words local
    "deform_attn": {"file": "examples/deform_attn.py", "role": "held-out-16",
                 "axes": {"BLOCK_Q": [4, 8, 16], "BLOCK_P": [2, 4, 8], "HEADS_FASTEST": [0, 1], "num_warps": [4, 8, 16], "num_stages": [1]}},
    # num_stages held at 1 (no tl.dot: triton 3.6 gives the same cubins at 1-4; LOOP_STAGES pipelines), 16 warps, BLOCK 2048, BLOCK_T 8 left out (to stay <= 72); 3 scatter compiles (Qwen point, 4 warps) keep 2 words local
    "moe_align": {"file": "examples/moe_align.py", "role": "held-out-16",
                 "axes": {"BLOCK_T": [32, 128, 512], "BLOCK": [256, 512, 1024], "LOOP_STAGES": [1, 2, 3], "num_warps": [4, 8], "num_stages": [1]}},
    # BLOCK_V 8192 left out (on 4 warps 64 elements a thread a tensor: 229-255 registers, 4-52 words spilled); num_stages 1 only (LOOP_STAGES pipelines; no dot, the launch's stages change nothing); 4 of 162 compiles (fp32 point, BLOCK_V 4096, LOOP_STAGES 2) keep 2-4 words in local memory
    "jsd_loss": {"file": "examples/jsd_loss.py", "role": "held-out-16",
                 "axes": {"BLOCK_V": [1024, 2048, 4096], "GRAD_FIXUP": [0, 1], "LOOP_STAGES": [1, 2, 3], "num_warps": [4, 8, 16], "num_stages": [1]}},
    # round 17 (held out; the helpers' sweeps, every config compiled for sm_90 with triton 3.6.0 first)
    # 8 warps left out (a 16-64-row state over 256 threads: more cross-warp reduction a step), BLOCK_V 128 (2-4x fewer CTAs on the 16-walk points), BLOCK_K 128 (spills on 1-2 warps); num_stages 1 only (LOOP_STAGES pipelines the walk); 5 of 162 compiles keep 2-8 bytes local
    "fused_recurrent_gla": {"file": "examples/fused_recurrent_gla.py", "role": "held-out-17",
                 "axes": {"BLOCK_K": [16, 32, 64], "BLOCK_V": [32, 64], "LOOP_STAGES": [1, 2, 3], "num_warps": [1, 2, 4], "num_stages": [1]}},
    # 64 x 128 tiles left out (on 4 warps the NCHW short-row path spills 164 words: a 64-bit address per element), BLOCK_C 32 / BLOCK_R 128 (to stay <= 48); num_stages 1 only (no tl.dot: LOOP_STAGES pipelines)
    "channel_stats": {"file": "examples/channel_stats.py", "role": "held-out-17",
                 "axes": {"BLOCK_C": [16, 64], "BLOCK_R": [32, 64], "CTAS_PER_SM": [2, 4, 8], "LOOP_STAGES": [1, 3], "num_warps": [4, 8], "num_stages": [1]}},
    # BLOCK_N 64 / 256 left out (256 spills on 4 warps, 64 halves X's reuse), BLOCK_K 32 (the stages cover latency), SPLIT_K 8 (workspace traffic)
    "wgrad_gemm": {"file": "examples/wgrad_gemm.py", "role": "held-out-17",
                 "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [128], "BLOCK_K": [64], "GROUP_M": [1, 8], "SPLIT_K": [1, 2, 4], "num_warps": [4, 8], "num_stages": [3, 4]}},
    # 2 warps left out (tiles of >= 64 elements a thread spill at the 3 x 3 max point); num_stages 1 only (the window is unrolled: the same cubin); 4 x 16 x 128 on 4 warps spills 14 bytes at point 1
    "pool2d_nhwc": {"file": "examples/pool2d_nhwc.py", "role": "held-out-17",
                 "axes": {"BLOCK_OH": [1, 2, 4], "BLOCK_OW": [4, 8, 16], "BLOCK_C": [32, 64, 128], "num_warps": [4, 8], "num_stages": [1]}},
    # round 18 (held out; the helpers' sweeps, every config compiled for sm_90 with triton 3.6.0 first)
    # 4 warps left out (BLOCK 32768 spills 76-860 bytes on 128 threads), BLOCK 2048 (ROWS 1 at D >= 4096: repeats); num_stages 1 only (no loop: the same cubin); BLOCK 32768 / 32 warps / DOT_H 32-64 keep 4-12 bytes local; at D 16384 BLOCK 4096-16384 are all one row a CTA (ties)
    "hadamard_transform": {"file": "examples/hadamard_transform.py", "role": "held-out-18",
                 "axes": {"BLOCK": [4096, 8192, 16384, 32768], "DOT_H": [0, 16, 32, 64], "num_warps": [8, 16, 32], "num_stages": [1]}},
    # LOOP_STAGES 3 left out (to stay <= 72: 81 configs), BLOCK_V 8192 (4 pivots spill 2-4 bytes on 4 / 8 warps, 255 registers on 4); num_stages 1 only (no dot: LOOP_STAGES pipelines the walks); 2 of 54 (4096 / 4 pivots / 1 stage / 4 warps, 4096 / 4 / 2 / 16) keep 4 bytes local
    "top_p_renorm": {"file": "examples/top_p_renorm.py", "role": "held-out-18",
                 "axes": {"BLOCK_V": [1024, 2048, 4096], "PIVOTS": [1, 2, 4], "LOOP_STAGES": [1, 2], "num_warps": [4, 8, 16], "num_stages": [1]}},
    # num_stages > 1 left out (the same PTX as 1: no load is pipelined), COARSE 32 / 128 (between 16, 64, 256)
    "searchsorted": {"file": "examples/searchsorted.py", "role": "held-out-18",
                 "axes": {"BLOCK": [256, 512, 1024, 2048], "COARSE": [0, 16, 64, 256], "num_warps": [2, 4, 8], "num_stages": [1]}},
    # BLOCK_N 256 left out (the FMA path spills 20-818 bytes at BLOCK_M >= 32 on 4 warps and at 64 rows on 8), BLOCK_M 128 (segments of ~4-16 tokens at two points); FMA 64 x 128 on 4 warps spills 188 bytes, two 16-row dot configs 2 bytes at point 3
    "lora_expand": {"file": "examples/lora_expand.py", "role": "held-out-18",
                 "axes": {"BLOCK_M": [16, 32, 64], "BLOCK_N": [64, 128], "USE_DOT": [0, 1], "num_warps": [4, 8], "num_stages": [2, 3]}},
    # round 19 (held out; the helpers' sweeps, every config compiled for sm_90 with triton 3.6.0 first)
    # BLOCK_K 128 left out (BLOCK_Q 4 spills 4 bytes at 4 and 8 warps; 212-246 registers at BLOCK_Q 2), KEYS_PER_CTA 2-4 (64k+ CTAs re-reading q at the chunked point); num_stages 4 (k tiles are L2-resident at prefill)
    "lightning_indexer": {"file": "examples/lightning_indexer.py", "role": "held-out-19",
                 "axes": {"BLOCK_Q": [1, 2, 4], "BLOCK_K": [32, 64], "KEYS_PER_CTA": [8, 32], "num_warps": [4, 8], "num_stages": [2, 3]}},
    # BLOCK_K 128 left out (128 rows x 128 steps on 4 warps spills 88 bytes; mamba_ssm tunes 32 / 64), BLOCK_P 128 (P = 64 at every point), num_stages 4 (1-3 cover short causal walks); 128 x 64 x 64 / 4 warps / 1 stage keeps 8-12 bytes local
    "ssd_chunk_scan": {"file": "examples/ssd_chunk_scan.py", "role": "held-out-19",
                 "axes": {"BLOCK_M": [64, 128], "BLOCK_P": [32, 64], "BLOCK_K": [32, 64], "num_warps": [4, 8], "num_stages": [1, 2, 3]}},
    # num_stages fixed at 2 (plain loads, no dot: stages 1 / 2 / 3 give the same sm_90 cubin); BLOCK_T 8 / 128, BLOCK_D 32 / 512 and TILES_PER_CTA 2 / 8 left out (between or past the kept ones); all 216 sm_90 compiles: 16-237 regs, <= 8 KiB smem, 6 keep a 2-store / 8-byte spill (FLAT=1, TILES 4, fp8 points)
    "gather_cache_dequant": {"file": "examples/gather_cache_dequant.py", "role": "held-out-19",
                 "axes": {"BLOCK_T": [16, 32, 64], "BLOCK_D": [64, 128, 256], "TILES_PER_CTA": [1, 4], "FLAT": [0, 1], "num_warps": [4, 8], "num_stages": [2]}},
    # num_stages fixed at 1 (the chunk loop holds no dot: stages 1 and 3 compile to the same cubin); HEADS_PER_CTA 1 and BLOCK_T 16 left out (too little / too much a CTA); (8, 8) on 2 warps spills at D 256
    "qk_norm_rope": {"file": "examples/qk_norm_rope.py", "role": "held-out-19",
                 "axes": {"BLOCK_T": [1, 2, 4, 8], "HEADS_PER_CTA": [2, 4, 8], "SPLIT_HEADS": [0, 1], "num_warps": [2, 4, 8], "num_stages": [1]}},
    # BLOCK_N 128 left out (D 128: spills 2-308 bytes on 4 and 8 warps, and 3+ stages pass 227 KiB at BLOCK_M 64+), num_stages 5 (BLOCK_M 128 x BLOCK_N 64 spills on 8 warps from 4 stages); BLOCK_M 128 on 4 warps kept though it spills 38-128 bytes at the D 128 points (the fp32 dQ tile alone is 128 registers a thread: the autotuner's loser), 128 x 64 / 8 warps / 4 stages 6 bytes, 128 x 64 / 4 warps / 2-3 stages 8-14 bytes at the D 64 point
    "attn_bwd_dq": {"file": "examples/attn_bwd_dq.py", "role": "held-out-20",
                    "axes": {"BLOCK_M": [32, 64, 128], "BLOCK_N": [16, 32, 64], "num_warps": [4, 8], "num_stages": [2, 3, 4]}},
    # LOOP_STAGES 3 left out (BLOCK_V 4096 on 4 warps spills 56-60 words at the fp32 points; 204-221 registers at 2048), BLOCK_V 8192 (4 warps: 237-255 registers, 100 words spilled at 2 stages), the scatter's BLOCK_T / warps (fixed 1024 / 4: a small share of the time); num_stages 1 only (no dot: LOOP_STAGES pipelines the walk)
    "logits_penalty": {"file": "examples/logits_penalty.py", "role": "held-out-20",
                 "axes": {"BLOCK_V": [1024, 2048, 4096], "TILES_PER_CTA": [1, 4, 16], "LOOP_STAGES": [1, 2], "num_warps": [4, 8, 16], "num_stages": [1]}},
    # num_stages fixed at 1 (the walk's nested data-dependent while loop keeps the pipeliner off: stages 1-3 give the same sm_90 cubin); BLOCK_N 256 left out (spills 22-130 bytes on 4 warps), BLOCK_M 128 (a [128, 64] int64 top-K tile), SPLIT 2-4 (between 1 and 8, few CTAs at the 16-query point)
    "knn_topk": {"file": "examples/knn_topk.py", "role": "held-out-20",
                 "axes": {"BLOCK_M": [16, 32, 64], "BLOCK_N": [64, 128], "SPLIT": [1, 8, 32, 128], "num_warps": [4, 8], "num_stages": [1]}},
    # 2 warps and BLOCK_W 512 left out (16 elements a thread at BLOCK_H 4 spill: 4 x 256 on 2 warps 136-144 bytes, 4 x 512 on 4 warps 8-136), ROWS 64 (past the 56-row maps); num_stages 1 only (no dot: 1-3 give the same regs / smem); all 162 sm_90 compiles (triton 3.6): 56-168 regs, <= 4 KiB smem, no spills
    "stencil2d": {"file": "examples/stencil2d.py", "role": "held-out-20",
                 "axes": {"BLOCK_H": [1, 2, 4], "BLOCK_W": [64, 128, 256], "ROWS": [8, 16, 32], "num_warps": [4, 8], "num_stages": [1]}},
    "sliding_window_attn": {"file": "examples/sliding_window_attn.py", "role": "held-out-21",
                            "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [16, 32, 64], "num_warps": [4, 8], "num_stages": [1, 2, 3, 4]}},
    "w4a16_splitk_gemv": {"file": "examples/w4a16_splitk_gemv.py", "role": "held-out-21",
                          "axes": {"BLOCK_N": [16, 32, 64], "BLOCK_K": [64, 128], "SPLIT": [1, 4, 16], "num_warps": [4, 8], "num_stages": [1, 3]}},
    "rmsnorm_fp8_quant": {"file": "examples/rmsnorm_fp8_quant.py", "role": "held-out-21",
                          "axes": {"BLOCK_N": [1024, 2048, 4096, 8192], "ROWS": [1, 2, 4, 8], "num_warps": [4, 8, 16], "num_stages": [1]}},
    "maxpool_bwd_scatter": {"file": "examples/maxpool_bwd_scatter.py", "role": "held-out-21",
                            "axes": {"GATHER": [0, 1], "BLOCK_P": [32, 64, 128, 256], "BLOCK_C": [4, 8, 16], "num_warps": [4, 8], "num_stages": [1]}},
    # round 22 (declared in session 23, reports/kernels_dev_heldout.md): num_stages held at 1 where the loop has no dot (identical SASS)
    "bilinear_resize": {"file": "examples/bilinear_resize.py", "role": "held-out-22",
                        "axes": {"BLOCK_C": [8, 16, 32, 64, 128], "ELEMS_PER_THREAD": [4, 8, 16], "num_warps": [2, 4, 8], "num_stages": [1]}},
    "block_diag_matmul": {"file": "examples/block_diag_matmul.py", "role": "held-out-22",
                          "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8], "num_stages": [2, 3, 4]}},
    "fused_linear_ce": {"file": "examples/fused_linear_ce.py", "role": "held-out-22",
                        "axes": {"BLOCK_T": [64, 128], "BLOCK_V": [64, 128], "BLOCK_D": [32, 64], "SPLIT_V": [16, 64], "num_warps": [4, 8], "num_stages": [3, 4]}},
    "nf4_dequant": {"file": "examples/nf4_dequant.py", "role": "held-out-22",
                    "axes": {"VEC": [4, 8, 16, 32], "ITEMS": [1, 2, 4, 8], "num_warps": [2, 4, 8], "num_stages": [1]}},
    # round 23 (declared in session 25, reports/kernels_dev_heldout.md): num_stages held at 1 where the loop has no dot
    "patchify_nchw": {"file": "examples/patchify_nchw.py", "role": "held-out-23",
                      "axes": {"BLOCK_N": [2, 4, 8, 16], "TILES": [1, 2, 4, 8], "num_warps": [2, 4, 8], "num_stages": [1]}},
    "int8_colwise_quant": {"file": "examples/int8_colwise_quant.py", "role": "held-out-23",
                           "axes": {"BLOCK_N": [16, 32, 64, 128], "ELEMS_PER_THREAD": [8, 16, 32, 64], "num_warps": [2, 4, 8],
                                    "num_stages": [1]}},
    "int8kv_decode_attn": {"file": "examples/int8kv_decode_attn.py", "role": "held-out-23",
                           "axes": {"BLOCK_N": [32, 64, 128], "NUM_SPLITS": [1, 4, 16], "num_warps": [4, 8], "num_stages": [2, 3, 4]}},
    "layernorm2d_nchw": {"file": "examples/layernorm2d_nchw.py", "role": "held-out-23",
                         "axes": {"BLOCK_P": [32, 64, 128, 256], "BLOCK_C": [2, 4, 8, 16], "num_warps": [2, 4, 8], "num_stages": [1]}},
    # round 24 (declared in session 26, reports/kernels_dev_heldout.md): num_stages held at 1 where the loop has no dot
    "cast_transpose_fp8": {"file": "examples/cast_transpose_fp8.py", "role": "held-out-24",
                           "axes": {"BLOCK_M": [32, 64, 128], "BLOCK_N": [32, 64, 128], "TILES": [1, 2, 4], "num_warps": [4, 8],
                                    "num_stages": [1]}},
    "roi_align": {"file": "examples/roi_align.py", "role": "held-out-24",
                  "axes": {"BLOCK_B": [1, 2, 4, 8], "BLOCK_C": [32, 64, 128, 256], "num_warps": [4, 8, 16], "num_stages": [1]}},
    "im2col_conv": {"file": "examples/im2col_conv.py", "role": "held-out-24",
                    "axes": {"BLOCK_P": [16, 32, 64], "BLOCK_K": [8, 16, 32], "K_STEPS": [1, 4, 16, 64], "num_warps": [4, 8],
                             "num_stages": [1]}},
    "topk_block_attn": {"file": "examples/topk_block_attn.py", "role": "held-out-24",
                        "axes": {"BLOCK_N": [16, 32, 64], "QPP": [1, 2, 4], "num_warps": [4, 8], "num_stages": [1, 2, 3]}},
    # round 25 (declared in session 27, reports/kernels_dev_heldout.md): num_stages held at 1 where the loop has no dot
    "gram_syrk": {"file": "examples/gram_syrk.py", "role": "held-out-25",
                  "axes": {"BLOCK_M": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8], "num_stages": [2, 3, 4, 5, 6]}},
    "adam8bit_blockwise": {"file": "examples/adam8bit_blockwise.py", "role": "held-out-25",
                           "axes": {"BLOCKS": [1, 2, 4, 8], "STEPS": [1, 2, 4, 8, 16], "num_warps": [4, 8], "num_stages": [1]}},
    "spec_rejection_sample": {"file": "examples/spec_rejection_sample.py", "role": "held-out-25",
                              "axes": {"BLOCK_V": [256, 512, 1024, 2048], "ROWS": [1, 2, 4], "num_warps": [4, 8, 16],
                                       "num_stages": [1]}},
    "sparse24_compress": {"file": "examples/sparse24_compress.py", "role": "held-out-25",
                          "axes": {"BLOCK_M": [4, 8, 16], "BLOCK_K": [128, 256, 512], "K_STEPS": [1, 4, 16], "num_warps": [4, 8],
                                   "num_stages": [1]}},
    # round 26 (declared in session 28, reports/kernels_dev_heldout.md): num_stages held at 1 where the loop has no dot
    "delta_kkt_solve": {"file": "examples/delta_kkt_solve.py", "role": "held-out-26",
                        "axes": {"BLOCK_K": [32, 64, 128], "BLOCK_D": [16, 32, 64], "num_warps": [4, 8], "num_stages": [1, 2, 3]}},
    "gat_edge_softmax": {"file": "examples/gat_edge_softmax.py", "role": "held-out-26",
                         "axes": {"BLOCK_E": [8, 16, 32], "HEADS": [1, 2, 4], "NODES": [1, 4], "TWO_PASS": [0, 1],
                                  "num_warps": [4, 8], "num_stages": [1]}},
    "dwconv1d_wgrad": {"file": "examples/dwconv1d_wgrad.py", "role": "held-out-26",
                       "axes": {"BLOCK_D": [32, 64, 128], "BLOCK_L": [8, 16], "L_STEPS": [4, 16, 64], "num_warps": [2, 4, 8],
                                "num_stages": [1]}},
    "fno_spectral_mul": {"file": "examples/fno_spectral_mul.py", "role": "held-out-26",
                         "axes": {"BLOCK_B": [4, 8], "BLOCK_O": [8, 16], "BLOCK_M": [16, 32, 64], "BLOCK_I": [1, 2],
                                  "num_warps": [4, 8], "num_stages": [1]}},
    # round 27 (declared in session 29, reports/kernels_dev_heldout.md)
    "nvfp4_quant": {"file": "examples/nvfp4_quant.py", "role": "held-out-27",
                    "axes": {"BLOCK_M": [8, 16], "BLOCK_K": [128, 256, 512], "K_STEPS": [1, 4, 16, 64], "num_warps": [4, 8],
                             "num_stages": [1]}},
    "gs_rasterize_fwd": {"file": "examples/gs_rasterize_fwd.py", "role": "held-out-27",
                         "axes": {"SUB_W": [8, 16], "SUB_H": [4, 8, 16], "BATCH": [4, 8, 16], "num_warps": [2, 4, 8],
                                  "num_stages": [1]}},
    "triangle_mult": {"file": "examples/triangle_mult.py", "role": "held-out-27",
                      "axes": {"BLOCK_I": [32, 64], "BLOCK_J": [16, 32], "BLOCK_K": [16, 32], "num_warps": [2, 4, 8],
                               "num_stages": [1, 2]}},
    "sinkhorn_knopp": {"file": "examples/sinkhorn_knopp.py", "role": "held-out-27",
                       "axes": {"TILE": [2048, 4096], "LAYOUT": [0, 1], "SHIFT": [0, 1], "UNROLL": [1, 2],
                                "num_warps": [4, 8, 16], "num_stages": [1]}},
    # round 28 (declared in session 30, reports/kernels_dev_heldout.md)
    "hashgrid_encode": {"file": "examples/hashgrid_encode.py", "role": "held-out-28",
                        "axes": {"BLOCK_N": [64, 128, 256], "LEVELS": [1, 2, 4], "LEVEL_MAJOR": [0, 1], "STREAM_OUT": [0, 1],
                                 "num_warps": [4, 8], "num_stages": [1]}},
    "ctc_loss_fwd": {"file": "examples/ctc_loss_fwd.py", "role": "held-out-28",
                     "axes": {"TILE": [64, 128, 256], "PF": [1, 2, 4, 8], "num_warps": [1, 2, 4, 8], "num_stages": [1]}},
    "sparse_conv_gemm": {"file": "examples/sparse_conv_gemm.py", "role": "held-out-28",
                         "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8],
                                  "num_stages": [1, 2, 3, 4]}},
    "fully_fused_mlp": {"file": "examples/fully_fused_mlp.py", "role": "held-out-28",
                        "axes": {"BLOCK_N": [64, 128], "TILES": [1, 2, 4, 16], "num_warps": [4, 8], "num_stages": [1, 2, 3]}},
    # round 29 (declared in session 31, reports/kernels_dev_heldout.md)
    "farthest_point_sample": {"file": "examples/farthest_point_sample.py", "role": "held-out-29",
                              "axes": {"HEAD_PPT": [0, 16], "PICK": [0, 1], "KEY": [0, 1], "LAYOUT": [0, 1],
                                       "num_warps": [4, 8, 16], "num_stages": [1]}},
    "nerf_volume_render": {"file": "examples/nerf_volume_render.py", "role": "held-out-29",
                           "axes": {"BLOCK_R": [4, 8, 16], "CHUNK": [16, 32, 64], "PREFETCH": [0, 1], "num_warps": [2, 4, 8],
                                    "num_stages": [1]}},
    "istft_overlap_add": {"file": "examples/istft_overlap_add.py", "role": "held-out-29",
                          "axes": {"BLOCK_F": [8, 16, 32], "BLOCK_R": [32, 64, 128], "LOOP": [0, 1, 2], "num_warps": [4, 8],
                                   "num_stages": [1]}},
    "swin_window_attn": {"file": "examples/swin_window_attn.py", "role": "held-out-29",
                         "axes": {"BLOCK_M": [16, 64], "WINDOWS": [2, 4, 8], "EXPANDED": [0, 1], "num_warps": [4, 8],
                                  "num_stages": [1, 2]}},
    # round 30 (declared in session 32, reports/kernels_dev_heldout.md)
    "grid_sample_bilinear": {"file": "examples/grid_sample_bilinear.py", "role": "held-out-30",
                             "axes": {"BLOCK_P": [64, 128, 256], "BLOCK_C": [2, 4, 8, 16], "C_SPLIT": [1, 2],
                                      "num_warps": [4, 8], "num_stages": [1]}},
    "gnn_scatter_add": {"file": "examples/gnn_scatter_add.py", "role": "held-out-30",
                        "axes": {"BLOCK_E": [32, 64], "BLOCK_F": [32, 64, 128], "E_STEPS": [2, 8], "num_warps": [4, 8],
                                 "num_stages": [1, 2]}},
    "selective_state_update": {"file": "examples/selective_state_update.py", "role": "held-out-30",
                               "axes": {"BLOCK_P": [4, 8, 16, 32], "N_SPLIT": [1, 2, 4], "num_warps": [1, 2, 4, 8],
                                        "num_stages": [1]}},
    "conv3d_ndhwc": {"file": "examples/conv3d_ndhwc.py", "role": "held-out-30",
                     "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8],
                              "num_stages": [2, 3, 4]}},
    # round 31 (declared in session 34, reports/kernels_dev_heldout.md)
    "hash_join_probe": {"file": "examples/hash_join_probe.py", "role": "held-out-31",
                        "axes": {"BLOCK_Q": [128, 256, 512], "BUCKET": [1, 2, 4, 8], "EAGER": [0, 1], "num_warps": [4, 8],
                                 "num_stages": [1]}},
    "nv12_to_rgb": {"file": "examples/nv12_to_rgb.py", "role": "held-out-31",
                    "axes": {"BLOCK_W": [128, 256, 512], "ROWS": [2, 4, 8], "STEPS": [1, 2, 4], "num_warps": [4, 8],
                             "num_stages": [1]}},
    "lookback_scan": {"file": "examples/lookback_scan.py", "role": "held-out-31",
                      "axes": {"ITEMS": [4, 8, 16], "LOOKBACK": [1, 4, 16, 32], "num_warps": [2, 4, 8, 16],
                               "num_stages": [1]}},
    "sparse_rowwise_adagrad": {"file": "examples/sparse_rowwise_adagrad.py", "role": "held-out-31",
                               "axes": {"BLOCK_R": [2, 4, 8, 16], "D_SPLIT": [1, 2, 4], "num_warps": [2, 4, 8],
                                        "num_stages": [1, 2]}},
    # round 32 (declared in session 35, reports/kernels_dev_heldout.md)
    "sddmm_edge_scores": {"file": "examples/sddmm_edge_scores.py", "role": "held-out-32",
                          "axes": {"BLOCK_E": [16, 32, 64], "BLOCK_D": [16, 64], "HEADS": [1, 2], "num_warps": [4, 8],
                                   "num_stages": [1, 2]}},
    "parquet_dict_decode": {"file": "examples/parquet_dict_decode.py", "role": "held-out-32",
                            "axes": {"BLOCK": [512, 1024, 2048], "STEPS": [1, 2, 4, 8], "EVICT": [0, 1],
                                     "num_warps": [4, 8], "num_stages": [1]}},
    "nms_iou_mask": {"file": "examples/nms_iou_mask.py", "role": "held-out-32",
                     "axes": {"BLOCK_I": [16, 32, 64, 128], "WORDS": [1, 4, 16], "num_warps": [2, 4, 8, 16],
                              "num_stages": [1]}},
    "jagged_to_padded": {"file": "examples/jagged_to_padded.py", "role": "held-out-32",
                         "axes": {"BLOCK_L": [4, 8, 16, 32], "D_SPLIT": [1, 2], "L_ITERS": [1, 4], "num_warps": [2, 4, 8],
                                  "num_stages": [1]}},
    # round 33 (declared in session 36, reports/kernels_dev_heldout.md)
    "pq_adc_scan": {"file": "examples/pq_adc_scan.py", "role": "held-out-33",
                    "axes": {"BLOCK_N": [64, 128, 256], "BLOCK_Q": [1, 2, 4], "M_STEP": [2, 4], "STAGE": [0, 1],
                             "num_warps": [4, 8], "num_stages": [1]}},
    "conv_transpose2d_nhwc": {"file": "examples/conv_transpose2d_nhwc.py", "role": "held-out-33",
                              "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64],
                                       "num_warps": [4, 8], "num_stages": [2, 3, 4]}},
    "bev_pool": {"file": "examples/bev_pool.py", "role": "held-out-33",
                 "axes": {"BLOCK_P": [4, 8, 16, 32], "C_SPLIT": [1, 2], "INTS": [1, 4], "num_warps": [2, 4, 8],
                          "num_stages": [1]}},
    "stream_compact": {"file": "examples/stream_compact.py", "role": "held-out-33",
                       "axes": {"TILE": [512, 1024, 2048, 4096], "STEPS": [1, 2, 4, 8], "num_warps": [2, 4, 8],
                                "num_stages": [1]}},
    # round 34 (declared in session 37, reports/kernels_dev_heldout.md)
    "tridiag_solve": {"file": "examples/tridiag_solve.py", "role": "held-out-34",
                      "axes": {"BLOCK_S": [32, 64, 128, 256], "ROWS": [1, 2, 4], "EVICT": [0, 1], "num_warps": [2, 4],
                               "num_stages": [1]}},
    "kan_linear": {"file": "examples/kan_linear.py", "role": "held-out-34",
                   "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [32, 64, 128], "BLOCK_K": [16, 32], "GROUP_M": [1, 8],
                            "num_warps": [8], "num_stages": [1, 2]}},
    "polyphase_resample": {"file": "examples/polyphase_resample.py", "role": "held-out-34",
                           "axes": {"BLOCK_T": [32, 64, 128], "BLOCK_J": [4, 8, 16], "BLOCK_C": [1, 2],
                                    "num_warps": [4, 8, 16], "num_stages": [1]}},
    "complex_gemm": {"file": "examples/complex_gemm.py", "role": "held-out-34",
                     "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [32, 64], "BLOCK_K": [32, 64], "GROUP_M": [1, 8],
                              "num_warps": [4, 8], "num_stages": [2, 4]}},
    "lstm_cell": {"file": "examples/lstm_cell.py", "role": "held-out-35",
                  "axes": {"BLOCK_B": [16, 64], "BLOCK_H": [32, 64], "BLOCK_K": [32, 64], "num_warps": [8, 16],
                           "num_stages": [2, 3, 4]}},
    "batchnorm_bwd_nhwc": {"file": "examples/batchnorm_bwd_nhwc.py", "role": "held-out-35",
                           "axes": {"BLOCK_C": [32, 64, 128], "BLOCK_M": [8, 16, 32], "ROWS_PER_CTA": [512, 2048],
                                    "LOOP_STAGES": [1, 3], "num_warps": [4, 8], "num_stages": [1]}},
    "median_filter2d": {"file": "examples/median_filter2d.py", "role": "held-out-35",
                        "axes": {"BLOCK_Y": [2, 4, 8], "BLOCK_X": [32, 64, 128], "ROWS": [1, 2, 4], "num_warps": [4, 8],
                                 "num_stages": [1]}},
    "ell_spmv": {"file": "examples/ell_spmv.py", "role": "held-out-35",
                 "axes": {"BLOCK_R": [32, 64, 128], "BLOCK_K": [4, 8, 16], "num_warps": [4, 8], "num_stages": [1, 2, 3]}},
    "nbody_forces": {"file": "examples/nbody_forces.py", "role": "held-out-36",
                     "axes": {"BLOCK_I": [32, 64, 128], "BLOCK_J": [16, 32], "SPLIT_J": [1, 2, 4, 8], "num_warps": [4, 8],
                              "num_stages": [1]}},
    "crf_viterbi": {"file": "examples/crf_viterbi.py", "role": "held-out-36",
                    "axes": {"BLOCK": [64, 128, 256], "BLOCK_I": [8, 16, 32], "num_warps": [4],
                             "num_stages": [1, 2, 3, 4, 5]}},
    "summed_area_table": {"file": "examples/summed_area_table.py", "role": "held-out-36",
                          "axes": {"BLOCK_H": [4, 8, 16, 32], "BLOCK_W": [32, 64, 128], "PREFETCH": [0, 1],
                                   "num_warps": [4, 8], "num_stages": [1]}},
    "trilinear_devoxelize": {"file": "examples/trilinear_devoxelize.py", "role": "held-out-36",
                             "axes": {"BLOCK_N": [16, 32, 64], "BLOCK_C": [8, 16, 32], "num_warps": [4, 8],
                                      "num_stages": [1, 2, 3]}},
    "decode_attention": {"card": "decode_attention", "role": "development",
                         "axes": {"BLOCK_T": [16, 32, 64], "BLOCK_H": [16, 32], "num_warps": [2, 4, 8],
                                  "num_stages": [1, 2, 3, 4]},
                         "points": [{"C": 1, "ctx": 8192}, {"C": 8, "ctx": 8192}, {"C": 64, "ctx": 8192},
                                    {"C": 2, "ctx": 32768}, {"C": 32, "ctx": 4096}, {"C": 128, "ctx": 2048}]},
    "matmul": {"card": "matmul", "role": "development",
               "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128, 256], "BLOCK_K": [32, 64], "num_warps": [4, 8],
                        "num_stages": [2, 3, 4]},
               "points": [{"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 4096},
                          {"M": 128, "N": 8192, "K": 8192}, {"M": 2048, "N": 2048, "K": 8192},
                          {"M": 16384, "N": 1024, "K": 4096}, {"M": 512, "N": 4096, "K": 4096}]},
}
DEFAULT_KERNELS = "flash_attention,splitk_gemm,moe_gather,softmax_online,rmsnorm"


# ------------------------------------------------------------------ pure helpers
def sweep_configs(axes: dict[str, list]) -> list[dict[str, Any]]:
    """Every combination of the axes, in axis order."""
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*(axes[n] for n in names))]


def load_kernel(name: str):
    """(KernelCard, launcher points) for a SWEEPS entry: a built-in card, or an example's bare
    `_kernel` with the file as its launcher."""
    from occmodel.source import load_source
    entry = SWEEPS[name]
    if "card" in entry:
        card = load_source(entry["card"])
        return card, [card.resolve_point(p) for p in entry["points"]]
    path = str(ROOT / entry["file"])
    kernel = load_source(f"{path}:_kernel", launcher=path)
    return kernel, [dict(p) for p in kernel.default_points]


def full_config(kernel, cfg: dict[str, Any]) -> dict[str, Any]:
    """What the kernel launches with: a card resolves its defaults; a launcher reads the swept keys."""
    return kernel.resolve(cfg) if getattr(kernel, "kind", "") != "bare kernel" else dict(cfg)


def valid_configs(kernel, cfgs: list[dict]) -> list[dict]:
    """The configs the kernel accepts (a card's rules, e.g. decode's PAGE_SIZE % BLOCK_T)."""
    out = []
    for c in cfgs:
        try:
            full_config(kernel, c)
        except Exception:  # noqa: BLE001 - a combination the card rules out
            continue
        out.append(c)
    return out


class InputError(Exception):
    """Bad input to a subcommand: one line, exit status 2."""


def read_json(path: str) -> dict[str, Any]:
    """A `measure` (or session 2 rank_sweep) JSON file; InputError naming it when it is not one."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"cannot read {path!r} as a rank_study JSON file: {exc}".splitlines()[0]) from None
    if not isinstance(doc, dict) or "kernels" not in doc:
        raise InputError(f"{path!r} is not a rank_study JSON file (no 'kernels'); give a `measure` output")
    return doc


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


# ------------------------------------------------------------------ GPU side
def _warm_chunk(name: str, cfgs: list[dict], point: dict) -> list[str]:
    """(worker process) launch each config once at `point` so Triton's disk cache holds its kernel."""
    import torch
    out = []
    try:
        kernel, _ = load_kernel(name)
        inputs = kernel.make_inputs(full_config(kernel, cfgs[0]), point, device="cuda", seed=0)
    except Exception as exc:  # noqa: BLE001
        return [f"inputs: {type(exc).__name__}: {exc}".splitlines()[0][:300]] * len(cfgs)
    for cfg in cfgs:
        try:
            kernel.launch(inputs, full_config(kernel, cfg))
            torch.cuda.synchronize()
            out.append("")
        except Exception as exc:  # noqa: BLE001 - a failing config is data
            out.append(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001 - the context is lost: the rest are not warmed, not failed
                return out + [""] * (len(cfgs) - len(out))
    return out


def warm(name: str, cfgs: list[dict], point: dict, workers: int) -> list[str]:
    """Parallel JIT warm-up of every config at one point; per config '' or the error."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    chunks = [list(range(i, len(cfgs), workers)) for i in range(min(workers, len(cfgs)))]
    errors = [""] * len(cfgs)
    try:
        with ProcessPoolExecutor(max_workers=len(chunks), mp_context=mp.get_context("spawn")) as pool:
            futs = [(c, pool.submit(_warm_chunk, name, [cfgs[i] for i in c], point)) for c in chunks]
            for c, f in futs:
                try:
                    for i, e in zip(c, f.result(timeout=480)):
                        errors[i] = e
                except Exception as exc:  # noqa: BLE001
                    for i in c:
                        errors[i] = f"warm-up worker: {type(exc).__name__}"
    except Exception as exc:  # noqa: BLE001
        print(f"warm-up pool failed ({type(exc).__name__}); the timing process compiles", file=sys.stderr)
    again = [i for i, e in enumerate(errors) if _environmental(e)]
    if again and len(chunks) > 1:
        # the workers' inputs together outgrew the GPU (15 x 17.7 GB on an 80 GB H100), or a worker died:
        # the machine's fault, not the config's -- warm those in one process before calling them failed
        print(f"warm-up: {len(again)} configs hit {errors[again[0]][:60]!r} with {len(chunks)} workers; "
              "warming them again in one", file=sys.stderr)
        for i, e in zip(again, warm(name, [cfgs[i] for i in again], point, 1)):
            errors[i] = e
    return errors


def _environmental(error: str) -> bool:
    """A warm-up error that says the machine ran short (GPU memory) or a worker died, not the config."""
    low = error.lower()
    return "out of memory" in low or "outofmemoryerror" in low or error.startswith("warm-up worker:")


def _check(kernel, cfg, inputs, ref, point) -> dict[str, Any]:
    """The output of one launch against the reference: validate's gate (occmodel.gpu.compare)."""
    import dataclasses
    import torch
    from occmodel import gpu
    out = kernel.launch(inputs, cfg)
    torch.cuda.synchronize()
    return dataclasses.asdict(gpu.compare(out, ref, cfg, point))


def measure_point(kernel, cfgs: list[dict], skip: list[str], point: dict, samples: int, l2: int, seed: int,
                  group: int = 16, progress: Path | None = None) -> tuple[list[list[float]], list[str], list[dict | None]]:
    """Per config: its samples (s per launch), '' or an error, the correctness check. Configs in
    random order, in groups of `group` whose benches live together; each group times `samples`
    rounds, every config once per round in a fresh random order. `progress`: a file that holds the
    index of the config being checked or timed (what `measure_isolated` blames for a lost context)."""
    def mark(i: int) -> None:
        if progress is not None:
            progress.write_text(str(i))
    import torch
    from occmodel import gpu
    rng = random.Random(seed)
    full = [full_config(kernel, c) for c in cfgs]
    sets = gpu.input_sets(kernel, full[0], point, l2, seed=100)

    pristine = kernel.make_inputs(full[0], point, device="cuda", seed=100)

    def fresh() -> dict:
        """A copy of the first input set as make_inputs built it, untouched: a kernel that accumulates
        into an argument (embedding_bwd's grad_weight) changes sets[0] with every launch, so each check
        runs on its own fresh copy, never on what earlier configs' checks and timings left behind. A
        clone, not a second make_inputs call: torch.multinomial on CUDA is not reproducible for one
        seed (session 10: embedding_bag's Zipf indices differed in 9 and 21,395 places between two
        calls, and every config failed a check against the other call's reference)."""
        return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in pristine.items()}

    ref = kernel.reference(fresh()).float() if kernel.has_reference() else None
    times: list[list[float]] = [[] for _ in cfgs]
    errors = list(skip)
    checks: list[dict | None] = [None] * len(cfgs)
    order = [i for i in range(len(cfgs)) if not errors[i]]
    rng.shuffle(order)
    for g in range(0, len(order), group):
        benches = {}
        for i in order[g:g + group]:
            mark(i)
            try:
                if ref is not None:
                    checks[i] = _check(kernel, full[i], fresh(), ref, point)
                benches[i] = gpu.Bench(lambda s, cfg=full[i]: kernel.launch(s, cfg), sets, flush_bytes=2 * l2)
                benches[i].sample()                                  # re-warm after capture
            except Exception as exc:  # noqa: BLE001 - one config never stops the sweep
                errors[i] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                torch.cuda.synchronize()
        for _ in range(samples):
            names = list(benches)
            rng.shuffle(names)
            for i in names:
                mark(i)
                times[i].append(benches[i].sample())
        del benches
        torch.cuda.empty_cache()
    del sets, ref
    torch.cuda.empty_cache()
    return times, errors, checks


def _measure_child(name: str, cfgs: list[dict], skip: list[str], point: dict, samples: int, l2: int, seed: int,
                   progress: str):
    """(child process) `measure_point` for one kernel at one point."""
    kernel, _ = load_kernel(name)
    return measure_point(kernel, cfgs, skip, point, samples, l2, seed, progress=Path(progress))


def without_faults(run, skip: list[str], describe, log, retries: int = 8):
    """`run(skip, progress)` until it returns; when it raises, the config index it last wrote to the
    file `progress` is blamed: recorded in `skip` as 'fault: ...' and `run` called again without it, at
    most `retries` times. A failure with no config to blame (no index, or one already skipped) is raised."""
    import tempfile
    skip = list(skip)
    for _ in range(retries + 1):
        with tempfile.TemporaryDirectory() as tmp:
            progress = Path(tmp) / "progress"
            try:
                return run(skip, progress)
            except Exception as exc:  # noqa: BLE001 - the run's context is gone; blame its config
                text = progress.read_text() if progress.exists() else ""
                if not text.isdigit() or int(text) >= len(skip) or skip[int(text)]:
                    raise
                i = int(text)
                skip[i] = f"fault: {type(exc).__name__}: {exc}".splitlines()[0][:300]
                log(f"{describe(i)} faulted ({skip[i]}); measuring again without it")
    raise RuntimeError(f"more than {retries} configs faulted")


def measure_isolated(name: str, cfgs: list[dict], skip: list[str], point: dict, samples: int, l2: int, seed: int,
                     log):
    """`measure_point` in a child process of its own, so that a config that faults (an illegal memory
    access leaves the CUDA context unusable for every later launch) costs that config alone (see
    `without_faults`)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    def run(skip_now: list[str], progress: Path):
        with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
            return pool.submit(_measure_child, name, cfgs, skip_now, point, samples, l2, seed, str(progress)).result()

    return without_faults(run, skip, lambda i: f"{name} {point}: config {cfgs[i]}", log)


def _have_gpu(command: str) -> bool:
    """True when a CUDA GPU is visible; else one line on stderr saying `command` needs one."""
    from occmodel.errors import OccmodelError
    try:
        from occmodel import gpu
        gpu.require_gpu()
        return True
    except (ImportError, OccmodelError) as exc:
        print(f"rank_study: error: {command} needs a CUDA GPU: {exc}".splitlines()[0], file=sys.stderr)
        return False


def calibrate(spec, log) -> dict[str, Any]:
    from occmodel import gpu_calibrate
    t0 = time.time()
    cal = gpu_calibrate.measure(spec, quick=False)
    log(f"calibration in {time.time() - t0:.1f} s: latency {cal.latency_ns} ns, curve {cal.latency_curve}")
    return {**cal.as_dict(), "at": time.strftime("%Y-%m-%dT%H:%M:%S")}


def cmd_measure(args) -> int:
    t_start = time.time()

    def log(m: str) -> None:
        print(f"[{time.time() - t_start:6.1f} s] {m}", file=sys.stderr, flush=True)

    if not _have_gpu("measure"):
        return 2
    from occmodel import gpu
    from occmodel.spec import load_spec
    spec = load_spec(args.spec)
    env = gpu.device_info()
    l2 = env.get("l2_bytes") or 50 * 2**20
    doc: dict[str, Any] = {"spec": spec.name, "env": env, "samples": args.samples, "calibrations": [],
                           "kernels": [], "command": " ".join(sys.argv)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        doc["wall_s"] = round(time.time() - t_start, 1)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=None, default=str) + "\n")
        os.replace(tmp, out)

    for _ in range(args.calibrations):
        doc["calibrations"].append(calibrate(spec, log))
    save()
    for name in args.kernels.split(","):
        t0 = time.time()
        try:
            kernel, points = load_kernel(name)
            cfgs = valid_configs(kernel, sweep_configs(SWEEPS[name]["axes"]))[:args.limit or None]
            entry = {"kernel": name, "role": SWEEPS[name]["role"], "axes": SWEEPS[name]["axes"], "points": points,
                     "configs": cfgs, "samples": [], "errors": [], "checks": []}
            for j, pt in enumerate(points):
                skip = warm(name, cfgs, pt, args.workers)
                log(f"{name} {pt}: warm-up {time.time() - t0:.0f} s, {sum(bool(e) for e in skip)} failed")
                times, errors, checks = measure_isolated(name, cfgs, skip, pt, args.samples, l2, j, log)
                entry["samples"].append(times)
                entry["errors"].append(errors)
                entry["checks"].append(checks)
                bad = sum(1 for c in checks if c and not c["ok"])
                log(f"{name} {pt}: {sum(bool(t) for t in times)} timed, {bad} wrong output, "
                    f"{time.time() - t0:.0f} s so far")
        except Exception as exc:  # noqa: BLE001 - report and go on to the next kernel
            entry = {"kernel": name, "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
            log(f"{name} failed: {entry['error']}")
        doc["kernels"].append(entry)
        save()
    for _ in range(args.calibrations_after):
        doc["calibrations"].append(calibrate(spec, log))
    save()
    log(f"wrote {out}")
    return 0


# ------------------------------------------------------------------ evaluation (CPU)
def point_kernel(name: str, point: dict):
    """The kernel specialized as it is launched at `point` (a bare kernel's constexprs and
    argument types come from the launcher's example_args at that point)."""
    from occmodel.source import load_source
    entry = SWEEPS[name]
    if "card" in entry:
        return load_source(entry["card"])
    path = str(ROOT / entry["file"])
    return load_source(f"{path}:_kernel", launcher=path).at_point(point)


def measured_entries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per kernel of a `measure` file: name, role, points, configs, median seconds (None: no time)."""
    out = []
    for k in doc["kernels"]:
        if "error" in k:
            continue
        med = [[median(k["samples"][j][i]) if not k["errors"][j][i] and (k["checks"][j][i] or {}).get("ok", True)
                else None for j in range(len(k["points"]))] for i in range(len(k["configs"]))]
        spread = [[_spread(k["samples"][j][i]) for j in range(len(k["points"]))] for i in range(len(k["configs"]))]
        timed = [[k["samples"][j][i] if med[i][j] is not None else None for j in range(len(k["points"]))]
                 for i in range(len(k["configs"]))]
        out.append({"kernel": k["kernel"], "role": k["role"], "points": k["points"], "configs": k["configs"],
                    "median_s": med, "spread": spread, "samples": timed})
    return out


def legacy_entries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """decode_attention and matmul from session 2's rank_sweep file (medians of 5 samples, us)."""
    out = []
    for k in doc["kernels"]:
        cfgs = [dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in row["config"].split(","))
                for row in k["configs"]]
        med = [[None if t is None else t * 1e-6 for t in row["measured_us"]] for row in k["configs"]]
        out.append({"kernel": k["kernel"], "role": "development", "points": k["points"], "configs": cfgs,
                    "median_s": med, "spread": [[None] * len(k["points"]) for _ in cfgs]})
    return out


def _spread(xs: list[float]) -> float | None:
    """(max - min) / median of one config's samples at one point: its run-to-run noise."""
    return (max(xs) - min(xs)) / statistics.median(xs) if len(xs) >= 2 else None


def metrics(measured: list[float | None], estimated: list[float], k: int = 3, within: float = 0.03,
            samples: list[list[float] | None] | None = None) -> dict:
    """Over configs with a time and a finite estimate: Spearman; the measured best among the k
    smallest estimates; the estimate's #1 within `within` of the measured best (a tie for #1 on
    the estimate counts by its slowest member: the estimate could not choose); median
    |estimate / measured - 1|. With each config's timing samples (`samples`, aligned with `measured`),
    also best_or_tie_in_top3: the measured best, or a config the run cannot tell from it (noise_tied),
    among the k smallest estimates -- without samples, the strict figure."""
    from occmodel import rank as R
    idx = [i for i, (m, e) in enumerate(zip(measured, estimated)) if m is not None and math.isfinite(e)]
    if len(idx) < 2:
        return {"n": len(idx)}
    ms, es = [measured[i] for i in idx], [estimated[i] for i in idx]
    best = min(ms)
    st = R.standing(es)
    top = [i for i in range(len(es)) if st[i] == 1]
    picked = max(ms[i] for i in top)
    rho = R.spearman(ms, es)
    strict = R.best_in_top(ms, es, k)
    tie = strict
    if samples is not None and not strict:
        smp = [samples[i] for i in idx]
        tie = any(noise_tied(smp[i], smp[ms.index(best)]) for i in R.top_k(es, k))
    return {"n": len(idx), "spearman": None if math.isnan(rho) else round(rho, 4),
            "best_in_top3": strict, "best_or_tie_in_top3": tie, "top1_vs_best": round(picked / best, 4),
            "top1_within": picked <= (1 + within) * best, "ties_at_1": len(top),
            "best_est_rank": st[ms.index(best)],
            "median_abs_err": round(statistics.median(abs(e / m - 1) for m, e in zip(ms, es)), 4)}


def noise_tied(a: list[float] | None, best: list[float] | None) -> bool:
    """Can one run not tell config `a` from the measured best? Their samples' ranges overlap (the
    fastest of a's samples is no slower than the slowest of the best's): the samples of every config are
    taken round-robin across the run, so drift falls on both alike. False without two samples of each."""
    if not a or not best or len(a) < 2 or len(best) < 2:
        return False
    return min(a) <= max(best)


def evaluate_kernel(entry: dict[str, Any], spec, cals: dict[str, Any], log) -> dict[str, Any]:
    """Compile (cached) and estimate every config at every point; the metrics per calibration."""
    from occmodel import evidence as E
    from occmodel import rank as R
    name = entry["kernel"]
    per_point, rows = [], [{"config": c, "estimates_us": {}, "measured_us": []} for c in entry["configs"]]
    for j, pt in enumerate(entry["points"]):
        t0 = time.time()
        kernel = point_kernel(name, pt)
        cfgs = [kernel.resolve(c) for c in entry["configs"]]
        evs = E.gather(kernel, spec, cfgs, compile=True, progress=False)
        meas = [entry["median_s"][i][j] for i in range(len(cfgs))]
        smp = [entry["samples"][i][j] for i in range(len(cfgs))] if entry.get("samples") else None
        res = {"point": pt, "by_calibration": {}}
        for cname, cal in cals.items():
            est = [row[0] for row in R.estimate_many(kernel, spec, cal, cfgs, [pt], evs)]
            totals = [e.total_s for e in est]
            res["by_calibration"][cname] = metrics(meas, totals, samples=smp)
            for i, e in enumerate(est):
                rows[i]["estimates_us"].setdefault(cname, []).append(
                    round(e.total_s * 1e6, 2) if math.isfinite(e.total_s) else None)
                if cname == next(iter(cals)):
                    rows[i].setdefault("bound", []).append(e.bound)
                    rows[i].setdefault("resources", []).append(
                        {"blocks_per_sm": e.blocks_per_sm, "tiles_ahead": e.tiles_in_flight,
                         "tile_bytes": e.tile_per_iter, "regs": evs[i].regs, "spills": evs[i].spills})
        for i in range(len(cfgs)):
            rows[i]["measured_us"].append(None if meas[i] is None else round(meas[i] * 1e6, 3))
        per_point.append(res)
        log(f"{name} {pt}: {time.time() - t0:.0f} s; " + "; ".join(
            f"{c}: rho {m.get('spearman')} top3 {m.get('best_in_top3')} #1/best {m.get('top1_vs_best')}"
            for c, m in res["by_calibration"].items()))
    return {"kernel": name, "role": entry["role"], "points": entry["points"], "per_point": per_point, "configs": rows}


def calibrations(doc: dict[str, Any], spec, product: str | None) -> dict[str, Any]:
    """'measured N' for each calibration of the measure file, 'measured best' (each figure's best over them:
    calibrate.best_of, what `occmodel calibrate --repeats` keeps; the one itself when there is one), and
    'datasheet'."""
    from occmodel import calibrate as C
    keep = {f.name for f in __import__("dataclasses").fields(C.Calibration)}
    cals = {f"measured {n + 1}": C.Calibration(**{k: v for k, v in c.items() if k in keep})
            for n, c in enumerate(doc.get("calibrations", []))}
    if cals:
        cals["measured best"] = C.best_of(list(cals.values()))
    cals["datasheet"] = C.datasheet(spec, product)
    return cals


def summary(kernels: list[dict[str, Any]]) -> dict[str, Any]:
    """Per calibration: median Spearman, best in top 3, #1 within 3 %, median |est/meas - 1| over
    every (kernel, point) of the given kernels."""
    out: dict[str, Any] = {}
    cases = [(k["kernel"], pp) for k in kernels for pp in k["per_point"]]
    for cname in (cases[0][1]["by_calibration"] if cases else {}):
        ms = [pp["by_calibration"][cname] for _, pp in cases if pp["by_calibration"][cname].get("n", 0) >= 2]
        rhos = [m["spearman"] for m in ms if m.get("spearman") is not None]
        out[cname] = {"cases": len(ms), "median_spearman": round(statistics.median(rhos), 4) if rhos else None,
                      "best_in_top3": sum(m["best_in_top3"] for m in ms),
                      "best_or_tie_in_top3": sum(m.get("best_or_tie_in_top3", m["best_in_top3"]) for m in ms),
                      "top1_within_3pct": sum(m["top1_within"] for m in ms),
                      "median_abs_err": round(statistics.median(m["median_abs_err"] for m in ms), 4) if ms else None}
    return out


def markdown(doc: dict[str, Any]) -> str:
    lines = [f"# Rank model against measured times: {doc['title']}", "", f"Made by: `{doc['command']}`", "",
             doc["assumptions"], "", "## Summary", "",
             "| calibration | (kernel, point) cases | median Spearman | measured best in est. top 3 | ... or a "
             "config its samples cannot tell from it | est. #1 within 3 % of the best | median abs(est / meas - 1) |",
             "|---|---|---|---|---|---|---|"]
    for cname, s in doc["summary"].items():
        n = s["cases"]
        tie = "" if s.get("best_or_tie_in_top3") is None else f"{s['best_or_tie_in_top3']}/{n}"
        lines.append(f"| {cname} | {n} | {s['median_spearman']} | {s['best_in_top3']}/{n} | {tie} | "
                     f"{s['top1_within_3pct']}/{n} | {s['median_abs_err']} |")
    lines += ["", "The strict figure is the target's (issue 14). Beside it, a case also counts when a config in the "
              "estimate's top 3 is one this run cannot tell from the measured best: the ranges of their timing "
              "samples overlap (rank_study.noise_tied)."]
    for k in doc["kernels"]:
        lines += ["", f"## {k['kernel']} ({k['role']})", "",
                  "| point | calibration | n | Spearman | best in top 3 | est. #1 / best | ties at #1 | "
                  "best's est. rank | median abs err |", "|---|---|---|---|---|---|---|---|---|"]
        for pp in k["per_point"]:
            pt = ",".join(f"{a}={b}" for a, b in pp["point"].items())
            for cname, m in pp["by_calibration"].items():
                lines.append(f"| {pt} | {cname} | {m['n']} | {m.get('spearman')} | {m.get('best_in_top3')} | "
                             f"{m.get('top1_vs_best')} | {m.get('ties_at_1')} | {m.get('best_est_rank')} | "
                             f"{m.get('median_abs_err')} |")
    return "\n".join(lines) + "\n"


def same_triton(doc: dict[str, Any], any_triton: bool, where: str = "") -> str | None:
    """The triton the GPU ran for `doc`; InputError when it is not this one (unless `any_triton`): the
    estimates must come from the compiler that built what was timed."""
    import triton
    ran = doc.get("env", {}).get("triton")
    if ran and ran != triton.__version__ and not any_triton:
        raise InputError(f"{where}the GPU ran triton {ran}, this is {triton.__version__}: compile with the same "
                         "triton (or pass --any-triton)")
    return ran


def cmd_evaluate(args) -> int:
    t_start = time.time()

    def log(m: str) -> None:
        print(f"[{time.time() - t_start:6.1f} s] {m}", file=sys.stderr, flush=True)

    import triton
    from occmodel.spec import load_spec
    doc = read_json(args.measured)
    spec = load_spec(doc.get("spec", "sm_90"))
    ran = same_triton(doc, args.any_triton)
    entries = measured_entries(doc)
    if args.legacy:
        entries += legacy_entries(read_json(args.legacy))
    want = set(args.kernels.split(",")) if args.kernels else None
    entries = [e for e in entries if (want is None or e["kernel"] in want) and (args.role in ("all", e["role"]))]
    cals = calibrations(doc, spec, args.product)
    if args.calibrations_from:
        other = calibrations(read_json(args.calibrations_from), spec, args.product)
        cals.update({f"{n} (other start)": c for n, c in other.items() if n != "datasheet"})
    if args.calibration:
        cals = {n: c for n, c in cals.items() if n in args.calibration.split(",")}
    kernels = []
    for e in entries:
        kernels.append(evaluate_kernel(e, spec, cals, log))
    out = {"title": f"{args.role} kernels ({', '.join(k['kernel'] for k in kernels)})",
           "command": "python3 scripts/rank_study.py " + " ".join(sys.argv[1:]),
           "assumptions": (f"Times: {doc.get('env', {}).get('gpu')} ({doc.get('env', {}).get('driver')}), triton "
                           f"{ran}, torch {doc.get('env', {}).get('torch')}; the median of {doc.get('samples')} "
                           "CUDA-graph samples per config (L2 flushed). Estimates: occmodel.rank on compiles for "
                           f"{spec.arch} with triton {triton.__version__} (real registers, shared memory, spills, the "
                           "TTGIR's pipelining and dot layouts). A config that did not run or failed the correctness "
                           "check is left out of its point."),
           "summary": summary(kernels), "kernels": kernels}
    return write_evaluation(out, args.out, log)


def write_evaluation(out: dict[str, Any], path: str, log) -> int:
    """OUT.json and OUT.md of an evaluation, and its summary per calibration on stdout."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).with_suffix(".json").write_text(json.dumps(out, indent=1, default=str) + "\n")
    Path(path).with_suffix(".md").write_text(markdown(out))
    log(f"wrote {Path(path).with_suffix('.md')}")
    for cname, s in out["summary"].items():
        print(f"{cname}: {s}")
    return 0


# Every study timing that counts as development data now, each kernel from its latest timing: (measure file,
# kernels to take from it (None: all), legacy rank_sweep file to add). Held-out rounds join this list only
# after their one evaluation from their freeze.
MEASURED = [
    ("reports/h200/rank_study_h200.json", None, "reports/h200/rank_h200.json"),
    *[(f"reports/h200/rank_study_round{n}_h200.json", None, None) for n in range(2, 12)],
    ("reports/h200/rank_study_round12_h200.json", {"expert_histogram", "w8a8_gemm", "attn_bwd_dkdv"}, None),
    ("reports/h200/rank_study_round12b_h200.json", None, None),
    ("reports/h200/rank_study_round13_h200.json", None, None),
    ("reports/h200/rank_study_round14_h200.json", None, None),
    ("reports/h200/rank_study_round15_h200.json", {"dropout_add_layernorm", "block_sparse_attn", "streamk_gemm"}, None),
    ("reports/h200/rank_study_round15b_h200.json", None, None),
    ("reports/h200/rank_study_round16_h200.json", {"jsd_loss", "paged_prefill_attn", "moe_align"}, None),
    ("reports/h200/rank_study_round16b_h200.json", None, None),
    ("reports/h200/rank_study_round17_h200.json", None, None),
    ("reports/h200/rank_study_round18_h200.json", None, None),
    ("reports/h200/rank_study_round19_h200.json", None, None),
    ("reports/h200/rank_study_round20_h200.json", None, None),
    # round 21 ran on an H100 (no H200 was lent); w4a16_splitk_gemv from its re-timing with 3 workers (the
    # first run's 15 workers outgrew the 80 GB card: reports/GPU_NOTES.md section 28)
    ("reports/h200/rank_study_round21_h100.json", {"sliding_window_attn", "rmsnorm_fp8_quant", "maxpool_bwd_scatter"}, None),
    ("reports/h200/rank_study_round21_w4a16_h100.json", None, None),
    # round 22, timed on an H100 in session 24 (reports/GPU_NOTES.md section 30)
    ("reports/h200/rank_study_round22_h100.json", None, None),
    # round 23, timed on an H200 in session 25 (reports/GPU_NOTES.md section 31)
    ("reports/h200/rank_study_round23_h200.json", None, None),
    # round 24, timed on an H100 in session 26 (an H200 was asked for; reports/GPU_NOTES.md section 32)
    ("reports/h200/rank_study_round24_h100.json", None, None),
    # round 25, timed on an H200 in session 27 (reports/GPU_NOTES.md section 33)
    ("reports/h200/rank_study_round25_h200.json", None, None),
    # round 26, timed on an H100 in session 28 (an H200 was asked for; reports/GPU_NOTES.md section 34)
    ("reports/h200/rank_study_round26_h100.json", None, None),
    # round 27, timed on an H100 in session 29 (no kind named; reports/GPU_NOTES.md section 35)
    ("reports/h200/rank_study_round27_h100.json", None, None),
    # round 28, timed on an H200 in session 30 (no kind named; sparse_conv_gemm in a second call on the same machine
    # start: reports/GPU_NOTES.md section 36)
    ("reports/h200/rank_study_round28_h200.json", None, None),
    ("reports/h200/rank_study_round28_sparse_conv_h200.json", None, None),
    # round 29, timed on an H100 in session 32 (the H200 was refused; farthest_point_sample in a second call on the
    # same machine start: reports/GPU_NOTES.md section 38)
    ("reports/h200/rank_study_round29_h100.json", None, None),
    ("reports/h200/rank_study_round29_fps_h100.json", None, None),
    # round 30, timed on an H100 in session 32 (conv3d_ndhwc in a second call on the same machine start;
    # reports/GPU_NOTES.md section 39) and gnn_scatter_add on another H100 start in session 34 (section 41)
    ("reports/h200/rank_study_round30a_h100.json", None, None),
    ("reports/h200/rank_study_round30_conv3d_h100.json", None, None),
    ("reports/h200/rank_study_round30_gnn_h100.json", None, None),
    # round 31, timed on an H100 in session 34 (reports/GPU_NOTES.md section 42)
    ("reports/h200/rank_study_round31_h100.json", None, None),
    # round 32, timed on an H100 in session 35 (reports/GPU_NOTES.md section 43)
    ("reports/h200/rank_study_round32_h100.json", None, None),
    # round 33, timed on two H100 starts in session 36 (reports/GPU_NOTES.md section 44): stream_compact in the second
    ("reports/h200/rank_study_round33_h100.json", None, None),
    ("reports/h200/rank_study_round33_sc_h100.json", None, None),
    # round 34, timed on an H100 in session 37 (reports/GPU_NOTES.md section 45; the same machine's re-timing,
    # rank_study_round34_rerun_h100.json, is the run-to-run check, not a second case)
    ("reports/h200/rank_study_round34_h100.json", None, None),
    # round 35, timed on an H100 in session 38 (reports/GPU_NOTES.md section 46; rank_study_round35_rerun_h100.json
    # is the run-to-run check of three of its kernels)
    ("reports/h200/rank_study_round35_h100.json", None, None),
]


def print_log(m: str) -> None:
    """A worker process's progress line (picklable, unlike a command's own log closure)."""
    print(f"[worker] {m}", file=sys.stderr, flush=True)


def cmd_development(args) -> int:
    """The current model on every development case (MEASURED), one calibration of each file's own
    machine start: per (kernel, point) metrics and the summary, as `evaluate` writes them."""
    t_start = time.time()

    def log(m: str) -> None:
        print(f"[{time.time() - t_start:6.1f} s] {m}", file=sys.stderr, flush=True)

    import triton
    from occmodel.spec import load_spec
    if args.jobs < 1:
        raise InputError(f"--jobs {args.jobs}: must be 1 or more (kernels evaluated at once)")
    if args.kernels:
        timed = set()
        for path, take, legacy in MEASURED:
            doc = read_json(str(ROOT / path))
            timed |= {k["kernel"] for k in doc.get("kernels", []) if take is None or k["kernel"] in take}
            timed |= {k["kernel"] for k in read_json(str(ROOT / legacy)).get("kernels", [])} if legacy else set()
        off = [k for k in args.kernels.split(",") if k not in timed]
        if off:
            raise InputError(f"{off[0]!r} is not a development kernel (held out and not judged yet, or never timed); "
                             f"allowed: {', '.join(sorted(timed))}")
    jobs = []
    for path, take, legacy in MEASURED:
        doc = read_json(str(ROOT / path))
        same_triton(doc, args.any_triton, f"{path}: ")
        spec = load_spec(doc.get("spec", "sm_90"))
        cals = calibrations(doc, spec, args.product)
        if args.calibration not in cals:
            raise InputError(f"{path} has no calibration {args.calibration!r}; it has: {', '.join(cals)}")
        entries = measured_entries(doc) + (legacy_entries(read_json(str(ROOT / legacy))) if legacy else [])
        want = set(args.kernels.split(",")) if args.kernels else None
        jobs += [(e, spec, {args.calibration: cals[args.calibration]}) for e in entries
                 if (take is None or e["kernel"] in take) and (want is None or e["kernel"] in want)]
    if args.jobs > 1:          # kernels in worker processes (each compiles its own configs), order kept
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(evaluate_kernel, e, spec, cals, print_log) for e, spec, cals in jobs]
            kernels = [f.result() for f in futures]
    else:
        kernels = [evaluate_kernel(e, spec, cals, log) for e, spec, cals in jobs]
    out = {"title": f"the current model on every development case ({len(kernels)} kernels)",
           "command": "python3 scripts/rank_study.py " + " ".join(sys.argv[1:]),
           "assumptions": (f"Times: each file's run -- the H200's, rounds 21, 22 and 24 an H100's (files named _h100; "
                           f"reports/GPU_NOTES.md) --, the median of its CUDA-graph samples "
                           f"per config, L2 flushed; constants: calibration {args.calibration!r} of that file's own "
                           f"machine start. Estimates: occmodel.rank on compiles for sm_90 with triton "
                           f"{triton.__version__}. Every kernel here was held out once and judged from its freeze; "
                           "these figures are the model as it is now, on data it has been developed on."),
           "summary": summary(kernels), "kernels": kernels}
    return write_evaluation(out, args.out, log)


def cmd_figure(args) -> int:
    """One PNG per `evaluate` file: a panel per (kernel, point), every config a dot at (measured / the
    point's best measured, estimate / the point's best estimate) on log axes, the measured best ringed
    and the estimate's #1 marked; each panel's title gives the file's Spearman and #1 / best for the
    calibration (its estimates are rounded to 0.01 us, so a recomputation can differ in ties)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from occmodel import rank as R
    doc = read_json(args.evaluated)
    cases = []
    for k in doc.get("kernels", []):
        for j, pp in enumerate(k["per_point"]):
            rows = [(c["measured_us"][j], c["estimates_us"].get(args.calibration, [None] * (j + 1))[j])
                    for c in k["configs"]]
            rows = [(m, e) for m, e in rows if m and e]
            if len(rows) >= 2:
                cases.append((k["kernel"], j, pp["by_calibration"].get(args.calibration, {}), rows))
    if not cases:
        raise InputError(f"{args.evaluated}: no (kernel, point) with calibration {args.calibration!r} and >= 2 timed "
                         "configs; calibrations there: " + ", ".join(sorted({c for k in doc.get('kernels', [])
                                                                             for c in k['per_point'][0]['by_calibration']})))
    cols = 3
    nrows = -(-len(cases) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.6 * nrows), squeeze=False)
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullLocator
    for ax, (name, j, m, rows) in zip(axes.flat, cases):
        meas, est = [m for m, _ in rows], [e for _, e in rows]
        bm, be = min(meas), min(est)
        x, y = [m / bm for m in meas], [e / be for e in est]
        ax.scatter(x, y, s=12, alpha=0.7)
        ib, ie = meas.index(bm), est.index(be)
        ax.scatter([x[ib]], [y[ib]], s=90, facecolors="none", edgecolors="green", label="measured best")
        ax.scatter([x[ie]], [y[ie]], s=60, marker="x", color="red", label="estimate's #1")
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis, vals in ((ax.xaxis, x), (ax.yaxis, y)):
            subs = (1.0, 1.5, 2.0, 3.0, 5.0) if max(vals) > 2 else (1.0, 1.05, 1.1, 1.25, 1.5)
            axis.set_major_locator(LogLocator(base=10, subs=subs))
            axis.set_major_formatter(FormatStrFormatter("%.3g"))
            axis.set_minor_locator(NullLocator())
        rho, top1 = m.get("spearman", R.spearman(meas, est)), m.get("top1_vs_best", meas[ie] / bm)
        ax.set_title(f"{name} point {j + 1}: rho {rho:.2f}, #1/best {top1:.2f}", fontsize=9)
        ax.set_xlabel("measured / best measured", fontsize=8)
        ax.set_ylabel("estimate / best estimate", fontsize=8)
    for ax in list(axes.flat)[len(cases):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7, loc="upper left")
    gpu = re.search(r"Times: (NVIDIA [^(,]+?)\s*\(", doc.get("assumptions", ""))
    fig.suptitle(f"{doc.get('title', args.evaluated)} -- {gpu.group(1) if gpu else 'GPU'} timings vs rank estimates "
                 f"({args.calibration})", fontsize=10)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=80)
    print(f"wrote {args.out} ({len(cases)} panels)")
    return 0


def cmd_rerun(args) -> int:
    """Two `measure` files of the same sweeps (separate machine starts): how well the GPU agrees with
    itself (the ceiling for any model) and how the calibrations moved."""
    from occmodel import rank as R
    docs = [read_json(p) for p in (args.first, args.second)]
    lines = [f"# Run to run: {args.first} vs {args.second}", "",
             "Made by: `python3 scripts/rank_study.py " + " ".join(sys.argv[1:]) + "`", "",
             "## The same sweep timed on two machine starts", "",
             "| kernel | point | configs | Spearman (run 1 vs run 2) | median abs(t2 / t1 - 1) | run 1's best, run 2's rank of it |",
             "|---|---|---|---|---|---|"]
    by_name = [{e["kernel"]: e for e in measured_entries(d)} for d in docs]
    for name in [n for n in by_name[1] if n in by_name[0]]:
        a, b = by_name[0][name], by_name[1][name]
        for j, pt in enumerate(a["points"]):
            idx = [i for i in range(len(a["configs"])) if a["median_s"][i][j] and b["median_s"][i][j]]
            ta, tb = [a["median_s"][i][j] for i in idx], [b["median_s"][i][j] for i in idx]
            best = min(range(len(ta)), key=lambda i: ta[i])
            lines.append(f"| {name} | {','.join(f'{k}={v}' for k, v in pt.items())} | {len(idx)} | "
                         f"{R.spearman(ta, tb):.4f} | {statistics.median(abs(y / x - 1) for x, y in zip(ta, tb)):.4f} | "
                         f"{R.standing(tb)[best]} |")
    lines += ["", "## Calibrations (every one of both runs)", "",
              "| run | # | latency_ns (the threshold pick) | " + " | ".join(
                  f"{q / 1024:g} KB/SM" for q, _ in docs[0]["calibrations"][0]["latency_curve"]) + " | copy GB/s |",
              "|---|---|---|" + "---|" * len(docs[0]["calibrations"][0]["latency_curve"]) + "---|"]
    for r, d in enumerate(docs):
        for n, c in enumerate(d["calibrations"]):
            lines.append(f"| {r + 1} | {n + 1} | {c['latency_ns']:g} | " + " | ".join(
                f"{ns:g}" for _, ns in c["latency_curve"]) + f" | {c['bandwidth_gbs']:g} |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def fault_report(doc: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What a `measure` file says went wrong: lines per kernel and point (configs timed, failed and
    wrong, each failed config with its error, the first wrong checks), and the commands that replay the
    first config recorded as 'fault: ...' (the one that killed its process's CUDA context): `probe`
    alone, then under compute-sanitizer. Pure: reads the document only."""
    lines: list[str] = []
    first = None
    for k in doc["kernels"]:
        if "error" in k:
            lines.append(f"{k['kernel']}: did not run: {k['error']}")
            continue
        missing = [key for key in ("configs", "samples", "errors", "checks") if key not in k]
        if missing:
            raise InputError(f"kernel {k.get('kernel')!r} has no {missing[0]!r}: not a `measure` output "
                             f"(an `evaluate` file?); give the file `measure` wrote")
        axes = list(k.get("axes") or {})
        for j, errs in enumerate(k["errors"]):
            checks = k["checks"][j]
            wrong = [(i, c) for i, c in enumerate(checks) if c and not c.get("ok", True)]
            timed = sum(bool(t) for t in k["samples"][j])
            lines.append(f"{k['kernel']} point {j}: {timed} of {len(errs)} timed, "
                         f"{sum(bool(e) for e in errs)} failed, {len(wrong)} wrong")
            for i, e in enumerate(errs):
                if e:
                    lines.append(f"  config {i} {k['configs'][i]}: {e}")
                    if first is None and e.startswith("fault:"):
                        first = (k["kernel"], j, {a: k["configs"][i][a] for a in axes if a in k["configs"][i]})
            for i, c in wrong[:3]:
                lines.append(f"  config {i} {k['configs'][i]}: wrong: {c}")
    commands: list[str] = []
    if first is not None:
        probe = (f"python3 scripts/rank_study.py probe {first[0]} --point {first[1]} "
                 f"--config '{json.dumps(first[2])}'")
        commands = [f"CUDA_LAUNCH_BLOCKING=1 {probe}", f"compute-sanitizer --tool memcheck --print-limit 5 {probe}"]
    return lines, commands


def cmd_faults(args) -> int:
    """Print what went wrong in a `measure` file and, on stdout, the commands that replay its first fault."""
    lines, commands = fault_report(read_json(args.file))
    for line in lines:
        print(line, file=sys.stderr)
    for c in commands:
        print(c)
    return 0


def cmd_probe(args) -> int:
    """Launch one config of one sweep once at one point, synchronise, check: the command to run under
    compute-sanitizer when `measure` records a config as 'fault: ...'."""
    kernel, points = load_kernel(args.kernels)
    if not 0 <= args.point < len(points):
        raise InputError(f"--point {args.point} is out of range; {args.kernels} has points 0..{len(points) - 1}")
    try:
        swept = json.loads(args.config)
    except ValueError as exc:
        raise InputError(f"--config {args.config!r} is not JSON ({exc}); give e.g. '{{\"BLOCK_M\": 64}}'") from None
    if not isinstance(swept, dict) or set(swept) != set(SWEEPS[args.kernels]["axes"]):
        raise InputError(f"--config {args.config!r} must give every swept value, no other: "
                         f"{', '.join(SWEEPS[args.kernels]['axes'])}")
    if not _have_gpu("probe"):
        return 2
    import torch
    cfg = full_config(kernel, swept)
    pt = points[args.point]
    inputs = kernel.make_inputs(cfg, pt, device="cuda", seed=100)
    ref = kernel.reference({k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}).float() \
        if kernel.has_reference() else None
    if ref is None:
        kernel.launch(inputs, cfg)
        torch.cuda.synchronize()
    print(f"{args.kernels} point {args.point} {cfg}: {_check(kernel, cfg, inputs, ref, pt) if ref is not None else 'ran'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="time the sweeps on the local GPU (writes raw JSON)")
    m.add_argument("--out", required=True)
    m.add_argument("--spec", default="sm_90")
    m.add_argument("--kernels", default=DEFAULT_KERNELS)
    m.add_argument("--samples", type=int, default=7)
    m.add_argument("--calibrations", type=int, default=2, help="full calibrations before the sweeps")
    m.add_argument("--calibrations-after", type=int, default=1, help="full calibrations after the sweeps")
    m.add_argument("--limit", type=int, default=0, help="only the first N configs of each sweep (a smoke run)")
    m.add_argument("--workers", type=int, default=min(12, os.cpu_count() or 4))
    m.set_defaults(run=cmd_measure)
    e = sub.add_parser("evaluate", help="estimate every measured config and compare (no GPU)")
    e.add_argument("measured", help="a `measure` JSON file")
    e.add_argument("--out", required=True, help="write OUT.json and OUT.md")
    e.add_argument("--role", default="held-out", choices=sorted({v["role"] for v in SWEEPS.values()}) + ["all"],
                   help="which kernels to judge: a role of SWEEPS (held-out = round 1, held-out-2, -3, ...), or all")
    e.add_argument("--kernels", default="", help="only these kernels (comma-separated)")
    e.add_argument("--legacy", default=None, help="also session 2's rank_sweep JSON (decode_attention, matmul)")
    e.add_argument("--calibration", default="", help="only these calibrations, e.g. 'measured 1,datasheet'")
    e.add_argument("--calibrations-from", default=None,
                   help="also every calibration of another `measure` file (e.g. another machine start)")
    e.add_argument("--product", default="H200", help="the spec product for datasheet figures")
    e.add_argument("--any-triton", action="store_true", help="compile with this triton even if the GPU ran another")
    e.set_defaults(run=cmd_evaluate)
    d = sub.add_parser("development", help="the current model on every development case (all measured rounds; no GPU)")
    d.add_argument("--out", required=True, help="write OUT.json and OUT.md")
    d.add_argument("--calibration", default="measured best",
                   help="each file's calibration to use (default: measured best, each figure's best over the file's "
                        "calibrations)")
    d.add_argument("--kernels", default="", help="only these kernels (comma-separated)")
    d.add_argument("--product", default="H200", help="the spec product for datasheet figures")
    d.add_argument("--any-triton", action="store_true", help="compile with this triton even if the GPU ran another")
    d.add_argument("--jobs", type=int, default=1,
                   help="evaluate this many kernels at once in worker processes (default 1; the result is the same)")
    d.set_defaults(run=cmd_development)
    f = sub.add_parser("figure", help="plot an `evaluate` file: measured vs estimated, a panel per (kernel, point)")
    f.add_argument("evaluated", help="an `evaluate` JSON file")
    f.add_argument("--out", required=True, help="the PNG to write")
    f.add_argument("--calibration", default="measured 1", help="which calibration's estimates (default: measured 1)")
    f.set_defaults(run=cmd_figure)
    rr = sub.add_parser("rerun", help="two `measure` files of the same sweeps: the GPU against itself")
    rr.add_argument("first")
    rr.add_argument("second")
    rr.add_argument("--out", required=True, help="write this markdown file")
    rr.set_defaults(run=cmd_rerun)
    pr = sub.add_parser("probe", help="launch one config once at one point and check it (GPU; for compute-sanitizer)")
    pr.add_argument("kernels", metavar="KERNEL", help="a sweep's name")
    pr.add_argument("--point", type=int, default=0, help="the index of the launcher's workload point")
    pr.add_argument("--config", required=True, help='the swept values as JSON, e.g. \'{"BLOCK_M": 64, ...}\'')
    pr.set_defaults(run=cmd_probe)
    fa = sub.add_parser("faults", help="what went wrong in a `measure` file; prints the commands that replay "
                                       "its first fault (probe, then compute-sanitizer) on stdout")
    fa.add_argument("file", help="a `measure` output")
    fa.set_defaults(run=cmd_faults)
    args = ap.parse_args(argv)
    unknown = [k for k in getattr(args, "kernels", "").split(",") if k and k not in SWEEPS]
    if unknown:
        print(f"rank_study: error: unknown kernel {unknown[0]!r}; allowed: {', '.join(SWEEPS)}", file=sys.stderr)
        return 2
    from occmodel.errors import OccmodelError
    try:
        return args.run(args)
    except (InputError, OccmodelError) as exc:      # a bad --product or spec: one line, not a traceback
        print(f"rank_study: error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
