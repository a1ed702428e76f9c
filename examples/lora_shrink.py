"""The LoRA "shrink" of multi-adapter serving (Punica's / S-LoRA's SGMV shrink, vLLM's
lora_shrink): tokens come in segments, each segment uses one adapter, a bare @triton.jit
kernel + a split-K reduction kernel + the launcher.

    for every segment s, token t in [seg_indptr[s], seg_indptr[s + 1]):
        out[t, :] = scale * x[t, :] @ lora_a[adapter_ids[s], :, :]      (adapter_ids[s] >= 0)
        out[t, :] = 0                                                   (adapter_ids[s] == -1)

x: [T, H] fp16 / bf16 (H contiguous, rows may be strided); lora_a: [L, H, R] in x's dtype,
the L resident adapters' A matrices, any strides (a rank-contiguous [L, H, R] buffer, or the
transposed view of PEFT's / vLLM's [L, R, H] lora_A weights, or a slice of a buffer padded to
a larger max rank); seg_indptr: [S + 1] int32 / int64, nondecreasing, seg_indptr[0] = 0 and
seg_indptr[S] = T (every token in one segment; empty segments allowed); adapter_ids: [S]
int32 / int64, an adapter slot in [0, L) or -1 (a request served by the base model alone: its
rows are zeros). out: [T, R] fp32 (what vLLM's shrink writes, the expand's input) or x's
dtype, R contiguous. fp32 accumulation, `scale` (LoRA's alpha / r, or 1) applied to it,
one rounding at the store. Segment starts and adapter ids are read from the device tensors
inside the kernel: the launch needs only the longest segment's length from the host (which
a server knows from its batch metadata without a sync).

Grid (cdiv(max_seg_len, BLOCK_M) x cdiv(R, BLOCK_N), SPLIT_K, S): program (i, k, s) takes
row block i // tiles_n of segment s (BLOCK_M tokens from seg_indptr[s] + BLOCK_M (i //
tiles_n)), rank columns BLOCK_N (i % tiles_n), and its share k of the H (= GEMM K) tiles: a
program whose row block starts past its segment's end returns at once (a short segment next
to the longest one leaves most of its programs empty). It loads its segment's start, end and
adapter id (three scalar loads), then walks its K tiles in BLOCK_K steps: per step one
[BLOCK_M, BLOCK_K] tile of x (rows past the segment's end masked off) and one [BLOCK_K,
BLOCK_N] tile of lora_a[adapter] (rank columns past R masked off), fed to tl.dot into an fp32
[BLOCK_M, BLOCK_N] accumulator. The rank tiles of a row block are adjacent in the grid (axis
0 fastest), so x's rows are re-read from L2 when BLOCK_N < R, and all the row blocks of a
segment run side by side: its adapter's A comes from DRAM once. The K mask is dropped when
BLOCK_K divides H (EVEN_K).

SPLIT_K > 1 cuts H into SPLIT_K contiguous shares of whole K tiles (more programs for a
batch of few long segments or of single-token decode segments): each share's fp32 partial
goes to a workspace [SPLIT_K, T, R] (every row of every share written, a share with no K
tile or a base-model segment writing zeros) and ``_reduce_kernel`` sums the SPLIT_K partials
of each element in a fixed order (deterministic, unlike atomics) and rounds to out's dtype.
With SPLIT_K = 1 the kernel stores out directly and no second kernel runs.

Tunables: BLOCK_M, BLOCK_N, BLOCK_K (powers of two >= 16), SPLIT_K, num_warps, num_stages.
Problem parameters (a workload point): T (tokens), S (segments), L (adapters), H (hidden),
R (rank), dtype, out ("fp32" or "same": x's dtype), a_layout ("hr": [L, H, R] rank-contiguous;
"rh": the [L, R, H] PEFT / vLLM weight, transposed view), sigma (lognormal spread of the
segment lengths, 0 = equal), base (segments with adapter -1, default 0), scale (default 1).
segment_plan(point) gives the lengths and adapter ids (a function of the point alone).
Timing covers both kernels; grid / loop_iterations describe ``_kernel``.
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl

REDUCE_BLOCK = 1024
MAX_SEGMENTS = 65535          # the grid's z axis


@triton.jit
def _kernel(X, A, OUT, SEG_INDPTR, ADAPTER_IDS, R, K, scale,
            stride_xt, stride_al, stride_ak, stride_ar, stride_os, stride_ot,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
            EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    seg = tl.program_id(2)
    tiles_n = tl.cdiv(R, BLOCK_N)
    blk_m = pid // tiles_n
    tile_n = pid % tiles_n

    seg_start = tl.load(SEG_INDPTR + seg)
    seg_end = tl.load(SEG_INDPTR + seg + 1)
    row0 = seg_start + blk_m * BLOCK_M
    if row0 >= seg_end:
        return
    adapter = tl.load(ADAPTER_IDS + seg)

    rows = row0 + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < seg_end
    col_ok = cols < R
    o_ptr = OUT + split.to(tl.int64) * stride_os + rows.to(tl.int64)[:, None] * stride_ot + cols[None, :]
    o_mask = row_ok[:, None] & col_ok[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    if adapter < 0:                       # base-model segment: zeros
        tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=o_mask)
        return

    # this split's share of the K tiles: [k_first, k_last)
    k_tiles = tl.cdiv(K, BLOCK_K)
    per_split = tl.cdiv(k_tiles, SPLIT_K)
    k_first = split * per_split
    k_last = tl.minimum(k_first + per_split, k_tiles)

    ks = k_first * BLOCK_K + tl.arange(0, BLOCK_K)
    x_ptr = X + rows.to(tl.int64)[:, None] * stride_xt + ks[None, :]
    a_ptr = A + adapter.to(tl.int64) * stride_al + ks.to(tl.int64)[:, None] * stride_ak + cols[None, :] * stride_ar
    for kt in range(k_first, k_last):
        if EVEN_K:
            xt = tl.load(x_ptr, mask=row_ok[:, None], other=0.0)
            at = tl.load(a_ptr, mask=col_ok[None, :], other=0.0)
        else:
            k_ok = kt * BLOCK_K + tl.arange(0, BLOCK_K) < K
            xt = tl.load(x_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            at = tl.load(a_ptr, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(xt, at, acc)
        x_ptr += BLOCK_K
        a_ptr += BLOCK_K * stride_ak

    acc = acc * scale
    tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=o_mask)


@triton.jit
def _reduce_kernel(WS, OUT, numel, R, stride_ws, stride_ot, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < numel
    total = tl.zeros([BLOCK], tl.float32)
    for s in tl.static_range(SPLIT_K):
        total += tl.load(WS + s * stride_ws + offs, mask=ok, other=0.0)
    t = offs // R
    r = offs - t * R
    tl.store(OUT + t * stride_ot + r, total.to(OUT.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
OUT_DTYPES = ("fp32", "same")
A_LAYOUTS = ("hr", "rh")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "SPLIT_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 64, "SPLIT_K": 1, "num_warps": 4, "num_stages": 3}

# x (or, at the decode point, the adapters' A) dominates: 266-272 MiB a launch (5.3-5.4x the
# H200's 50 MB L2), 0.06 ms at 4.8 TB/s. 1-4 GFLOP: memory-bound at every rank.
POINTS = [
    # Llama-3-8B prefill batch, 64 adapters grouped (Punica), rank 16, fp32 out: x 256 MiB, A 8 MiB
    {"T": 32768, "S": 64, "L": 64, "H": 4096, "R": 16, "dtype": "bf16", "out": "fp32", "a_layout": "hr",
     "sigma": 0.8},
    # Llama-2-70B prefill, 8 adapters of rank 64 (vLLM's [L, R, H] weights), fp16 out: x 256 MiB, A 8 MiB
    {"T": 16384, "S": 8, "L": 8, "H": 8192, "R": 64, "dtype": "fp16", "out": "same", "a_layout": "rh",
     "sigma": 0.3},
    # decode (1-7 tokens a request, speculative), 1024 requests each with its own adapter
    # (Punica's "distinct"), rank 32: A 256 MiB, x 16 MiB
    {"T": 2048, "S": 1024, "L": 1024, "H": 4096, "R": 32, "dtype": "bf16", "out": "same", "a_layout": "rh",
     "sigma": 0.7},
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


def _out_name(point) -> str:
    o = point.get("out", "fp32")
    if o not in OUT_DTYPES:
        raise ValueError(f"out {o!r} is not one of {', '.join(OUT_DTYPES)}")
    return "fp32" if o == "fp32" else point.get("dtype", "bf16")


def _layout(point) -> str:
    lay = point.get("a_layout", "hr")
    if lay not in A_LAYOUTS:
        raise ValueError(f"a_layout {lay!r} is not one of {', '.join(A_LAYOUTS)}")
    return lay


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg["SPLIT_K"] < 1:
        raise ValueError(f"SPLIT_K={cfg['SPLIT_K']} must be >= 1")


def _kernel_args(x, a, out, seg_indptr, adapter_ids, scale, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    `out` is the [T, R] output when SPLIT_K == 1, else the fp32 workspace [SPLIT_K, T, R]."""
    H, R = a.shape[1], a.shape[2]
    return dict(X=x, A=a, OUT=out, SEG_INDPTR=seg_indptr, ADAPTER_IDS=adapter_ids, R=R, K=H, scale=float(scale),
                stride_xt=x.stride(0), stride_al=a.stride(0), stride_ak=a.stride(1), stride_ar=a.stride(2),
                stride_os=out.stride(0) if out.dim() == 3 else 0, stride_ot=out.stride(-2),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], SPLIT_K=cfg["SPLIT_K"],
                EVEN_K=H % cfg["BLOCK_K"] == 0)


