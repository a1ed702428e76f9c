"""vLLM's reshape_and_cache (the "flash" layout) for a paged KV cache: scatter the new keys
and values of a step into the cache pages, a bare @triton.jit kernel + its launcher.

    slot = slot_mapping[t];  if slot >= 0:
        key_cache[slot // PAGE, slot % PAGE, h, :] = k[t, h, :]
        value_cache[slot // PAGE, slot % PAGE, h, :] = v[t, h, :]          for every head h

k, v: [T, H, D] fp16 / bf16 (H KV heads; token and head strides free, D contiguous, so k
and v may be views of a fused qkv projection); slot_mapping: [T] int64, slot = block * PAGE
+ offset, -1 for a padding token (CUDA-graph padding, a token that must not be cached), which
is skipped: its cache slot is left untouched. key_cache, value_cache: [num_blocks, PAGE, H, D]
in k's dtype, D contiguous, any block / slot / head strides (they may be the two halves of one
[2, num_blocks, PAGE, H, D] buffer, as vLLM's FlashAttention backend allocates it). A plain
copy: no arithmetic, no dtype conversion.

One CTA per BLOCK_T tokens: it loads those tokens' slots once, turns them into the cache
row addresses (block * block_stride + offset * slot_stride; PAGE is a constexpr, so a power
of two is a shift and a mask), then walks the H heads in BLOCK_H head blocks: per step one
[BLOCK_T, BLOCK_H, BLOCK_D] tile of k and one of v (D contiguous elements per row; BLOCK_D =
next power of two >= D, masked), each stored to its cache rows. A padding token's (and the
token tail's) rows are masked off the loads and the stores.

Tunables: BLOCK_T, BLOCK_H (powers of two), num_warps, num_stages (no dot: the loads are not
pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): T, H, D, dtype, PAGE (tokens per cache block) and pad
(how many of the T tokens have slot -1).
"""

from __future__ import annotations

import triton
import triton.language as tl

FILL = -3.0     # what make_inputs fills the caches with (slots no token writes keep it)


@triton.jit
def _kernel(K, V, KC, VC, SLOT, T, H, stride_kt, stride_kh, stride_vt, stride_vh,
            stride_kcb, stride_kcs, stride_kch, stride_vcb, stride_vcs, stride_vch,
            PAGE: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_T: tl.constexpr,
            BLOCK_H: tl.constexpr):
    pid = tl.program_id(0)
    ts = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    t_ok = ts < T
    slot = tl.load(SLOT + ts, mask=t_ok, other=-1)
    ok = slot >= 0
    slot = tl.where(ok, slot, 0)
    blk = slot // PAGE
    off = slot % PAGE
    t64 = ts.to(tl.int64)
    ds = tl.arange(0, BLOCK_D)
    if BLOCK_D == D:
        d_ok = tl.full([BLOCK_D], 1, tl.int1)
    else:
        d_ok = ds < D
    hr = tl.arange(0, BLOCK_H)

    k_tok = K + t64[:, None, None] * stride_kt + ds[None, None, :]
    v_tok = V + t64[:, None, None] * stride_vt + ds[None, None, :]
    kc_tok = KC + (blk * stride_kcb + off * stride_kcs)[:, None, None] + ds[None, None, :]
    vc_tok = VC + (blk * stride_vcb + off * stride_vcs)[:, None, None] + ds[None, None, :]
    row_ok = ok[:, None, None] & d_ok[None, None, :]
    for h0 in range(0, H, BLOCK_H):
        hs = (h0 + hr)[None, :, None]
        m = row_ok & (hs < H)
        kx = tl.load(k_tok + hs * stride_kh, mask=m)
        vx = tl.load(v_tok + hs * stride_vh, mask=m)
        tl.store(kc_tok + hs * stride_kch, kx, mask=m)
        tl.store(vc_tok + hs * stride_vch, vx, mask=m)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_T", "BLOCK_H", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 4, "BLOCK_H": 4, "num_warps": 4, "num_stages": 1}

