"""An LLM sampler's repetition / frequency / presence penalties, applied in place to a batch of
logits rows (vLLM's `apply_penalties` semantics), two bare @triton.jit kernels + their launcher.

For each sequence b of the batch (row b of logits [B, V]):

    count[b, t]  = occurrences of token t in b's generated output tokens
    prompt[b, t] = token t occurs in b's prompt tokens
    seen         = prompt[b, t] or count[b, t] > 0
    x = logits[b, t]
    x = (x / rep[b] if x > 0 else x * rep[b])   if seen          (repetition, first, as vLLM)
    x = x - freq[b] * count[b, t] - pres[b] * (count[b, t] > 0)  (frequency, then presence)
    logits[b, t] = x                             (computed in fp32, one rounding to the logits' dtype)

Layouts: logits [B, V] fp32 / bf16 / fp16, unit stride along V, any row stride (written in place);
the token lists ragged and packed (varlen, as cu_seqlens): output_tokens [N_out] int32 / int64
with output_offsets [B + 1] int32 / int64 (sequence b's tokens are output_tokens[off[b]:off[b+1]]),
prompt_tokens / prompt_offsets likewise; presence / frequency / repetition penalties [B] fp32
(rep > 0). An id outside [0, V) is skipped (vLLM pads its [B, L] lists with V: a padded list
flattened with offsets b * L works as is). A row whose penalties are all neutral (rep 1, freq 0,
pres 0: the requests that set none) is skipped by both kernels.

Two kernels, one workspace: ws [B, V] int32 (a sequence's output count in bits 0-29, bit 30 =
"in its prompt"), all-zero before and after every launch.
  1. `_scatter_kernel` (secondary): grid (B, cdiv(max_out, BLOCK_T) + cdiv(max_prompt, BLOCK_T)),
     one CTA per BLOCK_T tokens of one sequence's output list (atomic_add 1 per token) or prompt
     list (atomic_or of bit 30), relaxed fire-and-forget atomics (integer: exact whatever their
     order, duplicates counted); a CTA past its sequence's end or of a neutral row returns at once.
  2. `_kernel` (main: the dense pass, most of the time): grid (cdiv(V, BLOCK_V * TILES_PER_CTA), B),
     a CTA per chunk of TILES_PER_CTA consecutive BLOCK_V-column tiles of one row, walked in a
     tl.range(num_stages=LOOP_STAGES) loop (1 = plain loads, >= 2 = the next workspace tiles copied
     ahead with cp.async). Per tile: the ws words are read densely; the logits are read and written
     back, and ws cleared to 0, only where the word is non-zero (masked loads / stores: the bytes
     of untouched sectors never move). So the pass streams 4 B a column of ws plus the touched
     entries, not the logits row.
Who clears the workspace: `_kernel`, as it consumes it (every non-zero word it reads it stores back
as 0; the scatter only writes words of non-neutral rows, which `_kernel` reads). A caller keeps one
zeroed buffer (torch.zeros once, e.g. for the largest batch: CUDA-graph friendly, no memset a step)
and passes it as `workspace`; without one the launcher allocates a zeroed one per call. A launch
that did not finish leaves it dirty: re-zero it then.

Tunables (the main kernel's): BLOCK_V (power of two >= 128, columns a tile), TILES_PER_CTA (>= 1,
tiles a CTA walks: the chunking knob, fewer / longer CTAs), LOOP_STAGES (>= 1, the walk's software
pipelining), num_warps, num_stages (the launch's: no dot, so it changes nothing in the cubin).
The scatter's BLOCK_T / warps are launcher keywords (SCATTER_BLOCK_T, SCATTER_WARPS by default),
not swept.
Problem parameters (a workload point): B, V, dtype (of logits: "fp32", "bf16", "fp16"), ids
(token id dtype "int32" / "int64"), out_min / out_max and prompt_min / prompt_max (each sequence's
output and prompt lengths uniform in those ranges), neutral (the fraction of sequences without
penalties). Token ids follow a Zipf-Mandelbrot law over a random permutation of the vocabulary
(text repeats its frequent tokens: duplicates in every list).
"""

from __future__ import annotations

import triton
import triton.language as tl

