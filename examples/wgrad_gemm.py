"""The weight gradient of a linear layer in training (the ``dW = dY^T X`` GEMM of every
backward pass), a bare @triton.jit kernel + a split-K reduction kernel + the launcher.

    dW[o, i] = sum_t dY[t, o] * X[t, i]        (t over the tokens of the batch)

dY: [T, OUT] (the output gradient), X: [T, IN] (the saved layer input), both fp16 / bf16 with
their feature dimension contiguous (rows may be strided: a slice of a wider buffer). dW: [OUT,
IN], fp32 (a main-grad buffer) or the inputs' dtype, IN contiguous. As a GEMM: M = OUT, N = IN,
K = T -- the reduction runs over tokens, so both operands are read with their *contiguous*
dimension along the tile's M / N and their strided one (tokens) along K: the A tile
[BLOCK_M, BLOCK_K] is dY^T (M-major: a transposed operand for the tensor cores), the B tile
[BLOCK_K, BLOCK_N] is X (N-major). Products accumulate in fp32; one rounding at the store.

Grid (tiles_m x tiles_n, SPLIT_K): program (pid, s) takes dW tile pid in grouped order
(GROUP_M tile rows at a time, walked column by column, rows fastest inside a group: the CTAs
resident together share a few dY column panels and X column panels in L2; GROUP_M=1 is
plain row-major tile order) and the s-th contiguous share of the K (token) tiles: it walks
them in BLOCK_K steps, one [BLOCK_M, BLOCK_K] tile of dY^T and one [BLOCK_K, BLOCK_N] tile of
X per step fed to tl.dot into an fp32 [BLOCK_M, BLOCK_N] accumulator. Rows / columns past
OUT / IN are masked; the token mask is dropped when BLOCK_K divides T (EVEN_K).

SPLIT_K > 1 (few output tiles, many tokens: a small-output layer over a big batch) cuts T into
SPLIT_K shares of whole K tiles; each share stores its fp32 partial tile in a workspace
[SPLIT_K, OUT, IN] (every element of every share written, an empty share writes zeros) and
``_reduce_kernel`` sums the SPLIT_K partials of each element in a fixed order (deterministic,
bitwise reproducible run to run, unlike fp32 atomics -- what a training framework wants) and
rounds to dW's dtype. With SPLIT_K = 1 the kernel stores dW directly and no second kernel runs.

Tunables: BLOCK_M, BLOCK_N, BLOCK_K (powers of two >= 16), GROUP_M (>= 1), SPLIT_K (>= 1),
num_warps, num_stages.
Problem parameters (a workload point): T (tokens), IN, OUT (the layer's features), dtype
(dY's and X's: bf16 / fp16), out_dtype ("fp32" or "same": the inputs' dtype).
Timing covers both kernels; grid / loop_iterations describe ``_kernel``.
"""

from __future__ import annotations

import triton
import triton.language as tl

REDUCE_BLOCK = 1024
L2_BYTES = 50 * 2**20          # the H200's L2: a workspace beyond it is reduced from DRAM


