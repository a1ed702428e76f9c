"""EmbeddingBag forward (torch.nn.functional.embedding_bag, mode "sum" / "mean", optional
per_sample_weights; the pooled sparse-feature lookup of DLRM-style recommenders and of
bag-of-tokens text models), a bare @triton.jit kernel + its launcher.

    out[b, :] = sum_{i in bag b} psw[i] * weight[indices[i], :]         mode "sum"
    out[b, :] = sum_{i in bag b} weight[indices[i], :] / |bag b|         mode "mean" (0 if empty)

    bag b = indices[offsets[b]:offsets[b + 1]]      (psw[i] = 1 without per_sample_weights)

indices: [nnz] int64 (or int32; trusted: 0 <= index < num_embeddings, not range-checked);
offsets: [bags + 1] in indices' dtype, nondecreasing (torch's include_last_offset=True form;
the user function also takes torch's default [bags] form); weight: [num_embeddings, D] fp16 /
bf16 / fp32, D contiguous (rows may be strided); per_sample_weights: [nnz] in weight's dtype,
mode "sum" only (torch's rule); out: [bags, D] in weight's dtype or fp32 (fbgemm's fp16
tables with fp32 pooled output). fp32 accumulation, one rounding at the store.
No padding_idx and no "max" mode.

One CTA per (BLOCK_B consecutive bags, BLOCK_D columns), column block fastest in the 1-D
grid, so the CTAs that read one bag's indices run side by side. For each of its bags the CTA
loads the two offsets (scalars) and walks the bag's indices in BLOCK_I steps: each step loads
BLOCK_I indices (one coalesced vector), widens them to int64 row offsets (num_embeddings x D
exceeds 2^31 elements for the big tables) and gathers one masked [BLOCK_I, BLOCK_D] tile of
weight rows (BLOCK_D contiguous elements per row, the rows anywhere in the table), times the
per-sample weights if any, added elementwise into a [BLOCK_I, BLOCK_D] fp32 accumulator;
after the bag the accumulator is reduced along the rows once, scaled by 1 / |bag| for the
mean, rounded and stored. An empty bag runs no step and stores 0; bags past `bags` (the last
CTA's group) store nothing. The D mask is dropped when BLOCK_D divides D (EVEN_D).
Bag sizes are ragged (the loop bound is data), so the work per CTA is uneven; BLOCK_B > 1
evens it out over fewer, longer CTAs. The gathered rows are the traffic: BLOCK_I rows in
flight per step is the memory-level parallelism a CTA offers.

Tunables: BLOCK_D, BLOCK_I, BLOCK_B (powers of two), num_warps, num_stages (no dot: the
loads are not pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): B (bags), L (mean pooling factor: nnz = B * L
exactly), D, V (num_embeddings), dtype (weight's), out ("fp32" or the weight's dtype,
default the weight's), mode ("sum" / "mean"), psw (per_sample_weights, "sum" only), zipf
(the index law's exponent; 0 = uniform over the table). make_inputs draws the bag sizes from
bag_sizes: a skewed (lognormal) law with some empty and some very long bags, fixed by the
seed.
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl

LEN_SIGMA = 1.0       # lognormal shape of the bag sizes (sigma of log size)
LEN_CAP = 12.0        # no bag larger than ~LEN_CAP x the mean size
EMPTY_FRAC = 0.02     # share of empty bags (a sample with no value for the feature)


@triton.jit
def _kernel(IDX, OFF, W, PSW, OUT, B, D, stride_w, stride_o,
            MEAN: tl.constexpr, HAS_PSW: tl.constexpr, EVEN_D: tl.constexpr, BLOCK_B: tl.constexpr,
            BLOCK_I: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    n_dblk = tl.cdiv(D, BLOCK_D)
    grp = pid // n_dblk
    ds = (pid % n_dblk) * BLOCK_D + tl.arange(0, BLOCK_D)
    if EVEN_D:
        d_ok = tl.full([BLOCK_D], 1, tl.int1)
    else:
        d_ok = ds < D
    ii = tl.arange(0, BLOCK_I)
    w_col = W + ds[None, :]
    for k in range(BLOCK_B):
        b = grp * BLOCK_B + k
        if b < B:
            start = tl.load(OFF + b)
            end = tl.load(OFF + b + 1)
            acc = tl.zeros([BLOCK_I, BLOCK_D], tl.float32)
            for i0 in range(start, end, BLOCK_I):
                pos = i0 + ii
                i_ok = pos < end
                idx = tl.load(IDX + pos, mask=i_ok, other=0).to(tl.int64)
                m = i_ok[:, None] & d_ok[None, :]
                x = tl.load(w_col + idx[:, None] * stride_w, mask=m, other=0.0).to(tl.float32)
                if HAS_PSW:
                    x = x * tl.load(PSW + pos, mask=i_ok, other=0.0).to(tl.float32)[:, None]
                acc += x
            s = tl.sum(acc, axis=0)
            if MEAN:
                s = s * (1.0 / tl.maximum(end - start, 1).to(tl.float32))
            tl.store(OUT + b.to(tl.int64) * stride_o + ds, s.to(OUT.dtype.element_ty), mask=d_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
MODES = ("sum", "mean")
TUNABLES = ("BLOCK_D", "BLOCK_I", "BLOCK_B", "num_warps", "num_stages")
BASELINE = {"BLOCK_D": 128, "BLOCK_I": 16, "BLOCK_B": 1, "num_warps": 4, "num_stages": 1}

# the gathered rows 512-768 MiB (10-15x the H200's 50 MB L2), tables 0.25-1 GiB.
POINTS = [
    # DLRM (Criteo-scale) sparse feature: a 2^20-row, 128-d fp16 table (fbgemm TBE's fp16
    # weights, fp32 pooled output), sum pooling, 64k-sample batch of ~32 lookups, uniform ids
    {"B": 65536, "L": 32, "D": 128, "V": 2**20, "dtype": "fp16", "out": "fp32", "mode": "sum", "psw": False,
     "zipf": 0.0},
    # bag-of-tokens mean over Llama-3-8B's embedding (128256 x 4096 bf16): 2k documents of ~48
    # tokens, token ids Zipf(1.0) (hot tokens repeat; their rows hit L2)
    {"B": 2048, "L": 48, "D": 4096, "V": 128256, "dtype": "bf16", "out": "bf16", "mode": "mean", "psw": False,
     "zipf": 1.0},
    # weighted multi-hot feature (per_sample_weights, e.g. tf-idf / recency-weighted history):
    # a 2^20 x 256 fp32 table, 8k samples of ~64 items, item popularity Zipf(1.05)
    {"B": 8192, "L": 64, "D": 256, "V": 2**20, "dtype": "fp32", "out": "fp32", "mode": "sum", "psw": True,
     "zipf": 1.05},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    try:
        return {"fp16": 2, "bf16": 2, "fp32": 4}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _out_name(point) -> str:
    """The output dtype's name: the point's "out", "fp32" or the weight's dtype."""
    dt = point.get("dtype", "bf16")
    _elem_bytes(dt)
    out = point.get("out", dt)
    if out not in ("fp32", dt):
        raise ValueError(f"out {out!r} must be 'fp32' or the weight's dtype {dt!r}")
    return out