DTYPES = ("fp32", "bf16", "fp16")
IDS = ("int32", "int64")
SCATTER_BLOCK_T = 1024       # tokens a scatter CTA
SCATTER_WARPS = 4
MAX_GRID_Y = 65535           # CUDA's limit on grid y: B for `_kernel`, token chunks for the scatter
_PROMPT_BIT = tl.constexpr(1 << 30)
_COUNT_MASK = tl.constexpr((1 << 30) - 1)
ZIPF_S = 1.07                # Zipf-Mandelbrot exponent / offset of make_inputs' token law
ZIPF_Q = 2.7


@triton.jit
def _scatter_kernel(WS, OUT_TOK, OUT_OFF, PROMPT_TOK, PROMPT_OFF, PRES, FREQ, REP, V, n_out_chunks,
                    BLOCK_T: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1)
    rep = tl.load(REP + row)
    freq = tl.load(FREQ + row)
    pres = tl.load(PRES + row)
    if (rep == 1.0) & (freq == 0.0) & (pres == 0.0):
        return
    ws_row = WS + row.to(tl.int64) * V
    offs = tl.arange(0, BLOCK_T)
    if c < n_out_chunks:
        lo = tl.load(OUT_OFF + row).to(tl.int64)
        hi = tl.load(OUT_OFF + row + 1).to(tl.int64)
        idx = lo + c.to(tl.int64) * BLOCK_T + offs
        m = idx < hi
        tok = tl.load(OUT_TOK + idx, mask=m, other=-1)
        ok = m & (tok >= 0) & (tok < V)
        tl.atomic_add(ws_row + tok, 1, mask=ok, sem="relaxed")
    else:
        lo = tl.load(PROMPT_OFF + row).to(tl.int64)
        hi = tl.load(PROMPT_OFF + row + 1).to(tl.int64)
        idx = lo + (c - n_out_chunks).to(tl.int64) * BLOCK_T + offs
        m = idx < hi
        tok = tl.load(PROMPT_TOK + idx, mask=m, other=-1)
        ok = m & (tok >= 0) & (tok < V)
        tl.atomic_or(ws_row + tok, _PROMPT_BIT, mask=ok, sem="relaxed")


@triton.jit
def _kernel(LOGITS, WS, PRES, FREQ, REP, V, stride_l,
            BLOCK_V: tl.constexpr, TILES_PER_CTA: tl.constexpr, LOOP_STAGES: tl.constexpr):
    chunk = tl.program_id(0)
    row = tl.program_id(1)
    rep = tl.load(REP + row)
    freq = tl.load(FREQ + row)
    pres = tl.load(PRES + row)
    if (rep == 1.0) & (freq == 0.0) & (pres == 0.0):
        return
    l_row = LOGITS + row.to(tl.int64) * stride_l
    w_row = WS + row.to(tl.int64) * V
    start = chunk * (BLOCK_V * TILES_PER_CTA)
    n_tiles = tl.minimum(TILES_PER_CTA, tl.cdiv(V - start, BLOCK_V))
    offs = tl.arange(0, BLOCK_V)
    for t in tl.range(0, n_tiles, num_stages=LOOP_STAGES):
        cols = start + t * BLOCK_V + offs
        w = tl.load(w_row + cols, mask=cols < V, other=0)
        hit = w != 0                                 # in the prompt or the output (implies cols < V)
        x = tl.load(l_row + cols, mask=hit, other=0.0).to(tl.float32)
        cnt = w & _COUNT_MASK
        x = tl.where(x > 0, x / rep, x * rep)
        x = x - freq * cnt.to(tl.float32)
        x = x - tl.where(cnt > 0, pres, 0.0)
        tl.store(l_row + cols, x.to(LOGITS.dtype.element_ty), mask=hit)
        tl.store(w_row + cols, tl.zeros_like(w), mask=hit)      # leave the workspace all-zero


# ---------------------------------------------------------------- launcher
TUNABLES = ("BLOCK_V", "TILES_PER_CTA", "LOOP_STAGES", "num_warps", "num_stages")
BASELINE = {"BLOCK_V": 2048, "TILES_PER_CTA": 4, "LOOP_STAGES": 2, "num_warps": 8, "num_stages": 1}

