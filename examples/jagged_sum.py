"""Jagged (segment) sum / mean, the pooling of recommender models (torchrec / fbgemm's
jagged_sum and jagged_mean, EmbeddingBag's sum / mean pooling of already looked-up rows) and
of packed variable-length sequences, a bare @triton.jit kernel + its launcher.

    out[b, :] = sum(values[offsets[b]:offsets[b + 1], :])                    mode "sum"
    out[b, :] = that sum / (offsets[b + 1] - offsets[b]), 0 for an empty b   mode "mean"

values: [total_L, D] fp16 / bf16 / fp32 (D contiguous, rows may be strided, e.g. a column
slice of a wider buffer); offsets: [B + 1] int32 or int64, nondecreasing, offsets[B] <=
total_L (trusted, not range-checked; offsets[0] need not be 0); out: [B, D] in values'
dtype. fp32 accumulation, one rounding at the store.

One CTA per (SEGS consecutive segments, BLOCK_D columns); the grid is ordered column block
fastest, so the CTAs that read one segment's rows run side by side. For each of its
segments the CTA loads the two offsets (scalars) and walks the segment's rows in BLOCK_L row
steps: each step one masked [BLOCK_L, BLOCK_D] tile (BLOCK_D contiguous elements a row,
rows beyond the segment's end masked off), widened to fp32 and added elementwise into a
[BLOCK_L, BLOCK_D] fp32 accumulator; after the segment the accumulator is reduced along the
rows once, scaled by 1 / length for the mean, rounded and stored. An empty segment runs no
step and stores 0. Segments past B (the last CTA's SEGS group) run no step and store nothing.
The D mask is dropped when BLOCK_D divides D (EVEN_D).
Segment lengths are irregular (the loop bound is data), so the work per CTA is too: a long
segment keeps its CTAs busy for ceil(len / BLOCK_L) steps; SEGS > 1 evens out the short
ones' work over fewer, longer CTAs.

Tunables: BLOCK_L (rows per step), BLOCK_D, SEGS (segments per CTA) (powers of two),
num_warps, num_stages (no dot: the loads are not pipelined, so num_stages may change nothing
in the cubin).
Problem parameters (a workload point): B (segments), L (mean segment length: total_L = B *
L exactly), D, dtype, mode ("sum" / "mean"), index ("int32" / "int64", the offsets' dtype).
make_inputs draws the lengths from segment_lengths: a skewed (lognormal) law with some empty
and some very long segments, fixed by the seed.
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl

LEN_SIGMA = 1.0       # lognormal shape of the segment lengths (sigma of log length)
LEN_CAP = 16.0        # no segment longer than ~LEN_CAP x the mean length
EMPTY_FRAC = 0.03     # share of empty segments (a user with no events for the feature)


@triton.jit
def _kernel(VALUES, OFFSETS, OUT, B, D, stride_vl, stride_ob,
            MEAN: tl.constexpr, EVEN_D: tl.constexpr, SEGS: tl.constexpr, BLOCK_L: tl.constexpr,
            BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    n_dblk = tl.cdiv(D, BLOCK_D)
    grp = pid // n_dblk
    ds = (pid % n_dblk) * BLOCK_D + tl.arange(0, BLOCK_D)
    if EVEN_D:
        d_ok = tl.full([BLOCK_D], 1, tl.int1)
    else:
        d_ok = ds < D
    ls = tl.arange(0, BLOCK_L)
    v_col = VALUES + ds[None, :]
    for i in range(SEGS):
        b = grp * SEGS + i
        if b < B:
            start = tl.load(OFFSETS + b)
            end = tl.load(OFFSETS + b + 1)
            acc = tl.zeros([BLOCK_L, BLOCK_D], tl.float32)
            for l0 in range(start, end, BLOCK_L):
                rows = l0 + ls
                m = (rows < end)[:, None] & d_ok[None, :]
                x = tl.load(v_col + rows.to(tl.int64)[:, None] * stride_vl, mask=m, other=0.0)
                acc += x.to(tl.float32)
            s = tl.sum(acc, axis=0)
            if MEAN:
                s = s * (1.0 / tl.maximum(end - start, 1).to(tl.float32))
            tl.store(OUT + b.to(tl.int64) * stride_ob + ds, s.to(OUT.dtype.element_ty), mask=d_ok)

# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
INDEX_DTYPES = ("int32", "int64")
MODES = ("sum", "mean")
TUNABLES = ("BLOCK_L", "BLOCK_D", "SEGS", "num_warps", "num_stages")
BASELINE = {"BLOCK_L": 32, "BLOCK_D": 128, "SEGS": 1, "num_warps": 4, "num_stages": 1}

# values 768-800 MiB read (15-16x the H200's 50 MB L2), out 8-32 MiB written.
POINTS = [
    # EmbeddingBag sum pooling of a multi-hot feature (YouTube-DNN / PinSage-style 256-d item
    # embeddings, fp32 as torchrec keeps them), a 32k batch of ~24 events: values 768 MiB
    {"B": 32768, "L": 24, "D": 256, "dtype": "fp32", "mode": "sum", "index": "int64"},
    # jagged_mean of long user histories (HSTU-style generative recommender, 512-d bf16,
    # int32 offsets), 4k users of ~192 events (longest ~16x): values 768 MiB
    {"B": 4096, "L": 192, "D": 512, "dtype": "bf16", "mode": "mean", "index": "int32"},
    # mean pooling of a packed varlen batch of sentence-embedding inputs (BGE-large / E5-large
    # hidden 1024, fp16, cu_seqlens int32), 4k sequences of ~100 tokens: values 800 MiB
    {"B": 4096, "L": 100, "D": 1024, "dtype": "fp16", "mode": "mean", "index": "int32"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _index_dtype(name: str):
    import torch
    try:
        return {"int32": torch.int32, "int64": torch.int64}[name]
    except KeyError:
        raise ValueError(f"index {name!r} is not one of {', '.join(INDEX_DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    try:
        return {"fp16": 2, "bf16": 2, "fp32": 4}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _index_bytes(name: str) -> int:
    try:
        return {"int32": 4, "int64": 8}[name]
    except KeyError:
        raise ValueError(f"index {name!r} is not one of {', '.join(INDEX_DTYPES)}") from None


def _mode(name: str) -> str:
    if name not in MODES:
        raise ValueError(f"mode {name!r} is not one of {', '.join(MODES)}")
    return name


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_L", "BLOCK_D", "SEGS"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(values, offsets, out, mean: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    D = values.shape[1]
    return dict(VALUES=values, OFFSETS=offsets, OUT=out, B=out.shape[0], D=D, stride_vl=values.stride(0),
                stride_ob=out.stride(0), MEAN=mean, EVEN_D=D % cfg["BLOCK_D"] == 0, SEGS=cfg["SEGS"],
                BLOCK_L=cfg["BLOCK_L"], BLOCK_D=cfg["BLOCK_D"])


def jagged_sum(values, offsets, mode: str = "sum", *, out=None, BLOCK_L=32, BLOCK_D=128, SEGS=1, num_warps=4,
               num_stages=1):
    """out [B, D] (values' dtype) with out[b] = the sum ("sum") or mean ("mean", 0 for an empty
    segment) of values[offsets[b]:offsets[b + 1]] for values [total_L, D] fp16 / bf16 / fp32
    and offsets [B + 1] int32 / int64; fp32 accumulation. `out`, if given, is a [B, D] tensor of
    values' dtype with D contiguous (rows may be strided). Offsets are not range-checked."""
    import torch
    mean = _mode(mode) == "mean"
    if values.dim() != 2:
        raise ValueError(f"expected values [total_L, D]; got {tuple(values.shape)}")
    if values.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"values dtype {values.dtype} is not fp16, bf16 or fp32")
    if offsets.dim() != 1 or offsets.numel() < 1 or offsets.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"offsets must be int32 / int64 [B + 1]; got {offsets.dtype} {tuple(offsets.shape)}")
    cfg = {"BLOCK_L": BLOCK_L, "BLOCK_D": BLOCK_D, "SEGS": SEGS}
    _check_cfg(cfg)
    B, D = offsets.numel() - 1, values.shape[1]
    if out is None:
        out = torch.empty((B, D), dtype=values.dtype, device=values.device)
    elif tuple(out.shape) != (B, D) or out.dtype != values.dtype or (B * D and out.stride(1) != 1):
        raise ValueError(f"out must be a [{B}, {D}] {values.dtype} tensor with D contiguous; got "
                         f"{list(out.shape)} {out.dtype}")
    if B == 0 or D == 0:
        return out
    if values.stride(1) != 1:
        values = values.contiguous()
    offsets = offsets.contiguous()
    args = _kernel_args(values, offsets, out, mean, cfg)
    _kernel[(triton.cdiv(B, SEGS) * triton.cdiv(D, BLOCK_D),)](**args, num_warps=num_warps, num_stages=num_stages)
    return out


