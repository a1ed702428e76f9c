"""Jagged -> padded dense conversion of recommender sequence features: FBGEMM-GPU's
torch.ops.fbgemm.jagged_to_padded_dense (its jagged_2d_to_dense for one jagged dimension), what TorchRec's
sequence features and the generative recommenders' HSTU (Zhai et al., "Actions Speak Louder than Words",
ICML 2024; facebookresearch/generative-recommenders) run to hand jagged user histories to padded attention
and pointwise layers, a bare @triton.jit kernel + its launcher. For each sequence b (length
len_b = offsets[b + 1] - offsets[b]):

    out[b, l, :] = values[offsets[b] + l, :]     for l < min(len_b, max_L)
    out[b, l, :] = padding_value                  for min(len_b, max_L) <= l < max_L

-- sequences longer than max_L are truncated (their first max_L rows kept, as FBGEMM does), empty ones are
all padding. A pure layout conversion: no arithmetic, the output's dtype the values' (the padding value
rounded once to it, round to nearest even). The reverse (dense -> jagged) is not a mode of this kernel.

values: [total_L, D] fp32 / fp16 / bf16, unit column stride, any row stride (a column slice of a wider
buffer: one feature's columns of a concatenated embedding output); offsets: [B + 1] int32 / int64, any
stride, nondecreasing with offsets[B] <= total_L (trusted, not range-checked; offsets[0] need not be 0);
out: a fresh contiguous [B, max_L, D] in values' dtype.

Work split: a 2-d grid (cdiv(max_L, BLOCK_L L_ITERS), B): program (j, b) owns rows j BLOCK_L L_ITERS ..
+ BLOCK_L L_ITERS of sequence b's padded block. It loads b's two offsets (two scalar loads; the row
addresses and the copy / fill branch depend on them) and walks its L_ITERS row blocks of BLOCK_L rows;
each row block is stored in N_CHUNKS = cdiv(D, BLOCK_D) column chunks of BLOCK_D =
next_pow2(cdiv(D, D_SPLIT)) columns (both constexprs: the row-block and chunk loops are unrolled). A row
block that starts at or past min(len_b, max_L) -- most of the output at long-tailed lengths -- takes a
runtime branch that only stores the padding (no load issued); a block holding real rows loads them (rows
past the sequence's end masked, filled with the padding value by the load's `other`) and stores the whole
block. The row mask is uniform along a row, so 16-byte vectors of aligned rows survive it; columns are
masked only where BLOCK_D does not divide D (EVEN_D 0). Row offsets are int64 (B max_L D passes 2^31
elements at the points). The values are read once (loaded evict-first); the stores are 83-88 % of the
bytes at the points.

How this differs from examples/jagged_sum.py: that kernel reduces each jagged segment to one row (a loop
over the segment's rows with a data-dependent trip count, the work per CTA ragged, the output B x D).
This one is a layout conversion whose stores dominate: every program writes the same fixed-size block of
a B x max_L x D output whatever the lengths, reads at most that block of values, and does no arithmetic;
the lengths only decide how much of each block is a copy and how much a fill.

Tunables: BLOCK_L (rows a block: 4 / 8 / 16 / 32), D_SPLIT (1 / 2: the D chunk, the row in one chunk or
two halves), L_ITERS (1 / 4: row blocks a program walks -- fewer, longer programs that load their
sequence's offsets once), num_warps (2 / 4 / 8); num_stages held at 1 (no loop-carried loads: each
block's load feeds only its own store, nothing to pipeline). On sm_90 every config of the sweep (48)
compiles at every point without spills: 17-167 registers under triton 3.6.0 and 17-128 under 3.9.0 (the most
for 32 rows of D 256 bf16 in one chunk on 2 warps at the HSTU point: 128 elements a thread), shared memory 0
under both.
Problem parameters (a workload point): B (sequences), max_L (the padded length), D, dtype (fp32 / fp16 /
bf16), offsets ("int32" / "int64"), pad (the padding value, default 0.0). The lengths are drawn
(draw_lengths): log-uniform in [1, 1.25 max_L] (a Zipf-like 1/L density, the long tail of user histories;
a share ln 1.25 / ln(1.25 max_L + 1) of them longer than max_L and truncated: 2.5-4 % at the points),
5 % empty.
"""