# Sampling steps of real deployments (vLLM pads nothing here: packed lists with offsets).
POINTS = [
    # Llama-3 (vocab 128256) decode batch of 256 requests, fp32 logits (vLLM samples in fp32),
    # outputs 500-4000 tokens, prompts 1-8k, a quarter of the requests without penalties;
    # int64 ids (vLLM's dtype): at seed 0, 185 penalized rows, 1.2M tokens scattered, 95 MB of workspace streamed
    {"B": 256, "V": 128256, "dtype": "fp32", "ids": "int64", "out_min": 500, "out_max": 4000,
     "prompt_min": 1000, "prompt_max": 8000, "neutral": 0.25},
    # Qwen2.5 (vocab 151936) reasoning batch: 32 long generations (12-20k output tokens, prompts
    # 0.5-4k), bf16 logits, every request penalized: few rows, so the chunking decides the CTAs
    {"B": 32, "V": 151936, "dtype": "bf16", "ids": "int32", "out_min": 12000, "out_max": 20000,
     "prompt_min": 500, "prompt_max": 4000, "neutral": 0.0},
    # a 32000-vocabulary model (Llama-2 / Mistral) serving 1024 short chats: outputs 16-512,
    # prompts 32-2048, half the requests without penalties (their CTAs return at once)
    {"B": 1024, "V": 32000, "dtype": "fp32", "ids": "int32", "out_min": 16, "out_max": 512,
     "prompt_min": 32, "prompt_max": 2048, "neutral": 0.5},
]


def _torch_dtype(name: str):
    import torch
    table = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    if name not in table:
        raise ValueError(f"dtype {name!r} must be one of {', '.join(DTYPES)}")
    return table[name]


def _ids_dtype(name: str):
    import torch
    if name not in IDS:
        raise ValueError(f"ids {name!r} must be one of {', '.join(IDS)}")
    return torch.int32 if name == "int32" else torch.int64


def _check_cfg(cfg) -> None:
    v = cfg["BLOCK_V"]
    if v < 128 or v & (v - 1):
        raise ValueError(f"BLOCK_V={v} must be a power of two >= 128")
    if cfg["TILES_PER_CTA"] < 1:
        raise ValueError(f"TILES_PER_CTA={cfg['TILES_PER_CTA']} must be >= 1")
    if cfg.get("LOOP_STAGES", 1) < 1:
        raise ValueError(f"LOOP_STAGES={cfg['LOOP_STAGES']} must be >= 1")


def _chunks(cfg, V: int) -> int:
    return triton.cdiv(V, cfg["BLOCK_V"] * cfg["TILES_PER_CTA"])


def _kernel_args(logits, ws, pres, freq, rep, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(LOGITS=logits, WS=ws, PRES=pres, FREQ=freq, REP=rep, V=logits.shape[1], stride_l=logits.stride(0),
                BLOCK_V=cfg["BLOCK_V"], TILES_PER_CTA=cfg["TILES_PER_CTA"], LOOP_STAGES=cfg["LOOP_STAGES"])


def _scatter_args(ws, out_tok, out_off, prompt_tok, prompt_off, pres, freq, rep, V, n_out_chunks, block_t) -> dict:
    return dict(WS=ws, OUT_TOK=out_tok, OUT_OFF=out_off, PROMPT_TOK=prompt_tok, PROMPT_OFF=prompt_off, PRES=pres,
                FREQ=freq, REP=rep, V=V, n_out_chunks=n_out_chunks, BLOCK_T=block_t)


def _check_list(name, tokens, offsets, B, device):
    import torch
    if tokens.dim() != 1 or tokens.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"{name}_tokens must be a 1-D int32 / int64 tensor (packed); got {tokens.dtype} "
                         f"{tuple(tokens.shape)}")
    if offsets.dim() != 1 or offsets.numel() != B + 1 or offsets.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"{name}_offsets must be {B + 1} int32 / int64 values (B + 1); got {offsets.dtype} "
                         f"{tuple(offsets.shape)}")
    if tokens.device != device or offsets.device != device:
        raise ValueError(f"{name}_tokens / {name}_offsets must be on the logits' device {device}")
    return tokens.contiguous(), offsets.contiguous()


def _max_len(name, offsets, given) -> int:
    """The longest list: the caller's (no sync), else from the offsets (one device sync)."""
    import torch
    if given is None:
        if offsets.numel() < 2:
            return 0
        d = offsets[1:] - offsets[:-1]
        lo, hi = (int(v) for v in torch.stack([d.min(), d.max()]).tolist())
        if lo < 0:
            raise ValueError(f"{name}_offsets must be non-decreasing")
        given = hi
    if given < 0 or given >= 1 << 30:
        raise ValueError(f"max_{name}_len={given} must be in [0, 2**30)")
    return int(given)