def _mode(name: str) -> str:
    if name not in MODES:
        raise ValueError(f"mode {name!r} is not one of {', '.join(MODES)}")
    return name


def _point_psw(point) -> bool:
    psw = bool(point.get("psw", False))
    if psw and _mode(point.get("mode", "sum")) != "sum":
        raise ValueError("per_sample_weights are only supported with mode 'sum'")
    return psw


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_D", "BLOCK_I", "BLOCK_B"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(indices, offsets, weight, psw, out, mean: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    offsets: the [B + 1] form. psw: a tensor or None."""
    D = weight.shape[1]
    return dict(IDX=indices, OFF=offsets, W=weight, PSW=psw, OUT=out, B=out.shape[0], D=D,
                stride_w=weight.stride(0), stride_o=out.stride(0), MEAN=mean, HAS_PSW=psw is not None,
                EVEN_D=D % cfg["BLOCK_D"] == 0, BLOCK_B=cfg["BLOCK_B"], BLOCK_I=cfg["BLOCK_I"],
                BLOCK_D=cfg["BLOCK_D"])


def embedding_bag(input, weight, offsets, mode: str = "mean", per_sample_weights=None,
                  include_last_offset: bool = False, *, out=None, out_dtype=None, BLOCK_D=128, BLOCK_I=16,
                  BLOCK_B=1, num_warps=4, num_stages=1):
    """torch.nn.functional.embedding_bag(input, weight, offsets, mode=mode, per_sample_weights=...,
    include_last_offset=...) for 1-D input [nnz] int32 / int64 with offsets of the same dtype
    ([bags] starting points, or [bags + 1] with include_last_offset), weight [V, D] fp16 / bf16 /
    fp32 and per_sample_weights [nnz] in weight's dtype (mode "sum" only). Returns out [bags, D]
    in out_dtype (weight's dtype or torch.float32; default weight's), or into `out` (D
    contiguous, rows may be strided). fp32 accumulation; an empty bag gives 0. Indices are not
    range-checked; no padding_idx, no "max"."""
    import torch
    mean = _mode(mode) == "mean"
    if weight.dim() != 2:
        raise ValueError(f"expected weight [num_embeddings, D]; got {tuple(weight.shape)}")
    if weight.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"weight dtype {weight.dtype} is not fp16, bf16 or fp32")
    if input.dim() != 1 or input.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"input must be 1-D int32 / int64 indices; got {input.dtype} {tuple(input.shape)}")
    if offsets.dim() != 1 or offsets.dtype != input.dtype or (include_last_offset and offsets.numel() < 1):
        raise ValueError(f"offsets must be 1-D {input.dtype} ({'[bags + 1]' if include_last_offset else '[bags]'}); "
                         f"got {offsets.dtype} {tuple(offsets.shape)}")
    nnz = input.numel()
    if per_sample_weights is not None:
        if mean:
            raise ValueError("per_sample_weights are only supported with mode 'sum'")
        if per_sample_weights.dtype != weight.dtype or tuple(per_sample_weights.shape) != (nnz,):
            raise ValueError(f"per_sample_weights must be {weight.dtype} [{nnz}]; got "
                             f"{per_sample_weights.dtype} {tuple(per_sample_weights.shape)}")
        per_sample_weights = per_sample_weights.contiguous()
    if out_dtype is None:
        out_dtype = weight.dtype
    if out_dtype not in (weight.dtype, torch.float32):
        raise ValueError(f"out_dtype {out_dtype} must be weight's dtype {weight.dtype} or torch.float32")
    cfg = {"BLOCK_D": BLOCK_D, "BLOCK_I": BLOCK_I, "BLOCK_B": BLOCK_B}
    _check_cfg(cfg)
    if not include_last_offset:
        offsets = torch.cat((offsets, torch.full((1,), nnz, dtype=offsets.dtype, device=offsets.device)))
    B, D = offsets.numel() - 1, weight.shape[1]
    if out is None:
        out = torch.empty((B, D), dtype=out_dtype, device=weight.device)
    elif tuple(out.shape) != (B, D) or out.dtype != out_dtype or (B * D and out.stride(1) != 1):
        raise ValueError(f"out must be a [{B}, {D}] {out_dtype} tensor with D contiguous; got "
                         f"{list(out.shape)} {out.dtype}")
    if B == 0 or D == 0:
        return out
    if weight.stride(1) != 1:
        weight = weight.contiguous()
    args = _kernel_args(input.contiguous(), offsets.contiguous(), weight, per_sample_weights, out, mean, cfg)
    _kernel[(triton.cdiv(B, BLOCK_B) * triton.cdiv(D, BLOCK_D),)](**args, num_warps=num_warps,
                                                                 num_stages=num_stages)
    return out