from __future__ import annotations

import functools
import math

import triton
import triton.language as tl


@triton.jit
def _kernel(VALUES, OFFSETS, OUT, max_L, D, stride_v, stride_off, stride_ob, stride_ol, pad,
            EVEN_D: tl.constexpr, N_CHUNKS: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr,
            L_ITERS: tl.constexpr):
    pid_l = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    start = tl.load(OFFSETS + b * stride_off).to(tl.int64)
    end = tl.load(OFFSETS + (b + 1) * stride_off).to(tl.int64)
    n = tl.minimum(end - start, max_L)                 # the rows of b that are copied
    padv = (tl.zeros([1, 1], dtype=tl.float32) + pad).to(OUT.dtype.element_ty)   # one register, broadcast
    fill = tl.broadcast_to(padv, [BLOCK_L, BLOCK_D])
    cols = tl.arange(0, BLOCK_D)
    o_seq = OUT + b * stride_ob
    for it in tl.static_range(L_ITERS):
        l0 = (pid_l * L_ITERS + it) * BLOCK_L
        rows = l0 + tl.arange(0, BLOCK_L)
        in_l = rows < max_L
        real = rows < n
        o_rows = o_seq + (rows.to(tl.int64) * stride_ol)[:, None]
        v_rows = VALUES + ((start + rows) * stride_v)[:, None]
        for c in tl.static_range(N_CHUNKS):
            cc = c * BLOCK_D + cols
            if EVEN_D:
                st_ok = in_l[:, None]
                ld_ok = real[:, None]
            else:
                cm = (cc < D)[None, :]
                st_ok = in_l[:, None] & cm
                ld_ok = real[:, None] & cm
            if l0 < n:                                  # real rows in the block: copy (the rest padded)
                x = tl.load(v_rows + cc[None, :], mask=ld_ok, other=padv, eviction_policy="evict_first")
                tl.store(o_rows + cc[None, :], x, mask=st_ok)
            else:                                       # all padding: no load
                tl.store(o_rows + cc[None, :], fill, mask=st_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-32"
DTYPES = ("fp32", "fp16", "bf16")
OFFSET_DTYPES = ("int32", "int64")
TUNABLES = ("BLOCK_L", "D_SPLIT", "L_ITERS", "num_warps", "num_stages")
BASELINE = {"BLOCK_L": 8, "D_SPLIT": 1, "L_ITERS": 1, "num_warps": 4, "num_stages": 1}
# the study's sweep: 4 x 2 x 2 x 3 x 1 = 48 configs. 4-32 rows a block, the row in one chunk or two halves,
# 1 or 4 blocks a program, 2-8 warps; num_stages 1 (nothing loop-carried to pipeline)
SWEEP_AXES = {"BLOCK_L": [4, 8, 16, 32], "D_SPLIT": [1, 2], "L_ITERS": [1, 4], "num_warps": [2, 4, 8],
              "num_stages": [1]}
MAX_TILE = 16384                            # elements of a block's [BLOCK_L, BLOCK_D] chunk
MAX_B = 65535                               # the grid's y dimension
EMPTY_FRAC = 0.05                           # share of empty sequences (a user with no events)
LEN_OVER = 1.25                             # lengths log-uniform in [1, LEN_OVER max_L]
VALUES_SEED = 0x5EED                        # make_inputs' values generator: seed + VALUES_SEED

POINTS = [
    # HSTU (generative-recommenders' HSTU ranking / retrieval: jagged user histories padded for its
    # attention): B 512 users, histories padded to max_L 4096, embedding dim 256 in bf16, int64 offsets
    # (FBGEMM's jagged ops take int64). 1.07 GB padded output + 0.14 GB of values (13 % of the slots real):
    # ~0.4 ms at 3 TB/s
    {"B": 512, "max_L": 4096, "D": 256, "dtype": "bf16", "offsets": "int64", "pad": 0.0},
    # a TorchRec sequence feature (a KeyedJaggedTensor's user-click history, embedded by an
    # EmbeddingCollection at D 64 fp32, padded to 256 for a BST / DIN-style sequence tower): B 4096 a GPU,
    # int32 offsets (TorchRec's default lengths / offsets dtype). 268 MB out + 55 MB values (20 % real): ~0.11 ms
    {"B": 4096, "max_L": 256, "D": 64, "dtype": "fp32", "offsets": "int32", "pad": 0.0},
    # a sequence-ranking model's item history at D 128 in fp16 (a DIN / BST-style tower over HSTU-style
    # jagged inputs): B 2048 histories padded to 512, padded with -1.0 (a sentinel a masked layer ignores).
    # 268 MB out + 48 MB values (18 % real): ~0.11 ms. (At D 512, 32 rows on 2 warps held 256 fp16 elements a thread:
    # 254-255 registers and spills; such rows want D_SPLIT >= 2)
    {"B": 2048, "max_L": 512, "D": 128, "dtype": "fp16", "offsets": "int64", "pad": -1.0},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except (KeyError, TypeError):
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _off_dtype(name: str):
    import torch
    try:
        return {"int32": torch.int32, "int64": torch.int64}[name]
    except (KeyError, TypeError):
        raise ValueError(f"offsets {name!r} is not one of {', '.join(OFFSET_DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _check_pad(pad) -> None:
    if not isinstance(pad, (int, float)) or isinstance(pad, bool) or not math.isfinite(pad):
        raise ValueError(f"pad={pad!r} must be a finite number")


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: fp32, int64 offsets, pad 0.0)."""
    for k in ("B", "max_L", "D"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    if point["B"] > MAX_B:
        raise ValueError(f"B={point['B']} sequences exceed the grid's {MAX_B}")
    P = {"B": point["B"], "max_L": point["max_L"], "D": point["D"], "dtype": point.get("dtype", "fp32"),
         "offsets": point.get("offsets", "int64"), "pad": point.get("pad", 0.0)}
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {', '.join(DTYPES)}")
    if P["offsets"] not in OFFSET_DTYPES:
        raise ValueError(f"offsets {P['offsets']!r} is not one of {', '.join(OFFSET_DTYPES)}")
    _check_pad(P["pad"])
    return P


def _check_cfg(cfg) -> None:
    bl = cfg["BLOCK_L"]
    if not _is_int(bl) or bl < 1 or bl > 256 or bl & (bl - 1):
        raise ValueError(f"BLOCK_L={bl!r} must be a power of two from 1 to 256")
    ds = cfg["D_SPLIT"]
    if not _is_int(ds) or ds < 1 or ds > 64:
        raise ValueError(f"D_SPLIT={ds!r} must be an int from 1 to 64")
    li = cfg["L_ITERS"]
    if not _is_int(li) or li < 1 or li > 64:
        raise ValueError(f"L_ITERS={li!r} must be an int from 1 to 64")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1 or st > 8:
        raise ValueError(f"num_stages={st!r} must be an int from 1 to 8")


def block_d(D: int, D_SPLIT: int) -> int:
    """The column chunk: next_pow2(cdiv(D, D_SPLIT)) columns (>= D: the row in one chunk)."""
    return _pow2(triton.cdiv(D, D_SPLIT))


def _plan(D: int, cfg) -> tuple[int, int]:
    """(BLOCK_D, chunks a row) of a config at D; the chunk tile checked."""
    _check_cfg(cfg)
    bd = block_d(D, cfg["D_SPLIT"])
    if cfg["BLOCK_L"] * bd > MAX_TILE:
        raise ValueError(f"BLOCK_L x BLOCK_D = {cfg['BLOCK_L']} x {bd} = {cfg['BLOCK_L'] * bd} elements a chunk "
                         f"(D={D}, D_SPLIT={cfg['D_SPLIT']}); at most {MAX_TILE}: raise D_SPLIT or lower BLOCK_L")
    return bd, triton.cdiv(D, bd)


def _grid(B: int, max_L: int, cfg) -> tuple[int, int]:
    _check_cfg(cfg)
    return (triton.cdiv(max_L, cfg["BLOCK_L"] * cfg["L_ITERS"]), B)


def _kernel_args(values, offsets, out, pad, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, max_L, D = out.shape
    bd, n = _plan(D, cfg)
    return dict(VALUES=values, OFFSETS=offsets, OUT=out, max_L=max_L, D=D, stride_v=values.stride(0),
                stride_off=offsets.stride(0), stride_ob=out.stride(0), stride_ol=out.stride(1), pad=float(pad),
                EVEN_D=int(D % bd == 0), N_CHUNKS=n, BLOCK_L=cfg["BLOCK_L"], BLOCK_D=bd, L_ITERS=cfg["L_ITERS"])


def jagged_to_padded_dense(values, offsets, max_L: int, padding_value: float = 0.0, *, BLOCK_L: int = 8,
                           D_SPLIT: int = 1, L_ITERS: int = 1, num_warps: int = 4, num_stages: int = 1):
    """The padded [B, max_L, D] tensor (values' dtype, contiguous) of the jagged `values` [total_L, D]
    (fp32 / fp16 / bf16, unit column stride, any row stride) with `offsets` [B + 1] (int32 / int64, any
    stride; nondecreasing, offsets[B] <= total_L: trusted): sequence b's first min(len_b, max_L) rows, the
    rest `padding_value`. BLOCK_L, D_SPLIT, L_ITERS, num_warps, num_stages: the tunables (module doc)."""
    import torch
    cfg = {"BLOCK_L": BLOCK_L, "D_SPLIT": D_SPLIT, "L_ITERS": L_ITERS, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    _check_pad(padding_value)
    if not _is_int(max_L) or max_L < 0:
        raise ValueError(f"max_L={max_L!r} must be an int >= 0")
    if values.dim() != 2 or values.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"values must be a 2-d fp32 / fp16 / bf16 tensor [total_L, D]; got "
                         f"{tuple(values.shape)} {values.dtype}")
    if offsets.dim() != 1 or offsets.shape[0] < 1 or offsets.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"offsets must be a 1-d int32 / int64 tensor [B + 1]; got {tuple(offsets.shape)} "
                         f"{offsets.dtype}")
    if offsets.device != values.device:
        raise ValueError(f"offsets must be on values' device {values.device}; got {offsets.device}")
    B = offsets.shape[0] - 1
    D = values.shape[1]
    if B > MAX_B:
        raise ValueError(f"B={B} sequences exceed the grid's {MAX_B}")
    if values.stride(1) != 1 and D > 1:
        raise ValueError(f"values must have unit column stride; got strides {tuple(values.stride())}")
    out = torch.empty((B, max_L, D), dtype=values.dtype, device=values.device)
    if B == 0 or max_L == 0 or D == 0:
        return out
    _plan(D, cfg)
    _kernel[_grid(B, max_L, cfg)](**_kernel_args(values, offsets, out, padding_value, cfg), num_warps=num_warps,
                                  num_stages=num_stages)
    return out


# ---------------------------------------------------------------- inputs, reference, baseline
def draw_lengths(B: int, max_L: int, gen):
    """[B] int64 sequence lengths: log-uniform in [1, LEN_OVER max_L] (floor of exp(u ln(LEN_OVER max_L +
    1))), an EMPTY_FRAC share 0 -- deterministic for a seeded CPU generator."""
    import torch
    u = torch.rand(B, generator=gen, dtype=torch.float64)
    lens = torch.exp(u * math.log(LEN_OVER * max_L + 1.0)).floor().long()
    empty = torch.rand(B, generator=gen) < EMPTY_FRAC
    return lens.masked_fill_(empty, 0)


@functools.lru_cache(maxsize=8)
def _offsets_data(B: int, max_L: int, offsets: str, seed: int = 0):
    """The point's offsets [B + 1] with data, on the CPU in its offsets dtype: make_inputs' draw."""
    import torch
    lens = draw_lengths(B, max_L, torch.Generator(device="cpu").manual_seed(seed))
    off = torch.zeros(B + 1, dtype=torch.int64)
    off[1:] = torch.cumsum(lens, 0)
    return off.to(_off_dtype(offsets))


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """offsets: draw_lengths' cumulative sums (seeded, on the CPU, moved); values [total_L, D] N(0, 1) in
    the point's dtype, drawn on `device`; max_L and the padding value."""
    import torch
    P = _check_point(point)
    off = _offsets_data(P["B"], P["max_L"], P["offsets"], seed).clone()
    total = int(off[-1])
    gen = torch.Generator(device=device).manual_seed(seed + VALUES_SEED)
    values = torch.randn((total, P["D"]), generator=gen, device=device).to(_torch_dtype(P["dtype"]))
    return {"values": values, "offsets": off.to(device), "max_L": P["max_L"], "pad": P["pad"]}


def launch(inputs, cfg):
    return jagged_to_padded_dense(inputs["values"], inputs["offsets"], inputs["max_L"], inputs["pad"],
                                  BLOCK_L=cfg["BLOCK_L"], D_SPLIT=cfg["D_SPLIT"], L_ITERS=cfg["L_ITERS"],
                                  num_warps=cfg["num_warps"], num_stages=cfg.get("num_stages", 1))


def reference(inputs):
    """fp32 [B, max_L, D]: sequence by sequence, its first min(len, max_L) rows copied, the rest the padding
    value rounded to values' dtype."""
    import torch
    values, off, max_L = inputs["values"], inputs["offsets"].long().tolist(), inputs["max_L"]
    B, D = len(off) - 1, values.shape[1]
    padv = float(torch.tensor(inputs["pad"], dtype=torch.float32).to(values.dtype))
    out = torch.full((B, max_L, D), padv, dtype=torch.float32, device=values.device)
    for b in range(B):
        n = min(off[b + 1] - off[b], max_L)
        if n > 0:
            out[b, :n] = values[off[b]:off[b] + n].float()
    return out


def torch_baseline(inputs):
    """What eager PyTorch runs without FBGEMM: each jagged row's (sequence, position) from the offsets
    (searchsorted), the rows past max_L dropped, one index_put_ into a tensor filled with the padding."""
    import torch
    values, off, max_L = inputs["values"], inputs["offsets"].long().contiguous(), inputs["max_L"]
    B, D = off.shape[0] - 1, values.shape[1]
    out = torch.full((B, max_L, D), inputs["pad"], dtype=values.dtype, device=values.device)
    r = torch.arange(int(off[0]), int(off[-1]), device=values.device)
    b = torch.searchsorted(off, r, right=True) - 1
    pos = r - off[b]
    keep = pos < max_L
    out[b[keep], pos[keep]] = values[r[keep]]
    return out


# ---------------------------------------------------------------- hooks
def copied_rows(point) -> int:
    """Rows of values the seed-0 draw copies: sum over b of min(len_b, max_L)."""
    P = _check_point(point)
    off = _offsets_data(P["B"], P["max_L"], P["offsets"]).long()
    return int((off[1:] - off[:-1]).clamp(max=P["max_L"]).sum())


def bytes_moved(point) -> int:
    """The padded output written once (B max_L D elements), the copied rows of values read once (the
    truncated tails are not read), the offsets read once (B + 1)."""
    P = _check_point(point)
    e = _elem_bytes(P["dtype"])
    ib = 4 if P["offsets"] == "int32" else 8
    return P["B"] * P["max_L"] * P["D"] * e + copied_rows(P) * P["D"] * e + (P["B"] + 1) * ib


def flops(point) -> int:
    """A copy: no arithmetic."""
    _check_point(point)
    return 0


def grid(cfg, point) -> tuple[int, int]:
    """(cdiv(max_L, BLOCK_L L_ITERS), B): row-block groups fastest, one grid row a sequence."""
    P = _check_point(point)
    _plan(P["D"], cfg)
    return _grid(P["B"], P["max_L"], cfg)


def loop_iterations(cfg, point) -> int:
    """The (row block, chunk) steps a program walks: L_ITERS N_CHUNKS (each one store, a load too where the
    block holds real rows)."""
    P = _check_point(point)
    _, n = _plan(P["D"], cfg)
    return cfg["L_ITERS"] * n


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`. The offsets carry data: [B + 1] on the CPU in
    the point's offsets dtype, make_inputs' seed-0 draw (they decide which rows each program loads and
    whether it loads at all). Every other tensor is on the meta device: values [total_L, D] contiguous
    (total_L = that draw's offsets[B]) and the output [B, max_L, D] contiguous, in the point's dtype."""
    import torch
    P = _check_point(point)
    _plan(P["D"], cfg)
    off = _offsets_data(P["B"], P["max_L"], P["offsets"])
    dt = _torch_dtype(P["dtype"])
    values = torch.empty((int(off[-1]), P["D"]), dtype=dt, device="meta")
    out = torch.empty((P["B"], P["max_L"], P["D"]), dtype=dt, device="meta")
    return _kernel_args(values, off, out, P["pad"], cfg)
