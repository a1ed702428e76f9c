"""The fused sparse optimizer step of a recommendation model's embedding table: rowwise (exact) Adagrad on
the rows a batch touched -- FBGEMM-GPU's split_embedding_codegen rowwise_adagrad update
(OptimType.EXACT_ROWWISE_ADAGRAD, what TorchRec's DLRM example fuses into its embedding backward with
--adagrad; DGL-KE's and PyTorch-BigGraph's row-wise Adagrad of entity embeddings likewise), a bare
@triton.jit kernel + its launcher. For each of the U unique rows u the batch touched, r = ids[u]:

    g      = grad[u, :]                       (fp32; + wd weight[r, :]   with L2 weight decay, mode 1)
    m      = momentum[r] + mean_d(g^2)        (one fp32 accumulator a row: "rowwise"; stored back)
    mult   = lr / (sqrt(m) + eps)
    weight[r, :] = keep weight[r, :] - mult g (keep = 1 - lr wd with decoupled weight decay, mode 2; else 1)

-- FBGEMM's formulas (its WeightDecayMode NONE / L2 / DECOUPLE = wd_mode 0 / 1 / 2; its L2 form
`correction w - mult grad` with correction = 1 - mult wd is the same update). fp32 math; the new
weight is rounded once to the table's dtype when stored (round to nearest even: FBGEMM's optional
stochastic rounding of fp16 tables is not done here), the momentum stays fp32.

ids: [U] int32 / int64, any stride, the rows a step touched, deduplicated (sorted, as TorchRec / FBGEMM
hand them over after their sort + unique; trusted: distinct and in [0, V), not checked -- two equal ids
would race); grad: [U, D] fp32 / fp16 / bf16 (the aggregated gradient a unique row got, e.g. the values
of a coalesced torch.sparse gradient of nn.Embedding(sparse=True)), unit column stride, any row stride;
weight: the table [V, D] fp32 / fp16 / bf16 (V up to tens of millions), unit column stride, any row
stride (a table inside a wider / padded buffer), updated in place; momentum: [V] fp32, any stride,
updated in place. Rows not in ids are neither read nor written.

Work split: program p owns the BLOCK_R consecutive unique rows p BLOCK_R .. + BLOCK_R (the last block
masked). It loads their ids (one dependent load before the rows' addresses are known), their momenta
(a gather of BLOCK_R fp32) and walks the D columns. A row's sum of squares must be complete before
any of its weights can be updated, so D_SPLIT picks how the row is walked:
  D_SPLIT 1 (ONE_PASS): the whole [BLOCK_R, D] tile of grad and weight held in registers -- every load
    of the program in flight at once (the grad's independent of the ids), one cross-lane sum, the
    update, one store; the most registers.
  D_SPLIT 2 / 4: BLOCK_D = next_pow2(cdiv(D, D_SPLIT)) columns a chunk, two passes over the row's
    cdiv(D, BLOCK_D) chunks -- pass 1 the squares of the grad chunks (and, with L2 decay, of
    grad + wd weight: the weight chunk read there too) into a [BLOCK_R, BLOCK_D] fp32 accumulator;
    then the row sums, the momentum and the multiplier; pass 2 reads grad and weight chunk by
    chunk again, updates and stores. The grad's second read (and with L2 decay the weight's) comes
    from L1 / L2, not DRAM; fewer registers, a chunk's loads in flight at a time. The chunk loops are
    tl.range loops with num_stages the launch's: with num_stages 2 Triton issues the next chunk's
    loads (cp.async into shared memory) while this chunk is summed or updated -- where a thread's
    share of a chunk row is at least 4 bytes (cp.async's smallest copy; the D 64 fp16 point's 16- and
    32-column chunks often are not, and there num_stages 2 leaves the cubin as it was). The chunk
    count N_CHUNKS = cdiv(D, BLOCK_D) is a constexpr (the embedding dim of a table is fixed): the
    compiler unrolls the 2-4 chunk steps of a pass. (With a runtime trip count, triton 3.6's ptxas
    12.8 spilled 2 registers at 40 for 8 fp32 elements a thread in two passes at D 128.)
Masks: rows past U (the last block), columns past D only where BLOCK_D does not divide D (EVEN_D 0);
the row mask is uniform along a row, so the 16-byte vectors of aligned rows survive it. Row offsets
int64 (V D passes 2^31 elements at the points). The grad is streamed (loaded evict-first where it is
read the last time).

How this differs from the other examples: fused_adam / adam8bit_blockwise update dense flat parameter
buffers element by element (no indices, per-element state); embedding_bwd scatters token gradients into
a dense weight gradient with atomics (no optimizer). Here the update is sparse -- a gather / scatter of
whole table rows through a deduplicated id list, in place -- with one optimizer state a row, so a row's
reduction (its mean square) must finish before the row can be written: the one-pass / two-pass choice.

The ids are data: make_inputs draws U distinct rows uniformly over the table (what hashed categorical
features give: Criteo's values are hashed into the tables, so the touched rows spread over the whole
table) and sorts them; example_args gives those ids (seed 0) on the CPU.

Tunables: BLOCK_R (rows a program: 2 / 4 / 8 / 16), D_SPLIT (1 / 2 / 4: above), num_warps (2 / 4 / 8),
num_stages (1 / 2: the chunk loops' prefetch depth; the one-pass form has no loop, so there it changes
nothing). On sm_90 every config of the sweep (72) compiles at every point without spills: 19-127
registers under triton 3.6.0 and 19-128 under 3.9.0 (the most for 16 rows of D 256 held in one pass on 2
warps: 64 grad and 64 weight values a thread; 19-80 in two passes), shared memory 0-12288 bytes under
both (at most 64 in one pass: the row sums' scratch; the prefetched chunks in two passes).
Problem parameters (a workload point): V (table rows), U (unique rows a step), D (the embedding dim),
dtype (the table's: fp32 / fp16 / bf16), grad_dtype (fp32 / fp16 / bf16), ids ("int32" / "int64"),
wd_mode (0 none, 1 L2, 2 decoupled), weight_decay, lr, eps (defaults: fp32, fp32, int64, 0, 0.0, 0.01,
1e-8: FBGEMM's learning rate and eps defaults).
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl


@triton.jit
def _kernel(IDS, GRAD, W, MOM, U, D, stride_i, stride_g, stride_w, stride_m, lr, eps, weight_decay,
            WD_MODE: tl.constexpr, ONE_PASS: tl.constexpr, EVEN_D: tl.constexpr, N_CHUNKS: tl.constexpr,
            BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    r_ok = rows < U
    cols = tl.arange(0, BLOCK_D)
    g_row = GRAD + (rows * stride_g)[:, None]
    idx = tl.load(IDS + rows * stride_i, mask=r_ok, other=0).to(tl.int64)
    w_row = W + (idx * stride_w)[:, None]
    d_f = D * 1.0                           # fp32 (D == 1 comes in as a constexpr)
    if ONE_PASS:                            # the whole row in registers: one pass
        if EVEN_D:
            ok = r_ok[:, None]
        else:
            ok = r_ok[:, None] & (cols < D)[None, :]
        g = tl.load(g_row + cols[None, :], mask=ok, other=0.0, eviction_policy="evict_first").to(tl.float32)
        m = tl.load(MOM + idx * stride_m, mask=r_ok, other=0.0)
        w = tl.load(w_row + cols[None, :], mask=ok, other=0.0).to(tl.float32)
        if WD_MODE == 1:                    # L2: the decay folded into the gradient
            g = g + weight_decay * w
        m = m + tl.sum(g * g, axis=1) / d_f
        tl.store(MOM + idx * stride_m, m, mask=r_ok)
        mult = lr / (tl.sqrt(m) + eps)
        if WD_MODE == 2:                    # decoupled: the weight shrunk apart from the gradient
            w = w * (1.0 - lr * weight_decay)
        w = w - mult[:, None] * g
        tl.store(w_row + cols[None, :], w.to(W.dtype.element_ty), mask=ok)
    else:                                   # two passes over the row's chunks
        m = tl.load(MOM + idx * stride_m, mask=r_ok, other=0.0)
        acc = tl.zeros([BLOCK_R, BLOCK_D], dtype=tl.float32)
        for c in tl.range(0, N_CHUNKS, num_stages=NUM_STAGES):
            cc = c * BLOCK_D + cols
            if EVEN_D:
                ok = r_ok[:, None]
            else:
                ok = r_ok[:, None] & (cc < D)[None, :]
            g = tl.load(g_row + cc[None, :], mask=ok, other=0.0).to(tl.float32)
            if WD_MODE == 1:
                w = tl.load(w_row + cc[None, :], mask=ok, other=0.0).to(tl.float32)
                g = g + weight_decay * w
            acc += g * g
        m = m + tl.sum(acc, axis=1) / d_f
        tl.store(MOM + idx * stride_m, m, mask=r_ok)
        mult = (lr / (tl.sqrt(m) + eps))[:, None]
        keep = 1.0 - lr * weight_decay
        for c in tl.range(0, N_CHUNKS, num_stages=NUM_STAGES):
            cc = c * BLOCK_D + cols
            if EVEN_D:
                ok = r_ok[:, None]
            else:
                ok = r_ok[:, None] & (cc < D)[None, :]
            g = tl.load(g_row + cc[None, :], mask=ok, other=0.0, eviction_policy="evict_first").to(tl.float32)
            w = tl.load(w_row + cc[None, :], mask=ok, other=0.0).to(tl.float32)
            if WD_MODE == 1:
                g = g + weight_decay * w
            if WD_MODE == 2:
                w = w * keep
            w = w - mult * g
            tl.store(w_row + cc[None, :], w.to(W.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-31"
DTYPES = ("fp32", "fp16", "bf16")           # the table's (weight) dtype
GRAD_DTYPES = ("fp32", "fp16", "bf16")
ID_DTYPES = ("int32", "int64")
WD_MODES = (0, 1, 2)                        # FBGEMM's WeightDecayMode NONE, L2, DECOUPLE
TUNABLES = ("BLOCK_R", "D_SPLIT", "num_warps", "num_stages")
BASELINE = {"BLOCK_R": 4, "D_SPLIT": 1, "num_warps": 4, "num_stages": 1}
# the study's sweep: 4 x 3 x 3 x 2 = 72 configs. 2-16 rows a program, each row in one pass (held in
# registers) or two passes of 2 / 4 chunks, on 2-8 warps; the chunk loops prefetched (num_stages 2) or not
SWEEP_AXES = {"BLOCK_R": [2, 4, 8, 16], "D_SPLIT": [1, 2, 4], "num_warps": [2, 4, 8], "num_stages": [1, 2]}
MAX_TILE = 16384                            # elements of a program's [BLOCK_R, BLOCK_D] chunk tile
GRAD_SEED = 0x5EED                          # make_inputs' grad generator: seed + GRAD_SEED
WEIGHT_STD = 0.02                           # the table's values, N(0, WEIGHT_STD^2)
NEW_ROWS = 0.1                              # the share of rows whose momentum is still 0 (never updated)

POINTS = [
    # DLRM-DCNv2 as MLPerf Training's reference trains it (TorchRec's dlrm_main with --adagrad: its
    # EmbeddingBagCollection's fused optimizer is FBGEMM's EXACT_ROWWISE_ADAGRAD), Criteo 1TB multi-hot:
    # D 128, fp32 tables and fp32 grads, int64 ids. One of its 40M-row tables row-wise sharded over 4
    # GPUs: a 10M-row shard (5.1 GB); U 400K distinct rows a step (chosen, not measured: a quarter of the
    # 65536 x 27 lookups of the hotness-27 table, most of them distinct after hashing). 621 MB moved:
    # grad 205 MB, weight rows 410 MB read + written
    {"V": 10_000_000, "U": 400_000, "D": 128, "dtype": "fp32", "grad_dtype": "fp32", "ids": "int64",
     "wd_mode": 0, "weight_decay": 0.0, "lr": 0.01, "eps": 1e-8},
    # facebookresearch/dlrm's Criteo Terabyte configuration (dlrm_s_criteo_terabyte.sh: sparse feature size
    # 64, tables hashed to --max-ind-range 10M) with fp16 tables and fp16 grads (FBGEMM's
    # SparseType.FP16 weights, TorchRec's DataType.FP16): two of the 10M-row tables in one FBGEMM TBE
    # buffer (20M rows, 2.6 GB), int32 ids, L2 weight decay 1e-5 (WeightDecayMode.L2); U 600K distinct
    # rows a step (chosen). 128-byte rows: 238 MB moved
    {"V": 20_000_000, "U": 600_000, "D": 64, "dtype": "fp16", "grad_dtype": "fp16", "ids": "int32",
     "wd_mode": 1, "weight_decay": 1e-5, "lr": 0.01, "eps": 1e-8},
    # a YouTube-DNN-sized candidate-generation vocabulary (Covington et al., RecSys 2016: 1M videos and 1M
    # search tokens embedded in 256 floats each) as one 2M x 256 table in bf16 with fp32 grads, decoupled
    # weight decay 0.01 (WeightDecayMode.DECOUPLE); U 200K distinct rows a step (chosen: 4096 users x 50
    # watches + 50 searches, about half distinct); 1 GB table, 10 % of it touched. 413 MB moved
    {"V": 2_000_000, "U": 200_000, "D": 256, "dtype": "bf16", "grad_dtype": "fp32", "ids": "int64",
     "wd_mode": 2, "weight_decay": 0.01, "lr": 0.01, "eps": 1e-8},
]


def _torch_dtype(name: str, what: str = "dtype"):
    import torch
    try:
        return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except (KeyError, TypeError):
        raise ValueError(f"{what} {name!r} is not one of {', '.join(DTYPES)}") from None


def _id_dtype(name: str):
    import torch
    try:
        return {"int32": torch.int32, "int64": torch.int64}[name]
    except (KeyError, TypeError):
        raise ValueError(f"ids {name!r} is not one of {', '.join(ID_DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _check_hparams(lr, eps, weight_decay, wd_mode) -> None:
    if wd_mode not in WD_MODES or not _is_int(wd_mode):
        raise ValueError(f"wd_mode={wd_mode!r} must be 0 (none), 1 (L2) or 2 (decoupled)")
    for name, v in (("lr", lr), ("eps", eps), ("weight_decay", weight_decay)):
        if not _is_num(v) or not 0 <= v < float("inf"):
            raise ValueError(f"{name}={v!r} must be a finite number >= 0")


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: fp32 table and grads, int64 ids, no weight decay, lr 0.01,
    eps 1e-8)."""
    for k in ("V", "U", "D"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    if point["U"] > point["V"]:
        raise ValueError(f"U={point['U']} unique rows exceed the table's V={point['V']} rows")
    P = {"V": point["V"], "U": point["U"], "D": point["D"], "dtype": point.get("dtype", "fp32"),
         "grad_dtype": point.get("grad_dtype", "fp32"), "ids": point.get("ids", "int64"),
         "wd_mode": point.get("wd_mode", 0), "weight_decay": point.get("weight_decay", 0.0),
         "lr": point.get("lr", 0.01), "eps": point.get("eps", 1e-8)}
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {', '.join(DTYPES)}")
    if P["grad_dtype"] not in GRAD_DTYPES:
        raise ValueError(f"grad_dtype {P['grad_dtype']!r} is not one of {', '.join(GRAD_DTYPES)}")
    if P["ids"] not in ID_DTYPES:
        raise ValueError(f"ids {P['ids']!r} is not one of {', '.join(ID_DTYPES)}")
    _check_hparams(P["lr"], P["eps"], P["weight_decay"], P["wd_mode"])
    return P


def _check_cfg(cfg) -> None:
    br = cfg["BLOCK_R"]
    if not _is_int(br) or br < 1 or br > 256 or br & (br - 1):
        raise ValueError(f"BLOCK_R={br!r} must be a power of two from 1 to 256")
    ds = cfg["D_SPLIT"]
    if not _is_int(ds) or ds < 1 or ds > 64:
        raise ValueError(f"D_SPLIT={ds!r} must be an int from 1 to 64")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1 or st > 8:
        raise ValueError(f"num_stages={st!r} must be an int from 1 to 8")


def block_d(D: int, D_SPLIT: int) -> int:
    """The chunk the kernel walks a row in: next_pow2(cdiv(D, D_SPLIT)) columns (>= D: one pass)."""
    return _pow2(triton.cdiv(D, D_SPLIT))


def _plan(D: int, cfg) -> tuple[int, int]:
    """(BLOCK_D, chunks a row) of a config at the embedding dim D; the chunk tile checked."""
    _check_cfg(cfg)
    bd = block_d(D, cfg["D_SPLIT"])
    if cfg["BLOCK_R"] * bd > MAX_TILE:
        raise ValueError(f"BLOCK_R x BLOCK_D = {cfg['BLOCK_R']} x {bd} = {cfg['BLOCK_R'] * bd} elements a chunk "
                         f"(D={D}, D_SPLIT={cfg['D_SPLIT']}); at most {MAX_TILE}: raise D_SPLIT or lower BLOCK_R")
    return bd, triton.cdiv(D, bd)


def _grid(U: int, cfg) -> int:
    _check_cfg(cfg)
    return triton.cdiv(U, cfg["BLOCK_R"])


def _kernel_args(ids, grad, weight, momentum, lr, eps, weight_decay, wd_mode, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    U, D = grad.shape
    bd, _ = _plan(D, cfg)
    return dict(IDS=ids, GRAD=grad, W=weight, MOM=momentum, U=U, D=D, stride_i=ids.stride(0),
                stride_g=grad.stride(0), stride_w=weight.stride(0), stride_m=momentum.stride(0),
                lr=float(lr), eps=float(eps), weight_decay=float(weight_decay), WD_MODE=int(wd_mode),
                ONE_PASS=int(bd >= D), EVEN_D=int(D % bd == 0), N_CHUNKS=triton.cdiv(D, bd),
                BLOCK_R=cfg["BLOCK_R"], BLOCK_D=bd, NUM_STAGES=cfg["num_stages"])


def sparse_rowwise_adagrad(weight, momentum, ids, grad, lr: float = 0.01, eps: float = 1e-8,
                           weight_decay: float = 0.0, weight_decay_mode: int = 0, *, BLOCK_R: int = 4,
                           D_SPLIT: int = 1, num_warps: int = 4, num_stages: int = 1):
    """One rowwise-Adagrad step of the rows `ids` of the table `weight` [V, D] (fp32 / fp16 / bf16, unit
    column stride, any row stride) and its rowwise accumulator `momentum` [V] fp32 (any stride), both
    updated in place, from their aggregated gradient `grad` [U, D] (fp32 / fp16 / bf16; a column-strided
    grad is copied first). ids: [U] int32 / int64, distinct rows in [0, V) (trusted, not checked on the
    device). weight_decay_mode: 0 none, 1 L2 (folded into the gradient), 2 decoupled (FBGEMM's
    WeightDecayMode). Returns weight. BLOCK_R, D_SPLIT, num_warps, num_stages: the tunables (module doc)."""
    import torch
    cfg = {"BLOCK_R": BLOCK_R, "D_SPLIT": D_SPLIT, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    _check_hparams(lr, eps, weight_decay, weight_decay_mode)
    fdt = (torch.float32, torch.float16, torch.bfloat16)
    if weight.dim() != 2 or weight.dtype not in fdt:
        raise ValueError(f"weight must be a 2-d fp32 / fp16 / bf16 table [V, D]; got {tuple(weight.shape)} "
                         f"{weight.dtype}")
    V, D = weight.shape
    if momentum.dim() != 1 or momentum.shape[0] != V or momentum.dtype != torch.float32:
        raise ValueError(f"momentum must be fp32 [V={V}] (one accumulator a row); got {tuple(momentum.shape)} "
                         f"{momentum.dtype}")
    if ids.dim() != 1 or ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"ids must be a 1-d int32 / int64 tensor [U]; got {tuple(ids.shape)} {ids.dtype}")
    U = ids.shape[0]
    if grad.dim() != 2 or tuple(grad.shape) != (U, D) or grad.dtype not in fdt:
        raise ValueError(f"grad must be fp32 / fp16 / bf16 [U={U}, D={D}]; got {tuple(grad.shape)} {grad.dtype}")
    if U > V:
        raise ValueError(f"U={U} ids exceed the table's V={V} rows (the ids must be distinct)")
    if weight.stride(1) != 1 and D > 1:
        raise ValueError(f"weight must have unit column stride (it is updated in place); got strides "
                         f"{tuple(weight.stride())}")
    dev = weight.device
    for name, t in (("momentum", momentum), ("ids", ids), ("grad", grad)):
        if t.device != dev:
            raise ValueError(f"{name} must be on weight's device {dev}; got {t.device}")
    if U == 0 or D == 0:
        return weight
    _plan(D, cfg)
    if grad.stride(1) != 1 and D > 1:
        grad = grad.contiguous()
    _kernel[(_grid(U, cfg),)](**_kernel_args(ids, grad, weight, momentum, lr, eps, weight_decay,
                                             weight_decay_mode, cfg), num_warps=num_warps, num_stages=num_stages)
    return weight


# ---------------------------------------------------------------- inputs, reference, baseline
def draw_ids(V: int, U: int, gen):
    """[U] int64: U distinct rows drawn uniformly from range(V) (draws with replacement deduplicated and
    topped up, the surplus dropped at random), sorted -- deterministic for a seeded CPU generator."""
    import torch
    if U * 4 > V:                           # a dense share of the table: a permutation's prefix
        return torch.randperm(V, generator=gen)[:U].sort().values
    got = torch.empty(0, dtype=torch.int64)
    while got.numel() < U:
        need = U - got.numel()
        more = torch.randint(V, (need + need // 8 + 16,), generator=gen)
        got = torch.unique(torch.cat((got, more)))
    if got.numel() > U:
        got = got[torch.randperm(got.numel(), generator=gen)[:U]]
    return got.sort().values


@functools.lru_cache(maxsize=4)
def _ids_data(V: int, U: int, ids: str):
    """The point's ids with data, on the CPU: make_inputs' draw at seed 0 (what rank reads the gathered
    rows' addresses from)."""
    import torch
    return draw_ids(V, U, torch.Generator(device="cpu").manual_seed(0)).to(_id_dtype(ids))


def draw_tables(point, seed: int, device):
    """(weight [V, D] in the point's dtype, momentum [V] fp32) before the step, drawn on `device` from a
    generator seeded with `seed`: weight ~ N(0, WEIGHT_STD^2); momentum log-uniform in [1e-6, 1e-1] (a
    running sum of mean squared gradients), a NEW_ROWS share of the rows 0 (never updated yet).
    make_inputs and reference both call it (reference redraws the table it started from)."""
    import torch
    P = _check_point(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    V, D = P["V"], P["D"]
    weight = torch.empty((V, D), dtype=_torch_dtype(P["dtype"]), device=device).normal_(0.0, WEIGHT_STD,
                                                                                        generator=gen)
    momentum = torch.empty((V,), dtype=torch.float32, device=device).uniform_(-6.0, -1.0, generator=gen)
    momentum = torch.pow(10.0, momentum)
    fresh = torch.rand((V,), generator=gen, device=device) < NEW_ROWS
    return weight, momentum.masked_fill_(fresh, 0.0)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """ids: draw_ids on the CPU (seeded), in the point's id dtype, moved; weight / momentum: draw_tables;
    grad [U, D] in the grad dtype: N(0, 1) rows times a per-row scale log-uniform in [1e-3, 1e-1] (a hot
    row's aggregated gradient is larger), drawn on `device`; the hyperparameters; point and seed (what
    reference redraws the tables from). weight and momentum are updated in place by launch."""
    import torch
    P = _check_point(point)
    ids = draw_ids(P["V"], P["U"], torch.Generator(device="cpu").manual_seed(seed)).to(_id_dtype(P["ids"]))
    weight, momentum = draw_tables(P, seed, device)
    gen = torch.Generator(device=device).manual_seed(seed + GRAD_SEED)
    U, D = P["U"], P["D"]
    scale = torch.pow(10.0, torch.empty((U, 1), device=device).uniform_(-3.0, -1.0, generator=gen))
    grad = (torch.randn((U, D), generator=gen, device=device) * scale).to(_torch_dtype(P["grad_dtype"]))
    return {"weight": weight, "momentum": momentum, "ids": ids.to(device), "grad": grad, "lr": P["lr"],
            "eps": P["eps"], "weight_decay": P["weight_decay"], "wd_mode": P["wd_mode"], "point": P, "seed": seed}


def launch(inputs, cfg):
    """One step: inputs["weight"] and ["momentum"] updated in place (a second launch steps again);
    returns weight."""
    return sparse_rowwise_adagrad(inputs["weight"], inputs["momentum"], inputs["ids"], inputs["grad"],
                                  inputs["lr"], inputs["eps"], inputs["weight_decay"], inputs["wd_mode"],
                                  BLOCK_R=cfg["BLOCK_R"], D_SPLIT=cfg["D_SPLIT"], num_warps=cfg["num_warps"],
                                  num_stages=cfg.get("num_stages", 1))


def _step_rows(w0, m0, grad, lr, eps, weight_decay, wd_mode):
    """(new weight rows, new momenta) of rows w0 [U, D] / m0 [U] with grad [U, D], all in w0's dtype."""
    g = grad.to(w0.dtype)
    if wd_mode == 1:
        g = g + weight_decay * w0
    m = m0 + (g * g).mean(1)
    mult = lr / (m.sqrt() + eps)
    w = w0 * (1.0 - lr * weight_decay) if wd_mode == 2 else w0
    return w - mult[:, None] * g, m


def _reference_step(inputs):
    """(table, momentum) after the step, in fp64 on the CPU (fp32 on a GPU), unrounded at the updated rows:
    the tables redrawn as make_inputs drew them (inputs["point"], ["seed"]), the rows ids updated from
    inputs["grad"] with the fp32-rounded hyperparameters the launch passes."""
    import torch
    P, ids, grad = inputs["point"], inputs["ids"], inputs["grad"]
    wide = torch.float64 if grad.device.type == "cpu" else torch.float32
    w0, m0 = draw_tables(P, inputs["seed"], inputs["weight"].device)
    table = w0.to(wide)
    mom = m0.to(wide)
    del w0, m0
    r = ids.long()
    lr, eps, wd = (float(torch.tensor(inputs[k], dtype=torch.float32)) for k in ("lr", "eps", "weight_decay"))
    w, m = _step_rows(table.index_select(0, r), mom.index_select(0, r), grad, lr, eps, wd, inputs["wd_mode"])
    table.index_copy_(0, r, w)
    mom.index_copy_(0, r, m)
    return table, mom


def reference(inputs):
    """The whole table after the step, fp32 [V, D]: FBGEMM's rowwise Adagrad in fp64 on the CPU (fp32 on a
    GPU) from the table make_inputs drew (redrawn from inputs["point"] and ["seed"], so the rows the step
    must not touch are compared with what they held, without a second copy of the table kept in the
    inputs); the updated rows unrounded. Reads the inputs, never writes them."""
    return _reference_step(inputs)[0].float()


def reference_momentum(inputs):
    """The momentum after the step, [V] in fp64 (CPU) / fp32 (GPU)."""
    return _reference_step(inputs)[1]


def torch_baseline(inputs):
    """What eager PyTorch runs for it (TorchRec's RowWiseAdagrad / DGL-KE's row-wise Adagrad on the
    coalesced rows): index_select the rows and their momenta, the update in fp32 as separate kernels,
    index_copy_ both back into inputs["weight"] and ["momentum"] (in place, the new rows rounded to the
    table's dtype). Returns weight."""
    import torch
    weight, momentum, ids = inputs["weight"], inputs["momentum"], inputs["ids"].long()   # index_copy_ wants int64
    w, m = _step_rows(weight.index_select(0, ids).float(), momentum.index_select(0, ids), inputs["grad"],
                      inputs["lr"], inputs["eps"], inputs["weight_decay"], inputs["wd_mode"])
    momentum.index_copy_(0, ids, m)
    weight.index_copy_(0, ids, w.to(weight.dtype))
    return weight


# ---------------------------------------------------------------- hooks
def bytes_moved(point) -> int:
    """The ids read once; the grad rows read once (the two-pass form's second read is an L1 / L2 hit);
    the touched weight rows read and written once (D elements of the table's dtype each way); their
    momenta read and written (4 bytes each way). The rows not touched cost nothing."""
    P = _check_point(point)
    U, D = P["U"], P["D"]
    ib = 4 if P["ids"] == "int32" else 8
    return U * (ib + D * _elem_bytes(P["grad_dtype"]) + 2 * D * _elem_bytes(P["dtype"]) + 8)


def flops(point) -> int:
    """Per element: the square and its sum (2), the update's multiply and subtract (2), L2 decay's
    multiply-add (2), the decoupled decay's multiply (1). The per-row mean, sqrt and division not counted."""
    P = _check_point(point)
    return P["U"] * P["D"] * (4 + 2 * (P["wd_mode"] == 1) + (P["wd_mode"] == 2))


def grid(cfg, point) -> int:
    """cdiv(U, BLOCK_R) programs of BLOCK_R consecutive unique rows, a 1-d grid."""
    P = _check_point(point)
    _plan(P["D"], cfg)
    return _grid(P["U"], cfg)


def loop_iterations(cfg, point) -> int:
    """The chunk steps a program walks: 1 in one pass (BLOCK_D >= D); else 2 cdiv(D, BLOCK_D) (pass 1's
    chunks, then pass 2's)."""
    P = _check_point(point)
    bd, n = _plan(P["D"], cfg)
    return 1 if bd >= P["D"] else 2 * n


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`. The ids carry data: [U] on the CPU in the
    point's id dtype, make_inputs' seed-0 draw (the rows the program gathers and scatters). Every other
    tensor is on the meta device (no memory): grad [U, D] contiguous in the grad dtype, the table [V, D]
    contiguous in the point's dtype, momentum [V] fp32."""
    import torch
    P = _check_point(point)
    _plan(P["D"], cfg)
    V, U, D = P["V"], P["U"], P["D"]
    ids = _ids_data(V, U, P["ids"])
    grad = torch.empty((U, D), dtype=_torch_dtype(P["grad_dtype"], "grad_dtype"), device="meta")
    weight = torch.empty((V, D), dtype=_torch_dtype(P["dtype"]), device="meta")
    momentum = torch.empty((V,), dtype=torch.float32, device="meta")
    return _kernel_args(ids, grad, weight, momentum, P["lr"], P["eps"], P["weight_decay"], P["wd_mode"], cfg)
