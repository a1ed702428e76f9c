"""Speculative-decoding rejection sampling over a large vocabulary (vLLM's v1 RejectionSampler, random
sampling, fixed K draft tokens per request), fused into one launch: a bare @triton.jit kernel + its
launcher.

Per request b of B, K draft tokens d_0..d_{K-1} proposed by a draft model, the draft model's
distributions q_j = draft_probs[b K + j, :] and the target model's p_j = target_probs[b (K+1) + j, :]
(j = 0..K, the last one p_K the "bonus" row: the target's distribution after all K drafts):

    accept_j   = q_j[d_j] > 0  and  p_j[d_j] / q_j[d_j] >= u[b, j]       (u uniform in [0, 1))
    r          = the first j with accept_j false (K when all K are accepted)
    recovered_j = argmax_v max(p_j[v] - q_j[v], 0) / e[b, v]             (j < K)
    bonus      = argmax_v p_K[v] / e[b, v]                               (j = K: q_K taken as 0)
    out[b, j]  = d_j for j < r,  recovered_r (or bonus when r = K) at j = r,  -1 after r
    accepted[b, j] = j < r                                               (j < K; sum = tokens accepted)

The argmax of x / e over exponential noise e ~ Exp(1) is an exact sample from x / sum(x) (the
exponential race, vLLM's "q" trick: no normalization, no prefix sum), so recovered_j is a sample of
norm(max(p_j - q_j, 0)) and the bonus one of p_K. As in vLLM the noise is one [B, V] row per request
(`q = torch.empty(B, V).exponential_()` in vLLM's sample_recovered_tokens), shared by the request's
K + 1 rows: at most one of them is ever emitted (the one at r), so sharing costs no correctness and
saves K x V draws a request. The bonus token is drawn here from target_probs' bonus row with the
same race (vLLM gets it from its regular sampler); draft_probs is required (vLLM's NO_DRAFT_PROBS
variant, an n-gram / greedy draft, is not this kernel).

Work split: one program per (request, group of ROWS consecutive positions): grid (cdiv(K+1, ROWS),
B), the groups of one request adjacent in launch order (they read the same noise row, which stays
in L2). A program first gathers the request's acceptance test -- K draft ids, p_j[d_j], q_j[d_j]
and u[b, j]: 3K scalar loads, a [KP] vector (KP = K rounded up to a power of two) -- and reduces
it to r (every program of the request does it again; it is K gathers beside a scan of V). Then it
walks V in chunks of BLOCK_V columns: one step loads a [ROWS, BLOCK_V] tile of target_probs, the
same tile of draft_probs (0 for the bonus row), and the request's noise chunk through a [ROWS,
BLOCK_V] tile of pointers whose rows all point at the one noise row (the three loads then share
one layout; a [BLOCK_V] load gets a coalesced 1-D layout of its own, converted through shared
memory to the tile's every step; the repeated rows are served by L1, DRAM / L2 see the chunk once
for the ROWS rows), forms max(p - q, 0) / e (IEEE division, `div_rn`, so the scores are torch's bit
for bit) and reduces each row to its chunk maximum and its first index (tl.max with
return_indices), kept with a strict > against the running best: the first maximal index over V,
torch.argmax's tie rule. Last, each row's output: the draft id,
the sampled token or -1, and its accept flag. Like vLLM, every row is scanned eagerly, whether or
not its sample is emitted (the launch's time does not depend on the acceptance pattern; a lazy
variant would mask off the loads of every row but r's: K + 1 x less traffic, time varying with
acceptance and only B programs doing real work).

Masks: vocab columns past V (EVEN_V = V % BLOCK_V == 0, a constexpr the launcher sets, drops
them): target / draft load 0 there and the noise 1, so a padded column scores 0 and, at a higher
index than any real column (all of which score >= 0), never wins; rows past K in the request's
last group (ROWS not dividing K + 1): their loads masked off, nothing stored; the bonus row's draft
tile (no draft row: masked to 0). Offsets: row offsets int64 (rows x row stride), vocab offsets
int32. Inputs: fp32 probabilities and noise with unit column stride and any row stride (a pitched
or sliced buffer is read in place); draft ids int32 or int64 [B, K] (any strides), each in [0, V)
(not checked: that would synchronize the host); uniform fp32 [B, K].

Tunables: BLOCK_V (vocab columns a step), ROWS (positions of one request a program: the noise chunk
fetched once for ROWS rows, the acceptance gathers done once for them and ROWS x more bytes in
flight a step, but cdiv(K+1, ROWS) x B programs -- 96-2304 at the points, against the H200's 132
SMs -- and a padded last group when ROWS does not divide K + 1), num_warps; num_stages (no dot: the
loop's loads are not pipelined) held at 1. The study's sweep keeps a step at 0.5-64 fp32 elements a
tile a thread (ROWS x BLOCK_V / (32 num_warps)): 4 x 4096 on 4 warps (128) took all 255 registers
and spilled under triton 3.6.
Problem parameters (a workload point): B, K, V, ids ("int32" / "int64": the draft ids' dtype), dtype
("fp32": the probabilities', the only one).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(DRAFT_IDS, DRAFT_P, TARGET_P, UNIF, NOISE, OUT, ACC,
            K, V, stride_ib, stride_ik, stride_d, stride_t, stride_ub, stride_uk, stride_e,
            KP: tl.constexpr, ROWS: tl.constexpr, BLOCK_V: tl.constexpr, EVEN_V: tl.constexpr):
    pid_g = tl.program_id(0)
    b = tl.program_id(1)
    b64 = b.to(tl.int64)

    # the request's acceptance test, all K positions: r = the first rejected one (K: none)
    ki = tl.arange(0, KP)
    k_ok = ki < K
    dtok = tl.load(DRAFT_IDS + b64 * stride_ib + ki * stride_ik, mask=k_ok, other=0)
    tp = tl.load(TARGET_P + (b64 * (K + 1) + ki) * stride_t + dtok, mask=k_ok, other=0.0)
    dp = tl.load(DRAFT_P + (b64 * K + ki) * stride_d + dtok, mask=k_ok, other=0.0)
    u = tl.load(UNIF + b64 * stride_ub + ki * stride_uk, mask=k_ok, other=1.0)
    ok = (dp > 0.0) & (tl.math.div_rn(tp, dp) >= u)
    r = tl.min(tl.where(ok, K, ki), axis=0)                   # lanes past K: ki >= K

    # this program's rows: positions j of request b (j == K the bonus row, no draft row)
    j = pid_g * ROWS + tl.arange(0, ROWS)
    has_t = j <= K
    has_d = j < K
    t_rows = TARGET_P + (b64 * (K + 1) + j) * stride_t          # [ROWS] int64 row offsets
    d_rows = DRAFT_P + (b64 * K + j) * stride_d
    e_rows = NOISE + b64 * stride_e + tl.zeros([ROWS, 1], tl.int32)   # [ROWS, 1]: the same noise row
    t_ok = has_t[:, None]
    d_ok = has_d[:, None]

    cols = tl.arange(0, BLOCK_V)
    best_v = tl.full([ROWS], -1.0, tl.float32)
    best_i = tl.zeros([ROWS], tl.int32)
    for v0 in range(0, V, BLOCK_V):
        v = v0 + cols
        if EVEN_V:
            pt = tl.load(t_rows[:, None] + v[None, :], mask=t_ok, other=0.0)
            pd = tl.load(d_rows[:, None] + v[None, :], mask=d_ok, other=0.0)
            e = tl.load(e_rows + v[None, :])
        else:
            v_ok = v < V
            pt = tl.load(t_rows[:, None] + v[None, :], mask=t_ok & v_ok[None, :], other=0.0)
            pd = tl.load(d_rows[:, None] + v[None, :], mask=d_ok & v_ok[None, :], other=0.0)
            e = tl.load(e_rows + v[None, :], mask=v_ok[None, :], other=1.0)
        score = tl.math.div_rn(tl.maximum(pt - pd, 0.0), e)
        c_max, c_arg = tl.max(score, axis=1, return_indices=True)
        better = c_max > best_v
        best_v = tl.where(better, c_max, best_v)
        best_i = tl.where(better, v0 + c_arg, best_i)

    # outputs: the draft id before r, the sample at r, -1 after it
    dj = tl.load(DRAFT_IDS + b64 * stride_ib + j * stride_ik, mask=has_d, other=0).to(tl.int32)
    tok = tl.where(j < r, dj, tl.where(j == r, best_i, -1))
    tl.store(OUT + b64 * (K + 1) + j, tok, mask=has_t)                  # OUT [B, K+1], ACC [B, K]: contiguous
    tl.store(ACC + b64 * K + j, j < r, mask=has_d)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-25"
DTYPES = ("fp32",)          # the probabilities and noise (the tokens are int32)
IDS = ("int32", "int64")
TUNABLES = ("BLOCK_V", "ROWS", "num_warps", "num_stages")
BASELINE = {"BLOCK_V": 2048, "ROWS": 1, "num_warps": 8, "num_stages": 1}
# the study's sweep: 4 x 3 x 3 = 36 configs (tiles of 256-8192 elements, 0.5-64 a thread a tile)
SWEEP_AXES = {"BLOCK_V": [256, 512, 1024, 2048], "ROWS": [1, 2, 4], "num_warps": [4, 8, 16], "num_stages": [1]}

# Three serving setups, 0.33-0.59 GB of traffic each (every probability row read once: 7-12x the
# H200's 50 MB L2), HBM-bound at roughly 80-150 us on an H200. They differ in the vocabulary (128256,
# 151936, 32000: never a multiple of BLOCK_V >= 512), K (4 / 5 / 8: K + 1 = 5, 6, 9 rows a request,
# which ROWS 2 and 4 divide or pad differently), the batch (48-256 requests: 96-2304 programs) and
# the draft ids' dtype.
POINTS = [
    # Llama-3.1-8B-Instruct target, Llama-3.2-1B-Instruct draft (vocab 128256), K = 4, batch 64:
    # target 320 rows, draft 256, noise 64 of 513 KB: 328 MB
    {"B": 64, "K": 4, "V": 128256, "ids": "int32", "dtype": "fp32"},
    # Qwen2.5-3B-Instruct target, Qwen2.5-0.5B-Instruct draft (vocab 151936), K = 5, batch 48, int64 ids:
    # target 288 rows, draft 240, noise 48 of 608 KB: 350 MB
    {"B": 48, "K": 5, "V": 151936, "ids": "int64", "dtype": "fp32"},
    # EAGLE (chain drafts) on Vicuna-7B-v1.3 (LLaMA vocab 32000), K = 8, batch 256: target 2304 rows,
    # draft 2048, noise 256 of 128 KB: 590 MB
    {"B": 256, "K": 8, "V": 32000, "ids": "int32", "dtype": "fp32"},
]


def _pos_int(name: str, v) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{name}={v!r} must be a positive int")
    return v


def _check_point(point) -> tuple[int, int, int]:
    """(B, K, V), every field checked."""
    B, K, V = (_pos_int(k, point[k]) for k in ("B", "K", "V"))
    dtype = point.get("dtype", "fp32")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    ids = point.get("ids", "int32")
    if ids not in IDS:
        raise ValueError(f"ids {ids!r} is not one of {', '.join(IDS)}")
    return B, K, V


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_V", "ROWS", "num_warps"):
        v = cfg[k]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two")
    if cfg["BLOCK_V"] < 16:
        raise ValueError(f"BLOCK_V={cfg['BLOCK_V']} must be at least 16")


def _grid(B: int, K: int, cfg) -> tuple[int, int]:
    _check_cfg(cfg)
    return (triton.cdiv(K + 1, cfg["ROWS"]), B)


def _kernel_args(ids, draft_probs, target_probs, uniform, noise, out, acc, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, K = ids.shape
    V = target_probs.shape[1]
    return dict(DRAFT_IDS=ids, DRAFT_P=draft_probs, TARGET_P=target_probs, UNIF=uniform, NOISE=noise, OUT=out,
                ACC=acc, K=K, V=V, stride_ib=ids.stride(0), stride_ik=ids.stride(1), stride_d=draft_probs.stride(0),
                stride_t=target_probs.stride(0), stride_ub=uniform.stride(0), stride_uk=uniform.stride(1),
                stride_e=noise.stride(0), KP=triton.next_power_of_2(K), ROWS=cfg["ROWS"], BLOCK_V=cfg["BLOCK_V"],
                EVEN_V=int(V % cfg["BLOCK_V"] == 0))


def rejection_sample(draft_token_ids, draft_probs, target_probs, uniform, noise, *, BLOCK_V: int = 2048,
                     ROWS: int = 1, num_warps: int = 8, num_stages: int = 1):
    """Speculative decoding's rejection sampling for B requests of K draft tokens each.

    draft_token_ids [B, K] int32 / int64 (each in [0, V)); draft_probs [B K, V] and target_probs
    [B (K+1), V] fp32 (row b K + j / b (K+1) + j: request b, position j; target's row K of a request
    the bonus row), unit column stride, any row stride; uniform [B, K] fp32 (acceptance draws);
    noise [B, V] fp32 Exp(1) draws (one row a request, shared by its positions), unit column stride.
    Returns (output_token_ids [B, K+1] int32: the accepted drafts, then the recovered (or bonus)
    token, then -1; accepted [B, K] bool: which drafts were accepted, a prefix of each row)."""
    import torch
    cfg = {"BLOCK_V": BLOCK_V, "ROWS": ROWS, "num_warps": num_warps}
    _check_cfg(cfg)
    ids = draft_token_ids
    if ids.dim() != 2 or ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"draft_token_ids must be int32 / int64 [B, K]; got {ids.dtype} {tuple(ids.shape)}")
    B, K = ids.shape
    if B < 1 or K < 1:
        raise ValueError(f"draft_token_ids [B, K] needs B, K >= 1; got {tuple(ids.shape)}")
    if target_probs.dim() != 2 or target_probs.shape[0] != B * (K + 1) or target_probs.shape[1] < 1:
        raise ValueError(f"target_probs must be [B*(K+1)={B * (K + 1)}, V]; got {tuple(target_probs.shape)}")
    V = target_probs.shape[1]
    want = {"draft_probs": (draft_probs, (B * K, V)), "target_probs": (target_probs, (B * (K + 1), V)),
            "uniform": (uniform, (B, K)), "noise": (noise, (B, V))}
    for name, (t, shape) in want.items():
        if tuple(t.shape) != shape:
            raise ValueError(f"{name} must be {list(shape)}; got {tuple(t.shape)}")
        if t.dtype != torch.float32:
            raise ValueError(f"{name} must be float32; got {t.dtype}")
        if t.device != ids.device:
            raise ValueError(f"{name} is on {t.device}, draft_token_ids on {ids.device}")
        if name != "uniform" and V > 1 and t.stride(1) != 1:
            raise ValueError(f"{name} must have unit column stride; got strides {t.stride()}")
    if V + BLOCK_V >= 2**31:
        raise ValueError(f"V={V} exceeds the kernel's int32 vocab offsets")
    out = torch.empty((B, K + 1), dtype=torch.int32, device=ids.device)
    acc = torch.empty((B, K), dtype=torch.bool, device=ids.device)
    _kernel[_grid(B, K, cfg)](**_kernel_args(ids, draft_probs, target_probs, uniform, noise, out, acc, cfg),
                              num_warps=num_warps, num_stages=num_stages)
    return out, acc


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """A speculative step as a serving engine sees it, drawn on the CPU from a seeded torch.Generator
    and moved: target logits N(0, 2^2) a row, the draft's the target's plus N(0, 1) (a draft that
    roughly agrees: 50-70 % of drafts accepted), both softmaxed in fp32; each draft token sampled from
    its draft row (the exponential race); uniform [B, K]; Exp(1) noise [B, V] (clamped away from 0)."""
    import torch
    B, K, V = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    t_logits = torch.randn((B, K + 1, V), generator=gen) * 2.0
    d_logits = t_logits[:, :K] + torch.randn((B, K, V), generator=gen)
    target = torch.softmax(t_logits, dim=-1).reshape(B * (K + 1), V)
    del t_logits
    draft = torch.softmax(d_logits, dim=-1).reshape(B * K, V)
    del d_logits
    race = torch.empty((B * K, V)).exponential_(generator=gen)
    ids = (draft / race).argmax(dim=-1).reshape(B, K)
    del race
    uniform = torch.rand((B, K), generator=gen)
    noise = torch.empty((B, V)).exponential_(generator=gen).clamp_min_(1e-20)
    idt = torch.int64 if point.get("ids", "int32") == "int64" else torch.int32
    return {"draft_token_ids": ids.to(idt).to(device), "draft_probs": draft.to(device),
            "target_probs": target.to(device), "uniform": uniform.to(device), "noise": noise.to(device)}


def _run(inputs, cfg):
    return rejection_sample(inputs["draft_token_ids"], inputs["draft_probs"], inputs["target_probs"],
                            inputs["uniform"], inputs["noise"], BLOCK_V=cfg["BLOCK_V"], ROWS=cfg["ROWS"],
                            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def launch(inputs, cfg):
    """output_token_ids [B, K+1] int32; accepted, the other output, is checked by the tests
    (tests/test_examples_round25_c.py) against torch_rejection_sample's."""
    return _run(inputs, cfg)[0]


