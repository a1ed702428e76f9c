"""The LoRA "expand" of multi-adapter serving (Punica's SGMV / BGMV expand, vLLM's
lora_expand): the shrink's rank-R output times each token's adapter B, added in place into
the base layer's output, a bare @triton.jit kernel + its launcher.

    for every segment s, token t in [seg_start[s], seg_start[s] + seg_len[s]):
        y[t, :] += scale * (x[t, :] @ lora_b[lora_id[s], :, :])        (lora_id[s] >= 0)
        y[t, :] unchanged                                             (lora_id[s] == -1)

x: [T, R] fp16 / bf16 (the shrink's output, R the LoRA rank, 8-64; R contiguous, rows may be
strided); lora_b: [L, R, N] in x's dtype, the L resident adapters' B matrices, N contiguous
(any adapter / rank strides: a slice of a buffer padded to a larger max rank works); y: [T, N]
in x's dtype, N contiguous, any row stride (the slice of a fused QKV / gate_up output that
this projection owns, as vLLM passes it), read, added to in fp32 and written back (one
rounding). seg_start, seg_len, lora_id: [S] int32, one segment per (request, or adapter
group) -- tokens grouped by adapter; segments need not be adjacent or cover every row (rows
in no segment are left alone), empty segments are allowed, lora_id -1 is a base-model
segment: its CTAs return before touching memory.

Grid (cdiv(N, BLOCK_N), cdiv(max_seg_len, BLOCK_M), S): program (j, i, s) owns output columns
[j BLOCK_N, (j + 1) BLOCK_N) of row block i of segment s (BLOCK_M tokens from seg_start[s] + i
BLOCK_M). It loads lora_id[s] and seg_len[s] (a base-model segment, or a row block past the
segment's end, returns at once: a short segment beside the longest one leaves most of its
programs empty), issues the load of its y tile first (the read half of the read-modify-write,
the kernel's main DRAM stream, in flight while the product is formed), then forms the
[BLOCK_M, BLOCK_N] product x_tile @ B[lora][:, cols] in fp32 one of two ways (USE_DOT):

  * USE_DOT=1: tensor cores. R is walked in K_STEP=16-wide steps (16 is the bf16 / fp16 MMA's
    K granule; R=8 is one step half masked, R=16 one, R=64 four): per step one [BLOCK_M, 16]
    x tile and one [16, BLOCK_N] B tile into tl.dot. num_stages pipelines those steps' loads.
  * USE_DOT=0: CUDA-core FMAs, one rank at a time: per step a BLOCK_M column of x and a
    BLOCK_N row of B (fp32) and a rank-1 update of the accumulator -- R steps of BLOCK_M x
    BLOCK_N FMAs. No padding of R to 16 and no MMA layout conversion of y's tile, but R=64 at
    prefill sizes is 64 FMAs per output element.

then y_tile + scale * acc is rounded once and stored. Rows past the segment's end are masked;
the column mask is dropped when BLOCK_N divides N (EVEN_N), the rank mask when K_STEP divides
R (EVEN_K; dot path). The column tiles of one row block are adjacent in the grid (axis 0
fastest) and a segment's row blocks follow each other, so the CTAs resident together share
the segment's x rows and its adapter's B strip in L2: B[lora] comes from DRAM about once per
segment, y exactly once.

Tunables: BLOCK_M (power of two >= 16), BLOCK_N (power of two >= 16), USE_DOT (0: FMA, 1:
tl.dot), num_warps, num_stages.
Problem parameters (a workload point): T (tokens), S (segments), L (adapters resident), R
(rank), N (output width), dtype (bf16 / fp16), sigma (lognormal spread of the segment lengths,
0 = equal), base (segments with lora_id -1), scale (LoRA's alpha / r; default 0.5).
segment_plan(point) gives the lengths and adapter ids (a function of the point alone).
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl

K_STEP = 16                   # the dot path's rank step: the fp16 / bf16 MMA's K granule
MAX_GRID_YZ = 65535           # CUDA's grid y / z limit


@triton.jit
def _kernel(X, B, Y, SEG_START, SEG_LEN, LORA_ID, N, R, scale,
            stride_xt, stride_bl, stride_br, stride_yt,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, K_STEP: tl.constexpr, USE_DOT: tl.constexpr,
            EVEN_N: tl.constexpr, EVEN_K: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    seg = tl.program_id(2)
    lora = tl.load(LORA_ID + seg)
    if lora < 0:                          # base-model segment: y is already the answer
        return
    seg_len = tl.load(SEG_LEN + seg)
    m0 = pid_m * BLOCK_M
    if m0 >= seg_len:                     # past this segment's end
        return
    seg_start = tl.load(SEG_START + seg)

    offs_m = tl.arange(0, BLOCK_M)
    row_ok = m0 + offs_m < seg_len
    rows = (seg_start + m0 + offs_m).to(tl.int64)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    if EVEN_N:
        y_mask = row_ok[:, None]
    else:
        y_mask = row_ok[:, None] & col_ok[None, :]
    y_ptr = Y + rows[:, None] * stride_yt + cols[None, :]
    y_old = tl.load(y_ptr, mask=y_mask, other=0.0)           # the RMW's read, issued first

    b_base = B + lora.to(tl.int64) * stride_bl
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    if USE_DOT:
        ks = tl.arange(0, K_STEP)
        x_ptr = X + rows[:, None] * stride_xt + ks[None, :]
        b_ptr = b_base + ks[:, None] * stride_br + cols[None, :]
        for k0 in range(0, R, K_STEP):
            if EVEN_K:
                xt = tl.load(x_ptr, mask=row_ok[:, None], other=0.0)
                if EVEN_N:
                    bt = tl.load(b_ptr)
                else:
                    bt = tl.load(b_ptr, mask=col_ok[None, :], other=0.0)
            else:
                k_ok = k0 + ks < R
                xt = tl.load(x_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
                if EVEN_N:
                    bt = tl.load(b_ptr, mask=k_ok[:, None], other=0.0)
                else:
                    bt = tl.load(b_ptr, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
            acc = tl.dot(xt, bt, acc)
            x_ptr += K_STEP
            b_ptr += K_STEP * stride_br
    else:
        x_ptr = X + rows * stride_xt
        b_ptr = b_base + cols
        for r in range(0, R):
            xc = tl.load(x_ptr, mask=row_ok, other=0.0).to(tl.float32)
            if EVEN_N:
                br = tl.load(b_ptr).to(tl.float32)
            else:
                br = tl.load(b_ptr, mask=col_ok, other=0.0).to(tl.float32)
            acc += xc[:, None] * br[None, :]
            x_ptr += 1
            b_ptr += stride_br

    out = y_old.to(tl.float32) + acc * scale
    tl.store(y_ptr, out.to(Y.dtype.element_ty), mask=y_mask)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "USE_DOT", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 32, "BLOCK_N": 128, "USE_DOT": 1, "num_warps": 4, "num_stages": 2}

# Each point moves 110-470 MB (2.2-9.4x the H200's 50 MB L2): ~25-100 us at 4.8 TB/s.
POINTS = [
    # decode step of 512 sequences served by 128 adapters (grouped: one segment an adapter, 1-12
    # tokens each), rank 32, Llama-3-8B fused gate_up_proj (2 x 14336): B 235 MB dominates, y 59 MB
    {"T": 512, "S": 128, "L": 128, "R": 32, "N": 28672, "dtype": "bf16", "sigma": 0.6, "base": 0},
    # prefill of 8192 tokens over 4 adapters of rank 64, Llama-3-8B gate_proj (14336): y's
    # read-modify-write 470 MB, B 7.3 MB; 15 GFLOP (FMA: 7.5 G FMAs, near the CUDA cores' limit)
    {"T": 8192, "S": 4, "L": 4, "R": 64, "N": 14336, "dtype": "bf16", "sigma": 0.5, "base": 0},
    # mixed chunked-prefill / decode batch: 8192 tokens in 512 requests (skewed lengths) over 64
    # adapters of rank 8, 51 requests (~10 % of the tokens) on the base model; Llama-3-8B fused
    # QKV (4096 + 2 x 1024 = 6144), fp16: y's RMW ~180 MB, B 6 MB
    {"T": 8192, "S": 512, "L": 64, "R": 8, "N": 6144, "dtype": "fp16", "sigma": 1.0, "base": 51},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg["USE_DOT"] not in (0, 1):
        raise ValueError(f"USE_DOT={cfg['USE_DOT']} must be 0 (FMA) or 1 (tl.dot)")


def _kernel_args(x, b, y, seg_start, seg_len, lora_id, scale, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    R, N = b.shape[1], b.shape[2]
    return dict(X=x, B=b, Y=y, SEG_START=seg_start, SEG_LEN=seg_len, LORA_ID=lora_id, N=N, R=R,
                scale=float(scale), stride_xt=x.stride(0), stride_bl=b.stride(0), stride_br=b.stride(1),
                stride_yt=y.stride(0), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], K_STEP=K_STEP,
                USE_DOT=int(cfg["USE_DOT"]), EVEN_N=N % cfg["BLOCK_N"] == 0, EVEN_K=R % K_STEP == 0)


def _grid(max_seg_len: int, N: int, S: int, cfg) -> tuple[int, int, int]:
    return triton.cdiv(N, cfg["BLOCK_N"]), triton.cdiv(max_seg_len, cfg["BLOCK_M"]), S


def lora_expand(x, lora_b, y, seg_start, seg_len, lora_id, *, scale: float = 1.0, max_seg_len: int | None = None,
                BLOCK_M: int = 32, BLOCK_N: int = 128, USE_DOT: int = 1, num_warps: int = 4, num_stages: int = 2):
    """y[t] += scale * x[t] @ lora_b[lora_id[s]] for every token t of segment s (in place; segments
    with lora_id -1 untouched). x: [T, R] fp16 / bf16; lora_b: [L, R, N] in x's dtype, N contiguous;
    y: [T, N] in x's dtype, N contiguous (any row stride); seg_start, seg_len, lora_id: [S] int32 /
    int64 on y's device (not range-checked: segments must lie inside [0, T), ids in [-1, L)).
    max_seg_len: the longest segment (an upper bound will do); None reads seg_len on the host (a
    sync). Returns y."""
    import torch
    if x.dim() != 2 or lora_b.dim() != 3 or y.dim() != 2 or x.shape[1] != lora_b.shape[1]:
        raise ValueError(f"expected x [T, R], lora_b [L, R, N], y [T, N]; got {tuple(x.shape)}, "
                         f"{tuple(lora_b.shape)}, {tuple(y.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16) or lora_b.dtype != x.dtype or y.dtype != x.dtype:
        raise ValueError(f"x, lora_b and y must share one fp16 / bf16 dtype; got {x.dtype}, {lora_b.dtype}, "
                         f"{y.dtype}")
    T, R = x.shape
    N = lora_b.shape[2]
    if tuple(y.shape) != (T, N):
        raise ValueError(f"y must be [{T}, {N}]; got {tuple(y.shape)}")
    if N > 1 and (y.stride(1) != 1 or lora_b.stride(2) != 1):
        raise ValueError(f"y and lora_b need N contiguous; got strides {tuple(y.stride())}, {tuple(lora_b.stride())}")
    S = seg_len.numel()
    for name, t in (("seg_start", seg_start), ("seg_len", seg_len), ("lora_id", lora_id)):
        if t.dim() != 1 or t.numel() != S or t.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"{name} must be int32 / int64 [{S}]; got {t.dtype} {tuple(t.shape)}")
    if S > MAX_GRID_YZ:
        raise ValueError(f"S={S} segments: more than the grid's {MAX_GRID_YZ}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "USE_DOT": USE_DOT}
    _check_cfg(cfg)
    if max_seg_len is None:
        max_seg_len = int(seg_len.max()) if S else 0
    if T == 0 or N == 0 or R == 0 or S == 0 or max_seg_len <= 0:
        return y
    if x.stride(1) != 1:
        x = x.contiguous()
    grid = _grid(max_seg_len, N, S, cfg)
    if grid[1] > MAX_GRID_YZ:
        raise ValueError(f"max_seg_len={max_seg_len}: {grid[1]} row blocks exceed the grid's {MAX_GRID_YZ}")
    _kernel[grid](**_kernel_args(x, lora_b, y, seg_start.contiguous(), seg_len.contiguous(), lora_id.contiguous(),
                                 scale, cfg), num_warps=num_warps, num_stages=num_stages)
    return y


@functools.lru_cache(maxsize=64)
def _plan_cached(T: int, S: int, L: int, sigma: float, base: int):
    import torch
    if S < 1 or T < S:
        raise ValueError(f"T={T}, S={S}: need 1 <= S <= T (every planned segment has a token)")
    if L < 1 or not 0 <= base <= S:
        raise ValueError(f"L={L}, base={base}: need L >= 1 and 0 <= base <= S")
    gen = torch.Generator().manual_seed(1234)
    w = torch.exp(sigma * torch.randn(S, generator=gen, dtype=torch.float64))
    share = w / w.sum() * (T - S)
    lens = share.floor().long()
    rem = (T - S) - int(lens.sum())
    lens[torch.argsort(share - lens, descending=True)[:rem]] += 1
    lens += 1
    perm = torch.randperm(L, generator=gen)
    live = torch.randperm(S, generator=gen)[base:].sort().values
    ids = torch.full((S,), -1, dtype=torch.int64)
    ids[live] = perm[torch.arange(S - base) % L]
    return lens, ids


def segment_plan(point):
    """(lens [S] int64, lora_ids [S] int64), CPU, a function of the point alone: S segments of >= 1
    token summing to T, the T - S others spread by lognormal(sigma) weights (largest-remainder
    rounding); `base` random segments get -1, the others a random permutation of the L adapters in
    turn (each adapter once when S - base == L). Segments are laid out back to back."""
    lens, ids = _plan_cached(int(point["T"]), int(point["S"]), int(point["L"]), float(point.get("sigma", 0.0)),
                             int(point.get("base", 0)))
    return lens.clone(), ids.clone()


def _segments_cpu(point):
    """(seg_start, seg_len, lora_id), int32 CPU tensors of the point's plan."""
    import torch
    lens, ids = segment_plan(point)
    starts = torch.zeros_like(lens)
    torch.cumsum(lens[:-1], 0, out=starts[1:])
    return starts.to(torch.int32), lens.to(torch.int32), ids.to(torch.int32)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1) [T, R]; lora_b ~ N(0, 1 / R) [L, R, N] (x @ B ~ N(0, 1)); y ~ N(0, 1) [T, N] (the
    base layer's output), all drawn on the CPU from a seeded generator, then moved; y0 a pristine
    copy of y (launch adds into y in place; the reference starts from y0); the segments of
    segment_plan (int32) and the longest segment's length."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, L, R, N = point["T"], point["L"], point["R"], point["N"]
    x = torch.randn((T, R), generator=gen).to(dt)
    b = (torch.randn((L, R, N), generator=gen) * R ** -0.5).to(dt)
    y = torch.randn((T, N), generator=gen).to(dt)
    starts, lens, ids = _segments_cpu(point)
    y = y.to(device)
    return {"x": x.to(device), "lora_b": b.to(device), "y": y, "y0": y.clone(),
            "seg_start": starts.to(device), "seg_len": lens.to(device), "lora_id": ids.to(device),
            "max_seg_len": int(lens.max()), "scale": float(point.get("scale", 0.5))}


def launch(inputs, cfg):
    """Adds into inputs["y"] in place (each repeat adds the LoRA delta once more) and returns it."""
    return lora_expand(inputs["x"], inputs["lora_b"], inputs["y"], inputs["seg_start"], inputs["seg_len"],
                       inputs["lora_id"], scale=inputs["scale"], max_seg_len=inputs["max_seg_len"],
                       BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], USE_DOT=cfg["USE_DOT"],
                       num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """[T, N] fp32: y0 plus, for every segment with an adapter, scale * x[rows] @ B[id] in fp64 from
    the same rounded inputs -- the buffer after exactly one launch on fresh inputs (built from y0,
    never from y, which launch writes)."""
    import torch
    x, b = inputs["x"], inputs["lora_b"]
    out = inputs["y0"].double().clone()
    starts, lens, ids = (inputs[k].cpu().tolist() for k in ("seg_start", "seg_len", "lora_id"))
    for s0, n, ad in zip(starts, lens, ids):
        if ad >= 0 and n > 0:
            out[s0:s0 + n] += inputs["scale"] * (x[s0:s0 + n].double() @ b[ad].double())
    return out.float()


def torch_baseline(inputs):
    """Eager torch as a simple server writes it: per segment one matmul in x's dtype (cuBLAS), scaled
    and added into a copy of y0 (segments on the base model skipped)."""
    y = inputs["y0"].clone()
    x, b = inputs["x"], inputs["lora_b"]
    starts, lens, ids = (inputs[k].cpu().tolist() for k in ("seg_start", "seg_len", "lora_id"))
    for s0, n, ad in zip(starts, lens, ids):
        if ad >= 0 and n > 0:
            y[s0:s0 + n] += (x[s0:s0 + n] @ b[ad]) * inputs["scale"]
    return y


def bytes_moved(point) -> int:
    """y's rows of the LoRA tokens read and written once (base-model rows untouched), their x rows
    read once, each adapter used read once (its R x N B), the three segment arrays (int32)."""
    e = 2
    _torch_dtype(point.get("dtype", "bf16"))
    lens, ids = segment_plan(point)
    live = ids >= 0
    t_lora = int(lens[live].sum())
    used = int(ids[live].unique().numel())
    R, N, S = point["R"], point["N"], point["S"]
    return 2 * t_lora * N * e + t_lora * R * e + used * R * N * e + 3 * 4 * S


def flops(point) -> int:
    """2 R N per LoRA token (the epilogue's add and scale not counted)."""
    lens, ids = segment_plan(point)
    return 2 * int(lens[ids >= 0].sum()) * point["R"] * point["N"]


def grid(cfg, point) -> tuple[int, int, int]:
    """The launch grid: (column tiles, row blocks of the longest segment, segments); programs past a
    shorter segment's end, and every program of a base-model segment, return at once."""
    lens, _ = segment_plan(point)
    return _grid(int(lens.max()), point["N"], point["S"], cfg)


def loop_iterations(cfg, point) -> int:
    """Rank steps per working program: cdiv(R, 16) dots, or R rank-1 FMA updates."""
    return triton.cdiv(point["R"], K_STEP) if cfg["USE_DOT"] else point["R"]


def cta_iterations(cfg, point) -> list[int]:
    """Each program's rank steps, in launch order (column tile fastest, then row block, then
    segment): 0 for a base-model segment or a row block past its segment's end."""
    lens, ids = segment_plan(point)
    gx, gy, gz = grid(cfg, point)
    it = loop_iterations(cfg, point)
    out = []
    for s in range(gz):
        n, live = int(lens[s]), int(ids[s]) >= 0
        for i in range(gy):
            out += [it if live and i * cfg["BLOCK_M"] < n else 0] * gx
    return out


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: x, lora_b and y on the meta device (no
    memory), the segment arrays as CPU int32 tensors with the plan's data (the scalar loads each
    program makes at its segment's offset: which adapter's B it streams)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, L, R, N = point["T"], point["L"], point["R"], point["N"]
    x = torch.empty((T, R), dtype=dt, device="meta")
    b = torch.empty((L, R, N), dtype=dt, device="meta")
    y = torch.empty((T, N), dtype=dt, device="meta")
    starts, lens, ids = _segments_cpu(point)
    return _kernel_args(x, b, y, starts, lens, ids, point.get("scale", 0.5), cfg)
