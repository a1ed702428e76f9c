"""W8A8 int8 GEMM with a dequantising epilogue (the "scaled_int8_mm" of int8 W8A8
inference, as vLLM's / SGLang's), a bare @triton.jit kernel + its launcher.

    c[m, n] = (sum_k a[m, k] * b[k, n]) * scale_a[m] * scale_b[n] (+ bias[n])

a: [M, K] int8 activations (unit stride along K, any row stride), quantised per token
(scale_a: fp32, M of them, or one per-tensor scale); b: [K, N] int8, the weight either
N-contiguous ([K, N] row-major) or K-contiguous (the transposed view of an [N, K]
checkpoint weight, as vLLM passes it: strides (1, K)), quantised per output channel
(scale_b: fp32, N of them, or one per-tensor scale); bias: optional [N] in the output
dtype; c: [M, N] bf16 or fp16. The products run on the int8 tensor cores (tl.dot of two
int8 tiles into an int32 accumulator: exact, |sum| < 2^31 for K < 2^17); the scales are
applied once, in the epilogue, in fp32 (int32 -> fp32, a rank-1 rescale, the bias, one
rounding to the output dtype).

One CTA per (BLOCK_M, BLOCK_N) output tile, walking K in BLOCK_K steps. The weight tile
is loaded as [BLOCK_K, BLOCK_N] through both of b's strides, so either layout feeds the
dot without a transpose in memory (the launcher's unit stride is specialised to a
constant: the K-contiguous layout gives the K-major B operand int8 wgmma wants, the
N-contiguous one a transposed load). Rows and columns past M and N are wrapped (index
mod M / N) so the operand loads need no M / N mask (the store is masked); the K tail is
masked only when K % BLOCK_K != 0 (EVEN_K, set by the launcher). CTAs are launched in
groups of GROUP_M tile rows walked column by column, so the CTAs resident together share
a few A row panels and B column panels in L2 (GROUP_M=1: plain row-major tile order, each
A panel reused across N, every B panel re-read from L2 or DRAM).

Tunables: BLOCK_M, BLOCK_N (powers of two >= 16), BLOCK_K (power of two >= 32, the int8
dot's K granule), GROUP_M (>= 1), num_warps, num_stages.
Problem parameters (a workload point): M, N, K, dtype (the output's: bf16 / fp16), bias
(whether a bias row is added), b_layout ("nk": an [N, K] weight, K contiguous; "kn": a
[K, N] weight, N contiguous).
"""

from __future__ import annotations

import triton
import triton.language as tl

INT8_MAX = 127.0