@triton.jit
def _kernel(DY, X, OUT, M, N, T, stride_dyt, stride_xt, stride_os, stride_om,
            EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
            GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr):
    # grouped tile order over dW's tiles; the split index on the grid's second axis
    pid = tl.program_id(0)
    split = tl.program_id(1)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)     # dW rows = dY columns (contiguous in dY)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)     # dW columns = X columns (contiguous in X)
    row_ok = rows < M
    col_ok = cols < N
    ks = tl.arange(0, BLOCK_K)

    # this split's share of the token tiles: [kt_first, kt_last)
    k_tiles = tl.cdiv(T, BLOCK_K)
    per_split = tl.cdiv(k_tiles, SPLIT_K)
    kt_first = split * per_split
    kt_last = tl.minimum(kt_first + per_split, k_tiles)

    t0 = (kt_first * BLOCK_K + ks).to(tl.int64)
    a_ptr = DY + t0[None, :] * stride_dyt + rows[:, None]      # [BLOCK_M, BLOCK_K]: dY^T, unit stride along M
    b_ptr = X + t0[:, None] * stride_xt + cols[None, :]        # [BLOCK_K, BLOCK_N]: X, unit stride along N
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for kt in range(kt_first, kt_last):
        if EVEN_K:
            a = tl.load(a_ptr, mask=row_ok[:, None], other=0.0)
            b = tl.load(b_ptr, mask=col_ok[None, :], other=0.0)
        else:
            k_ok = kt * BLOCK_K + ks < T
            a = tl.load(a_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            b = tl.load(b_ptr, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptr += BLOCK_K * stride_dyt
        b_ptr += BLOCK_K * stride_xt

    # OUT is dW itself (SPLIT_K == 1) or the fp32 workspace [SPLIT_K, M, N]; columns contiguous
    o_ptr = OUT + split.to(tl.int64) * stride_os + rows.to(tl.int64)[:, None] * stride_om + cols[None, :]
    tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


@triton.jit
def _reduce_kernel(WS, C, N, numel, stride_ws, stride_cm, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    """dW = the sum of the SPLIT_K fp32 partials, split 0 first (a fixed order), one rounding."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < numel
    acc = tl.zeros([BLOCK], tl.float32)
    for s in range(SPLIT_K):
        acc += tl.load(WS + s * stride_ws + offs, mask=ok, other=0.0)
    c_off = (offs // N) * stride_cm + offs % N
    tl.store(C + c_off, acc.to(C.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
OUT_DTYPES = ("fp32", "same")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "SPLIT_K": 1, "num_warps": 8,
            "num_stages": 3}

# Weight gradients of real layers. 1: Llama-3-8B q_proj over a 16k-token batch (1024 tiles of
# 128^2, 550 GFLOP, compute-bound: ~0.7 ms), dW bf16. 2: Llama-3-8B MLP down_proj (IN 14336 ->
# OUT 4096) over 8k tokens, into an fp32 main-grad (3584 tiles, 962 GFLOP, a 235 MB fp32 store).
# 3: a 4-KV-head k_proj (OUT 4 x 128 = 512) over a 64k-token batch, fp16: 128 tiles of 128^2 for
# 132 SMs and 65536 tokens of K -- the split decides how full the machine is (275 GFLOP, X 537 MB).
POINTS = [
    {"T": 16384, "IN": 4096, "OUT": 4096, "dtype": "bf16", "out_dtype": "same"},
    {"T": 8192, "IN": 14336, "OUT": 4096, "dtype": "bf16", "out_dtype": "fp32"},
    {"T": 65536, "IN": 4096, "OUT": 512, "dtype": "fp16", "out_dtype": "same"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _out_dtype(point):
    import torch
    od = point.get("out_dtype", "same")
    if od not in OUT_DTYPES:
        raise ValueError(f"out_dtype {od!r} is not 'fp32' or 'same' (the inputs' dtype)")
    return torch.float32 if od == "fp32" else _torch_dtype(point.get("dtype", "bf16"))


def _out_bytes(point) -> int:
    _torch_dtype(point.get("dtype", "bf16"))
    od = point.get("out_dtype", "same")
    if od not in OUT_DTYPES:
        raise ValueError(f"out_dtype {od!r} is not 'fp32' or 'same' (the inputs' dtype)")
    return 4 if od == "fp32" else 2


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    for name in ("GROUP_M", "SPLIT_K"):
        if cfg[name] < 1:
            raise ValueError(f"{name}={cfg[name]} must be >= 1")


def _tiles(M: int, N: int, cfg) -> int:
    return triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])


def _kernel_args(dy, x, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). `out`
    is dW [M, N] when SPLIT_K == 1, else the fp32 workspace [SPLIT_K, M, N]."""
    T, M = dy.shape
    N = x.shape[1]
    return dict(DY=dy, X=x, OUT=out, M=M, N=N, T=T, stride_dyt=dy.stride(0), stride_xt=x.stride(0),
                stride_os=out.stride(0) if out.dim() == 3 else 0, stride_om=out.stride(-2),
                EVEN_K=T % cfg["BLOCK_K"] == 0, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"], SPLIT_K=cfg["SPLIT_K"])


def wgrad_gemm(dy, x, out_dtype=None, *, out=None, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, SPLIT_K=1,
               num_warps=8, num_stages=3):
    """dW = dy^T @ x for dy [T, OUT] and x [T, IN] (one dtype, fp16 / bf16, feature dimension
    contiguous; other strides are copied). Returns dW [OUT, IN] of out_dtype (torch.float32 or the
    inputs' dtype, the default), into `out` when given ([OUT, IN], unit column stride)."""
    import torch
    if dy.dim() != 2 or x.dim() != 2 or dy.shape[0] != x.shape[0]:
        raise ValueError(f"expected dy [T, OUT] and x [T, IN]; got {tuple(dy.shape)}, {tuple(x.shape)}")
    if dy.dtype not in (torch.float16, torch.bfloat16) or x.dtype != dy.dtype:
        raise ValueError(f"dy and x must both be fp16 / bf16; got {dy.dtype}, {x.dtype}")
    if out_dtype is None:
        out_dtype = out.dtype if out is not None else dy.dtype
    if out_dtype not in (torch.float32, dy.dtype):
        raise ValueError(f"out_dtype must be torch.float32 or the inputs' {dy.dtype}; got {out_dtype}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M, "SPLIT_K": SPLIT_K}
    _check_cfg(cfg)
    T, M = dy.shape
    N = x.shape[1]
    if out is None:
        out = torch.empty((M, N), dtype=out_dtype, device=dy.device)
    elif tuple(out.shape) != (M, N) or out.dtype != out_dtype or (M * N and out.stride(1) != 1):
        raise ValueError(f"out must be {out_dtype} [{M}, {N}] with unit column stride; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    if M == 0 or N == 0:
        return out
    if T == 0:
        return out.zero_()
    if dy.stride(1) != 1:
        dy = dy.contiguous()
    if x.stride(1) != 1:
        x = x.contiguous()
    tiles = _tiles(M, N, cfg)
    if SPLIT_K == 1:
        _kernel[(tiles, 1)](**_kernel_args(dy, x, out, cfg), num_warps=num_warps, num_stages=num_stages)
        return out
    ws = torch.empty((SPLIT_K, M, N), dtype=torch.float32, device=dy.device)
    _kernel[(tiles, SPLIT_K)](**_kernel_args(dy, x, ws, cfg), num_warps=num_warps, num_stages=num_stages)
    _reduce_kernel[(triton.cdiv(M * N, REDUCE_BLOCK),)](ws, out, N, M * N, ws.stride(0), out.stride(0),
                                                        SPLIT_K=SPLIT_K, BLOCK=REDUCE_BLOCK, num_warps=4)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """dY ~ N(0, 1/T) and X ~ N(0, 1) (drawn on the CPU from the seed, then moved), so dW's
    entries are O(1) whatever T is."""
    import torch
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    od = _out_dtype(point)
    T, IN, OUT = point["T"], point["IN"], point["OUT"]
    dy = (torch.randn((T, OUT), generator=gen) * max(T, 1) ** -0.5).to(dt).to(device)
    x = torch.randn((T, IN), generator=gen).to(dt).to(device)
    return {"dy": dy, "x": x, "out_dtype": od}


def launch(inputs, cfg):
    return wgrad_gemm(inputs["dy"], inputs["x"], inputs["out_dtype"], BLOCK_M=cfg["BLOCK_M"],
                      BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"],
                      SPLIT_K=cfg["SPLIT_K"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """fp64 dY^T X of the same fp16 / bf16 inputs, returned in fp32."""
    return (inputs["dy"].double().t() @ inputs["x"].double()).float()


def torch_baseline(inputs):
    """What a torch backward does: dy.t() @ x in the inputs' dtype (cuBLAS, fp32 accumulation),
    or, for an fp32 main grad, the product of the fp32-cast operands."""
    import torch
    dy, x, od = inputs["dy"], inputs["x"], inputs["out_dtype"]
    if od == torch.float32:
        return dy.t().float() @ x.float()
    return dy.t() @ x


def bytes_moved(point) -> int:
    """dY and X read once, dW written once (the split's fp32 workspace round trip is the split's
    cost, not counted)."""
    T, IN, OUT = point["T"], point["IN"], point["OUT"]
    return 2 * T * (IN + OUT) + _out_bytes(point) * OUT * IN


def flops(point) -> int:
    return 2 * point["T"] * point["IN"] * point["OUT"]


def grid(cfg, point) -> tuple[int, int]:
    """The launch grid of ``_kernel``: (dW tiles in grouped order, SPLIT_K)."""
    return _tiles(point["OUT"], point["IN"], cfg), cfg["SPLIT_K"]


def _shares(cfg, point) -> list[int]:
    k_tiles = triton.cdiv(point["T"], cfg["BLOCK_K"])
    per = triton.cdiv(k_tiles, cfg["SPLIT_K"])
    return [max(0, min(per, k_tiles - s * per)) for s in range(cfg["SPLIT_K"])]


def loop_iterations(cfg, point) -> int:
    """K (token) tiles per CTA: a split's share (the first, the longest)."""
    return _shares(cfg, point)[0]


def cta_iterations(cfg, point) -> list[int]:
    """Each CTA's K tiles in launch order (tile fastest, then split): the last shares may be
    shorter (or empty) when SPLIT_K does not divide the K tiles."""
    tiles = _tiles(point["OUT"], point["IN"], cfg)
    return [n for n in _shares(cfg, point) for _ in range(tiles)]


def secondary_kernels(cfg, point) -> list[dict]:
    """``_reduce_kernel`` (run when SPLIT_K > 1), for rank: one CTA per REDUCE_BLOCK dW elements,
    SPLIT_K steps each reading REDUCE_BLOCK fp32 partials that `_kernel` just wrote: from L2 when
    the workspace (SPLIT_K x OUT x IN x 4 B) fits the 50 MB L2 (dram_bytes 0), else from DRAM. Its
    store of dW is in bytes_moved already."""
    if cfg["SPLIT_K"] < 2:
        return []
    M, N = point["OUT"], point["IN"]
    tile = 4 * REDUCE_BLOCK
    spilled = cfg["SPLIT_K"] * M * N * 4 > L2_BYTES
    return [{"name": "_reduce_kernel", "grid": triton.cdiv(M * N, REDUCE_BLOCK), "iterations": cfg["SPLIT_K"],
             "tile_bytes": tile, "dram_bytes": tile if spilled else 0, "blocks_per_sm": 8}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, IN, OUT = point["T"], point["IN"], point["OUT"]
    dy = torch.empty((T, OUT), dtype=dt, device="meta")
    x = torch.empty((T, IN), dtype=dt, device="meta")
    if cfg["SPLIT_K"] == 1:
        out = torch.empty((OUT, IN), dtype=_out_dtype(point), device="meta")
    else:
        _out_dtype(point)
        out = torch.empty((cfg["SPLIT_K"], OUT, IN), dtype=torch.float32, device="meta")
    return _kernel_args(dy, x, out, cfg)