@functools.lru_cache(maxsize=16)
def _sizes_cached(B: int, L: int, seed: int):
    import torch
    if B < 1 or L < 0:
        raise ValueError(f"need B >= 1 and L >= 0; got B={B}, L={L}")
    total = B * L
    gen = torch.Generator().manual_seed(seed)
    raw = torch.exp(LEN_SIGMA * torch.randn(B, generator=gen, dtype=torch.float64))
    raw = raw.clamp(max=LEN_CAP * float(raw.mean()))
    empty = torch.rand(B, generator=gen) < EMPTY_FRAC
    if bool(empty.all()):
        empty[0] = False
    raw[empty] = 0.0
    sizes = torch.floor(raw * (total / float(raw.sum()))).to(torch.int64)
    short = total - int(sizes.sum())             # fewer than the non-empty bags: each floor lost < 1
    nz = (~empty).nonzero().flatten()
    sizes[nz[torch.randperm(nz.numel(), generator=gen)[:short]]] += 1
    return sizes


def bag_sizes(B: int, L: int, seed: int = 0):
    """[B] int64 (CPU) bag sizes summing to exactly B * L: lognormal (sigma LEN_SIGMA), capped
    at LEN_CAP x the draw's mean, EMPTY_FRAC of them empty, scaled to the total (the rounding
    remainder one lookup each to random non-empty bags), in random order. Recommender pooling
    factors are this skewed: the median ~0.6 x the mean, the largest ~10 x it. Deterministic
    in (B, L, seed)."""
    return _sizes_cached(int(B), int(L), int(seed)).clone()