def _grid(max_seg_len: int, R: int, S: int, cfg) -> tuple[int, int, int]:
    return triton.cdiv(max_seg_len, cfg["BLOCK_M"]) * triton.cdiv(R, cfg["BLOCK_N"]), cfg["SPLIT_K"], S


def lora_shrink(x, lora_a, seg_indptr, adapter_ids, *, scale: float = 1.0, out=None, out_dtype=None,
                max_seg_len: int | None = None, BLOCK_M: int = 64, BLOCK_N: int = 16, BLOCK_K: int = 64,
                SPLIT_K: int = 1, num_warps: int = 4, num_stages: int = 3):
    """out[t] = scale * x[t] @ lora_a[adapter_ids[s]] for every token t of segment s (zeros where
    adapter_ids[s] == -1). x: [T, H] fp16 / bf16; lora_a: [L, H, R] in x's dtype, any strides;
    seg_indptr: [S + 1] int32 / int64 with seg_indptr[0] = 0, seg_indptr[S] = T; adapter_ids:
    [S] int32 / int64 in [-1, L) (not range-checked). out: None (a new [T, R] tensor of
    out_dtype, default fp32) or a [T, R] fp32 / x-dtype tensor with unit column stride, written
    in place. max_seg_len: the longest segment's length (an upper bound will do); None reads
    seg_indptr on the host (a sync) and checks that the segments cover x's rows. Returns out."""
    import torch
    if x.dim() != 2 or lora_a.dim() != 3 or x.shape[1] != lora_a.shape[1]:
        raise ValueError(f"expected x [T, H] and lora_a [L, H, R]; got {tuple(x.shape)}, {tuple(lora_a.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16) or lora_a.dtype != x.dtype:
        raise ValueError(f"x and lora_a must share one fp16 / bf16 dtype; got {x.dtype}, {lora_a.dtype}")
    T, H = x.shape
    R = lora_a.shape[2]
    if seg_indptr.dim() != 1 or seg_indptr.dtype not in (torch.int32, torch.int64) or seg_indptr.numel() < 1:
        raise ValueError(f"seg_indptr must be int32 / int64 [S + 1]; got {seg_indptr.dtype} {tuple(seg_indptr.shape)}")
    S = seg_indptr.numel() - 1
    if adapter_ids.dtype not in (torch.int32, torch.int64) or tuple(adapter_ids.shape) != (S,):
        raise ValueError(f"adapter_ids must be int32 / int64 [{S}]; got {adapter_ids.dtype} "
                         f"{tuple(adapter_ids.shape)}")
    if S > MAX_SEGMENTS:
        raise ValueError(f"S={S} segments: more than the grid's {MAX_SEGMENTS}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "SPLIT_K": SPLIT_K}
    _check_cfg(cfg)
    if out is None:
        odt = torch.float32 if out_dtype is None else out_dtype
        if odt not in (torch.float32, x.dtype):
            raise ValueError(f"out_dtype must be torch.float32 or x's {x.dtype}; got {odt}")
        out = torch.empty((T, R), dtype=odt, device=x.device)
    elif tuple(out.shape) != (T, R) or out.dtype not in (torch.float32, x.dtype) or (R > 1 and out.stride(1) != 1):
        raise ValueError(f"out must be a [{T}, {R}] fp32 / {x.dtype} tensor with unit column stride; got "
                         f"{out.dtype} {tuple(out.shape)} strides {tuple(out.stride())}")
    if max_seg_len is None:
        ind = seg_indptr.cpu().long()
        lens = ind[1:] - ind[:-1]
        if int(ind[0]) != 0 or int(ind[-1]) != T or (S and int(lens.min()) < 0):
            raise ValueError(f"seg_indptr must rise from 0 to T={T}; got {int(ind[0])} .. {int(ind[-1])}")
        max_seg_len = int(lens.max()) if S else 0
    if T == 0 or R == 0:
        return out
    if H == 0:
        return out.zero_()
    if x.stride(1) != 1:
        x = x.contiguous()
    seg_indptr, adapter_ids = seg_indptr.contiguous(), adapter_ids.contiguous()
    grid = _grid(max_seg_len, R, S, cfg)
    if SPLIT_K == 1:
        if grid[0]:
            _kernel[grid](**_kernel_args(x, lora_a, out, seg_indptr, adapter_ids, scale, cfg),
                          num_warps=num_warps, num_stages=num_stages)
        return out
    ws = torch.empty((SPLIT_K, T, R), dtype=torch.float32, device=x.device)
    if grid[0]:
        _kernel[grid](**_kernel_args(x, lora_a, ws, seg_indptr, adapter_ids, scale, cfg),
                      num_warps=num_warps, num_stages=num_stages)
    _reduce_kernel[(triton.cdiv(T * R, REDUCE_BLOCK),)](ws, out, T * R, R, ws.stride(0), out.stride(0),
                                                        SPLIT_K=SPLIT_K, BLOCK=REDUCE_BLOCK, num_warps=4)
    return out


@functools.lru_cache(maxsize=64)
def _plan_cached(T: int, S: int, L: int, sigma: float, base: int):
    import torch
    if S < 1 or T < S:
        raise ValueError(f"T={T}, S={S}: need 1 <= S <= T (every planned segment has a token)")
    if L < 1 or not 0 <= base <= S:
        raise ValueError(f"L={L}, base={base}: need L >= 1 and 0 <= base <= S")
    gen = torch.Generator().manual_seed(0)
    w = torch.exp(sigma * torch.randn(S, generator=gen, dtype=torch.float64))
    share = w / w.sum() * (T - S)
    lens = share.floor().long()
    rem = (T - S) - int(lens.sum())
    lens[torch.argsort(share - lens, descending=True)[:rem]] += 1
    lens += 1
    perm = torch.randperm(L, generator=gen)
    lora = torch.randperm(S, generator=gen)[base:].sort().values
    ids = torch.full((S,), -1, dtype=torch.int64)
    ids[lora] = perm[torch.arange(S - base) % L]
    return lens, ids


def segment_plan(point):
    """(lens [S] int64, adapter_ids [S] int64), CPU, a function of the point alone: S segments of
    >= 1 token summing to T, the T - S others spread by lognormal(sigma) weights (largest
    remainder rounding; sigma 0: equal lengths); `base` random segments get -1, the others take a
    random permutation of the L adapters in turn (each adapter once when S - base == L)."""
    lens, ids = _plan_cached(int(point["T"]), int(point["S"]), int(point["L"]), float(point.get("sigma", 0.0)),
                             int(point.get("base", 0)))
    return lens.clone(), ids.clone()


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1) [T, H]; lora_a ~ N(0, 1 / H) (out ~ N(0, scale^2)) as [L, H, R] ("hr") or the
    transposed view of an [L, R, H] buffer ("rh"); seg_indptr (int32) and adapter_ids (int32)
    from segment_plan; max_seg_len, the output dtype and scale for the launch."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, L, H, R = point["T"], point["L"], point["H"], point["R"]
    lens, ids = segment_plan(point)
    x = torch.randn((T, H), generator=gen, device=device).to(dt)
    if _layout(point) == "hr":
        a = (torch.randn((L, H, R), generator=gen, device=device) * H ** -0.5).to(dt)
    else:
        a = (torch.randn((L, R, H), generator=gen, device=device) * H ** -0.5).to(dt).transpose(1, 2)
    indptr = torch.zeros(point["S"] + 1, dtype=torch.int64)
    torch.cumsum(lens, 0, out=indptr[1:])
    return {"x": x, "lora_a": a, "seg_indptr": indptr.to(device=device, dtype=torch.int32),
            "adapter_ids": ids.to(device=device, dtype=torch.int32), "max_seg_len": int(lens.max()),
            "out_dtype": torch.float32 if _out_name(point) == "fp32" else dt, "scale": float(point.get("scale", 1.0))}


def launch(inputs, cfg):
    """The [T, R] output (fp32 or x's dtype)."""
    return lora_shrink(inputs["x"], inputs["lora_a"], inputs["seg_indptr"], inputs["adapter_ids"],
                       scale=inputs["scale"], out_dtype=inputs["out_dtype"], max_seg_len=inputs["max_seg_len"],
                       BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                       SPLIT_K=cfg["SPLIT_K"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _token_adapters(inputs):
    import torch
    ind = inputs["seg_indptr"].long()
    return torch.repeat_interleave(inputs["adapter_ids"].long(), ind[1:] - ind[:-1])


def reference(inputs):
    """[T, R] fp32: each adapter's tokens times its A, in fp64 from the same rounded inputs
    (grouped by adapter: one matmul per adapter used), times scale; zeros for adapter -1."""
    import torch
    x, a = inputs["x"], inputs["lora_a"]
    tok = _token_adapters(inputs)
    out = torch.zeros((x.shape[0], a.shape[2]), dtype=torch.float64, device=x.device)
    for ad in torch.unique(tok).tolist():
        if ad < 0:
            continue
        rows = (tok == ad).nonzero().squeeze(1)
        out[rows] = x[rows].double() @ a[ad].double()
    return (out * inputs["scale"]).float()


def torch_baseline(inputs):
    """Eager torch as a simple server would write it: one matmul per segment in x's dtype
    (cuBLAS), scaled, copied into the [T, R] output (base-model segments left zero)."""
    import torch
    x, a = inputs["x"], inputs["lora_a"]
    out = torch.zeros((x.shape[0], a.shape[2]), dtype=inputs["out_dtype"], device=x.device)
    ind = inputs["seg_indptr"].tolist()
    for s, ad in enumerate(inputs["adapter_ids"].tolist()):
        if ad >= 0 and ind[s + 1] > ind[s]:
            out[ind[s]:ind[s + 1]] = (x[ind[s]:ind[s + 1]] @ a[ad]) * inputs["scale"]
    return out


def bytes_moved(point) -> int:
    """The LoRA tokens' x rows read once (base-model segments' rows are not read), each adapter
    used read once (its H x R A), out written once, seg_indptr and adapter_ids read once (4 B
    each, int32). The split-K workspace's round trip (in L2) is the split's cost, not counted."""
    e = _elem_bytes(point.get("dtype", "bf16"))
    oe = 4 if _out_name(point) == "fp32" else e
    T, S, H, R = point["T"], point["S"], point["H"], point["R"]
    lens, ids = segment_plan(point)
    lora = ids >= 0
    t_lora = int(lens[lora].sum())
    used = int(ids[lora].unique().numel())
    return t_lora * H * e + used * H * R * e + T * R * oe + 4 * (2 * S + 1)


def flops(point) -> int:
    """2 H R per LoRA token."""
    lens, ids = segment_plan(point)
    return 2 * int(lens[ids >= 0].sum()) * point["H"] * point["R"]


def grid(cfg, point) -> tuple[int, int, int]:
    """The launch grid of ``_kernel``: (row blocks of the longest segment x rank tiles, SPLIT_K,
    S); the programs past a shorter segment's end return at once."""
    lens, _ = segment_plan(point)
    return _grid(int(lens.max()), point["R"], point["S"], cfg)


def loop_iterations(cfg, point) -> int:
    """K tiles per program (the longest split's share)."""
    return triton.cdiv(triton.cdiv(point["H"], cfg["BLOCK_K"]), cfg["SPLIT_K"])


def cta_iterations(cfg, point) -> list[int]:
    """K tiles each program of grid(cfg, point) runs, in launch order (x fastest, then split, then
    segment): 0 for a row block past its segment's end or a base-model segment (-1: zeros, no loop),
    else its split's share of the K tiles."""
    lens, ids = segment_plan(point)
    tiles_n = triton.cdiv(point["R"], cfg["BLOCK_N"])
    gx, splits, segs = _grid(int(lens.max()), point["R"], point["S"], cfg)
    k_tiles = triton.cdiv(point["H"], cfg["BLOCK_K"])
    per = triton.cdiv(k_tiles, splits)
    share = [max(0, min(per, k_tiles - sp * per)) for sp in range(splits)]
    out = []
    for seg in range(segs):
        n_rows, live = int(lens[seg]), int(ids[seg]) >= 0
        for sp in range(splits):
            out += [share[sp] if live and (x // tiles_n) * cfg["BLOCK_M"] < n_rows else 0 for x in range(gx)]
    return out


def secondary_kernels(cfg, point) -> list[dict]:
    """``_reduce_kernel`` (run when SPLIT_K > 1), for rank: one CTA per REDUCE_BLOCK output
    elements, SPLIT_K steps each reading REDUCE_BLOCK fp32 partials that `_kernel` just wrote
    (dram_bytes 0: from L2); its store of out is in bytes_moved already."""
    if cfg["SPLIT_K"] < 2:
        return []
    return [{"name": "_reduce_kernel", "grid": triton.cdiv(point["T"] * point["R"], REDUCE_BLOCK),
             "iterations": cfg["SPLIT_K"], "tile_bytes": 4 * REDUCE_BLOCK, "dram_bytes": 0, "blocks_per_sm": 8}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory):
    lora_a with the point's layout's strides, OUT the [T, R] output (SPLIT_K 1) or the fp32
    workspace [SPLIT_K, T, R]."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, S, L, H, R = point["T"], point["S"], point["L"], point["H"], point["R"]
    x = torch.empty((T, H), dtype=dt, device="meta")
    if _layout(point) == "hr":
        a = torch.empty((L, H, R), dtype=dt, device="meta")
    else:
        a = torch.empty((L, R, H), dtype=dt, device="meta").transpose(1, 2)
    if cfg["SPLIT_K"] == 1:
        out = torch.empty((T, R), dtype=torch.float32 if _out_name(point) == "fp32" else dt, device="meta")
    else:
        out = torch.empty((cfg["SPLIT_K"], T, R), dtype=torch.float32, device="meta")
    indptr = torch.empty((S + 1,), dtype=torch.int32, device="meta")
    ids = torch.empty((S,), dtype=torch.int32, device="meta")
    return _kernel_args(x, a, out, indptr, ids, point.get("scale", 1.0), cfg)
