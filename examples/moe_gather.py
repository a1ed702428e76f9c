"""MoE combine: gather each token's TOPK expert-output rows by index and sum them
weighted, a bare @triton.jit kernel + its launcher.

    out[t, :] = sum_k  weight[t, k] * y[pos[t, k], :]

The last step of a mixture-of-experts layer. Tokens were routed to TOPK experts each
and permuted into expert order (so each expert's rows are contiguous for its grouped
GEMM); y [T * TOPK, D] holds the experts' outputs in that permuted order, pos [T, TOPK]
says where slot (t, k) landed, weight [T, TOPK] the router's probabilities. Every row
read is a gather through pos: rows of a token are scattered over the whole of y.

One CTA takes BLOCK_T tokens; their TOPK positions and weights are loaded once, as a
[BLOCK_T, TOPK_P2] tile (TOPK padded to a power of two, the pad masked), then the CTA
walks the hidden dim in BLOCK_D chunks, gathering a [BLOCK_T, TOPK_P2, BLOCK_D] tile
of y per chunk and reducing it over the TOPK axis in fp32.

Tunables: BLOCK_T, BLOCK_D (powers of two), num_warps, num_stages.
Problem parameters (a workload point): T (tokens), D (hidden), E (experts), topk, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(Y, POS, WEIGHT, OUT, n_tokens, hidden, stride_y, stride_out,
            TOPK: tl.constexpr, TOPK_P2: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    toks = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    ks = tl.arange(0, TOPK_P2)
    slot_ok = (toks < n_tokens)[:, None] & (ks < TOPK)[None, :]               # [BLOCK_T, TOPK_P2]
    slots = toks[:, None] * TOPK + ks[None, :]
    pos = tl.load(POS + slots, mask=slot_ok, other=0)
    w = tl.load(WEIGHT + slots, mask=slot_ok, other=0.0).to(tl.float32)

    row_ptr = Y + pos.to(tl.int64)[:, :, None] * stride_y                      # [BLOCK_T, TOPK_P2, 1]
    out_ptr = OUT + toks.to(tl.int64)[:, None] * stride_out                    # [BLOCK_T, 1]
    offs_d = tl.arange(0, BLOCK_D)
    for d0 in range(0, hidden, BLOCK_D):
        cols = d0 + offs_d
        d_ok = cols < hidden
        rows = tl.load(row_ptr + cols[None, None, :], mask=slot_ok[:, :, None] & d_ok[None, None, :],
                       other=0.0)
        acc = tl.sum(rows.to(tl.float32) * w[:, :, None], axis=1)              # [BLOCK_T, BLOCK_D]
        tl.store(out_ptr + cols[None, :], acc.to(OUT.dtype.element_ty),
                 mask=(toks < n_tokens)[:, None] & d_ok[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_T", "BLOCK_D", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 4, "BLOCK_D": 256, "num_warps": 4, "num_stages": 2}

# One launch gathers T x topk rows of D and writes T rows: 0.4-1.1 GiB (8-20x the
# H200's 50 MB L2), 0.1-0.3 ms at 4.8 TB/s.
POINTS = [
    {"T": 16384, "D": 4096, "E": 64, "topk": 8, "dtype": "bf16"},    # 1.1 GiB gathered + written
    {"T": 32768, "D": 4096, "E": 8, "topk": 2, "dtype": "bf16"},     # 768 MiB (Mixtral-like routing)
    {"T": 8192, "D": 7168, "E": 256, "topk": 6, "dtype": "fp16"},    # 784 MiB (odd topk: padded to 8)
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def _kernel_args(y, pos, weight, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    topk = pos.shape[1]
    return dict(Y=y, POS=pos, WEIGHT=weight, OUT=out, n_tokens=pos.shape[0], hidden=y.shape[1],
                stride_y=y.stride(0), stride_out=out.stride(0),
                TOPK=topk, TOPK_P2=_pow2(topk), BLOCK_T=cfg["BLOCK_T"], BLOCK_D=cfg["BLOCK_D"])


def moe_combine(y, pos, weight, *, BLOCK_T: int = 4, BLOCK_D: int = 256, num_warps: int = 4,
                num_stages: int = 2):
    """out[t] = sum_k weight[t, k] * y[pos[t, k]]. y: [R, D] (columns contiguous), pos: [T, TOPK]
    int32 rows of y, weight: [T, TOPK] (any float dtype). Returns [T, D] in y's dtype."""
    import torch
    if y.dim() != 2 or pos.dim() != 2 or weight.shape != pos.shape:
        raise ValueError(f"expected y [R, D], pos [T, TOPK], weight [T, TOPK]; got {tuple(y.shape)}, "
                         f"{tuple(pos.shape)}, {tuple(weight.shape)}")
    if pos.dtype != torch.int32:
        raise ValueError(f"pos must be int32, got {pos.dtype}")
    for name, v in (("BLOCK_T", BLOCK_T), ("BLOCK_D", BLOCK_D)):
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")
    if y.stride(1) != 1:
        y = y.contiguous()
    pos, weight = pos.contiguous(), weight.contiguous()
    out = torch.empty((pos.shape[0], y.shape[1]), dtype=y.dtype, device=y.device)
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_D": BLOCK_D}
    _kernel[(triton.cdiv(pos.shape[0], BLOCK_T),)](**_kernel_args(y, pos, weight, out, cfg),
                                                    num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Random routing (TOPK distinct experts per token, softmax weights), slots sorted
    by expert as a dispatch would leave them, and random expert outputs y."""
    import torch
    T, D, E, topk = point["T"], point["D"], point["E"], point["topk"]
    if topk > E:
        raise ValueError(f"topk={topk} > E={E} experts")
    gen = torch.Generator(device=device).manual_seed(seed)
    logits = torch.randn((T, E), generator=gen, device=device)
    top, experts = logits.topk(topk, dim=1)                       # distinct experts per token
    weight = torch.softmax(top, dim=1)
    order = torch.argsort(experts.reshape(-1), stable=True)      # permuted slot i holds flat slot order[i]
    pos = torch.empty(T * topk, dtype=torch.int32, device=device)
    pos[order] = torch.arange(T * topk, dtype=torch.int32, device=device)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    y = torch.randn((T * topk, D), generator=gen, device=device).to(dt)
    return {"y": y, "pos": pos.reshape(T, topk), "weight": weight}


def launch(inputs, cfg):
    return moe_combine(inputs["y"], inputs["pos"], inputs["weight"], BLOCK_T=cfg["BLOCK_T"],
                       BLOCK_D=cfg["BLOCK_D"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    rows = inputs["y"].float()[inputs["pos"].long()]             # [T, TOPK, D], gathered
    return (rows * inputs["weight"].float()[:, :, None]).sum(dim=1)


def torch_baseline(inputs):
    """What one would write without a kernel: index, scale, sum over the TOPK axis."""
    y = inputs["y"]
    return (y[inputs["pos"].long()] * inputs["weight"].to(y.dtype)[:, :, None]).sum(dim=1)


def bytes_moved(point) -> int:
    """Every y row read once, out written once, pos (int32) and weight (fp32) read once."""
    T, D, topk = point["T"], point["D"], point["topk"]
    e = _elem_bytes(point.get("dtype", "bf16"))
    return T * topk * D * e + T * D * e + T * topk * (4 + 4)


def flops(point) -> int:
    """A multiply and an add per gathered element."""
    return 2 * point["T"] * point["topk"] * point["D"]


def grid(cfg, point) -> int:
    return triton.cdiv(point["T"], cfg["BLOCK_T"])


def loop_iterations(cfg, point) -> int:
    return triton.cdiv(point["D"], cfg["BLOCK_D"])


def example_args(cfg, point) -> dict:
    """The launch arguments for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    T, D, topk = point["T"], point["D"], point["topk"]
    dt = _torch_dtype(point.get("dtype", "bf16"))
    y = torch.empty((T * topk, D), dtype=dt, device="meta")
    pos = torch.empty((T, topk), dtype=torch.int32, device="meta")
    weight = torch.empty((T, topk), dtype=torch.float32, device="meta")
    out = torch.empty((T, D), dtype=dt, device="meta")
    return _kernel_args(y, pos, weight, out, cfg)