def torch_rejection_sample(inputs):
    """The same sampling in eager torch (the [B, K, V] recovered scores materialized): (output_token_ids
    [B, K+1] int32, accepted [B, K] bool). Its scores are the kernel's bit for bit (fp32 subtract,
    clamp, IEEE divide), and torch.argmax takes the first maximal index, as the kernel does."""
    import torch
    ids = inputs["draft_token_ids"].long()
    B, K = ids.shape
    tp = inputs["target_probs"]
    V = tp.shape[1]
    t3 = tp.reshape(B, K + 1, V)
    d3 = inputs["draft_probs"].reshape(B, K, V)
    e = inputs["noise"]
    t_d = t3[:, :K].gather(2, ids[..., None])[..., 0]
    d_d = d3.gather(2, ids[..., None])[..., 0]
    ok = (d_d > 0) & (t_d / d_d >= inputs["uniform"])
    pos = torch.arange(K + 1, device=ids.device)
    r = torch.where(ok, K, pos[None, :K]).amin(dim=1, keepdim=True)              # [B, 1]
    recovered = (torch.clamp_min(t3[:, :K] - d3, 0.0) / e[:, None, :]).argmax(dim=-1)
    bonus = (t3[:, K] / e).argmax(dim=-1, keepdim=True)
    sampled = torch.cat([recovered, bonus], dim=1)
    drafts = torch.cat([ids, torch.zeros_like(ids[:, :1])], dim=1)
    out = torch.where(pos < r, drafts, torch.where(pos == r, sampled, torch.full_like(sampled, -1)))
    return out.to(torch.int32), pos[None, :K] < r