# k + v 64-256 MiB read (1.3-5.4x the H200's 50 MB L2) and (all but the pad tokens) the same
# written to scattered 4-16 KiB cache rows (one row = H * D contiguous elements per token).
POINTS = [
    {"T": 16384, "H": 8, "D": 128, "PAGE": 16, "pad": 24, "dtype": "bf16"},    # Llama-3-8B prefill, 16k tokens: k, v 32 MiB each
    {"T": 65536, "H": 8, "D": 128, "PAGE": 16, "pad": 40, "dtype": "fp16"},    # Llama-3-70B (8 KV heads), 64k tokens: k, v 128 MiB each
    {"T": 16384, "H": 32, "D": 128, "PAGE": 16, "pad": 8, "dtype": "bf16"},    # Llama-2-7B (MHA, 32 heads), 16k tokens: k, v 128 MiB each
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


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_T", "BLOCK_H"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(k, v, key_cache, value_cache, slot_mapping, page, kc_strides, vc_strides, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    kc_strides, vc_strides: the caches' (block, slot, head) strides, given apart from the
    tensors so example_args can pass stand-in caches sized to the bytes written."""
    return dict(K=k, V=v, KC=key_cache, VC=value_cache, SLOT=slot_mapping, T=k.shape[0], H=k.shape[1],
                stride_kt=k.stride(0), stride_kh=k.stride(1), stride_vt=v.stride(0), stride_vh=v.stride(1),
                stride_kcb=kc_strides[0], stride_kcs=kc_strides[1], stride_kch=kc_strides[2],
                stride_vcb=vc_strides[0], stride_vcs=vc_strides[1], stride_vch=vc_strides[2],
                PAGE=page, D=k.shape[2], BLOCK_D=triton.next_power_of_2(k.shape[2]),
                BLOCK_T=cfg["BLOCK_T"], BLOCK_H=cfg["BLOCK_H"])


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, *, BLOCK_T=4, BLOCK_H=4, num_warps=4,
                      num_stages=1):
    """Write key, value [T, H, D] into key_cache, value_cache [num_blocks, PAGE, H, D] (in
    place) at slot_mapping [T] int64 (slot = block * PAGE + offset; -1 = skip the token).
    Returns (key_cache, value_cache). Slots are not range-checked (as in vLLM)."""
    import torch
    if key.dim() != 3 or tuple(value.shape) != tuple(key.shape):
        raise ValueError(f"expected key, value [T, H, D]; got {tuple(key.shape)}, {tuple(value.shape)}")
    T, H, D = key.shape
    if key_cache.dim() != 4 or tuple(key_cache.shape[2:]) != (H, D) or tuple(value_cache.shape) != tuple(
            key_cache.shape):
        raise ValueError(f"expected key_cache, value_cache [num_blocks, PAGE, {H}, {D}]; got "
                         f"{tuple(key_cache.shape)}, {tuple(value_cache.shape)}")
    if not (key.dtype == value.dtype == key_cache.dtype == value_cache.dtype) or key.dtype not in (
            torch.float16, torch.bfloat16):
        raise ValueError(f"key, value and the caches must share one fp16 / bf16 dtype; got {key.dtype}, "
                         f"{value.dtype}, {key_cache.dtype}, {value_cache.dtype}")
    if slot_mapping.dtype != torch.int64 or tuple(slot_mapping.shape) != (T,):
        raise ValueError(f"slot_mapping must be int64 [{T}]; got {slot_mapping.dtype} {tuple(slot_mapping.shape)}")
    if key_cache.stride(3) != 1 or value_cache.stride(3) != 1:
        raise ValueError("the caches' D axis must be contiguous")
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_H": BLOCK_H}
    _check_cfg(cfg)
    if key.stride(2) != 1:
        key = key.contiguous()
    if value.stride(2) != 1:
        value = value.contiguous()
    slot_mapping = slot_mapping.contiguous()
    if T > 0 and H > 0 and D > 0:
        args = _kernel_args(key, value, key_cache, value_cache, slot_mapping, key_cache.shape[1],
                            key_cache.stride()[:3], value_cache.stride()[:3], cfg)
        _kernel[(triton.cdiv(T, BLOCK_T),)](**args, num_warps=num_warps, num_stages=num_stages)
    return key_cache, value_cache


def make_slot_mapping(T: int, page: int, pad: int, gen, device: str = "cuda"):
    """A realistic prefill slot mapping and the cache size it needs: the T - pad real tokens
    are split into sequences of random length (1 .. min(4096, T/2)); each sequence starts at a
    random offset of its first page (a cached prefix fills the rest) and runs contiguously
    through its pages, which come from a random permutation of the cache's blocks (a quarter
    more blocks than needed, the rest free). Then pad tokens get slot -1: half at the end (CUDA
    graph padding), the rest at random positions. Returns (slot_mapping [T] int64, num_blocks)."""
    import torch
    n = T - pad
    if n < 0:
        raise ValueError(f"pad={pad} exceeds T={T}")
    max_len = max(1, min(4096, T // 2))
    lens, total = [], 0
    while total < n:
        ln = min(int(torch.randint(1, max_len + 1, (1,), generator=gen, device=device)), n - total)
        lens.append(ln)
        total += ln
    lens_t = torch.tensor(lens, dtype=torch.int64, device=device)
    start = torch.randint(0, page, (len(lens),), generator=gen, device=device)      # cached-prefix offset
    pages = (start + lens_t + page - 1) // page
    n_pages = int(pages.sum())
    num_blocks = max(1, n_pages + n_pages // 4 + 1)
    perm = torch.randperm(num_blocks, generator=gen, device=device)[:n_pages]
    seq = torch.repeat_interleave(torch.arange(len(lens), device=device), lens_t)
    first_tok = torch.cumsum(lens_t, 0) - lens_t
    first_page = torch.cumsum(pages, 0) - pages
    pos = torch.arange(n, device=device) - first_tok[seq] + start[seq]     # position inside the sequence's pages
    slots = perm[first_page[seq] + pos // page] * page + pos % page
    out = torch.full((T,), -1, dtype=torch.int64, device=device)
    inner = pad - pad // 2          # padding tokens at random positions among the first T - pad // 2
    keep = torch.ones(T - pad // 2, dtype=torch.bool, device=device)
    if inner:
        keep[torch.randperm(T - pad // 2, generator=gen, device=device)[:inner]] = False
    out[:T - pad // 2][keep] = slots
    return out, num_blocks


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """k, v ~ N(0, 1); kv_cache [2, num_blocks, PAGE, H, D] filled with FILL (kv_cache[0] the
    key cache, kv_cache[1] the value cache); slot_mapping from make_slot_mapping."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, H, D, page = point["T"], point["H"], point["D"], point.get("PAGE", 16)
    k = torch.randn((T, H, D), generator=gen, device=device).to(dt)
    v = torch.randn((T, H, D), generator=gen, device=device).to(dt)
    slot_mapping, num_blocks = make_slot_mapping(T, page, point.get("pad", 0), gen, device)
    kv_cache = torch.full((2, num_blocks, page, H, D), FILL, dtype=dt, device=device)
    return {"k": k, "v": v, "slot_mapping": slot_mapping, "kv_cache": kv_cache}


