"""Persistent-tile GEMM with an optional bias epilogue, a bare @triton.jit kernel + its launcher.

    C[m, n] = sum_k A[m, k] * B[k, n]  (+ bias[n])

A: [M, K], B: [K, N] fp16 / bf16 (one dtype, any strides: B is typically an nn.Linear
weight [N, K] seen through .t(), K contiguous, or a [K, N] row-major weight); bias: [N]
in A's dtype or None; C: [M, N] in A's dtype, fp32 accumulation, the bias added in fp32
before the one rounding to C's dtype.

Persistent: the launch has a fixed number of programs, min(num_sms, number of output
tiles), one per SM (num_sms = NUM_SMS = 132, an H200's count, unless told otherwise: the
study's grid and loop counts assume it; the user-facing function asks the device). Program
p walks the output tiles tile = p, p + programs, p + 2 programs, ... (a grid-stride loop),
so the CTAs are launched once and a tile's start costs no block scheduling. The tile ids
are swizzled in groups of GROUP_M tile rows (the Triton matmul order: down a group's
GROUP_M rows, then to the next column; GROUP_M = 1 is plain row-major order), so the ~132
tiles in flight at once share a few A row panels and B column panels in L2. Per tile a
pipelined K loop (num_stages deep) loads an A [BLOCK_M, BLOCK_K] and a B [BLOCK_K, BLOCK_N]
tile and feeds tl.dot; the epilogue adds the bias and stores the tile. Rows past M and
columns past N are masked (loads read 0, stores skip); a K tail (K not a multiple of
BLOCK_K) masks the K axis of the loads, which EVEN_K (a constexpr) drops when K divides.

Tunables: BLOCK_M, BLOCK_N, BLOCK_K (powers of two >= 16), GROUP_M (>= 1), num_warps,
num_stages. Problem parameters (a workload point): M, N, K, dtype; optional bias (bool,
default False), b_layout ("nk": B = weight[N, K].t(), the default, as nn.Linear stores it;
"kn": B a row-major [K, N]) and sms (the SM count the grid is sized for, default 132).
"""

from __future__ import annotations

import triton
import triton.language as tl

NUM_SMS = 132       # the launcher's assumption for the study: an H200 (H100 SXM has 132 too)