def reference(inputs):
    """fp32 token ids (exact integers) of torch_rejection_sample."""
    return torch_rejection_sample(inputs)[0].float()


def torch_baseline(inputs):
    """What eager torch runs: torch_rejection_sample's output_token_ids (int32)."""
    return torch_rejection_sample(inputs)[0]


def bytes_moved(point) -> int:
    """Every row of target_probs and draft_probs read once, each request's noise row once (its
    groups share it through L2); the ids, uniforms and outputs."""
    B, K, V = _check_point(point)
    ib = 8 if point.get("ids", "int32") == "int64" else 4
    return 4 * V * (B * (K + 1) + B * K + B) + B * K * (ib + 4 + 1) + B * (K + 1) * 4


def flops(point) -> int:
    """Per target element: subtract, clamp, divide, compare (the running argmax)."""
    B, K, V = _check_point(point)
    return 4 * B * (K + 1) * V


def grid(cfg, point) -> tuple[int, int]:
    """(position groups of a request, requests): the launch grid, a request's groups adjacent."""
    B, K, _ = _check_point(point)
    return _grid(B, K, cfg)


def loop_iterations(cfg, point) -> int:
    """BLOCK_V steps a program: the whole vocabulary."""
    _, _, V = _check_point(point)
    _check_cfg(cfg)
    return triton.cdiv(V, cfg["BLOCK_V"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): every
    tensor contiguous, ids in the point's dtype."""
    import torch
    B, K, V = _check_point(point)
    _check_cfg(cfg)
    idt = torch.int64 if point.get("ids", "int32") == "int64" else torch.int32

    def meta(shape, dt=torch.float32):
        return torch.empty(shape, dtype=dt, device="meta")

    return _kernel_args(meta((B, K), idt), meta((B * K, V)), meta((B * (K + 1), V)), meta((B, K)), meta((B, V)),
                        meta((B, K + 1), torch.int32), meta((B, K), torch.bool), cfg)
