"""Scaled embedding lookup (Gemma's embedding: the rows times sqrt(hidden)), a bare
@triton.jit kernel + its launcher.

    out[t, :] = table[ids[t], :] * scale

ids: [T] int32 / int64 token ids (trusted: 0 <= id < V); table: [V, D] fp16 / bf16 /
fp32, D contiguous; scale: a float (Gemma's normalizer sqrt(D), rounded to the table's
dtype as Gemma does); out: [T, D] in the table's dtype, the multiply in fp32, one
rounding. One CTA per BLOCK_T consecutive tokens: it loads their BLOCK_T ids once
(widened to int64 row offsets: V D exceeds 2^31 elements for the large vocabularies)
and walks D in BLOCK_D chunks, each chunk one masked [BLOCK_T, BLOCK_D] gather of
BLOCK_T table rows (contiguous along D, rows anywhere in the table), a multiply, and
a coalesced store into BLOCK_T consecutive out rows. Masks give the T and D tails.
Tokens repeat: make_inputs draws ids from a Zipf(1.0) law over the vocabulary (ranks
scattered over the ids by a random permutation), so the top token is ~8% of the
lookups and only 33-46% of the lookups at the POINTS are distinct rows; the repeats of
a hot row are L2 hits.

Tunables: BLOCK_T, BLOCK_D (powers of two), num_warps, num_stages (no dot: the loads
are not pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): T (tokens), D (hidden), V (vocabulary), dtype,
ids ("int32" or "int64", default "int64").
"""

from __future__ import annotations

import triton
import triton.language as tl

ZIPF_S = 1.0          # token-frequency exponent: p(rank r) ~ 1 / r^s, natural text's s ~ 1


