"""A user's own GEMM kernel and its launcher, as a newcomer would write them: no card.

The kernel file imports `tiles` from its own folder (occmodel puts the folder on sys.path).
"""

import triton
import triton.language as tl
from tiles import DEFAULT_TILES


@triton.jit
def mm_kernel(A, B, C, M, N, K, stride_am, stride_bk, stride_cm,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = A + rm[:, None] * stride_am + rk[None, :]
    b = B + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(a, mask=(rk[None, :] < K - k * BK) & (rm[:, None] < M), other=0.0),
                      tl.load(b, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0))
        a += BK
        b += BK * stride_bk
    c = C + rm[:, None] * stride_cm + rn[None, :]
    tl.store(c, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


# ------------------------------------------------------------------ launcher
POINTS = [{"M": 512, "N": 512, "K": 512}, {"M": 1024, "N": 256, "K": 2048}]
BASELINE = dict(DEFAULT_TILES, num_warps=4, num_stages=2)


def make_inputs(point, seed=0, device="cuda"):
    import torch
    g = torch.Generator(device="cpu").manual_seed(seed)
    a = torch.randn(point["M"], point["K"], generator=g).to(device=device, dtype=torch.float16)
    b = torch.randn(point["K"], point["N"], generator=g).to(device=device, dtype=torch.float16)
    return {"a": a, "b": b}


def launch(inputs, cfg):
    import torch
    a, b = inputs["a"], inputs["b"]
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = (triton.cdiv(M, cfg["BM"]), triton.cdiv(N, cfg["BN"]))
    mm_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), BM=cfg["BM"], BN=cfg["BN"],
                    BK=cfg["BK"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return c


def reference(inputs):
    return inputs["a"].float() @ inputs["b"].float()


def bytes_moved(point):
    return 2 * (point["M"] * point["K"] + point["K"] * point["N"] + point["M"] * point["N"])


def flops(point):
    return 2 * point["M"] * point["N"] * point["K"]


def grid(cfg, point):
    return triton.cdiv(point["M"], cfg["BM"]) * triton.cdiv(point["N"], cfg["BN"])


def loop_iterations(cfg, point):
    return triton.cdiv(point["K"], cfg["BK"])


def example_args(cfg, point):
    """The launch arguments at `point`, on the meta device (no memory, no GPU)."""
    import torch
    M, N, K = point["M"], point["N"], point["K"]
    a = torch.empty((M, K), dtype=torch.float16, device="meta")
    b = torch.empty((K, N), dtype=torch.float16, device="meta")
    c = torch.empty((M, N), dtype=torch.float16, device="meta")
    return (a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))


def odd_args(cfg):
    """--args form: a 1000 x 1000 x 1000 problem, whose row strides are not multiples of 16
    (the launcher would not add ':16' to them)."""
    import torch
    a = torch.empty((1000, 1000), dtype=torch.float16, device="meta")
    return (a, a, a, 1000, 1000, 1000, 1000, 1000, 1000)