@triton.jit
def _kernel(A, B, C, BIAS, M, N, K,
            stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
            HAS_BIAS: tl.constexpr, EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
            BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tiles_m * tiles_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    per_group = GROUP_M * tiles_n
    ks = tl.arange(0, BLOCK_K)

    for tile in range(pid, num_tiles, programs):
        # the GROUP_M swizzle: tile -> (tile_m, tile_n)
        group = tile // per_group
        first_m = group * GROUP_M
        group_m = tl.minimum(tiles_m - first_m, GROUP_M)
        in_group = tile - group * per_group
        tile_m = first_m + in_group % group_m
        tile_n = in_group // group_m

        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
        row_ok = rows < M
        col_ok = cols < N
        a_ptr = A + rows.to(tl.int64)[:, None] * stride_am + ks[None, :] * stride_ak
        b_ptr = B + ks[:, None] * stride_bk + cols.to(tl.int64)[None, :] * stride_bn

        acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for kt in range(k_tiles):
            if EVEN_K:
                a = tl.load(a_ptr, mask=row_ok[:, None], other=0.0)
                b = tl.load(b_ptr, mask=col_ok[None, :], other=0.0)
            else:
                k_ok = ks < K - kt * BLOCK_K
                a = tl.load(a_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
                b = tl.load(b_ptr, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptr += BLOCK_K * stride_ak
            b_ptr += BLOCK_K * stride_bk

        if HAS_BIAS:
            bias = tl.load(BIAS + cols, mask=col_ok, other=0.0)
            acc += bias.to(tl.float32)[None, :]
        c_ptr = C + rows.to(tl.int64)[:, None] * stride_cm + cols[None, :] * stride_cn
        tl.store(c_ptr, acc.to(C.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}

# Prefill projections of real models, 8192 / 4096 / 2048 tokens: 0.24-0.96 TFLOP each
# (0.3-1.4 ms at ~700 TFLOP/s on an H200), 1.9-27 waves of 128 x 256 tiles over 132 SMs;
# A + B + C 160-480 MiB a launch. The weights are 33, 235 and 117 MB: the last two do not fit
# the 50 MB L2, so the tile order (GROUP_M) decides how often a B panel comes from DRAM.
POINTS = [
    # Qwen2.5-7B fused QKV projection (hidden 3584, 28 q + 2 x 4 kv heads of 128; QKV has a
    # bias): A 59 MB, B 33 MB, C 75 MB, 271 GFLOP
    {"M": 8192, "N": 4608, "K": 3584, "dtype": "bf16", "bias": True, "b_layout": "nk"},
    # Llama-3-8B fused gate_up projection (intermediate 2 x 14336), fp16: A 34 MB, B 235 MB,
    # C 235 MB, 962 GFLOP
    {"M": 4096, "N": 28672, "K": 4096, "dtype": "fp16", "bias": False, "b_layout": "nk"},
    # Llama-3-8B down projection, the weight stored pre-transposed ([K, N] row-major): A 59 MB,
    # B 117 MB, C 17 MB, 241 GFLOP; 256 tiles of 128 x 256 = 1.9 waves (a ragged last wave)
    {"M": 2048, "N": 4096, "K": 14336, "dtype": "bf16", "bias": False, "b_layout": "kn"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 2


def _b_layout(point) -> str:
    lay = point.get("b_layout", "nk")
    if lay not in ("nk", "kn"):
        raise ValueError(f"b_layout {lay!r} is not 'nk' or 'kn'")
    return lay


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg["GROUP_M"] < 1:
        raise ValueError(f"GROUP_M={cfg['GROUP_M']} must be >= 1")


def _num_tiles(M: int, N: int, cfg) -> int:
    return triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])


def _programs(M: int, N: int, cfg, num_sms: int) -> int:
    """The persistent grid: one program per SM, fewer when there are fewer tiles."""
    return max(1, min(num_sms, _num_tiles(M, N, cfg)))


def _kernel_args(a, b, c, bias, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    K = a.shape[1]
    return dict(A=a, B=b, C=c, BIAS=bias, M=a.shape[0], N=b.shape[1], K=K,
                stride_am=a.stride(0), stride_ak=a.stride(1), stride_bk=b.stride(0), stride_bn=b.stride(1),
                stride_cm=c.stride(0), stride_cn=c.stride(1),
                HAS_BIAS=bias is not None, EVEN_K=K % cfg["BLOCK_K"] == 0,
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"])


def persistent_gemm(a, b, bias=None, *, out=None, num_sms=None, BLOCK_M: int = 128, BLOCK_N: int = 256,
                    BLOCK_K: int = 64, GROUP_M: int = 8, num_warps: int = 8, num_stages: int = 3):
    """C = a @ b (+ bias). a: [M, K], b: [K, N] (any strides; an nn.Linear weight w [N, K]
    is passed as w.t()), bias: [N] or None, all one fp16 / bf16 dtype. out: an optional [M, N]
    tensor of that dtype (any strides) to write into. num_sms: how many programs at most
    (default: the device's SM count; NUM_SMS on a CPU). Returns C [M, N]."""
    import torch
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"expected a [M, K] and b [K, N]; got {tuple(a.shape)}, {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"a and b must share one fp16 / bf16 dtype; got {a.dtype}, {b.dtype}")
    M, K = a.shape
    N = b.shape[1]
    if bias is not None and (bias.dtype != a.dtype or tuple(bias.shape) != (N,)):
        raise ValueError(f"bias must be {a.dtype} [{N}]; got {bias.dtype} {tuple(bias.shape)}")
    if out is None:
        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    elif out.dtype != a.dtype or tuple(out.shape) != (M, N):
        raise ValueError(f"out must be a [{M}, {N}] {a.dtype} tensor; got {out.dtype} {tuple(out.shape)}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M}
    _check_cfg(cfg)
    if num_sms is None:
        num_sms = torch.cuda.get_device_properties(a.device).multi_processor_count if a.is_cuda else NUM_SMS
    if num_sms < 1:
        raise ValueError(f"num_sms={num_sms} must be >= 1")
    if M == 0 or N == 0:
        return out
    if K == 0:
        out.copy_(bias.expand(M, N) if bias is not None else torch.zeros((), dtype=out.dtype, device=out.device))
        return out
    if bias is not None:
        bias = bias.contiguous()
    _kernel[(_programs(M, N, cfg, num_sms),)](**_kernel_args(a, b, out, bias, cfg), num_warps=num_warps,
                                              num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """a ~ N(0, 1) / K^(1/4), the weight the same (so C's entries are O(1) whatever K is),
    laid out as b_layout says; bias ~ N(0, 1) when the point has one; num_sms = point's sms."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N, K = point["M"], point["N"], point["K"]
    scale = K ** -0.25 if K else 1.0
    a = (torch.randn((M, K), generator=gen, device=device) * scale).to(dt)
    if _b_layout(point) == "nk":
        b = (torch.randn((N, K), generator=gen, device=device) * scale).to(dt).t()
    else:
        b = (torch.randn((K, N), generator=gen, device=device) * scale).to(dt)
    bias = torch.randn((N,), generator=gen, device=device).to(dt) if point.get("bias", False) else None
    return {"a": a, "b": b, "bias": bias, "num_sms": point.get("sms", NUM_SMS)}


def launch(inputs, cfg):
    return persistent_gemm(inputs["a"], inputs["b"], inputs["bias"], num_sms=inputs.get("num_sms", NUM_SMS),
                           BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                           GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """fp32: a @ b (+ bias) from the same (rounded) inputs."""
    ref = inputs["a"].float() @ inputs["b"].float()
    if inputs["bias"] is not None:
        ref = ref + inputs["bias"].float()
    return ref


def torch_baseline(inputs):
    """cuBLAS through torch in the inputs' dtype: addmm (the bias in the GEMM's epilogue) or a @ b."""
    import torch
    if inputs["bias"] is not None:
        return torch.addmm(inputs["bias"], inputs["a"], inputs["b"])
    return inputs["a"] @ inputs["b"]


def bytes_moved(point) -> int:
    """A, B (and the bias) read once, C written once (re-reads of A and B tiles by other
    tiles are L2 traffic, not counted)."""
    M, N, K = point["M"], point["N"], point["K"]
    e = _elem_bytes(point.get("dtype", "bf16"))
    return (M * K + K * N + M * N + (N if point.get("bias", False) else 0)) * e


def flops(point) -> int:
    return 2 * point["M"] * point["N"] * point["K"]


def grid(cfg, point) -> int:
    """min(sms, output tiles) persistent programs (sms = NUM_SMS = 132 unless the point says)."""
    return _programs(point["M"], point["N"], cfg, point.get("sms", NUM_SMS))


def loop_iterations(cfg, point) -> int:
    """K-loop iterations of the busiest program: its tiles (cdiv(tiles, programs)) x the K
    tiles of each."""
    tiles = _num_tiles(point["M"], point["N"], cfg)
    return triton.cdiv(tiles, grid(cfg, point)) * triton.cdiv(point["K"], cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory),
    with the strides of the point's B layout."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N, K = point["M"], point["N"], point["K"]
    a = torch.empty((M, K), dtype=dt, device="meta")
    if _b_layout(point) == "nk":
        b = torch.empty((N, K), dtype=dt, device="meta").t()
    else:
        b = torch.empty((K, N), dtype=dt, device="meta")
    c = torch.empty((M, N), dtype=dt, device="meta")
    bias = torch.empty((N,), dtype=dt, device="meta") if point.get("bias", False) else None
    return _kernel_args(a, b, c, bias, cfg)