@triton.jit
def _kernel(IDS, TABLE, OUT, T, D, stride_tv, stride_ot, scale,
            BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    ts = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    t_ok = ts < T
    ids = tl.load(IDS + ts, mask=t_ok, other=0).to(tl.int64)
    src = TABLE + ids[:, None] * stride_tv
    dst = OUT + ts.to(tl.int64)[:, None] * stride_ot
    ds = tl.arange(0, BLOCK_D)
    for d0 in range(0, D, BLOCK_D):
        d = d0 + ds
        ok = t_ok[:, None] & (d < D)[None, :]
        row = tl.load(src + d[None, :], mask=ok, other=0.0)
        tl.store(dst + d[None, :], (row.to(tl.float32) * scale).to(OUT.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
ID_DTYPES = ("int32", "int64")
TUNABLES = ("BLOCK_T", "BLOCK_D", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 4, "BLOCK_D": 512, "num_warps": 4, "num_stages": 2}

# out 128-768 MiB, the lookups the same again; tables 1-1.5 GiB (20-30x the H200's 50 MB L2).
POINTS = [
    {"T": 65536, "D": 3072, "V": 256000, "dtype": "bf16", "ids": "int32"},   # Gemma-7B, 64k-token prefill: 768 MiB
    {"T": 8192, "D": 4096, "V": 128256, "dtype": "fp16", "ids": "int64"},    # Llama-3-8B vocabulary, 8k tokens: 128 MiB
    {"T": 4096, "D": 8192, "V": 32000, "dtype": "fp32", "ids": "int64"},     # Llama-2-70B width, fp32 table: 256 MiB
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _id_dtype(name: str):
    import torch
    try:
        return {"int32": torch.int32, "int64": torch.int64}[name]
    except KeyError:
        raise ValueError(f"ids {name!r} is not one of {', '.join(ID_DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_T", "BLOCK_D"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(ids, table, out, scale, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(IDS=ids, TABLE=table, OUT=out, T=ids.shape[0], D=table.shape[1],
                stride_tv=table.stride(0), stride_ot=out.stride(0), scale=float(scale),
                BLOCK_T=cfg["BLOCK_T"], BLOCK_D=cfg["BLOCK_D"])


def embedding_gather(ids, table, scale, *, BLOCK_T=4, BLOCK_D=512, num_warps=4, num_stages=2):
    """table[ids] * scale for ids [T] int32/int64 and table [V, D] fp16/bf16/fp32.
    Returns [T, D] in the table's dtype."""
    import torch
    if ids.dim() != 1 or table.dim() != 2:
        raise ValueError(f"expected ids [T] and table [V, D]; got {tuple(ids.shape)}, {tuple(table.shape)}")
    if ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"ids must be int32 or int64; got {ids.dtype}")
    if table.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"table must be fp16/bf16/fp32; got {table.dtype}")
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_D": BLOCK_D}
    _check_cfg(cfg)
    ids = ids.contiguous()
    if table.stride(1) != 1:
        table = table.contiguous()
    out = torch.empty((ids.shape[0], table.shape[1]), dtype=table.dtype, device=table.device)
    grid = (triton.cdiv(ids.shape[0], BLOCK_T),)
    _kernel[grid](**_kernel_args(ids, table, out, scale, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def gemma_scale(D: int, dtype: str) -> float:
    """sqrt(D) rounded to the table's dtype (Gemma's normalizer)."""
    import torch
    return float(torch.tensor(D ** 0.5, dtype=_torch_dtype(dtype)))


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt, it = _torch_dtype(point.get("dtype", "bf16")), _id_dtype(point.get("ids", "int64"))
    T, D, V = point["T"], point["D"], point["V"]
    table = (torch.randn((V, D), generator=gen, device=device) * D ** -0.5).to(dt)
    # Zipf(ZIPF_S) over the ranks by the inverse CDF, the ranks scattered over the ids
    p = 1.0 / torch.arange(1, V + 1, device=device, dtype=torch.float64) ** ZIPF_S
    cdf = torch.cumsum(p, 0)
    u = torch.rand((T,), generator=gen, device=device, dtype=torch.float64) * cdf[-1]
    rank = torch.searchsorted(cdf, u).clamp_(max=V - 1)
    perm = torch.randperm(V, generator=gen, device=device)
    return {"ids": perm[rank].to(it), "table": table, "scale": gemma_scale(D, point.get("dtype", "bf16"))}


def launch(inputs, cfg):
    return embedding_gather(inputs["ids"], inputs["table"], inputs["scale"], BLOCK_T=cfg["BLOCK_T"],
                            BLOCK_D=cfg["BLOCK_D"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    return inputs["table"].float()[inputs["ids"].long()] * inputs["scale"]


def torch_baseline(inputs):
    """Eager torch in the table's dtype: F.embedding, then the scale (two kernels)."""
    import torch.nn.functional as F
    return F.embedding(inputs["ids"], inputs["table"]) * inputs["scale"]


def bytes_moved(point) -> int:
    """ids read once, one table row read per lookup (T D elements: repeated tokens counted
    every time), out written once. The hook sees only the point, not the drawn ids, so
    the repeats cannot be subtracted; every lookup is what the kernel requests and what
    all-distinct ids would cost from DRAM. With the Zipf ids only 33-46% of the lookups
    are distinct rows, so DRAM moves ~(T + distinct) D elements: 67-73% of this."""
    T, D = point["T"], point["D"]
    ib = 4 if point.get("ids", "int64") == "int32" else 8
    return T * ib + 2 * T * D * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    """One multiply per output element."""
    return point["T"] * point["D"]


def grid(cfg, point) -> int:
    """One CTA per BLOCK_T tokens."""
    return triton.cdiv(point["T"], cfg["BLOCK_T"])


def loop_iterations(cfg, point) -> int:
    """D chunks per CTA."""
    return triton.cdiv(point["D"], cfg["BLOCK_D"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory).
    The table stands in as the [T, D] rows the lookups read (bytes_moved's count): the kernel
    sees the table only through its pointer, dtype and row stride D, which are the real
    table's, so the stand-in specializes and compiles the same; V enters no argument."""
    import torch
    dt, it = _torch_dtype(point.get("dtype", "bf16")), _id_dtype(point.get("ids", "int64"))
    T, D = point["T"], point["D"]
    ids = torch.empty((T,), dtype=it, device="meta")
    table = torch.empty((T, D), dtype=dt, device="meta")
    out = torch.empty((T, D), dtype=dt, device="meta")
    return _kernel_args(ids, table, out, gemma_scale(D, point.get("dtype", "bf16")), cfg)
