"""Stream-K GEMM, C = A @ B, a bare @triton.jit kernel + its launcher.

    C[m, n] = sum_k A[m, k] * B[k, n]

A: [M, K], B: [K, N], one fp16 / bf16 dtype, any strides (B typically an nn.Linear weight
[N, K] seen through .t(), K contiguous -- b_layout "nk" -- or a row-major [K, N] weight,
"kn"); C: [M, N] in A's dtype (any strides), fp32 accumulation, one rounding at the end.

Why Stream-K: a GEMM of T output tiles on S SMs runs ceil(T / S) waves; when S does not
divide T the last wave leaves SMs idle (576 tiles of 128 x 128 on 132 SMs: 4.36 waves, the
fifth 36 % full). Stream-K cuts the work finer than a tile: the unit is one (tile, k-step)
pair -- one BLOCK_K slab of one output tile -- and the launch is a persistent grid of
P = PROGRAMS_PER_SM x NUM_SMS CTAs (NUM_SMS = 132, an H200's, unless the point / caller says
otherwise), each taking a contiguous, equal share of the work units (shares differ by at most
one k-step), so every SM gets the same number of MACs whatever T is.

How the grid maps to work. The T tiles are numbered in grouped order (GROUP_M = 8 tile rows
at a time, down a group's rows, then to the next column: the Triton matmul swizzle, so the
tiles in flight share A row panels and B column panels in L2); tile t's k-steps are the units
t x iters .. t x iters + iters - 1 (iters = cdiv(K, BLOCK_K)).
  * HYBRID = 0 (pure Stream-K): all T x iters units are split over the P CTAs: CTA p takes
    [start_p, end_p), start_p = p x (U // P) + min(p, U % P).
  * HYBRID = 1 (data-parallel + Stream-K): the first floor(T / P) x P tiles -- the full waves --
    are whole tiles, tile p, p + P, p + 2P, ... for CTA p (no fixup at all); only the leftover
    T mod P tiles' k-steps are split over the P CTAs as above (after a CTA's whole tiles). When P
    divides T it is a plain persistent GEMM.
A CTA walks its Stream-K range tile by tile *backwards* (the last tile of its range first;
within a tile the k-steps go forward, the pipelined loop of num_stages). Of each tile it holds a
contiguous run of k-steps, and the workspace has two fp32 [BLOCK_M, BLOCK_N] slots per CTA:
  * all of the tile: its accumulator is the answer; rounded and stored to C (masked at the edges).
  * the head or the middle, not the last k-step (only the first tile it walks can be such, the
    one its range ends inside): it is a contributor: it stores its partial to its contribution
    slot WS[2p], a CTA barrier, then sets FLAGS[p] = 1 (an atomic exchange, release).
  * the last k-step but not k-step 0 (only the last tile it walks, the one its range starts
    inside): it is the tile's finisher: it stores its own partial to its slot WS[2p + 1] (the
    accumulator dies there, so the fixup needs few registers), waits for the flag of each CTA
    before it that holds part of the tile (an atomic compare-and-swap 1 -> 0, acquire, which also
    resets the flag), then sums its own partial and theirs in CTA order, FIXUP_ROWS rows at a
    time (partials read through L2, .cg), rounds and stores C.
Every CTA contributes at most once, first, before it waits on anything, and only ever waits on
lower-numbered CTAs, which were dispatched before it: no deadlock under any interleaving, even
when the P CTAs are not all resident (PROGRAMS_PER_SM above what fits). Each partial is summed
by exactly one finisher in a fixed order, so the result is deterministic (bitwise, run to run).
The flags are zero between launches (each finisher resets what it consumed), so the workspace
and flags are allocated once per device and reused, with no memset launch (not safe for two
launches running concurrently on different streams). Rows past M and columns past N are masked
(loads read 0, stores skip); a K tail (K not a multiple of BLOCK_K) masks the K axis of the loads,
which EVEN_K (a constexpr) drops when BLOCK_K divides K.

Tunables: BLOCK_M, BLOCK_N, BLOCK_K (powers of two >= 16), PROGRAMS_PER_SM (>= 1: the grid is
PROGRAMS_PER_SM x NUM_SMS CTAs), HYBRID (0: pure Stream-K; 1: full waves data-parallel, the
leftover tiles Stream-K), num_warps, num_stages.
Problem parameters (a workload point): M, N, K, dtype (bf16 / fp16), b_layout ("nk": B =
weight[N, K].t(), the default; "kn": a row-major [K, N]); sms (the SM count the grid is sized
for, default 132) is for tests.
Only `_kernel` runs (the fixup is inside it); grid / loop_iterations / cta_iterations describe it.
"""