def logits_penalty(logits, output_tokens, output_offsets, prompt_tokens, prompt_offsets, presence_penalties,
                   frequency_penalties, repetition_penalties, *, max_output_len=None, max_prompt_len=None,
                   workspace=None, BLOCK_V: int = 2048, TILES_PER_CTA: int = 4, LOOP_STAGES: int = 2,
                   num_warps: int = 8, num_stages: int = 1, BLOCK_T: int = SCATTER_BLOCK_T,
                   scatter_warps: int = SCATTER_WARPS):
    """Applies the penalties to logits [B, V] (fp32 / bf16 / fp16, unit column stride) in place and
    returns it. Token lists packed with offsets ([B + 1], non-decreasing); max_*_len (the longest
    list, as flash-attention's max_seqlen) avoid a device sync when given. `workspace`: an all-zero
    int32 buffer of >= B * V elements (contiguous), left all-zero again; None allocates one."""
    import torch
    if logits.dim() != 2 or logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"logits must be a 2-D fp32 / bf16 / fp16 tensor; got {logits.dtype} {tuple(logits.shape)}")
    B, V = logits.shape
    if logits.stride(1) != 1 and V > 1:
        raise ValueError(f"logits must have unit column stride (written in place); strides {logits.stride()}")
    if V >= 1 << 31 or B > MAX_GRID_Y:
        raise ValueError(f"[B, V] = [{B}, {V}]: B must be <= {MAX_GRID_Y} and V < 2**31")
    dev = logits.device
    out_tok, out_off = _check_list("output", output_tokens, output_offsets, B, dev)
    pr_tok, pr_off = _check_list("prompt", prompt_tokens, prompt_offsets, B, dev)
    pens = []
    for name, p in (("presence", presence_penalties), ("frequency", frequency_penalties),
                    ("repetition", repetition_penalties)):
        if not isinstance(p, torch.Tensor) or p.numel() != B or not p.is_floating_point() or p.device != dev:
            raise ValueError(f"{name}_penalties must be a float tensor of {B} values on {dev}; got "
                             f"{getattr(p, 'dtype', type(p).__name__)} {tuple(getattr(p, 'shape', ()))}")
        pens.append(p.reshape(-1).to(torch.float32).contiguous())
    pres, freq, rep = pens
    cfg = {"BLOCK_V": BLOCK_V, "TILES_PER_CTA": TILES_PER_CTA, "LOOP_STAGES": LOOP_STAGES}
    _check_cfg(cfg)
    if BLOCK_T < 16 or BLOCK_T & (BLOCK_T - 1):
        raise ValueError(f"BLOCK_T={BLOCK_T} must be a power of two >= 16")
    if workspace is None:
        workspace = torch.zeros((B, V), dtype=torch.int32, device=dev)
    elif workspace.dtype != torch.int32 or not workspace.is_contiguous() or workspace.numel() < B * V \
            or workspace.device != dev:
        raise ValueError(f"workspace must be a contiguous int32 tensor of >= {B * V} elements on {dev} (all "
                         f"zero); got {workspace.dtype} {tuple(workspace.shape)} on {workspace.device}")
    ws = workspace.reshape(-1)[:B * V].view(B, V)
    n_out = triton.cdiv(_max_len("output", out_off, max_output_len), BLOCK_T)
    n_prompt = triton.cdiv(_max_len("prompt", pr_off, max_prompt_len), BLOCK_T)
    if n_out + n_prompt > MAX_GRID_Y:
        raise ValueError(f"token lists too long for BLOCK_T={BLOCK_T}: {n_out + n_prompt} chunks > {MAX_GRID_Y}")
    if B == 0 or V == 0 or n_out + n_prompt == 0:
        return logits                      # nothing seen: every logit unchanged
    _scatter_kernel[(B, n_out + n_prompt)](
        **_scatter_args(ws, out_tok, out_off, pr_tok, pr_off, pres, freq, rep, V, n_out, BLOCK_T),
        num_warps=scatter_warps, num_stages=1)
    _kernel[(_chunks(cfg, V), B)](**_kernel_args(logits, ws, pres, freq, rep, cfg), num_warps=num_warps,
                                  num_stages=num_stages)
    return logits


