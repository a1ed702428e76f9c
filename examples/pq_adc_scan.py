"""The list scan of an IVF-PQ vector index -- asymmetric distance computation (ADC) over product-quantized codes,
the inner step of FAISS's GPU IndexIVFPQ / IndexPQ search and RAFT / cuVS ivf_pq search -- a bare @triton.jit
kernel + its launcher:

    out[q, i] = bias[q] + sum_m LUT[q, m, codes[i, m]]          (fp32 sum; bias 0 without a bias)

codes: [n, M] uint8, one byte a sub-quantizer (M sub-quantizers of 256 centroids each: the PQ code of database
vector i), unit M stride, any row stride (codes stored with padded rows, or a row slice of a larger list are
read in place). LUT: [nq, M, 256] fp32 or fp16 (FAISS's useFloat16LookupTables), the distance from query q's
m-th sub-vector to each of the 256 centroids of sub-quantizer m, unit centroid stride, any query and m
strides. bias: [nq] fp32 or None -- the per-query term of the list being scanned (IVF-PQ by residual with
L2: the query's coarse distance ||q - c_list||^2, or the query-list inner product of an IP index). out:
[nq, n] fp32 (a fresh tensor, or the caller's [nq, n] view of a larger distance buffer with unit column
stride: FAISS writes each probed list's distances into its slot of a [nq, nprobe x max_list_len] buffer
before the k-selection). The query batch scans one shared code range (the list a batch of queries probes
together, as RAFT groups them, or a flat IndexPQ scan); the top-k selection is a separate kernel.

How this differs from examples/embedding_bag.py / embedding_gather.py (rows of a [V, D] table gathered by
int64 ids, D contiguous elements a row, summed over a bag or copied): here each gathered element is one scalar
of a tiny per-(query, sub-quantizer) table of 256 entries (1 KB fp32), addressed by a one-byte code; the
index tensor (the codes) is a dense [n, M] byte matrix read once and reused by every query of a program, the
sum runs over the M sub-quantizers (not over bag members), and the output is an [nq, n] all-pairs distance
matrix. examples/knn_topk.py computes exact distances with a dot; here the distances come only from table
lookups (no multiply at all).

Work split: one program per (BLOCK_N consecutive database vectors, BLOCK_Q consecutive queries), a 2-D grid
(vector blocks on axis 0, fastest: the programs of one query block run side by side and share the query
block's LUT in L1 / L2). A program walks the M sub-quantizers in steps of M_STEP: each step loads its
[BLOCK_N, M_STEP] tile of codes (M_STEP contiguous bytes a vector: one 2- or 4-byte load a row), then for its
BLOCK_Q queries x BLOCK_N vectors x M_STEP sub-quantizers looks the LUT entries up and reduces the step's
sub-quantizers into a [BLOCK_Q, BLOCK_N] fp32 accumulator. The code tile is loaded once and serves BLOCK_Q
queries (codes read from DRAM once per query block: the queries-per-program lever trades that re-read
against registers and the grid). The last step's sub-quantizers past M (M_STEP not dividing M) read code 0
and LUT 0 (masked): no branch. At the end bias[q] is added (HAS_BIAS, constexpr) and the tile stored.

Two ways to look an entry up (STAGE, a constexpr design choice):
  STAGE 0 -- gather straight from global memory: LUT + q x sq + m x sm + code, one scalar load a lookup, left
             to L1 (a query's whole LUT is 32-96 KB fp32: L1-resident for one query, contending for several).
  STAGE 1 -- stage the step's [BLOCK_Q, M_STEP, 256] slice of the LUT on chip first (one coalesced load of
             the whole slice, spread over the warps' registers), then tl.gather from it by the codes. On sm_90
             Triton lowers this gather warp-locally (shuffles within a warp, the 256 entries spread over its
             lanes -- the in-register lookup of FAISS's "fast scan", which keeps its tables in registers and
             looks them up with byte shuffles), shared memory only for layout conversions. The slice is loaded
             whole whatever BLOCK_N is: it pays when BLOCK_N lookups a (query, sub-quantizer) beat the scattered
             L1 requests of STAGE 0, against the shuffles a lookup costs.

Tunables: BLOCK_N (vectors a program: 64 / 128 / 256), BLOCK_Q (queries a program: 1 / 2 / 4, the code tile's
reuse), M_STEP (sub-quantizers a step: 2 / 4 -- lookups in flight per step against registers; 8 with 4 queries
spills its staged slice), STAGE (0 / 1, above), num_warps (4 / 8), num_stages (the step loop's loads feed only
their own step's lookups: nothing to pipeline, held at 1). On sm_90 every config of the sweep compiles at every
point without spills under triton 3.6 and 3.9 (registers and shared memory: the test file's
test_sweep_fits_the_points).
Problem parameters (a workload point): nq (queries of the batch), n (codes scanned), M (sub-quantizers),
dtype (the LUT's: "fp32" / "fp16"; out is always fp32), bias (1: a per-query bias added, 0: none).

KNOWN WRONG ON THE GPU (round 33's timing, an H100 with triton 3.6.0; reports/GPU_NOTES.md section 44): with an
fp32 LUT, the STAGE 0 configs whose [BLOCK_Q, BLOCK_N, M_STEP] gather holds two or more lookups a thread (e.g.
BLOCK_N 64 x BLOCK_Q 4, BLOCK_N 256 x BLOCK_Q 1 on 4 warps) return distances off by 6-13 % (relative L2); fp16
LUTs, the other configs and Triton's interpreter agree with the reference. Triton 3.6's TTGIR of a failing config
and its passing twin differ only in the thread layout, so the compiler's lowering is the likely cause (not
proven); scripts/pq_adc_scan_fp32_probe.py reproduces it at a small shape.
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl


@triton.jit
def _kernel(CODES, LUT, BIAS, OUT, n, nq, M, stride_cn, stride_lq, stride_lm, stride_oq,
            HAS_BIAS: tl.constexpr, STAGE: tl.constexpr,
            BLOCK_N: tl.constexpr, BLOCK_Q: tl.constexpr, M_STEP: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_q = tl.program_id(1)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rq = pid_q * BLOCK_Q + tl.arange(0, BLOCK_Q)
    rm = tl.arange(0, M_STEP)
    n_ok = rn < n
    q_ok = rq < nq
    rq_c = tl.where(q_ok, rq, 0)                                  # a query past nq reads query 0's LUT
    code_ptr = CODES + rn.to(tl.int64)[:, None] * stride_cn + rm[None, :]
    lut_q = LUT + rq_c.to(tl.int64) * stride_lq                    # [BLOCK_Q] row pointers
    acc = tl.zeros([BLOCK_Q, BLOCK_N], dtype=tl.float32)
    for m0 in range(0, M, M_STEP):
        mm = m0 + rm
        m_ok = mm < M
        c = tl.load(code_ptr + m0, mask=n_ok[:, None] & m_ok[None, :], other=0).to(tl.int32)  # [N, MS]
        if STAGE:
            e = tl.arange(0, 256)
            tab = tl.load(lut_q[:, None, None] + mm[None, :, None] * stride_lm + e[None, None, :],
                          mask=m_ok[None, :, None], other=0.0).to(tl.float32)                # [Q, MS, 256]
            idx = tl.broadcast_to(tl.trans(c)[None, :, :], (BLOCK_Q, M_STEP, BLOCK_N))
            v = tl.gather(tab, idx, 2)                                                        # [Q, MS, N]
            acc += tl.sum(v, axis=1)
        else:
            off = mm[None, None, :] * stride_lm + c[None, :, :]                               # [1, N, MS]
            v = tl.load(lut_q[:, None, None] + off, mask=m_ok[None, None, :], other=0.0)      # [Q, N, MS]
            acc += tl.sum(v.to(tl.float32), axis=2)
    if HAS_BIAS:
        acc += tl.load(BIAS + rq_c)[:, None]
    out_ptr = OUT + rq.to(tl.int64)[:, None] * stride_oq + rn[None, :]
    tl.store(out_ptr, acc, mask=q_ok[:, None] & n_ok[None, :])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-33"
DTYPES = ("fp32", "fp16")                  # the LUT's dtype (out is fp32)
TUNABLES = ("BLOCK_N", "BLOCK_Q", "M_STEP", "STAGE", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 128, "BLOCK_Q": 2, "M_STEP": 4, "STAGE": 0, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 3 x 2 x 2 x 2 = 72 configs (64-256 vectors x 1-4 queries a program, 2 / 4
# sub-quantizers a step, LUT entries gathered from global memory or looked up in a slice held on chip; a loop
# whose loads feed only their own step: num_stages 1). M_STEP 8 with 4 queries is left out: its staged
# [4, 8, 256] fp32 slice spills on sm_90 (2-4 spills under triton 3.6 at 4 and 8 warps, 2 under 3.9 at 64 x 8 warps)
SWEEP_AXES = {"BLOCK_N": [64, 128, 256], "BLOCK_Q": [1, 2, 4], "M_STEP": [2, 4], "STAGE": [0, 1],
              "num_warps": [4, 8], "num_stages": [1]}
N_CENTROIDS = 256
MAX_CODES = 2**31 - 2**16                  # n x row stride within int64; n itself within int32 for the hooks

POINTS = [
    # SIFT1B (128-d) IVF-PQ with PQ32 (FAISS's GPU benchmark index IVF262144,PQ32 / bench_gpu_1bn.py): a batch
    # of 64 queries scanning 900k codes of the lists it probes, fp32 LUT (32 KB a query). Codes 28.8 MB, LUT
    # 2.1 MB, out 230 MB; 1.84 G lookups: ~1-2 ms
    {"nq": 64, "n": 900_000, "M": 32, "dtype": "fp32", "bias": 1},
    # Deep1B (96-d) IVF-PQ with PQ64 (1.5 dims a sub-quantizer after OPQ rotation to 96), fp16 LUTs as FAISS's
    # GPU index needs beyond 48 sub-quantizers (useFloat16LookupTables): 16 queries over 400k codes, coarse
    # distance as the bias. Codes 25.6 MB, out 25.6 MB; 410 M lookups: ~0.3-0.5 ms
    {"nq": 16, "n": 400_000, "M": 64, "dtype": "fp16", "bias": 1},
    # 768-d text embeddings (MS MARCO passages, BERT / Contriever) with PQ96 (8 dims a sub-quantizer), online
    # serving at a batch of 4 queries over 300k codes, fp32 LUT (96 KB a query), inner-product index without a
    # bias. Codes 28.8 MB, out 4.8 MB; 115 M lookups: ~0.1-0.2 ms
    {"nq": 4, "n": 300_000, "M": 96, "dtype": "fp32", "bias": 0},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_cfg(cfg) -> None:
    b = cfg["BLOCK_N"]
    if not _is_int(b) or b < 16 or b > 1024 or b & (b - 1):
        raise ValueError(f"BLOCK_N={b!r} must be a power of two from 16 to 1024")
    q = cfg["BLOCK_Q"]
    if not _is_int(q) or q < 1 or q > 16 or q & (q - 1):
        raise ValueError(f"BLOCK_Q={q!r} must be a power of two from 1 to 16")
    s = cfg["M_STEP"]
    if not _is_int(s) or s < 1 or s > 32 or s & (s - 1):
        raise ValueError(f"M_STEP={s!r} must be a power of two from 1 to 32")
    st = cfg["STAGE"]
    if st not in (0, 1) or not isinstance(st, (int, bool)):
        raise ValueError(f"STAGE={st!r} must be 0 or 1")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: dtype fp32, bias 0)."""
    P = {"dtype": "fp32", "bias": 0, **point}
    nq, n, M = P["nq"], P["n"], P["M"]
    if not _is_int(nq) or nq < 1 or nq > 65535 * 16:
        raise ValueError(f"nq={nq!r} must be an int from 1 to {65535 * 16}")
    if not _is_int(n) or n < 1 or n > MAX_CODES:
        raise ValueError(f"n={n!r} must be an int from 1 to {MAX_CODES}")
    if not _is_int(M) or M < 1 or M > 1024:
        raise ValueError(f"M={M!r} must be an int from 1 to 1024 (sub-quantizers)")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    if P["bias"] not in (0, 1) or not isinstance(P["bias"], (int, bool)):
        raise ValueError(f"bias={P['bias']!r} must be 0 or 1")
    return P