def draw_indices(n: int, V: int, zipf: float, gen, device: str = "cuda"):
    """[n] int64 in [0, V): uniform for zipf == 0, else rank r drawn with p ~ 1 / r^zipf and the
    ranks scattered over the ids by a random permutation (hot rows anywhere in the table)."""
    import torch
    if zipf == 0:
        return torch.randint(0, V, (n,), generator=gen, device=device)
    # drawn on the CPU from a generator seeded by `gen`: torch.multinomial on CUDA is not
    # reproducible for one seed (H200, torch 2.11: 28,882 of 524,288 samples differed between
    # two calls), and make_inputs must give the same inputs for the same seed
    cpu = torch.Generator().manual_seed(int(torch.randint(0, 2**62, (1,), generator=gen, device=device)))
    p = torch.arange(1, V + 1, dtype=torch.float64).pow(-float(zipf))
    ranks = torch.multinomial(p, n, replacement=True, generator=cpu)
    return torch.randperm(V, generator=cpu)[ranks].to(device)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """weight ~ N(0, 1) [V, D]; offsets [B + 1] int64 from bag_sizes (the same sizes on every
    device for one seed); indices [B * L] int64 from draw_indices; per_sample_weights ~ U(0.1, 2)
    in weight's dtype when the point has psw."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    out_dt = _torch_dtype(_out_name(point))
    mode = _mode(point.get("mode", "sum"))
    psw = _point_psw(point)
    B, L, D, V = point["B"], point["L"], point["D"], point["V"]
    sizes = bag_sizes(B, L, seed)
    offsets = torch.zeros(B + 1, dtype=torch.int64)
    torch.cumsum(sizes, 0, out=offsets[1:])
    gen = torch.Generator(device=device).manual_seed(seed)
    weight = torch.randn((V, D), generator=gen, device=device).to(dt)
    indices = draw_indices(B * L, V, float(point.get("zipf", 0.0)), gen, device)
    inputs = {"indices": indices, "offsets": offsets.to(device), "weight": weight, "mode": mode,
              "out_dtype": out_dt, "per_sample_weights": None}
    if psw:
        inputs["per_sample_weights"] = (0.1 + 1.9 * torch.rand(B * L, generator=gen, device=device)).to(dt)
    return inputs


def launch(inputs, cfg):
    """The [B, D] output (the point's out dtype)."""
    return embedding_bag(inputs["indices"], inputs["weight"], inputs["offsets"], inputs.get("mode", "sum"),
                         inputs.get("per_sample_weights"), include_last_offset=True,
                         out_dtype=inputs.get("out_dtype"), BLOCK_D=cfg["BLOCK_D"], BLOCK_I=cfg["BLOCK_I"],
                         BLOCK_B=cfg["BLOCK_B"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """fp32 [B, D]: each bag's sum of its (per-sample-weighted) rows in fp64 from the same
    rounded weight and weights the kernel reads, / size for "mean" (0 if empty). Bags go in
    chunks of ~2^24 / D lookups, so the fp64 gathered rows stay ~128 MiB at any D."""
    import torch
    idx, off, w = inputs["indices"], inputs["offsets"].long().cpu(), inputs["weight"]
    psw = inputs.get("per_sample_weights")
    B, D = off.numel() - 1, w.shape[1]
    dev = w.device
    sizes = off[1:] - off[:-1]
    ref = torch.zeros((B, D), dtype=torch.float64, device=dev)
    chunk = max(1, (1 << 24) // max(D, 1))          # lookups per chunk: 2^24 fp64 elements
    b0 = 0
    while b0 < B:
        b1 = int(torch.searchsorted(off, off[b0] + chunk, right=True)) - 1
        b1 = min(B, max(b1, b0 + 1))
        lo, hi = int(off[b0]), int(off[b1])
        if hi > lo:
            rows = w[idx[lo:hi].long()].double()
            if psw is not None:
                rows *= psw[lo:hi].double()[:, None]
            seg = torch.repeat_interleave(torch.arange(b0, b1), sizes[b0:b1]).to(dev)
            ref.index_add_(0, seg, rows)
        b0 = b1
    if inputs.get("mode", "sum") == "mean":
        ref /= sizes.clamp(min=1).to(device=dev, dtype=torch.float64)[:, None]
    return ref.float()


def torch_baseline(inputs):
    """Eager torch: F.embedding_bag (include_last_offset, mode sum / mean, per_sample_weights),
    weight's dtype out, cast to fp32 when the point's out is fp32 (fbgemm's fp32 output)."""
    import torch
    w = inputs["weight"]
    res = torch.nn.functional.embedding_bag(inputs["indices"], w, inputs["offsets"], mode=inputs.get("mode", "sum"),
                                            per_sample_weights=inputs.get("per_sample_weights"),
                                            include_last_offset=True)
    out_dt = inputs.get("out_dtype") or w.dtype
    return res if res.dtype == out_dt else res.to(out_dt)


def bytes_moved(point) -> int:
    """indices read once (B L x 8 B), offsets read once ((B + 1) x 8 B; each column block's CTAs
    re-read them and the indices: L2 hits, not counted), per_sample_weights once when present,
    one weight row read per lookup (B L D elements: repeated ids counted every time -- the hook
    sees the point, not the drawn ids; with Zipf ids the repeats hit L2 in part, so DRAM moves
    less), out written once (B D in the out dtype)."""
    B, L, D = point["B"], point["L"], point["D"]
    e = _elem_bytes(point.get("dtype", "bf16"))
    eo = _elem_bytes(_out_name(point))
    nnz = B * L
    return nnz * 8 + (B + 1) * 8 + (nnz * e if _point_psw(point) else 0) + nnz * D * e + B * D * eo


def flops(point) -> int:
    """One add per gathered element (and one multiply with per_sample_weights); for "mean" one
    multiply per output element."""
    B, L, D = point["B"], point["L"], point["D"]
    mean = _mode(point.get("mode", "sum")) == "mean"
    return B * L * D * (2 if _point_psw(point) else 1) + (B * D if mean else 0)


def grid(cfg, point) -> int:
    """One CTA per BLOCK_B bags x BLOCK_D columns (1-D grid, column block fastest)."""
    return triton.cdiv(point["B"], cfg["BLOCK_B"]) * triton.cdiv(point["D"], cfg["BLOCK_D"])


def loop_iterations(cfg, point) -> int:
    """Index steps per CTA, on average (rounded up): sum over the bags of ceil(size / BLOCK_I)
    (make_inputs' seed-0 sizes), over the cdiv(B, BLOCK_B) bag groups. Skewed sizes make the
    CTAs' step counts uneven (the largest bag takes ~10 L / BLOCK_I steps)."""
    sizes = _sizes_cached(int(point["B"]), int(point["L"]), 0)
    bi = cfg["BLOCK_I"]
    steps = int(((sizes + bi - 1) // bi).sum())
    return -(-steps // triton.cdiv(point["B"], cfg["BLOCK_B"]))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory).
    The weight stands in as the [B L, D] rows the lookups read (bytes_moved's count): the kernel
    sees the table only through its pointer, dtype and row stride D, which are the real
    table's, so the stand-in specializes and compiles the same; V enters no argument."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, L, D = point["B"], point["L"], point["D"]
    indices = torch.empty((B * L,), dtype=torch.int64, device="meta")
    offsets = torch.empty((B + 1,), dtype=torch.int64, device="meta")
    weight = torch.empty((B * L, D), dtype=dt, device="meta")
    psw = torch.empty((B * L,), dtype=dt, device="meta") if _point_psw(point) else None
    out = torch.empty((B, D), dtype=_torch_dtype(_out_name(point)), device="meta")
    return _kernel_args(indices, offsets, weight, psw, out, _mode(point.get("mode", "sum")) == "mean", cfg)