def launch(inputs, cfg):
    """Writes into inputs["kv_cache"] in place (as vLLM does; repeating it writes the same
    values) and returns that [2, num_blocks, PAGE, H, D] buffer."""
    kv = inputs["kv_cache"]
    reshape_and_cache(inputs["k"], inputs["v"], kv[0], kv[1], inputs["slot_mapping"], BLOCK_T=cfg["BLOCK_T"],
                      BLOCK_H=cfg["BLOCK_H"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return kv


def reference(inputs):
    """[2, num_blocks, PAGE, H, D] in fp32: FILL everywhere, k's and v's rows at their slots
    (built from the shapes, not from kv_cache's contents, which launch overwrites)."""
    import torch
    k, v, slots = inputs["k"], inputs["v"], inputs["slot_mapping"]
    ref = torch.full(tuple(inputs["kv_cache"].shape), FILL, dtype=torch.float32, device=k.device)
    H, D = k.shape[1], k.shape[2]
    flat = ref.view(2, -1, H, D)
    valid = slots >= 0
    idx = slots[valid]
    assert idx.unique().numel() == idx.numel(), "slot_mapping repeats a slot"
    flat[0, idx] = k[valid].float()
    flat[1, idx] = v[valid].float()
    return ref


def torch_baseline(inputs):
    """Eager torch, as vLLM's reference does: the valid tokens' rows written into the caches
    by advanced indexing on (block, offset) (in place, any cache strides; returns kv_cache)."""
    kv, slots = inputs["kv_cache"], inputs["slot_mapping"]
    page = kv.shape[2]
    valid = slots >= 0
    idx = slots[valid]
    blk, off = idx // page, idx % page
    kv[0][blk, off] = inputs["k"][valid]
    kv[1][blk, off] = inputs["v"][valid]
    return kv


def bytes_moved(point) -> int:
    """k and v read once (all T tokens: a padding token's rows are masked off, but there are
    only a few), slot_mapping read once (8 B a token), and the T - pad real tokens' k and v rows
    written to the caches once each (padding tokens write nothing; the cache's untouched
    slots are not counted)."""
    T, H, D, pad = point["T"], point["H"], point["D"], point.get("pad", 0)
    e = _elem_bytes(point.get("dtype", "bf16"))
    return 2 * T * H * D * e + 8 * T + 2 * (T - pad) * H * D * e


def flops(point) -> int:
    """A copy: no arithmetic."""
    return 0


def grid(cfg, point) -> int:
    """One CTA per BLOCK_T tokens."""
    return triton.cdiv(point["T"], cfg["BLOCK_T"])


def loop_iterations(cfg, point) -> int:
    """Head blocks per CTA."""
    return triton.cdiv(point["H"], cfg["BLOCK_H"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory).
    The caches are stand-ins sized to what is written ([T - pad, H, D] each, so the tensors'
    bytes are bytes_moved); their strides are a real [num_blocks, PAGE, H, D] cache's."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, H, D, page, pad = point["T"], point["H"], point["D"], point.get("PAGE", 16), point.get("pad", 0)
    k = torch.empty((T, H, D), dtype=dt, device="meta")
    v = torch.empty((T, H, D), dtype=dt, device="meta")
    slots = torch.empty((T,), dtype=torch.int64, device="meta")
    kc = torch.empty((T - pad, H, D), dtype=dt, device="meta")
    vc = torch.empty((T - pad, H, D), dtype=dt, device="meta")
    strides = (page * H * D, H * D, D)
    return _kernel_args(k, v, kc, vc, slots, page, strides, strides, cfg)
