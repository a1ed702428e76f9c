"""The fused gate/up projection of a SwiGLU MLP (a "dual GEMM"), a bare @triton.jit
kernel + its launcher.

    out[m, n] = silu(sum_k x[m, k] * w[k, n]) * (sum_k x[m, k] * w[k, N + n])

x: [M, K] fp16 / bf16 activations (unit stride along K); w: [K, 2N] the merged gate_up
weight in x's dtype, N contiguous, gate in columns [0, N) and up in [N, 2N) -- the
merged gate_up_proj of vLLM / Phi-3 (one weight, one pointer, one stride), stored
K-major so a weight tile is tl.dot's B operand as is (no transpose); out: [M, N] in
x's dtype. One CTA per (BLOCK_M, BLOCK_N) output tile; per K step it loads one x tile
and the two weight tiles of its columns (gate at n, up at N + n: same K rows, N
apart) and issues two tl.dot into two fp32 accumulators, so x is read once for both
projections and the [M, 2N] intermediate never reaches memory. The epilogue is
silu(gate) * up in fp32, rounded once to x's dtype. The 1D grid is swizzled in groups
of GROUP_M row tiles (the Triton matmul order): CTAs running together share weight
column panels in L2, so each weight byte comes from DRAM about once. Two
accumulators: register pressure is twice a plain GEMM's at the same tile.

Tunables: BLOCK_M, BLOCK_N, BLOCK_K (powers of two >= 16), GROUP_M, num_warps,
num_stages. Problem parameters (a workload point): M, N (the intermediate size), K
(the hidden size), dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, W, OUT, M, N, K, stride_xm, stride_wk, stride_om,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_m = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % group_m
    tile_n = (pid % per_group) // group_m

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N

    x_ptr = X + rows.to(tl.int64)[:, None] * stride_xm + ks[None, :]
    g_ptr = W + ks.to(tl.int64)[:, None] * stride_wk + cols[None, :]
    u_ptr = g_ptr + N
    acc_g = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    acc_u = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = k0 + ks < K
        a = tl.load(x_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        wg = tl.load(g_ptr, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        wu = tl.load(u_ptr, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc_g = tl.dot(a, wg, acc_g)
        acc_u = tl.dot(a, wu, acc_u)
        x_ptr += BLOCK_K
        g_ptr += BLOCK_K * stride_wk
        u_ptr += BLOCK_K * stride_wk

    h = acc_g / (1.0 + tl.exp(-acc_g)) * acc_u
    o_ptr = OUT + rows.to(tl.int64)[:, None] * stride_om + cols[None, :]
    tl.store(o_ptr, h.to(OUT.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}

# Weights 112-224 MiB (2.2-4.5x the H200's 50 MB L2).
POINTS = [
    {"M": 32, "N": 14336, "K": 4096, "dtype": "bf16"},    # Llama-3-8B decode batch: W 224 MiB, 7.5 GFLOP, memory-bound
    {"M": 512, "N": 11008, "K": 4096, "dtype": "fp16"},   # Llama-2-7B, mid batch: W 172 MiB, 92 GFLOP
    {"M": 4096, "N": 3584, "K": 8192, "dtype": "bf16"},   # Llama-3-70B TP8 prefill: W 112 MiB, x 64 MiB, 481 GFLOP
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg["GROUP_M"] < 1:
        raise ValueError(f"GROUP_M={cfg['GROUP_M']} must be >= 1")


def _kernel_args(x, w, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, W=w, OUT=out, M=x.shape[0], N=out.shape[1], K=x.shape[1],
                stride_xm=x.stride(0), stride_wk=w.stride(0), stride_om=out.stride(0),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"])


def gated_mlp(x, w, *, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3):
    """silu(x @ w[:, :N]) * (x @ w[:, N:]) for x [M, K] and the merged gate_up weight w [K, 2N],
    both fp16 or both bf16. Returns [M, N] in x's dtype."""
    import torch
    if x.dim() != 2 or w.dim() != 2 or x.shape[1] != w.shape[0] or w.shape[1] % 2:
        raise ValueError(f"expected x [M, K] and w [K, 2N]; got {tuple(x.shape)}, {tuple(w.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16) or w.dtype != x.dtype:
        raise ValueError(f"need fp16/bf16 x and w of one dtype; got {x.dtype}, {w.dtype}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M}
    _check_cfg(cfg)
    x, w = x.contiguous(), w.contiguous()
    M, N = x.shape[0], w.shape[1] // 2
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    _kernel[grid](**_kernel_args(x, w, out, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N, K = point["M"], point["N"], point["K"]
    x = torch.randn((M, K), generator=gen, device=device).to(dt)
    # weights ~ K^-1/2: gate and up O(1), as in a trained layer after RMSNorm
    w = (torch.randn((K, 2 * N), generator=gen, device=device) * K ** -0.5).to(dt)
    return {"x": x, "w": w}


def launch(inputs, cfg):
    return gated_mlp(inputs["x"], inputs["w"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                     BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"],
                     num_stages=cfg["num_stages"])


def reference(inputs):
    import torch.nn.functional as F
    gate, up = (inputs["x"].float() @ inputs["w"].float()).chunk(2, dim=-1)
    return F.silu(gate) * up


def torch_baseline(inputs):
    """Eager torch in the inputs' dtype: one cuBLAS GEMM into [M, 2N], then silu and the product
    (the unfused MLP: the intermediate goes through memory)."""
    import torch.nn.functional as F
    gate, up = (inputs["x"] @ inputs["w"]).chunk(2, dim=-1)
    return F.silu(gate) * up


def bytes_moved(point) -> int:
    """x and the merged weight read once, out written once (2-byte elements)."""
    M, N, K = point["M"], point["N"], point["K"]
    return 2 * (M * K + 2 * K * N + M * N)


def flops(point) -> int:
    """The two GEMMs' multiply-adds (the epilogue's ~5 M N is under 0.1% and not counted)."""
    return 4 * point["M"] * point["N"] * point["K"]


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
    x = torch.empty((M, K), dtype=dt, device="meta")
    w = torch.empty((K, 2 * N), dtype=dt, device="meta")
    out = torch.empty((M, N), dtype=dt, device="meta")
    return _kernel_args(x, w, out, cfg)