# ---------------------------------------------------------------- workload
def _penalties(point, gen):
    """Per sequence (pres, freq, rep) fp32 [B] each: a `neutral` fraction sets none; the others set
    each of the three with probability 0.8 (rep 1.05-1.5, freq 0.1-1.0, pres 0.1-1.5)."""
    import torch
    B = point["B"]
    nf = point.get("neutral", 0.0)
    if not 0.0 <= nf <= 1.0:
        raise ValueError(f"neutral={nf} must be in [0, 1]")
    active = torch.rand((B,), generator=gen) >= nf
    u = torch.rand((3, B), generator=gen)
    on = (torch.rand((3, B), generator=gen) < 0.8) & active
    pres = torch.where(on[0], 0.1 + 1.4 * u[0], torch.zeros(B))
    freq = torch.where(on[1], 0.1 + 0.9 * u[1], torch.zeros(B))
    rep = torch.where(on[2], 1.05 + 0.45 * u[2], torch.ones(B))
    return pres.float(), freq.float(), rep.float()


def _lengths(point, key, gen):
    import torch
    lo, hi = point[f"{key}_min"], point[f"{key}_max"]
    if not 0 <= lo <= hi:
        raise ValueError(f"{key}_min / {key}_max = {lo} / {hi} must satisfy 0 <= min <= max")
    return torch.randint(lo, hi + 1, (point["B"],), generator=gen)


def _zipf_ids(n, V, perm, gen):
    """n token ids: ranks from a Zipf-Mandelbrot law (p(r) ~ (r + q)^-s), mapped through perm."""
    import torch
    r = torch.arange(V, dtype=torch.float64)
    cdf = torch.cumsum((r + ZIPF_Q) ** -ZIPF_S, 0)
    cdf /= cdf[-1].clone()
    rank = torch.searchsorted(cdf, torch.rand((n,), generator=gen, dtype=torch.float64)).clamp_(max=V - 1)
    return perm[rank]


def _draw(point, seed: int):
    """The token side of make_inputs (CPU): penalties, lengths, packed lists, offsets."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    B, V = point["B"], point["V"]
    if B < 1 or V < 1:
        raise ValueError(f"B={B} and V={V} must be >= 1")
    pres, freq, rep = _penalties(point, gen)
    out_len = _lengths(point, "out", gen)
    pr_len = _lengths(point, "prompt", gen)
    perm = torch.randperm(V, generator=gen)
    idt = _ids_dtype(point.get("ids", "int32"))
    out_tok = _zipf_ids(int(out_len.sum()), V, perm, gen).to(idt)
    pr_tok = _zipf_ids(int(pr_len.sum()), V, perm, gen).to(idt)

    def offsets(lens):
        off = torch.zeros((B + 1,), dtype=torch.int32)
        off[1:] = torch.cumsum(lens, 0)
        return off
    return {"presence": pres, "frequency": freq, "repetition": rep, "output_tokens": out_tok,
            "output_offsets": offsets(out_len), "prompt_tokens": pr_tok, "prompt_offsets": offsets(pr_len),
            "max_output_len": int(out_len.max()), "max_prompt_len": int(pr_len.max())}


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Logits N(0, 3^2) in the point's dtype (logits0: a pristine copy, launch writes logits), the
    token lists and penalties of _draw, an all-zero workspace; drawn on the CPU from the seed."""
    import torch
    dt = _torch_dtype(point.get("dtype", "fp32"))
    d = _draw(point, seed)
    gen = torch.Generator().manual_seed(seed + 7919)
    logits = (3.0 * torch.randn((point["B"], point["V"]), generator=gen)).to(dt)
    out = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in d.items()}
    out.update(logits=logits.to(device), logits0=logits.clone().to(device),
               workspace=torch.zeros((point["B"], point["V"]), dtype=torch.int32, device=device))
    return out


