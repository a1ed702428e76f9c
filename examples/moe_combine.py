"""MoE combine ("unpermute and reduce", as vLLM's moe_sum after the expert GEMMs / SGLang's
combine): bring each token's TOPK expert outputs back from the expert-sorted buffer and sum
them with the router's weights, a bare @triton.jit kernel + its launcher.

    out[t, :] = sum_{k < TOPK}  weights[t, k] * y[inv_perm[t * TOPK + k], :]

y: [R, D] fp16 / bf16, the experts' outputs in expert order (R >= T * TOPK rows: a dispatch
that pads each expert's rows to a GEMM tile leaves unused rows, never referenced), D
contiguous, any row stride. inv_perm: [T * TOPK] int32, where slot (t, k) of the routing
landed in y. weights: [T, TOPK] fp32 (the top-k probabilities, renormalised or scaled, as
the model routes). Products and the sum in fp32, in k order; out [T, D] in y's dtype, any row
stride. A token's TOPK rows sit in TOPK different experts' segments, so every row read is a
gather from anywhere in y.

A 2-D tiling, flattened into one grid axis: CTA pid owns tokens [BLOCK_T * (pid // nd), +
BLOCK_T) and columns [BLOCK_D * (pid % nd), + BLOCK_D), nd = cdiv(D, BLOCK_D); the column
blocks of one token block are neighbours in launch order, so they run together and share
the tokens' inv_perm and weights in L1 / L2. The CTA walks the TOPK slots, a loop unrolled
at compile time (TOPK is a constexpr, 2-8), so all TOPK gathers of a CTA are independent
loads in flight together: per slot it loads BLOCK_T row indices and weights (one int32 and
one fp32 per token, strided by TOPK), gathers a [BLOCK_T, BLOCK_D] tile of y (each row
BLOCK_D contiguous elements) and adds weight * tile into a fp32 [BLOCK_T, BLOCK_D]
accumulator; then one store of the tile. The token tail and the column tail (D not a
multiple of BLOCK_D) are masked.

Tunables: BLOCK_T (tokens per CTA), BLOCK_D (columns per CTA; powers of two), num_warps,
num_stages (no runtime loop: nothing is pipelined, num_stages changes nothing in the cubin).
Problem parameters (a workload point): T (tokens), D (hidden size), E (experts), topk, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(Y, INV, W, OUT, T, D, stride_y, stride_o,
            TOPK: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    nd = tl.cdiv(D, BLOCK_D)
    pid_t = pid // nd
    pid_d = pid % nd
    ts = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    t_ok = ts < T
    cols = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    ok = t_ok[:, None] & (cols < D)[None, :]
    slot0 = ts * TOPK                                           # (t, 0)'s flat slot

    acc = tl.zeros([BLOCK_T, BLOCK_D], tl.float32)
    for k in tl.static_range(TOPK):
        row = tl.load(INV + slot0 + k, mask=t_ok, other=0)
        w = tl.load(W + slot0 + k, mask=t_ok, other=0.0)
        y = tl.load(Y + row.to(tl.int64)[:, None] * stride_y + cols[None, :], mask=ok, other=0.0)
        acc += w[:, None] * y.to(tl.float32)
    out = OUT + ts.to(tl.int64)[:, None] * stride_o + cols[None, :]
    tl.store(out, acc.to(OUT.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_T", "BLOCK_D", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 1, "BLOCK_D": 1024, "num_warps": 4, "num_stages": 1}

# y gathered once (T * topk rows) and out written once: 0.56-1.0 GiB (12-21x the H200's 50 MB
# L2), 0.12-0.22 ms at 4.8 TB/s. Real routing: topk distinct experts per token out of E.
POINTS = [
    {"T": 32768, "D": 4096, "E": 8, "topk": 2, "dtype": "bf16"},      # Mixtral-8x7B, 32K-token prefill: y 512 MiB, out 256 MiB
    {"T": 8192, "D": 7168, "E": 256, "topk": 8, "dtype": "bf16"},     # DeepSeek-V3, 8K tokens: y 896 MiB, out 112 MiB
    {"T": 16384, "D": 2048, "E": 128, "topk": 8, "dtype": "fp16"},    # Qwen3-30B-A3B, 16K tokens: y 512 MiB, out 64 MiB
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


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_T", "BLOCK_D"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(y, inv_perm, weights, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    T, topk = weights.shape
    return dict(Y=y, INV=inv_perm, W=weights, OUT=out, T=T, D=y.shape[1], stride_y=y.stride(0),
                stride_o=out.stride(0), TOPK=topk, BLOCK_T=cfg["BLOCK_T"], BLOCK_D=cfg["BLOCK_D"])


def moe_combine(y, inv_perm, weights, *, out=None, BLOCK_T=1, BLOCK_D=1024, num_warps=4, num_stages=1):
    """out[t] = sum_k weights[t, k] * y[inv_perm[t * TOPK + k]] for y [R, D] (fp16 / bf16, the
    expert-sorted outputs), inv_perm [T * TOPK] int32, weights [T, TOPK] fp32. Returns out
    [T, D] in y's dtype (`out` if given: D contiguous). inv_perm is not range-checked."""
    import torch
    if y.dim() != 2 or weights.dim() != 2:
        raise ValueError(f"expected y [R, D], weights [T, TOPK]; got {tuple(y.shape)}, {tuple(weights.shape)}")
    T, topk = weights.shape
    D = y.shape[1]
    if inv_perm.dim() != 1 or inv_perm.shape[0] != T * topk:
        raise ValueError(f"inv_perm must be [{T * topk}] (T * TOPK); got {tuple(inv_perm.shape)}")
    if inv_perm.dtype != torch.int32:
        raise ValueError(f"inv_perm must be int32; got {inv_perm.dtype}")
    if weights.dtype != torch.float32:
        raise ValueError(f"weights must be fp32; got {weights.dtype}")
    if y.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"y dtype {y.dtype} is not fp16 or bf16")
    if topk < 1:
        raise ValueError("TOPK must be >= 1")
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_D": BLOCK_D}
    _check_cfg(cfg)
    if out is None:
        out = torch.empty((T, D), dtype=y.dtype, device=y.device)
    elif tuple(out.shape) != (T, D) or out.dtype != y.dtype or (T * D and out.stride(1) != 1):
        raise ValueError(f"out must be [{T}, {D}] {y.dtype} with contiguous columns; got "
                         f"{tuple(out.shape)} {out.dtype}")
    if T == 0 or D == 0:
        return out
    if y.stride(1) != 1:
        y = y.contiguous()
    inv_perm, weights = inv_perm.contiguous(), weights.contiguous()
    n = triton.cdiv(T, BLOCK_T) * triton.cdiv(D, BLOCK_D)
    _kernel[(n,)](**_kernel_args(y, inv_perm, weights, out, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def make_routing(T: int, E: int, topk: int, gen, device: str = "cuda"):
    """A router's decision and the dispatch's sort: topk distinct experts per token (the top
    of random logits, with a per-expert bias so the load is uneven, as real routers' is),
    weights the softmax over the chosen logits (renormalised top-k, fp32), and the slots
    stably sorted by expert (sorted row i holds flat slot order[i], so a token's rows are in
    topk different experts' segments). Returns (inv_perm [T * topk] int32, weights [T, topk]
    fp32, experts [T, topk] int64)."""
    import torch
    if not 1 <= topk <= E:
        raise ValueError(f"topk={topk} must be in 1..E={E}")
    logits = torch.randn((T, E), generator=gen, device=device)
    logits += 0.5 * torch.randn((1, E), generator=gen, device=device)
    top, experts = logits.topk(topk, dim=1)
    weights = torch.softmax(top, dim=1)
    order = torch.argsort(experts.reshape(-1), stable=True)
    inv_perm = torch.empty(T * topk, dtype=torch.int32, device=device)
    inv_perm[order] = torch.arange(T * topk, dtype=torch.int32, device=device)
    return inv_perm, weights.contiguous(), experts


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Routing from make_routing; y ~ N(0, 1) [T * topk, D] (the experts' outputs, sorted)."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, D, E, topk = point["T"], point["D"], point["E"], point["topk"]
    inv_perm, weights, _ = make_routing(T, E, topk, gen, device)
    y = torch.randn((T * topk, D), generator=gen, device=device).to(dt)
    return {"y": y, "inv_perm": inv_perm, "weights": weights}


def launch(inputs, cfg):
    return moe_combine(inputs["y"], inputs["inv_perm"], inputs["weights"], BLOCK_T=cfg["BLOCK_T"],
                       BLOCK_D=cfg["BLOCK_D"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """fp32: the gathered rows [T, TOPK, D] weighted and summed over TOPK."""
    w = inputs["weights"].float()
    T, topk = w.shape
    rows = inputs["y"].float()[inputs["inv_perm"].long()].view(T, topk, -1)
    return (rows * w[:, :, None]).sum(dim=1)


def torch_baseline(inputs):
    """Eager torch, as a framework's fallback path: gather, multiply by the weights (fp32),
    sum over TOPK, cast to y's dtype."""
    y, w = inputs["y"], inputs["weights"]
    T, topk = w.shape
    rows = y[inputs["inv_perm"].long()].view(T, topk, -1)
    return (rows.float() * w[:, :, None]).sum(dim=1).to(y.dtype)


def bytes_moved(point) -> int:
    """Each of the T * topk gathered y rows read once, out written once, inv_perm (int32) and
    weights (fp32) read once. The column blocks' re-reads of the same inv_perm and weights
    (L1 / L2 hits) are not counted."""
    T, D, topk = point["T"], point["D"], point["topk"]
    e = _elem_bytes(point.get("dtype", "bf16"))
    return T * topk * D * e + T * D * e + T * topk * (4 + 4)


def flops(point) -> int:
    """A multiply and an add per gathered element."""
    return 2 * point["T"] * point["topk"] * point["D"]


def grid(cfg, point) -> int:
    """One CTA per (BLOCK_T tokens, BLOCK_D columns) tile."""
    return triton.cdiv(point["T"], cfg["BLOCK_T"]) * triton.cdiv(point["D"], cfg["BLOCK_D"])


def loop_iterations(cfg, point) -> int:
    """The TOPK slots' loop (unrolled at compile time): one gathered tile per slot."""
    return point["topk"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, D, topk = point["T"], point["D"], point["topk"]
    y = torch.empty((T * topk, D), dtype=dt, device="meta")
    inv_perm = torch.empty((T * topk,), dtype=torch.int32, device="meta")
    weights = torch.empty((T, topk), dtype=torch.float32, device="meta")
    out = torch.empty((T, D), dtype=dt, device="meta")
    return _kernel_args(y, inv_perm, weights, out, cfg)