@triton.jit
def _kernel(A, B, SA, SB, BIAS, C, M, N, K, stride_am, stride_bk, stride_bn, stride_cm,
            A_PER_TOKEN: tl.constexpr, B_PER_CHANNEL: tl.constexpr, HAS_BIAS: tl.constexpr,
            EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
            GROUP_M: tl.constexpr):
    # grouped tile order: GROUP_M tile rows at a time, tile rows fastest within a group
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows_ld = rows % M          # wrapped: in-bounds addresses, the operand loads need no row / column mask
    cols_ld = cols % N
    ks = tl.arange(0, BLOCK_K)

    a_ptr = A + rows_ld.to(tl.int64)[:, None] * stride_am + ks[None, :]
    b_ptr = B + cols_ld.to(tl.int64)[None, :] * stride_bn + ks.to(tl.int64)[:, None] * stride_bk
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.int32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptr)
            b = tl.load(b_ptr)
        else:
            k_ok = ks < K - k0
            a = tl.load(a_ptr, mask=k_ok[None, :], other=0)
            b = tl.load(b_ptr, mask=k_ok[:, None], other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)     # int8 x int8 -> int32, exact
        a_ptr += BLOCK_K
        b_ptr += BLOCK_K * stride_bk

    # epilogue, fp32: per-token x per-channel rescale, bias, one rounding to the output dtype
    out = acc.to(tl.float32)
    if A_PER_TOKEN:
        out = out * tl.load(SA + rows_ld)[:, None]
    else:
        out = out * tl.load(SA)
    if B_PER_CHANNEL:
        out = out * tl.load(SB + cols_ld)[None, :]
    else:
        out = out * tl.load(SB)
    if HAS_BIAS:
        out = out + tl.load(BIAS + cols_ld)[None, :].to(tl.float32)
    c_ptr = C + rows.to(tl.int64)[:, None] * stride_cm + cols[None, :]
    tl.store(c_ptr, out.to(C.dtype.element_ty), mask=(rows < M)[:, None] & (cols < N)[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")       # the output's; a and b are always int8
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}

# Llama-3 linear layers with per-token int8 activations x per-channel int8 weights. The two
# prefill points are compute-bound (0.48 and 1.1 TOP: ~0.24 / 0.55 ms at the H200's ~1980
# TOPS of dense int8); the decode point is weight-streaming (470 MB of int8 weights: ~0.1 ms
# at 4.8 TB/s). Every point's operands exceed the 50 MB L2.
POINTS = [
    # Llama-3-8B up_proj (14336), 4k-token prefill, [N, K] checkpoint weight: A 16.8 MB, B 58.7 MB, C 117 MB
    {"M": 4096, "N": 14336, "K": 4096, "dtype": "bf16", "bias": False, "b_layout": "nk"},
    # Llama-3-70B-sized 8192 x 8192 projection, 8k tokens, with a bias, [K, N] weight: 67 + 67 + 134 MB
    {"M": 8192, "N": 8192, "K": 8192, "dtype": "fp16", "bias": True, "b_layout": "kn"},
    # Llama-3-70B fused gate_up_proj (2 x 28672), a 64-sequence decode step: B 470 MB, A 0.5 MB, C 7.3 MB
    {"M": 64, "N": 57344, "K": 8192, "dtype": "bf16", "bias": False, "b_layout": "nk"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)} (the output dtype)") from None


def _b_layout(point) -> str:
    lay = point.get("b_layout", "nk")
    if lay not in ("nk", "kn"):
        raise ValueError(f"b_layout {lay!r} is not 'nk' ([N, K] weight, K contiguous) or 'kn' ([K, N], N contiguous)")
    return lay


def _check_cfg(cfg) -> None:
    for name, least in (("BLOCK_M", 16), ("BLOCK_N", 16), ("BLOCK_K", 32)):
        v = cfg[name]
        if v < least or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= {least} (an int8 tl.dot operand side)")
    if cfg["GROUP_M"] < 1:
        raise ValueError(f"GROUP_M={cfg['GROUP_M']} must be >= 1")


def _kernel_args(a, b, scale_a, scale_b, bias, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    b: the logical [K, N] weight (either stride may be the unit one); scale_a, scale_b: 1-D
    fp32 (numel M or N: per token / per channel; numel 1: per tensor)."""
    M, K = a.shape
    N = b.shape[1]
    return dict(A=a, B=b, SA=scale_a, SB=scale_b, BIAS=bias, C=out, M=M, N=N, K=K,
                stride_am=a.stride(0), stride_bk=b.stride(0), stride_bn=b.stride(1), stride_cm=out.stride(0),
                A_PER_TOKEN=scale_a.numel() != 1, B_PER_CHANNEL=scale_b.numel() != 1, HAS_BIAS=bias is not None,
                EVEN_K=K % cfg["BLOCK_K"] == 0, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"])


def _flat_scale(s, n: int, what: str, count: str):
    import torch
    if not isinstance(s, torch.Tensor) or s.dtype != torch.float32 or s.numel() not in (1, n):
        got = f"{s.dtype} {tuple(s.shape)}" if isinstance(s, torch.Tensor) else type(s).__name__
        raise ValueError(f"{what} must be an fp32 tensor of 1 (per tensor) or {count}={n} elements; got {got}")
    return s.reshape(-1).contiguous()


def w8a8_gemm(a, b, scale_a, scale_b, out_dtype=None, bias=None, *, out=None, BLOCK_M=128, BLOCK_N=128,
              BLOCK_K=128, GROUP_M=8, num_warps=4, num_stages=4):
    """(a @ b) * scale_a * scale_b (+ bias) for a [M, K] int8 (K contiguous) and b [K, N] int8
    (row-major, or the transposed view w.t() of an [N, K] weight; other strides are copied),
    scale_a fp32 [M, 1] / [M] / one element, scale_b fp32 [1, N] / [N, 1] / [N] / one element,
    bias [N] in out_dtype (bf16, the default, or fp16). Returns [M, N] (into `out` if given:
    [M, N] of out_dtype, unit column stride)."""
    import torch
    if out_dtype is None:
        out_dtype = out.dtype if out is not None else torch.bfloat16
    if out_dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"out_dtype must be torch.bfloat16 or torch.float16; got {out_dtype}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"expected a [M, K] and b [K, N]; got {tuple(a.shape)}, {tuple(b.shape)}")
    if a.dtype != torch.int8 or b.dtype != torch.int8:
        raise ValueError(f"a and b must be torch.int8; got {a.dtype}, {b.dtype}")
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0 or K == 0:
        raise ValueError(f"empty GEMM: M={M}, N={N}, K={K}")
    if K >= 2**17:
        raise ValueError(f"K={K} could overflow the int32 accumulator (127^2 K >= 2^31); need K < 131072")
    if a.stride(1) != 1:
        raise ValueError(f"a needs K contiguous (unit stride along K); got strides {a.stride()}")
    if b.stride(0) != 1 and b.stride(1) != 1:
        b = b.contiguous()
    scale_a = _flat_scale(scale_a, M, "scale_a", "M")
    scale_b = _flat_scale(scale_b, N, "scale_b", "N")
    if bias is not None:
        if bias.dtype != out_dtype or bias.numel() != N:
            raise ValueError(f"bias must be {out_dtype} of N={N} elements; got {bias.dtype} {tuple(bias.shape)}")
        bias = bias.reshape(-1).contiguous()
    if out is None:
        out = torch.empty((M, N), dtype=out_dtype, device=a.device)
    elif tuple(out.shape) != (M, N) or out.dtype != out_dtype or out.stride(1) != 1:
        raise ValueError(f"out must be {out_dtype} [{M}, {N}] with unit column stride; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M}
    _check_cfg(cfg)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    _kernel[grid](**_kernel_args(a, b, scale_a, scale_b, bias, out, cfg), num_warps=num_warps,
                  num_stages=num_stages)
    return out


def quantize_rows(x):
    """x [R, K] (any float) -> (int8 [R, K], fp32 [R, 1]): symmetric, one scale per row, amax / 127,
    round to nearest."""
    import torch
    xf = x.float()
    scale = (xf.abs().amax(dim=1, keepdim=True) / INT8_MAX).clamp(min=1e-12)
    return torch.round(xf / scale).clamp(-INT8_MAX, INT8_MAX).to(torch.int8), scale


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Dynamic per-token quantised activations, per-channel quantised weights (~K^-1/2, so the
    output is O(1) whatever K is), a bias of O(1) when the point has one. b is the [K, N] view
    the kernel takes: w.t() of an [N, K] weight ("nk") or a row-major [K, N] one ("kn")."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    lay = _b_layout(point)
    M, N, K = point["M"], point["N"], point["K"]
    a, scale_a = quantize_rows(torch.randn((M, K), generator=gen, device=device))
    w, scale_b = quantize_rows(torch.randn((N, K), generator=gen, device=device) * K ** -0.5)
    b = w.t() if lay == "nk" else w.t().contiguous()
    bias = torch.randn((N,), generator=gen, device=device).to(dt) if point.get("bias", False) else None
    return {"a": a, "b": b, "scale_a": scale_a, "scale_b": scale_b.reshape(1, N), "bias": bias, "out_dtype": dt}


def launch(inputs, cfg):
    return w8a8_gemm(inputs["a"], inputs["b"], inputs["scale_a"], inputs["scale_b"], inputs["out_dtype"],
                     inputs["bias"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                     GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """The exact integer GEMM (an fp64 matmul of the int8 operands: every product and partial
    sum is an integer below 2^53, so exact), then both scales and the bias in fp64; fp32 out."""
    a, b = inputs["a"].double(), inputs["b"].double()
    ref = (a @ b) * inputs["scale_a"].double().reshape(-1, 1) * inputs["scale_b"].double().reshape(1, -1)
    if inputs["bias"] is not None:
        ref = ref + inputs["bias"].double()
    return ref.float()


def torch_baseline(inputs):
    """torch._int_mm (cuBLASLt's int8 GEMM on a GPU, int32 out) then the epilogue in eager fp32, as
    a torch user writes it. _int_mm's shape rules (CUDA: M > 16, K and N multiples of 8) fall back
    to an exact fp64 product."""
    import torch
    a, b, dt = inputs["a"], inputs["b"], inputs["out_dtype"]
    try:
        acc = torch._int_mm(a, b).float()
    except RuntimeError:
        acc = (a.double() @ b.double()).float()
    c = acc * inputs["scale_a"].float().reshape(-1, 1) * inputs["scale_b"].float().reshape(1, -1)
    if inputs["bias"] is not None:
        c = c + inputs["bias"].float()
    return c.to(dt)


def bytes_moved(point) -> int:
    """a and b (1 byte each), the fp32 scales and the bias read once, c written once."""
    M, N, K = point["M"], point["N"], point["K"]
    _torch_dtype(point.get("dtype", "bf16"))        # rejects a dtype that is not an output dtype
    _b_layout(point)
    bias = 2 * N if point.get("bias", False) else 0
    return M * K + N * K + 4 * (M + N) + bias + 2 * M * N


def flops(point) -> int:
    """The GEMM's multiply-adds (integer ops; the epilogue's few per output element not counted)."""
    return 2 * point["M"] * point["N"] * point["K"]


def grid(cfg, point) -> int:
    """One CTA per (BLOCK_M, BLOCK_N) output tile."""
    return triton.cdiv(point["M"], cfg["BLOCK_M"]) * triton.cdiv(point["N"], cfg["BLOCK_N"])


def loop_iterations(cfg, point) -> int:
    """K tiles per CTA."""
    return triton.cdiv(point["K"], cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N, K = point["M"], point["N"], point["K"]
    a = torch.empty((M, K), dtype=torch.int8, device="meta")
    if _b_layout(point) == "nk":
        b = torch.empty((N, K), dtype=torch.int8, device="meta").t()
    else:
        b = torch.empty((K, N), dtype=torch.int8, device="meta")
    scale_a = torch.empty((M,), dtype=torch.float32, device="meta")
    scale_b = torch.empty((N,), dtype=torch.float32, device="meta")
    bias = torch.empty((N,), dtype=dt, device="meta") if point.get("bias", False) else None
    out = torch.empty((M, N), dtype=dt, device="meta")
    return _kernel_args(a, b, scale_a, scale_b, bias, out, cfg)