def launch(inputs, cfg):
    """Writes inputs["logits"] in place (each repeat penalizes it once more) and returns it; the
    workspace comes back all-zero, so repeats need no memset."""
    return logits_penalty(inputs["logits"], inputs["output_tokens"], inputs["output_offsets"],
                          inputs["prompt_tokens"], inputs["prompt_offsets"], inputs["presence"],
                          inputs["frequency"], inputs["repetition"], max_output_len=inputs["max_output_len"],
                          max_prompt_len=inputs["max_prompt_len"], workspace=inputs["workspace"],
                          BLOCK_V=cfg["BLOCK_V"], TILES_PER_CTA=cfg["TILES_PER_CTA"],
                          LOOP_STAGES=cfg["LOOP_STAGES"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _bins(tokens, offsets, B, V):
    """[B, V] int64 occurrence counts of the packed lists (ids outside [0, V) dropped)."""
    import torch
    lens = (offsets[1:] - offsets[:-1]).long()
    rows = torch.repeat_interleave(torch.arange(B, device=tokens.device), lens)
    tok = tokens.long()
    ok = (tok >= 0) & (tok < V)
    counts = torch.zeros((B, V), dtype=torch.int64, device=tokens.device)
    counts.index_put_((rows[ok], tok[ok]), torch.ones_like(tok[ok]), accumulate=True)
    return counts


def reference(inputs):
    """vLLM's apply_penalties in fp64 on logits0: repetition on the seen tokens, then frequency x
    count, then presence x (count > 0)."""
    import torch
    x = inputs["logits0"].double()
    B, V = x.shape
    counts = _bins(inputs["output_tokens"], inputs["output_offsets"], B, V)
    seen = (counts > 0) | (_bins(inputs["prompt_tokens"], inputs["prompt_offsets"], B, V) > 0)
    r = torch.where(seen, inputs["repetition"].double()[:, None], torch.ones((), dtype=torch.float64))
    x = torch.where(x > 0, x / r, x * r)
    x = x - inputs["frequency"].double()[:, None] * counts
    x = x - inputs["presence"].double()[:, None] * (counts > 0)
    return x.float()


def torch_baseline(inputs):
    """The eager path of vLLM's sampler, fp32: dense [B, V] bin counts by a scatter-add, prompt
    mask likewise, then the masked divide / multiply and two subtractions (out of place, from logits0)."""
    import torch
    x = inputs["logits0"].float()
    B, V = x.shape
    counts = _bins(inputs["output_tokens"], inputs["output_offsets"], B, V)
    out_mask = counts > 0
    seen = out_mask | (_bins(inputs["prompt_tokens"], inputs["prompt_offsets"], B, V) > 0)
    r = torch.where(seen, inputs["repetition"][:, None], 1.0)
    x = torch.where(x > 0, x / r, x * r)
    x = x - inputs["frequency"][:, None] * counts
    x = x - inputs["presence"][:, None] * out_mask
    return x.to(inputs["logits0"].dtype)


# ---------------------------------------------------------------- cost hooks
_STATS_CACHE: dict = {}


def point_stats(point) -> dict:
    """What the cost hooks need from the point's seed-0 draw (cached): per row its neutral flag,
    output / prompt lengths and distinct seen tokens."""
    import torch
    key = tuple(sorted(point.items()))
    if key not in _STATS_CACHE:
        d = _draw(point, 0)
        B, V = point["B"], point["V"]
        neutral = ((d["presence"] == 0) & (d["frequency"] == 0) & (d["repetition"] == 1)).tolist()
        out_len = (d["output_offsets"][1:] - d["output_offsets"][:-1]).tolist()
        pr_len = (d["prompt_offsets"][1:] - d["prompt_offsets"][:-1]).tolist()
        rows = torch.cat([torch.repeat_interleave(torch.arange(B), torch.tensor(out_len)),
                          torch.repeat_interleave(torch.arange(B), torch.tensor(pr_len))])
        tok = torch.cat([d["output_tokens"].long(), d["prompt_tokens"].long()])
        uniq = torch.unique(rows * V + tok)
        seen = torch.bincount(uniq // V, minlength=B).tolist()
        _STATS_CACHE[key] = {"neutral": neutral, "out_len": out_len, "prompt_len": pr_len, "seen": seen,
                             "max_out": max(out_len), "max_prompt": max(pr_len)}
    return _STATS_CACHE[key]


def _elem_bytes(point) -> int:
    return 4 if point.get("dtype", "fp32") == "fp32" else 2


def bytes_moved(point) -> int:
    """Of the non-neutral rows: the token ids read once (scatter), the workspace streamed once
    (4 B a column), each distinct seen token's logit read and written, its counter word written by
    the atomics and cleared (4 + 4 B); offsets and penalties. Neutral rows move 12 B + offsets."""
    st = point_stats(point)
    idb = 8 if point.get("ids", "int32") == "int64" else 4
    eb = _elem_bytes(point)
    total = 12 * point["B"] + 2 * 4 * (point["B"] + 1)
    for i, neu in enumerate(st["neutral"]):
        if not neu:
            total += idb * (st["out_len"][i] + st["prompt_len"][i]) + 4 * point["V"] + (2 * eb + 8) * st["seen"][i]
    return total


def flops(point) -> int:
    """Per streamed column a compare; per seen token ~6 (select, divide or multiply, two fused
    multiply-subtracts, a compare), non-neutral rows only."""
    st = point_stats(point)
    return sum(point["V"] + 6 * s for s, neu in zip(st["seen"], st["neutral"]) if not neu)


def grid(cfg, point) -> tuple:
    """`_kernel`'s launch grid: (chunks of TILES_PER_CTA x BLOCK_V columns, rows)."""
    return (_chunks(cfg, point["V"]), point["B"])


def cta_iterations(cfg, point) -> list[int]:
    """Per CTA in launch order (chunk fastest): its tiles (the row's last chunk may hold fewer), 0 for
    the rows without penalties (the seed-0 draw's)."""
    V, bv, tpc = point["V"], cfg["BLOCK_V"], cfg["TILES_PER_CTA"]
    tiles = triton.cdiv(V, bv)
    per_chunk = [min(tpc, tiles - c * tpc) for c in range(_chunks(cfg, V))]
    out = []
    for neu in point_stats(point)["neutral"]:
        out.extend([0] * len(per_chunk) if neu else per_chunk)
    return out


def loop_iterations(cfg, point) -> int:
    """Tiles a full chunk walks."""
    return min(cfg["TILES_PER_CTA"], triton.cdiv(point["V"], cfg["BLOCK_V"]))


def secondary_kernels(cfg, point) -> list[dict]:
    """The scatter that runs first: the CTAs with tokens (non-neutral rows, one per BLOCK_T tokens of a
    list), one step each of ~the mean tokens a working CTA: its ids and, per token, the 32-B sector of
    its counter word (the atomics resolve in L2); from DRAM the ids and one sector per distinct token."""
    st = point_stats(point)
    bt = SCATTER_BLOCK_T
    idb = 8 if point.get("ids", "int32") == "int64" else 4
    ctas = toks = seen = 0
    for i, neu in enumerate(st["neutral"]):
        if not neu:
            ctas += triton.cdiv(st["out_len"][i], bt) + triton.cdiv(st["prompt_len"][i], bt)
            toks += st["out_len"][i] + st["prompt_len"][i]
            seen += st["seen"][i]
    if ctas == 0:
        return []
    per = toks / ctas
    return [{"name": "_scatter_kernel", "grid": ctas, "iterations": 1,
             "tile_bytes": int(round(per * (idb + 32))), "dram_bytes": int(round(per * idb + 32 * seen / ctas)),
             "ahead": 0, "blocks_per_sm": 16}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    _check_cfg(cfg)
    B, V = point["B"], point["V"]
    logits = torch.empty((B, V), dtype=_torch_dtype(point.get("dtype", "fp32")), device="meta")
    ws = torch.empty((B, V), dtype=torch.int32, device="meta")
    pens = [torch.empty((B,), dtype=torch.float32, device="meta") for _ in range(3)]
    return _kernel_args(logits, ws, *pens, cfg)


def scatter_example_args(cfg, point) -> dict:
    """The launch arguments of `_scatter_kernel` at `point` (meta device; the seed-0 lengths give the
    packed sizes and the chunk split)."""
    import torch
    st = point_stats(point)
    B, V = point["B"], point["V"]
    idt = _ids_dtype(point.get("ids", "int32"))
    meta = dict(device="meta")
    out_tok = torch.empty((sum(st["out_len"]),), dtype=idt, **meta)
    pr_tok = torch.empty((sum(st["prompt_len"]),), dtype=idt, **meta)
    off = torch.empty((B + 1,), dtype=torch.int32, **meta)
    ws = torch.empty((B, V), dtype=torch.int32, **meta)
    pens = [torch.empty((B,), dtype=torch.float32, **meta) for _ in range(3)]
    return _scatter_args(ws, out_tok, off, pr_tok, off, *pens, V, triton.cdiv(st["max_out"], SCATTER_BLOCK_T),
                         SCATTER_BLOCK_T)