def jagged_mean(values, offsets, **kw):
    """jagged_sum(values, offsets, "mean", **kw)."""
    return jagged_sum(values, offsets, "mean", **kw)


@functools.lru_cache(maxsize=16)
def _lengths_cached(B: int, L: int, seed: int):
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
    lens = torch.floor(raw * (total / float(raw.sum()))).to(torch.int64)
    short = total - int(lens.sum())              # < the non-empty count: each floor lost < 1
    nz = (~empty).nonzero().flatten()
    lens[nz[torch.randperm(nz.numel(), generator=gen)[:short]]] += 1
    return lens


def segment_lengths(B: int, L: int, seed: int = 0):
    """[B] int64 (CPU) segment lengths summing to exactly B * L: lognormal (sigma LEN_SIGMA),
    capped at LEN_CAP x the draw's mean, EMPTY_FRAC of them empty, scaled to the total (the
    rounding remainder one row each to random non-empty segments), in random order. Pooling
    factors of recommender features and user-history lengths are this skewed: the median is
    ~0.6 x the mean and the longest are ~16 x it. Deterministic in (B, L, seed)."""
    return _lengths_cached(int(B), int(L), int(seed)).clone()


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """values ~ N(0, 1) [B * L, D]; offsets [B + 1] (point's index dtype) from segment_lengths
    (the same lengths on every device for one seed)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    it = _index_dtype(point.get("index", "int64"))
    _mode(point.get("mode", "sum"))
    B, L, D = point["B"], point["L"], point["D"]
    lens = segment_lengths(B, L, seed)
    offsets = torch.zeros(B + 1, dtype=torch.int64)
    torch.cumsum(lens, 0, out=offsets[1:])
    gen = torch.Generator(device=device).manual_seed(seed)
    values = torch.randn((B * L, D), generator=gen, device=device).to(dt)
    return {"values": values, "offsets": offsets.to(device=device, dtype=it), "mode": point.get("mode", "sum")}


def launch(inputs, cfg):
    """The [B, D] output (values' dtype)."""
    return jagged_sum(inputs["values"], inputs["offsets"], inputs.get("mode", "sum"), BLOCK_L=cfg["BLOCK_L"],
                      BLOCK_D=cfg["BLOCK_D"], SEGS=cfg["SEGS"], num_warps=cfg["num_warps"],
                      num_stages=cfg["num_stages"])


def reference(inputs):
    """fp32 [B, D]: each segment's fp32 sum (fp64 accumulation), / length for "mean" (0 if empty)."""
    import torch
    v, off = inputs["values"], inputs["offsets"].long().cpu()
    B, D = off.numel() - 1, v.shape[1]
    seg = torch.repeat_interleave(torch.arange(B), off[1:] - off[:-1]).to(v.device)
    rows = v[int(off[0]):int(off[-1])].double()
    ref = torch.zeros((B, D), dtype=torch.float64, device=v.device).index_add_(0, seg, rows)
    if inputs.get("mode", "sum") == "mean":
        ref /= (off[1:] - off[:-1]).clamp(min=1).to(device=v.device, dtype=torch.float64)[:, None]
    return ref.float()


def torch_baseline(inputs):
    """Eager torch, the EmbeddingBag formulation: F.embedding_bag over the rows with identity
    indices (arange over the segments' rows, the offsets' dtype) and include_last_offset, mode
    sum / mean (an empty bag gives 0); values' dtype out. Its extra read is the index list."""
    import torch
    v, off = inputs["values"], inputs["offsets"]
    first = off[:1]
    idx = torch.arange(int(off[0]), int(off[-1]), dtype=off.dtype, device=v.device)
    return torch.nn.functional.embedding_bag(idx, v, off - first, mode=inputs.get("mode", "sum"),
                                             include_last_offset=True)


def bytes_moved(point) -> int:
    """values read once (B * L rows), offsets read once ((B + 1) x 4 or 8 B; each column block's
    CTAs re-read them, not counted: L2 hits), out written once (B x D)."""
    B, L, D = point["B"], point["L"], point["D"]
    e = _elem_bytes(point.get("dtype", "bf16"))
    return B * L * D * e + (B + 1) * _index_bytes(point.get("index", "int64")) + B * D * e


def flops(point) -> int:
    """One add per value element; for "mean" one multiply per output element."""
    B, L, D = point["B"], point["L"], point["D"]
    return B * L * D + (B * D if _mode(point.get("mode", "sum")) == "mean" else 0)


def grid(cfg, point) -> int:
    """One CTA per SEGS segments x BLOCK_D columns."""
    return triton.cdiv(point["B"], cfg["SEGS"]) * triton.cdiv(point["D"], cfg["BLOCK_D"])


def loop_iterations(cfg, point) -> int:
    """Row steps per CTA, on average (rounded up): sum over the segments of ceil(len / BLOCK_L)
    (make_inputs' seed-0 lengths), over the cdiv(B, SEGS) segment groups. Skewed lengths make
    the CTAs' step counts uneven (the longest segment takes ~16 L / BLOCK_L steps)."""
    lens = _lengths_cached(int(point["B"]), int(point["L"]), 0)
    bl = cfg["BLOCK_L"]
    steps = int(((lens + bl - 1) // bl).sum())
    return -(-steps // triton.cdiv(point["B"], cfg["SEGS"]))


def cta_iterations(cfg, point) -> list[int]:
    """Row steps of each CTA in launch order (program id = segment group x column blocks, columns
    fastest): the sum over its SEGS segments of ceil(len / BLOCK_L) (make_inputs' seed-0 lengths)."""
    lens = _lengths_cached(int(point["B"]), int(point["L"]), 0)
    steps = ((lens + cfg["BLOCK_L"] - 1) // cfg["BLOCK_L"]).tolist()
    segs, n_dblk = cfg["SEGS"], triton.cdiv(point["D"], cfg["BLOCK_D"])
    per_group = [sum(steps[g:g + segs]) for g in range(0, len(steps), segs)]
    return [n for n in per_group for _ in range(n_dblk)]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, L, D = point["B"], point["L"], point["D"]
    values = torch.empty((B * L, D), dtype=dt, device="meta")
    offsets = torch.empty((B + 1,), dtype=_index_dtype(point.get("index", "int64")), device="meta")
    out = torch.empty((B, D), dtype=dt, device="meta")
    return _kernel_args(values, offsets, out, _mode(point.get("mode", "sum")) == "mean", cfg)