def _torch_dtype(name: str):
    import torch
    return {"fp32": torch.float32, "fp16": torch.float16}[name]


def _items(P: dict) -> tuple:
    return tuple(sorted(P.items()))


@functools.lru_cache(maxsize=4)
def _codes(items: tuple, seed: int):
    """The point's codes [n, M] uint8 on the CPU (make_inputs' and example_args' one source): uniform over the
    256 centroids (a trained PQ's codes are near-uniform: k-means balances its cells)."""
    import numpy as np
    import torch
    P = dict(items)
    rng = np.random.Generator(np.random.PCG64(seed))
    return torch.from_numpy(rng.integers(0, N_CENTROIDS, size=(P["n"], P["M"]), dtype=np.uint8))


# ---------------------------------------------------------------- the kernel's launch
def _grid(n: int, nq: int, cfg) -> tuple:
    return (triton.cdiv(n, cfg["BLOCK_N"]), triton.cdiv(nq, cfg["BLOCK_Q"]))


def _kernel_args(codes, lut, bias, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). Without a bias,
    out stands in for BIAS (never read: HAS_BIAS 0)."""
    n, M = codes.shape
    return dict(CODES=codes, LUT=lut, BIAS=out if bias is None else bias, OUT=out, n=n, nq=lut.shape[0], M=M,
                stride_cn=codes.stride(0), stride_lq=lut.stride(0), stride_lm=lut.stride(1),
                stride_oq=out.stride(0), HAS_BIAS=int(bias is not None), STAGE=int(cfg["STAGE"]),
                BLOCK_N=cfg["BLOCK_N"], BLOCK_Q=cfg["BLOCK_Q"], M_STEP=cfg["M_STEP"])


def pq_adc_scan(codes, lut, bias=None, out=None, *, BLOCK_N: int = 128, BLOCK_Q: int = 2, M_STEP: int = 4,
                STAGE: int = 0, num_warps: int = 4, num_stages: int = 1):
    """out [nq, n] fp32: out[q, i] = bias[q] + sum_m lut[q, m, codes[i, m]].
    codes: [n, M] uint8, unit M stride (any row stride). lut: [nq, M, 256] fp32 / fp16, unit last stride (any
    other strides). bias: [nq] fp32 or None. out: None (a fresh contiguous tensor) or an [nq, n] fp32 tensor
    with unit column stride (a view into a larger distance buffer), written and returned. The tunables: the
    module doc."""
    import torch
    cfg = {"BLOCK_N": BLOCK_N, "BLOCK_Q": BLOCK_Q, "M_STEP": M_STEP, "STAGE": STAGE, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if codes.dim() != 2 or codes.dtype != torch.uint8:
        raise ValueError(f"codes must be a 2-d uint8 tensor [n, M]; got {tuple(codes.shape)} {codes.dtype}")
    n, M = codes.shape
    if M < 1 or (M > 1 and codes.stride(1) != 1) or codes.stride(0) < 0:
        raise ValueError(f"codes must have M >= 1 sub-quantizers with unit M stride; got shape "
                         f"{tuple(codes.shape)} strides {codes.stride()}")
    if n > MAX_CODES:
        raise ValueError(f"codes holds n={n} vectors; at most {MAX_CODES}")
    if lut.dim() != 3 or lut.dtype not in (torch.float32, torch.float16):
        raise ValueError(f"lut must be a 3-d float32 / float16 tensor [nq, M, 256]; got {tuple(lut.shape)} "
                         f"{lut.dtype}")
    nq = lut.shape[0]
    if lut.shape[1] != M or lut.shape[2] != N_CENTROIDS or nq < 1:
        raise ValueError(f"lut must be [nq >= 1, M={M}, {N_CENTROIDS}]; got {tuple(lut.shape)}")
    if lut.stride(2) != 1:
        raise ValueError(f"lut must have a unit centroid stride; got strides {lut.stride()}")
    if lut.device != codes.device:
        raise ValueError(f"lut must be on codes' device {codes.device}; got {lut.device}")
    if bias is not None:
        if bias.dim() != 1 or bias.shape[0] != nq or bias.dtype != torch.float32:
            raise ValueError(f"bias must be a 1-d float32 tensor of nq={nq} entries; got {tuple(bias.shape)} "
                             f"{bias.dtype}")
        if bias.device != codes.device:
            raise ValueError(f"bias must be on codes' device {codes.device}; got {bias.device}")
        bias = bias.contiguous()
    if out is None:
        out = torch.empty((nq, n), dtype=torch.float32, device=codes.device)
    elif (out.dim() != 2 or tuple(out.shape) != (nq, n) or out.dtype != torch.float32
          or (n > 1 and out.stride(1) != 1) or out.device != codes.device):
        raise ValueError(f"out must be a float32 [nq={nq}, n={n}] tensor with unit column stride on "
                         f"{codes.device}; got {tuple(out.shape)} {out.dtype} strides {out.stride()} on "
                         f"{out.device}")
    if n:
        _kernel[_grid(n, nq, cfg)](**_kernel_args(codes, lut, bias, out, cfg), num_warps=num_warps,
                                   num_stages=num_stages)
    return out


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """codes [n, M] uint8 (uniform), lut [nq, M, 256] in the point's dtype (squared sub-distances: uniform
    0-4, as an L2 table of unit-scaled residuals), bias [nq] fp32 (0-8) or None; drawn on the CPU from seeded
    generators, copied to `device`."""
    import torch
    P = _check_point(point)
    codes = _codes(_items(P), int(seed))
    g = torch.Generator().manual_seed(int(seed) + 1)
    lut = (4 * torch.rand((P["nq"], P["M"], N_CENTROIDS), generator=g)).to(_torch_dtype(P["dtype"]))
    bias = 8 * torch.rand((P["nq"],), generator=g) if P["bias"] else None
    return {"codes": codes.to(device, copy=True), "lut": lut.to(device),
            "bias": None if bias is None else bias.to(device)}


def launch(inputs, cfg):
    """out [nq, n] fp32: the distances."""
    return pq_adc_scan(inputs["codes"], inputs["lut"], inputs["bias"], inputs.get("out"),
                       BLOCK_N=cfg["BLOCK_N"], BLOCK_Q=cfg["BLOCK_Q"], M_STEP=cfg["M_STEP"], STAGE=cfg["STAGE"],
                       num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """out [nq, n] in float64: the LUT widened, gathered at every (query, vector, sub-quantizer) and summed over
    the sub-quantizers one at a time, plus the bias."""
    import torch
    codes, lut = inputs["codes"].long(), inputs["lut"].double()
    nq, M = lut.shape[0], lut.shape[1]
    out = torch.zeros((nq, codes.shape[0]), dtype=torch.float64, device=lut.device)
    for m in range(M):
        out += lut[:, m, :][:, codes[:, m]]
    if inputs["bias"] is not None:
        out += inputs["bias"].double()[:, None]
    return out


def torch_baseline(inputs):
    """What a torch user writes: the LUT gathered with one advanced index ([nq, n, M] fp32, materialized) and
    summed over the sub-quantizers, plus the bias."""
    import torch
    codes, lut = inputs["codes"].long(), inputs["lut"].float()
    M = lut.shape[1]
    g = lut[:, torch.arange(M, device=lut.device)[None, :], codes]          # [nq, n, M]
    out = g.sum(dim=2)
    if inputs["bias"] is not None:
        out = out + inputs["bias"][:, None]
    return out


def _elem(dtype: str) -> int:
    return 4 if dtype == "fp32" else 2


def bytes_moved(point) -> int:
    """The codes read once (n x M bytes), the LUT once (nq x M x 256 entries), the bias (nq x 4 B), out written
    once (nq x n fp32)."""
    P = _check_point(point)
    return (P["n"] * P["M"] + P["nq"] * P["M"] * N_CENTROIDS * _elem(P["dtype"]) + 4 * P["nq"] * P["bias"]
            + 4 * P["nq"] * P["n"])


def flops(point) -> int:
    """One add a lookup (nq x n x M), one more a distance with the bias."""
    P = _check_point(point)
    return P["nq"] * P["n"] * (P["M"] + P["bias"])


def grid(cfg, point) -> tuple:
    """The launch grid (cdiv(n, BLOCK_N), cdiv(nq, BLOCK_Q)): vector blocks fastest."""
    P = _check_point(point)
    _check_cfg(cfg)
    return _grid(P["n"], P["nq"], cfg)


def loop_iterations(cfg, point) -> int:
    """cdiv(M, M_STEP) steps a program."""
    grid(cfg, point)
    P = _check_point(point)
    return triton.cdiv(P["M"], cfg["M_STEP"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`. The codes carry data, on the CPU: make_inputs'
    seed-0 draw [n, M] uint8 (the LUT entries each lookup reads follow from them); the LUT [nq, M, 256], the
    bias [nq] and out [nq, n] are on the meta device (without a bias out stands in for it, unread)."""
    import torch
    P = _check_point(point)
    grid(cfg, P)
    codes = _codes(_items(P), 0)
    lut = torch.empty((P["nq"], P["M"], N_CENTROIDS), dtype=_torch_dtype(P["dtype"]), device="meta")
    out = torch.empty((P["nq"], P["n"]), dtype=torch.float32, device="meta")
    bias = torch.empty((P["nq"],), dtype=torch.float32, device="meta") if P["bias"] else None
    return _kernel_args(codes, lut, bias, out, cfg)