from __future__ import annotations

import triton
import triton.language as tl

NUM_SMS = 132       # an H200's (H100 SXM has 132 too): the persistent grid's SM count off the GPU
GROUP_M = 8         # tile rows per group of the tile order (not swept)
FIXUP_ROWS = 16     # rows of a split tile the finisher sums at a time


@triton.jit
def _tile_coords(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """Grouped tile order: tile -> (tile_m, tile_n), GROUP_M tile rows at a time."""
    per_group = GROUP_M * tiles_n
    group = tile // per_group
    first_m = group * GROUP_M
    group_m = tl.minimum(tiles_m - first_m, GROUP_M)
    in_group = tile - group * per_group
    return first_m + in_group % group_m, in_group // group_m


@triton.jit
def _mac_loop(A, B, tile_m, tile_n, k_first, k_last, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
              EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """fp32 sum over the k-steps [k_first, k_last) of one output tile."""
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N
    k0 = k_first * BLOCK_K
    a_ptr = A + rows.to(tl.int64)[:, None] * stride_am + (k0 + ks).to(tl.int64)[None, :] * stride_ak
    b_ptr = B + (k0 + ks).to(tl.int64)[:, None] * stride_bk + cols.to(tl.int64)[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for kt in range(k_first, k_last):
        if EVEN_K:
            a = tl.load(a_ptr, mask=row_ok[:, None], other=0.0)
            b = tl.load(b_ptr, mask=col_ok[None, :], other=0.0)
        else:
            k_ok = ks < K - kt * BLOCK_K
            a = tl.load(a_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            b = tl.load(b_ptr, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptr += BLOCK_K * stride_ak
        b_ptr += BLOCK_K * stride_bk
    return acc


@triton.jit
def _store_tile(C, acc, tile_m, tile_n, M, N, stride_cm, stride_cn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptr = C + rows.to(tl.int64)[:, None] * stride_cm + cols.to(tl.int64)[None, :] * stride_cn
    tl.store(c_ptr, acc.to(C.dtype.element_ty), mask=(rows < M)[:, None] & (cols < N)[None, :])


@triton.jit
def _store_partial(WS, slot, acc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tl.store(WS + slot * (BLOCK_M * BLOCK_N) + offs, acc, cache_modifier=".cg")


@triton.jit
def _sum_partials(WS, C, own, first, last, tile_m, tile_n, M, N, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, FIXUP_ROWS: tl.constexpr):
    """C tile = the partial in slot `own` + those in the contribution slots of CTAs first..last - 1
    (in that order), FIXUP_ROWS rows at a time."""
    sub = tl.arange(0, FIXUP_ROWS)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs = sub[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    for r in range(0, BLOCK_M, FIXUP_ROWS):
        part = tl.load(WS + own * (BLOCK_M * BLOCK_N) + r * BLOCK_N + offs, cache_modifier=".cg")
        for j in range(first, last):
            part += tl.load(WS + (2 * j) * (BLOCK_M * BLOCK_N) + r * BLOCK_N + offs, cache_modifier=".cg")
        rows = tile_m * BLOCK_M + r + sub
        c_ptr = C + rows.to(tl.int64)[:, None] * stride_cm + cols.to(tl.int64)[None, :] * stride_cn
        tl.store(c_ptr, part.to(C.dtype.element_ty), mask=(rows < M)[:, None] & (cols < N)[None, :])


@triton.jit
def _kernel(A, B, C, WS, FLAGS, M, N, K, NUM_SMS,
            stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
            EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
            PROGRAMS_PER_SM: tl.constexpr, HYBRID: tl.constexpr, GROUP_M: tl.constexpr,
            FIXUP_ROWS: tl.constexpr):
    pid = tl.program_id(0)
    programs = PROGRAMS_PER_SM * NUM_SMS            # the launch grid
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles = tiles_m * tiles_n
    iters = tl.cdiv(K, BLOCK_K)                     # k-steps per tile
    if HYBRID:
        dp_tiles = tiles - tiles % programs         # the full waves: whole tiles, no fixup
    else:
        dp_tiles = tiles * 0

    # ---- data-parallel phase: tiles pid, pid + P, ... of the full waves
    if HYBRID:
        for tile in range(pid, dp_tiles, programs):
            tile_m, tile_n = _tile_coords(tile, tiles_m, tiles_n, GROUP_M)
            acc = _mac_loop(A, B, tile_m, tile_n, 0, iters, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                            EVEN_K, BLOCK_M, BLOCK_N, BLOCK_K)
            _store_tile(C, acc, tile_m, tile_n, M, N, stride_cm, stride_cn, BLOCK_M, BLOCK_N)

    # ---- Stream-K phase: this CTA's contiguous share [start, end) of the leftover tiles' k-steps
    units = (tiles - dp_tiles) * iters
    base = units // programs
    extra = units % programs
    start = pid * base + tl.minimum(pid, extra)
    end = start + base + (pid < extra).to(tl.int32)
    last_tile = (end - 1) // iters
    n_seg = tl.where(end > start, last_tile - start // iters + 1, 0)
    for s in range(0, n_seg):
        t = last_tile - s                           # backwards: the tile this range ends inside first
        t_first = t * iters
        lo = tl.maximum(start, t_first)
        hi = tl.minimum(end, t_first + iters)
        tile_m, tile_n = _tile_coords(dp_tiles + t, tiles_m, tiles_n, GROUP_M)
        acc = _mac_loop(A, B, tile_m, tile_n, lo - t_first, hi - t_first, M, N, K, stride_am, stride_ak,
                        stride_bk, stride_bn, EVEN_K, BLOCK_M, BLOCK_N, BLOCK_K)
        if lo == t_first and hi == t_first + iters:
            # a whole tile inside this CTA's range
            _store_tile(C, acc, tile_m, tile_n, M, N, stride_cm, stride_cn, BLOCK_M, BLOCK_N)
        elif hi != t_first + iters:
            # contributor (at most once per CTA, its first segment, before any wait): leave the partial
            # in its contribution slot 2 pid, then raise its flag
            _store_partial(WS, 2 * pid, acc, BLOCK_M, BLOCK_N)
            tl.debug_barrier()
            tl.atomic_xchg(FLAGS + pid, 1, sem="release", scope="gpu")
        else:
            # finisher of a split tile (at most once per CTA, its last segment): its own partial to its
            # slot 2 pid + 1 (the accumulator dies there: few registers stay live), wait for the CTAs
            # holding the head of the tile, then sum, FIXUP_ROWS rows at a time, and store C
            _store_partial(WS, 2 * pid + 1, acc, BLOCK_M, BLOCK_N)
            big = extra * (base + 1)                # units held by the CTAs with one unit more
            first_cta = tl.where(t_first < big, t_first // (base + 1),
                                 extra + (t_first - big) // tl.maximum(base, 1))
            for j in range(first_cta, pid):
                while tl.atomic_cas(FLAGS + j, 1, 0, sem="acquire", scope="gpu") != 1:
                    pass
            tl.debug_barrier()                      # and this CTA's own partial is in memory
            _sum_partials(WS, C, 2 * pid + 1, first_cta, pid, tile_m, tile_n, M, N, stride_cm, stride_cn,
                          BLOCK_M, BLOCK_N, FIXUP_ROWS)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "PROGRAMS_PER_SM", "HYBRID", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "PROGRAMS_PER_SM": 1, "HYBRID": 1, "num_warps": 8,
            "num_stages": 3}

# Three shapes where the tile count does not divide 132 SMs (counts at 128 x 128 tiles):
POINTS = [
    # Llama-3.2-3B MLP down projection (intermediate 8192 -> hidden 3072), a 3072-token prefill, bf16:
    # 576 tiles = 4.36 waves, 128 k-steps of 64 per tile; A 50 MB, B 50 MB, C 19 MB; 155 GFLOP
    # (compute-bound: ~0.2-0.3 ms)
    {"M": 3072, "N": 3072, "K": 8192, "dtype": "bf16", "b_layout": "nk"},
    # DeepSeek-V3 dense-layer MLP down projection (intermediate 18432 -> hidden 7168), 256 tokens
    # (a large decode batch / chunked prefill), bf16: 112 tiles < 132 SMs (a data-parallel grid leaves
    # 20 SMs idle and cannot split), 288 k-steps per tile; B 264 MB streams from DRAM (~55 us at
    # 4.8 TB/s), 68 GFLOP: near the ridge
    {"M": 256, "N": 7168, "K": 18432, "dtype": "bf16", "b_layout": "nk"},
    # Qwen3-0.6B fused gate_up projection (hidden 1024 -> 2 x 3072), an 8192-token prefill, fp16, the
    # weight stored [K, N] row-major: 3072 tiles = 23.3 waves of a short K (16 k-steps): a fixup per
    # split tile weighs most here; A 17 MB, B 13 MB, C 101 MB; 103 GFLOP
    {"M": 8192, "N": 6144, "K": 1024, "dtype": "fp16", "b_layout": "kn"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _b_layout(point) -> str:
    lay = point.get("b_layout", "nk")
    if lay not in ("nk", "kn"):
        raise ValueError(f"b_layout {lay!r} is not 'nk' ([N, K] weight, K contiguous) or 'kn' ([K, N], N contiguous)")
    return lay


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if not isinstance(v, int) or v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    pps = cfg["PROGRAMS_PER_SM"]
    if not isinstance(pps, int) or pps < 1:
        raise ValueError(f"PROGRAMS_PER_SM={pps} must be an int >= 1 (the grid is PROGRAMS_PER_SM x SMs CTAs)")
    if cfg["HYBRID"] not in (0, 1):
        raise ValueError(f"HYBRID={cfg['HYBRID']} must be 0 (pure Stream-K) or 1 (data-parallel full waves)")


# ---------------------------------------------------------------- the work split, in Python
def _split(M: int, N: int, K: int, cfg, sms: int) -> tuple[int, int, int, int]:
    """(programs, tiles, dp_tiles, k-steps per tile), as the kernel computes them."""
    programs = cfg["PROGRAMS_PER_SM"] * sms
    tiles = triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
    iters = triton.cdiv(K, cfg["BLOCK_K"])
    dp_tiles = tiles - tiles % programs if cfg["HYBRID"] else 0
    return programs, tiles, dp_tiles, iters


def sk_ranges(M: int, N: int, K: int, cfg, sms: int = NUM_SMS) -> list[tuple[int, int]]:
    """Each CTA's Stream-K range [start, end) of the leftover tiles' k-steps (the kernel's arithmetic)."""
    programs, tiles, dp_tiles, iters = _split(M, N, K, cfg, sms)
    units = (tiles - dp_tiles) * iters
    base, extra = divmod(units, programs)
    out = []
    for p in range(programs):
        start = p * base + min(p, extra)
        out.append((start, start + base + (1 if p < extra else 0)))
    return out


def tile_holders(M: int, N: int, K: int, cfg, sms: int = NUM_SMS) -> list[list[int]]:
    """For each Stream-K tile (in order), the CTAs that hold some of its k-steps (the last one
    is its finisher)."""
    programs, tiles, dp_tiles, iters = _split(M, N, K, cfg, sms)
    holders: list[list[int]] = [[] for _ in range(tiles - dp_tiles)]
    for p, (start, end) in enumerate(sk_ranges(M, N, K, cfg, sms)):
        for t in range(start // iters, triton.cdiv(end, iters)) if end > start else ():
            holders[t].append(p)
    return holders


# ---------------------------------------------------------------- workspace
_WORKSPACES: dict = {}


def _workspace(device, programs: int, block_m: int, block_n: int):
    """(fp32 partial tiles [>= programs, >= block_m x block_n], int32 flags [>= programs], all 0):
    one pair per device, grown when a launch needs more; the kernel leaves the flags at 0."""
    import torch
    key = str(device)
    ws, flags = _WORKSPACES.get(key, (None, None))
    need = 2 * programs * block_m * block_n
    if ws is None or ws.numel() < need:
        ws = torch.empty((need,), dtype=torch.float32, device=device)
    if flags is None or flags.numel() < programs:
        flags = torch.zeros((programs,), dtype=torch.int32, device=device)
    _WORKSPACES[key] = (ws, flags)
    return ws, flags


def _kernel_args(a, b, c, ws, flags, sms: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    K = a.shape[1]
    return dict(A=a, B=b, C=c, WS=ws, FLAGS=flags, M=a.shape[0], N=b.shape[1], K=K, NUM_SMS=sms,
                stride_am=a.stride(0), stride_ak=a.stride(1), stride_bk=b.stride(0), stride_bn=b.stride(1),
                stride_cm=c.stride(0), stride_cn=c.stride(1), EVEN_K=K % cfg["BLOCK_K"] == 0,
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                PROGRAMS_PER_SM=cfg["PROGRAMS_PER_SM"], HYBRID=cfg["HYBRID"], GROUP_M=GROUP_M,
                FIXUP_ROWS=min(FIXUP_ROWS, cfg["BLOCK_M"]))


def _device_sms(device) -> int:
    import torch
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return NUM_SMS


def streamk_gemm(a, b, *, out=None, num_sms=None, BLOCK_M: int = 128, BLOCK_N: int = 128, BLOCK_K: int = 64,
                 PROGRAMS_PER_SM: int = 1, HYBRID: int = 1, num_warps: int = 8, num_stages: int = 3):
    """C = a @ b with a Stream-K persistent grid. a: [M, K], b: [K, N] (any strides; an nn.Linear
    weight w [N, K] is passed as w.t()), one fp16 / bf16 dtype. out: an optional [M, N] tensor of
    that dtype (any strides) to write into. num_sms: the SM count the grid is sized for (default:
    the device's; NUM_SMS off a GPU). Returns C [M, N]."""
    import torch
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"expected a [M, K] and b [K, N]; got {tuple(a.shape)}, {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"a and b must share one fp16 / bf16 dtype; got {a.dtype}, {b.dtype}")
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    elif out.dtype != a.dtype or tuple(out.shape) != (M, N):
        raise ValueError(f"out must be a [{M}, {N}] {a.dtype} tensor; got {out.dtype} {tuple(out.shape)}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "PROGRAMS_PER_SM": PROGRAMS_PER_SM,
           "HYBRID": HYBRID}
    _check_cfg(cfg)
    sms = _device_sms(a.device) if num_sms is None else int(num_sms)
    if sms < 1:
        raise ValueError(f"num_sms={sms} must be >= 1")
    if M == 0 or N == 0:
        return out
    if K == 0:
        out.zero_()
        return out
    programs = PROGRAMS_PER_SM * sms
    ws, flags = _workspace(a.device, programs, BLOCK_M, BLOCK_N)
    _kernel[(programs,)](**_kernel_args(a, b, out, ws, flags, sms, cfg), num_warps=num_warps,
                         num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """a ~ N(0, 1) K^-1/4 and the weight the same (C's entries O(1) whatever K is), drawn on the
    CPU from `seed`, then moved; b laid out as b_layout says; num_sms the point's sms."""
    import torch
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N, K = point["M"], point["N"], point["K"]
    scale = K ** -0.25
    a = (torch.randn((M, K), generator=gen) * scale).to(dt).to(device)
    if _b_layout(point) == "nk":
        b = (torch.randn((N, K), generator=gen) * scale).to(dt).to(device).t()
    else:
        b = (torch.randn((K, N), generator=gen) * scale).to(dt).to(device)
    return {"a": a, "b": b, "num_sms": int(point.get("sms", NUM_SMS))}


def launch(inputs, cfg):
    return streamk_gemm(inputs["a"], inputs["b"], num_sms=inputs.get("num_sms", NUM_SMS), BLOCK_M=cfg["BLOCK_M"],
                        BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], PROGRAMS_PER_SM=cfg["PROGRAMS_PER_SM"],
                        HYBRID=cfg["HYBRID"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """fp64 a @ b of the same (rounded) inputs, returned as fp32."""
    return (inputs["a"].double() @ inputs["b"].double()).float()


def torch_baseline(inputs):
    """cuBLAS through torch in the inputs' dtype."""
    return inputs["a"] @ inputs["b"]


def bytes_moved(point) -> int:
    """A and B read once, C written once (2 bytes each). Re-reads of A / B panels by other tiles
    and the fp32 partial tiles of the fixup (written and read back through L2) are not counted."""
    _torch_dtype(point.get("dtype", "bf16"))
    _b_layout(point)
    M, N, K = point["M"], point["N"], point["K"]
    return 2 * (M * K + K * N + M * N)


def flops(point) -> int:
    return 2 * point["M"] * point["N"] * point["K"]


def _sms(point) -> int:
    return int(point.get("sms", NUM_SMS))


def grid(cfg, point) -> int:
    """PROGRAMS_PER_SM x sms persistent CTAs (sms = NUM_SMS = 132 unless the point says)."""
    return cfg["PROGRAMS_PER_SM"] * _sms(point)


def cta_iterations(cfg, point) -> list[int]:
    """Each CTA's k-steps (main-loop iterations): its whole tiles of the full waves (HYBRID) x
    k-steps per tile, plus its Stream-K share (they differ by at most one k-step)."""
    M, N, K = point["M"], point["N"], point["K"]
    programs, _tiles, dp_tiles, iters = _split(M, N, K, cfg, _sms(point))
    whole = (dp_tiles // programs) * iters
    return [whole + end - start for start, end in sk_ranges(M, N, K, cfg, _sms(point))]


def loop_iterations(cfg, point) -> int:
    """K-steps of a typical CTA: all the work units over the CTAs, rounded up."""
    M, N, K = point["M"], point["N"], point["K"]
    programs, tiles, _dp, iters = _split(M, N, K, cfg, _sms(point))
    return triton.cdiv(tiles * iters, programs)


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory),
    with the strides of the point's B layout and a workspace of exactly the grid's size."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N, K = point["M"], point["N"], point["K"]
    a = torch.empty((M, K), dtype=dt, device="meta")
    if _b_layout(point) == "nk":
        b = torch.empty((N, K), dtype=dt, device="meta").t()
    else:
        b = torch.empty((K, N), dtype=dt, device="meta")
    c = torch.empty((M, N), dtype=dt, device="meta")
    programs = grid(cfg, point)
    ws = torch.empty((2 * programs * cfg["BLOCK_M"] * cfg["BLOCK_N"],), dtype=torch.float32, device="meta")
    flags = torch.empty((programs,), dtype=torch.int32, device="meta")
    return _kernel_args(a, b, c, ws, flags, _sms(point), cfg)
