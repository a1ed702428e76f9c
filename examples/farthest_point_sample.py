"""Iterative farthest point sampling (FPS), a bare @triton.jit kernel + its launcher: per point cloud b of
a batch, from its points p_0 .. p_{L-1} (xyz fp32),

    idx[0] = 0,  dist_n = +inf
    for i = 1 .. K - 1:   c = p_{idx[i-1]};  dist_n = min(dist_n, |p_n - c|^2);  idx[i] = argmax_n dist_n
    idx[K ..] = -1                                       (K = min(npoint, L))

the centroid sampler of PointNet++'s set abstraction (pointnet2_ops' furthest_point_sample in
PointNet++, PointNeXt / openpoints, PointMLP, OpenPCDet's PointRCNN / 3DSSD, VoteNet) and pytorch3d's
sample_farthest_points (a padded batch with per-cloud lengths, -1 past a cloud's length). Ties in the
argmax go to the lowest index (torch.argmax's rule) and the first index is 0. No existing example is
close: knn_topk / row_topk select once over a matrix; here every pick depends on the previous one (a
chain of K - 1 dependent passes over the cloud, each a distance update and a block-wide argmax).

xyz: [B, N, 3] fp32 with any strides (the first three channels of a [B, N, C] buffer, or of a
channel-first [B, C, N] one permuted -- Pointnet_Pointnet2_pytorch's points[:, :3, :].permute(0, 2, 1),
point stride 1 -- read in place). lengths: optional [B] int32 / int64 (cloud b is its first lengths[b]
points, clamped to [0, N]). idx: a fresh contiguous [B, npoint] int32 (pointnet2_ops) or int64
(pytorch3d). Coordinates finite.

Exact arithmetic. The squared distance is ((dx dx + dy dy) + dz dz) with every product and sum rounded
on its own (no FMA contraction). FPS is chaotic -- a 1-ulp difference at one near-tie changes every
later index -- so the kernel reproduces torch's eager fp32 arithmetic bit for bit (the reference, on
the CPU and on a GPU: the correctness gate compares indices). On a GPU (EXACT 1) the products and sums
are PTX mul.rn / add.rn in one inline asm, which neither LLVM nor ptxas fuses (FMA would save 2 of the
~9 instructions a point a pass); Triton's interpreter (EXACT 0: it cannot run inline asm; numpy rounds
every op anyway) runs the plain expression. tl.fma is no way out: the 3.6 interpreter rounds it twice.

Work split: one program a cloud, grid (B,). A real FPS batch is 8-32 clouds, far fewer than 4 x 132
programs: the kernel is one program's latency chain, not a throughput kernel, and the other SMs idle.
A program keeps the cloud's first HEAD points in registers (x, y, z and the running distance, loaded
once; HEAD = min(next_pow2(N), HEAD_PPT x 32 x num_warps)) and streams the rest -- the tail -- every
pass from a fp32 scratch ([B, 4 TAILP], TAILP = the tail rounded up to CHUNK) that it fills in a
prologue (x, y, z, +inf; points past the cloud's length 0, 0, 0, -1; then a barrier: the first pass's
loads need not map a slot to the thread that stored it). CHUNK = min(8 x 32 x num_warps, 1024) points
a step (16 KB of scratch, 2-8 points a thread); the chunk loop stops at the cloud's own length. The
scratch is 16 B a tail slot (32-64 KB at the S3DIS point, 190-330 KB for a SUN RGB-D scene: L1 / L2
hits after the prologue). Points past a cloud's length carry distance -1 and never win (real squared
distances are >= 0). Between a pass's distance stores and the next pass's loads there is always a
block-wide reduction's barrier (a lane's slot may be stored by another thread than loads it); within
a pass a load meeting the same pass's store reads min(d, |p - c|^2) either way.

Per pass: the head's distance update (3 subtracts, 3 products, 2 adds, a min a point) and its
block-wide argmax; each tail chunk's load, update and store and a running best a lane (a strict > keeps
the earlier chunk's lower index on a tie), then the tail's block-wide argmax and the merge (the head
wins a tie: its indices are lower); the winner's index stored (one scalar store) and its coordinates
fetched for the next pass. The -1 padding past K is stored PAD_BLOCK slots a step before the loop.

Tunables (all but num_warps constexpr / launcher knobs):
  HEAD_PPT (0 / 16): register-resident points a thread. 0: no head, the whole cloud streamed from the
     scratch every pass (as pointnet2_ops' and pytorch3d's CUDA kernels keep their running distances
     in global memory); 16: a head of up to 16 x 32 x num_warps points (2048 / 4096 / 8192: a ModelNet
     cloud whole, an S3DIS block whole on 8-16 warps or half on 4, a tenth to two fifths of a SUN RGB-D
     scene) in 64 registers a thread, the rest streamed.
  PICK (0 / 1): how the next centroid's coordinates arrive. 0: the argmax reduces (distance, index)
     only (the head's through tl.max(return_indices=True, tie_break_left)); the coordinates are then
     reloaded from xyz (an L1 / L2 hit: a load latency on the chain); 1: the reductions carry x, y, z
     along (three more shuffles and selects a step, three more selects a streamed point for the
     per-lane best), no load on the chain.
  KEY (0 / 1): the argmax's form. 0: (distance, index) pairs, ties to the lower index by compares;
     1: one int64 key a point, the distance's bits (>= 0, or -1.0's negative bits for padding) in the
     high word and 2^31 - 1 - index in the low word: an integer max, no tie logic (keys are unique),
     the index decoded from the winner.
  LAYOUT (0 / 1): the tail scratch. 0: [tail, 4] rows (x, y, z, dist): a 16-byte vector load a point,
     the distance stored alone (a 4-byte store every 16 bytes, the rows' lines rewritten); 1: [4, tail]
     planes: four coalesced vector streams, the distances stored as vectors, x / y / z never written
     after the prologue. LAYOUT acts only where points are streamed: every point with HEAD_PPT 0, the
     S3DIS point's 4-warp configs and the SUN RGB-D point with HEAD_PPT 16, not the ModelNet point's
     1024-point clouds with HEAD_PPT 16 (its 24 HEAD_PPT 16 configs are 12 LAYOUT twins).
  num_warps (4 / 8 / 16): points a thread (the head's, the chunk's) against the block-wide reductions'
     depth (a cross-warp step through shared memory with barriers, twice a pass with head and tail).
  num_stages held at 1: the sample loop is a dependent chain (each pass needs the previous winner) and
     the chunk loop's loads are L1 / L2 hits of the scratch the same loop rewrites; nothing pipelines.

Every config of the sweep (48) compiles for sm_90 at every point without spills. Triton 3.6 (ptxas
12.8): 32-123 registers at the ModelNet point, 32-202 at S3DIS, 32-204 at SUN RGB-D (the most: HEAD_PPT
16 on 4 warps with PICK 1 -- 64 head registers, 8 chunk points a thread and their carried
coordinates); triton 3.9 (ptxas 12.9): 28-112, 32-205, 32-201. Shared memory 32 B - 4 KiB: the
cross-warp reductions' partials (32-320 B), and 2-4 KiB where LAYOUT 0's prologue converts the
channel-first head's layout (the S3DIS point). On sm_120 (99 KiB a block) the configs tried compile
without spills.
Problem parameters (a workload point): B, N, npoint, dtype (fp32), index_dtype (int32 / int64),
channels (>= 3: xyz the first three of a [B, N, channels] buffer), channel_first (0 / 1: of a [B,
channels, N] one), ragged (0 / 1: lengths N down to about N / 2).
"""

from __future__ import annotations

import triton
import triton.language as tl

CHUNK_PPT = 8                    # tail points a thread a chunk, up to
CHUNK_MAX = 1024                 # points a chunk (16 KB of scratch in flight a pass step, any num_warps)
IDX_MAX = 0x7FFFFFFF             # KEY 1's low word is IDX_MAX - index
PAD_BLOCK = 128                  # the -1 padding of idx, stored PAD_BLOCK slots a step
MAX_N = 2**24                    # points a cloud (indices int32; the pad scratch offsets int32)


@triton.jit
def _sqdist(dx, dy, dz, EXACT: tl.constexpr):
    """((dx dx + dy dy) + dz dz), every op rounded on its own (no FMA): torch's eager fp32 arithmetic."""
    if EXACT:
        return tl.inline_asm_elementwise(
            "{ .reg .f32 a, t; mul.rn.f32 a, $1, $1; mul.rn.f32 t, $2, $2; add.rn.f32 a, a, t; "
            "mul.rn.f32 t, $3, $3; add.rn.f32 $0, a, t; }",
            "=r,r,r,r", [dx, dy, dz], dtype=tl.float32, is_pure=True, pack=1)
    else:
        return dx * dx + dy * dy + dz * dz


@triton.jit
def _pair(d1, i1, d2, i2):
    """argmax's combine: the larger distance, the lower index on a tie."""
    t = (d1 > d2) | ((d1 == d2) & (i1 < i2))
    return tl.where(t, d1, d2), tl.where(t, i1, i2)


@triton.jit
def _pair_xyz(d1, i1, x1, y1, z1, d2, i2, x2, y2, z2):
    """The same, carrying the winner's coordinates."""
    t = (d1 > d2) | ((d1 == d2) & (i1 < i2))
    return tl.where(t, d1, d2), tl.where(t, i1, i2), tl.where(t, x1, x2), tl.where(t, y1, y2), tl.where(t, z1, z2)


@triton.jit
def _key_xyz(k1, x1, y1, z1, k2, x2, y2, z2):
    """The int64 keys' max (keys are unique), carrying the winner's coordinates."""
    t = k1 > k2
    return tl.where(t, k1, k2), tl.where(t, x1, x2), tl.where(t, y1, y2), tl.where(t, z1, z2)


@triton.jit
def _key(d, i):
    """The int64 key of (distance, index): the distance's bits high, IDX_MAX - index low."""
    return (d.to(tl.int32, bitcast=True).to(tl.int64) << 32) | (0x7FFFFFFF - i).to(tl.int64)


@triton.jit
def _kernel(XYZ, LEN, IDX, SCR, N, NPOINT, TAILP, stride_b, stride_n, stride_c, stride_len,
            HAS_LEN: tl.constexpr, HEAD: tl.constexpr, TAIL: tl.constexpr, CHUNK: tl.constexpr,
            LAYOUT: tl.constexpr, PICK: tl.constexpr, KEY: tl.constexpr, EXACT: tl.constexpr,
            PAD_B: tl.constexpr):
    b = tl.program_id(0)
    L = N
    if HAS_LEN:
        L = tl.minimum(tl.maximum(tl.load(LEN + b * stride_len), 0), N).to(tl.int32)
    K = tl.minimum(L, NPOINT)
    irow = IDX + b.to(tl.int64) * NPOINT
    # the slots past the cloud's K: -1 (pytorch3d's padding)
    for s in range(K - K % PAD_B, NPOINT, PAD_B):
        o = s + tl.arange(0, PAD_B)
        tl.store(irow + o, tl.full([PAD_B], -1, IDX.dtype.element_ty), mask=(o >= K) & (o < NPOINT))
    if K > 0:
        base = XYZ + b.to(tl.int64) * stride_b
        tl.store(irow, tl.zeros([], IDX.dtype.element_ty))
        cx = tl.load(base)
        cy = tl.load(base + stride_c)
        cz = tl.load(base + 2 * stride_c)
        if HEAD > 0:
            ho = tl.arange(0, HEAD)
            hm = ho < L
            hp = base + ho * stride_n
            hx = tl.load(hp, mask=hm, other=0.0)
            hy = tl.load(hp + stride_c, mask=hm, other=0.0)
            hz = tl.load(hp + 2 * stride_c, mask=hm, other=0.0)
            hd = tl.where(hm, float("inf"), -1.0)
        if TAIL:
            # the tail's own extent: the chunks holding points HEAD .. L - 1
            tl_len = tl.maximum(L - HEAD, 0)
            sb = SCR + b.to(tl.int64) * (4 * TAILP)
            for c0 in range(0, tl_len, CHUNK):
                to = c0 + tl.arange(0, CHUNK)
                tm = to < tl_len
                tp = base + (HEAD + to) * stride_n
                x = tl.load(tp, mask=tm, other=0.0)
                y = tl.load(tp + stride_c, mask=tm, other=0.0)
                z = tl.load(tp + 2 * stride_c, mask=tm, other=0.0)
                d0 = tl.where(tm, float("inf"), -1.0)
                if LAYOUT == 0:
                    sp = sb + to * 4
                    tl.store(sp, x)
                    tl.store(sp + 1, y)
                    tl.store(sp + 2, z)
                    tl.store(sp + 3, d0)
                else:
                    tl.store(sb + to, x)
                    tl.store(sb + TAILP + to, y)
                    tl.store(sb + 2 * TAILP + to, z)
                    tl.store(sb + 3 * TAILP + to, d0)
            # the first pass's chunk loads need not map a slot to the thread that stored it here
            tl.debug_barrier()
        for i in range(1, K):
            # ---- the head: registers
            if HEAD > 0:
                hd = tl.minimum(hd, _sqdist(hx - cx, hy - cy, hz - cz, EXACT))
                if KEY:
                    if PICK:
                        hk, bx, by, bz = tl.reduce((_key(hd, ho), hx, hy, hz), 0, _key_xyz)
                    else:
                        hk = tl.max(_key(hd, ho), 0)
                else:
                    if PICK:
                        bd, bi, bx, by, bz = tl.reduce((hd, ho, hx, hy, hz), 0, _pair_xyz)
                    else:
                        bd, bi = tl.max(hd, 0, return_indices=True, return_indices_tie_break_left=True)
            # ---- the tail: streamed from the scratch, a running best a lane
            if TAIL:
                co = tl.arange(0, CHUNK)
                if KEY:
                    rk = tl.full([CHUNK], -9223372036854775808, tl.int64)
                else:
                    rd = tl.full([CHUNK], float("-inf"), tl.float32)
                    ri = tl.zeros([CHUNK], tl.int32)
                if PICK:
                    rx = tl.zeros([CHUNK], tl.float32)
                    ry = tl.zeros([CHUNK], tl.float32)
                    rz = tl.zeros([CHUNK], tl.float32)
                for c0 in range(0, tl_len, CHUNK):
                    to = c0 + co
                    if LAYOUT == 0:
                        sp = sb + to * 4
                        row = tl.load(sp[:, None] + tl.arange(0, 4)[None, :])
                        xz, yd = tl.split(tl.reshape(row, [CHUNK, 2, 2]))
                        x, z = tl.split(xz)
                        y, d = tl.split(yd)
                    else:
                        x = tl.load(sb + to)
                        y = tl.load(sb + TAILP + to)
                        z = tl.load(sb + 2 * TAILP + to)
                        d = tl.load(sb + 3 * TAILP + to)
                    d = tl.minimum(d, _sqdist(x - cx, y - cy, z - cz, EXACT))
                    if LAYOUT == 0:
                        tl.store(sp + 3, d)
                    else:
                        tl.store(sb + 3 * TAILP + to, d)
                    if KEY:
                        k = _key(d, HEAD + to)
                        t = k > rk
                        rk = tl.where(t, k, rk)
                    else:
                        t = d > rd                      # strict: the earlier chunk keeps a tie
                        rd = tl.where(t, d, rd)
                        ri = tl.where(t, HEAD + to, ri)
                    if PICK:
                        rx = tl.where(t, x, rx)
                        ry = tl.where(t, y, ry)
                        rz = tl.where(t, z, rz)
                if KEY:
                    if PICK:
                        tk, tx, ty, tz = tl.reduce((rk, rx, ry, rz), 0, _key_xyz)
                    else:
                        tk = tl.max(rk, 0)
                else:
                    if PICK:
                        td, ti, tx, ty, tz = tl.reduce((rd, ri, rx, ry, rz), 0, _pair_xyz)
                    else:
                        td, ti = tl.reduce((rd, ri), 0, _pair)
                if HEAD > 0:
                    # the head's indices are lower: it keeps a tie
                    if KEY:
                        th = hk > tk
                        hk = tl.where(th, hk, tk)
                    else:
                        th = bd >= td
                        bi = tl.where(th, bi, ti)
                    if PICK:
                        bx = tl.where(th, bx, tx)
                        by = tl.where(th, by, ty)
                        bz = tl.where(th, bz, tz)
                else:
                    if KEY:
                        hk = tk
                    else:
                        bi = ti
                    if PICK:
                        bx = tx
                        by = ty
                        bz = tz
            if KEY:
                far = (0x7FFFFFFF - (hk & 0xFFFFFFFF)).to(tl.int32)
            else:
                far = bi
            tl.store(irow + i, far.to(IDX.dtype.element_ty))
            if PICK:
                cx = bx
                cy = by
                cz = bz
            else:
                fp = base + far * stride_n
                cx = tl.load(fp)
                cy = tl.load(fp + stride_c)
                cz = tl.load(fp + 2 * stride_c)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-29"
DTYPES = ("fp32",)
TUNABLES = ("HEAD_PPT", "PICK", "KEY", "LAYOUT", "num_warps", "num_stages")
BASELINE = {"HEAD_PPT": 16, "PICK": 0, "KEY": 0, "LAYOUT": 1, "num_warps": 8, "num_stages": 1}
# the study's sweep: 2 x 2 x 2 x 2 x 3 = 48 configs (num_stages held at 1: nothing pipelines)
SWEEP_AXES = {"HEAD_PPT": [0, 16], "PICK": [0, 1], "KEY": [0, 1], "LAYOUT": [0, 1], "num_warps": [4, 8, 16],
              "num_stages": [1]}

# One launch each is one program a cloud running min(npoint, N) - 1 dependent passes (grid (B,): 32, 16
# and 8 programs, fewer than the 4 x 132 a throughput kernel wants -- FPS batches are this small; the
# time is one program's chain, the other SMs idle). The points differ in the regime (a 1024-point cloud
# whole in the head; 4096 points: whole with 8 / 16 warps, half streamed with 4; 20000 points: a
# 2048-8192-point head and a 190-330 KB tail streamed from L1 / L2 every pass), in xyz's layout
# (contiguous; a channel-first [B, 9, N] buffer's first three channels, point stride 1; contiguous with
# lengths), the lengths (none / none / a ragged padded batch) and the index dtype (int32 / int64 /
# int64). Work: 32 x 511 x 1024 = 16.7 M, 16 x 1023 x 4096 = 67 M and 256 M point updates (9 flops
# each and the argmax's share); a pass a program costs ~300-600 clocks of reduction latency plus its
# points at ~1-4 a clock (registers) or the scratch's L1 / L2 rate (16 KB a chunk in flight: 2-16 K
# clocks a pass for the 20000-point scene): on an H100 roughly 0.08-0.3 ms, 0.3-1.5 ms and 3-20 ms.
POINTS = [
    # PointNet++ SSG / PointNeXt-S classification on ModelNet40: batch 32, 1024 points a shape, the first
    # set abstraction's 512 centroids (openpoints' / pointnet2_ops' furthest_point_sample: int32
    # indices); contiguous [32, 1024, 3]
    {"B": 32, "N": 1024, "npoint": 512, "dtype": "fp32", "index_dtype": "int32"},
    # PointNet++ (MSG / SSG) semantic segmentation on S3DIS as Pointnet_Pointnet2_pytorch trains it: batch
    # 16 blocks of 4096 points with 9 channels (xyz, rgb, normalized xyz) channel-first [16, 9, 4096];
    # SA1 samples 1024 centroids from xyz = points[:, :3, :].permute(0, 2, 1), read in place (strides
    # (9 x 4096, 1, 4096)); int64 indices
    {"B": 16, "N": 4096, "npoint": 1024, "dtype": "fp32", "channels": 9, "channel_first": 1, "index_dtype": "int64"},
    # VoteNet's SA1 on SUN RGB-D-size scenes (20000 points, 2048 seeds), batch 8, as pytorch3d's
    # sample_farthest_points takes it: a padded [8, 20000, 3] batch with per-scene lengths (20000 down to
    # 11250: the longest cloud sets the time), int64 indices, -1 past a scene's length
    {"B": 8, "N": 20000, "npoint": 2048, "dtype": "fp32", "ragged": 1, "index_dtype": "int64"},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_point(point) -> dict:
    """The point's fields, checked, defaults filled in."""
    for k in ("B", "N", "npoint"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    if point["N"] > MAX_N:
        raise ValueError(f"N={point['N']} exceeds {MAX_N} points a cloud")
    dt = point.get("dtype", "fp32")
    if dt not in DTYPES:
        raise ValueError(f"dtype {dt!r} is not one of {', '.join(DTYPES)}")
    it = point.get("index_dtype", "int64")
    if it not in ("int32", "int64"):
        raise ValueError(f"index_dtype {it!r} is not one of int32, int64")
    ch = point.get("channels", 3)
    if not _is_int(ch) or ch < 3:
        raise ValueError(f"channels={ch!r} must be an int >= 3 (xyz is the buffer's first three)")
    flags = {}
    for k in ("ragged", "channel_first"):
        v = point.get(k, 0)
        if v not in (0, 1) or isinstance(v, float):
            raise ValueError(f"{k}={v!r} must be 0 or 1")
        flags[k] = int(v)
    return dict(B=point["B"], N=point["N"], npoint=point["npoint"], index_dtype=it, channels=ch, **flags)


def _xyz_view(buf, channel_first: int):
    """xyz [B, N, 3]: the first three channels of a [B, N, C] (or channel-first [B, C, N]) buffer, in place."""
    return buf[:, :3, :].permute(0, 2, 1) if channel_first else buf[:, :, :3]


def _lengths(B: int, N: int) -> list[int]:
    """A ragged batch's lengths: a ramp from N down to about N / 2 (deterministic)."""
    return [N - (b * N) // (2 * B) for b in range(B)]


def _check_cfg(cfg) -> None:
    h = cfg["HEAD_PPT"]
    if h not in (0, 1, 2, 4, 8, 16, 32) or not _is_int(h):
        raise ValueError(f"HEAD_PPT={h!r} must be 0 or a power of two up to 32")
    for k in ("PICK", "KEY", "LAYOUT"):
        if cfg[k] not in (0, 1) or not _is_int(cfg[k]):
            raise ValueError(f"{k}={cfg[k]!r} must be 0 or 1")
    w = cfg["num_warps"]
    if w not in (1, 2, 4, 8, 16, 32) or not _is_int(w):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 32")
    if h * w > 256:
        raise ValueError(f"HEAD_PPT={h} on num_warps={w}: {4 * h} head registers a thread, past half the "
                         f"{65536 // (32 * w)} a thread of {32 * w} threads have: lower HEAD_PPT or num_warps")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def _sizes(N: int, cfg) -> tuple[int, int, int]:
    """(HEAD, CHUNK, TAILP): the register head's points (a power of two, 0 without one), a tail chunk's
    points, the tail scratch's slots a cloud (a multiple of CHUNK; 0: no tail)."""
    w = cfg["num_warps"]
    chunk = min(CHUNK_PPT * 32 * w, CHUNK_MAX)
    head = min(triton.next_power_of_2(N), cfg["HEAD_PPT"] * 32 * w) if cfg["HEAD_PPT"] else 0
    tail = max(N - head, 0)
    return head, chunk, triton.cdiv(tail, chunk) * chunk


def _torch_index_dtype(name: str):
    import torch
    return {"int32": torch.int32, "int64": torch.int64}[name]


def _kernel_args(xyz, lengths, idx, scr, npoint: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (the wrapper and example_args share it); without
    lengths / a tail, idx stands in for LEN / SCR (never read)."""
    B, N, _ = xyz.shape
    head, chunk, tailp = _sizes(N, cfg)
    return dict(XYZ=xyz, LEN=idx if lengths is None else lengths, IDX=idx, SCR=idx if scr is None else scr,
                N=N, NPOINT=npoint, TAILP=tailp, stride_b=xyz.stride(0), stride_n=xyz.stride(1),
                stride_c=xyz.stride(2), stride_len=0 if lengths is None else lengths.stride(0),
                HAS_LEN=int(lengths is not None), HEAD=head, TAIL=int(tailp > 0), CHUNK=chunk,
                LAYOUT=cfg["LAYOUT"], PICK=cfg["PICK"], KEY=cfg["KEY"], EXACT=int(xyz.device.type != "cpu"),
                PAD_B=PAD_BLOCK)


def farthest_point_sample(xyz, npoint: int, lengths=None, *, index_dtype=None, HEAD_PPT: int = 16, PICK: int = 0,
                          KEY: int = 0, LAYOUT: int = 1, num_warps: int = 8, num_stages: int = 1):
    """xyz [B, N, 3] fp32 (any strides), npoint >= 0 -> idx [B, npoint] (int64 unless index_dtype is
    torch.int32): per cloud, farthest point sampling from index 0, ties to the lower index; with lengths
    [B] (int32 / int64, clamped to [0, N]) cloud b is its first lengths[b] points and its slots past
    min(npoint, lengths[b]) are -1 (as without lengths those past N)."""
    import torch
    if xyz.dim() != 3 or xyz.shape[2] != 3:
        raise ValueError(f"expected xyz [B, N, 3]; got {tuple(xyz.shape)}")
    if xyz.dtype != torch.float32:
        raise ValueError(f"xyz must be fp32; got {xyz.dtype}")
    if not _is_int(npoint) or npoint < 0:
        raise ValueError(f"npoint={npoint!r} must be a non-negative int")
    if index_dtype is None:
        index_dtype = torch.int64
    if index_dtype not in (torch.int32, torch.int64):
        raise ValueError(f"index_dtype must be torch.int32 or torch.int64; got {index_dtype}")
    cfg = {"HEAD_PPT": HEAD_PPT, "PICK": PICK, "KEY": KEY, "LAYOUT": LAYOUT, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    B, N, _ = xyz.shape
    if N > MAX_N:
        raise ValueError(f"N={N} exceeds {MAX_N} points a cloud")
    if lengths is not None:
        if lengths.dtype not in (torch.int32, torch.int64) or lengths.device != xyz.device:
            raise ValueError(f"lengths must be int32 / int64 on {xyz.device}; got {lengths.dtype} on "
                             f"{lengths.device}")
        if tuple(lengths.shape) != (B,):
            raise ValueError(f"lengths must be [{B}]; got {list(lengths.shape)}")
    idx = torch.empty((B, npoint), dtype=index_dtype, device=xyz.device)
    if idx.numel() == 0:
        return idx
    if N == 0:
        return idx.fill_(-1)
    if (N - 1) * abs(xyz.stride(1)) + 2 * abs(xyz.stride(2)) >= 2**31:
        raise ValueError(f"a cloud of {N} points with strides {tuple(xyz.stride()[1:])} exceeds the kernel's "
                         f"int32 in-cloud offsets")
    _, _, tailp = _sizes(N, cfg)
    scr = torch.empty((B, 4 * tailp), dtype=torch.float32, device=xyz.device) if tailp else None
    _kernel[(B,)](**_kernel_args(xyz, lengths, idx, scr, npoint, cfg), num_warps=num_warps,
                  num_stages=num_stages)
    return idx


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """xyz [B, N, 3] fp32, the first three channels of a [B, N, channels] buffer (channel_first: of a
    [B, channels, N] one, permuted: point stride 1), read in place; the other channels N(0, 1) (colour,
    intensity and the like). The points uniform in a box of 2 x 2 x 2 (N <= 4096: a normalized shape or
    block) or 10 x 10 x 3 metres (a room scan). With ragged, lengths [B] int64 (a ramp from N down to
    about N / 2) and the padding past a cloud's length NaN (never read). npoint, index_dtype. Drawn on
    the CPU from a seeded torch.Generator and moved."""
    import torch
    q = _check_point(point)
    B, N, C = q["B"], q["N"], q["channels"]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    buf = torch.randn((B, C, N) if q["channel_first"] else (B, N, C), generator=gen)
    xyz = _xyz_view(buf, q["channel_first"])
    ext = torch.tensor([1.0, 1.0, 1.0]) if N <= 4096 else torch.tensor([5.0, 5.0, 1.5])
    xyz.copy_((torch.rand((B, N, 3), generator=gen) * 2.0 - 1.0) * ext)
    lengths = None
    if q["ragged"]:
        lengths = torch.tensor(_lengths(B, N), dtype=torch.int64)
        for b in range(B):
            xyz[b, int(lengths[b]):] = float("nan")
        lengths = lengths.to(device)
    return {"xyz": _xyz_view(buf.to(device), q["channel_first"]), "lengths": lengths, "npoint": q["npoint"],
            "index_dtype": _torch_index_dtype(q["index_dtype"])}


def launch(inputs, cfg):
    """idx [B, npoint] in the inputs' index dtype."""
    return farthest_point_sample(inputs["xyz"], inputs["npoint"], inputs.get("lengths"),
                                 index_dtype=inputs.get("index_dtype"), HEAD_PPT=cfg["HEAD_PPT"], PICK=cfg["PICK"],
                                 KEY=cfg["KEY"], LAYOUT=cfg["LAYOUT"], num_warps=cfg["num_warps"],
                                 num_stages=cfg["num_stages"])


def fps_reference(xyz, npoint: int, lengths=None, baseline: bool = False):
    """idx [B, npoint] int64 by the same passes in eager torch fp32, the batch at once: the squared
    distance ((dx dx + dy dy) + dz dz) an op at a time (the kernel's rounding), torch.minimum, and
    torch.argmax (the first maximum: the lowest index). Points past a cloud's length start at -1 (never
    the max); slots past min(npoint, length) are -1. With `baseline`, the eager loop torch users write
    (Pointnet_Pointnet2_pytorch's farthest_point_sample, from index 0): torch.sum((xyz - c) ** 2, -1),
    the masked update, torch.max(...)[1]."""
    import torch
    B, N, _ = xyz.shape
    dev = xyz.device
    L = torch.full((B,), N, dtype=torch.int64, device=dev) if lengths is None else lengths.to(torch.int64).clamp(0, N)
    valid = torch.arange(N, device=dev)[None, :] < L[:, None]
    x = torch.where(valid[..., None], xyz, torch.zeros((), device=dev))
    dist = torch.where(valid, torch.full((), float("inf"), device=dev), torch.full((), -1.0, device=dev))
    idx = torch.zeros((B, npoint), dtype=torch.int64, device=dev)
    far = torch.zeros((B,), dtype=torch.int64, device=dev)
    rows = torch.arange(B, device=dev)
    for i in range(1, npoint):
        c = x[rows, far]                                       # [B, 3]
        if baseline:
            d = torch.sum((x - c[:, None, :]) ** 2, -1)
            m = d < dist
            dist[m] = d[m]
            far = torch.max(dist, -1)[1]
        else:
            dx = x[:, :, 0] - c[:, 0:1]
            dy = x[:, :, 1] - c[:, 1:2]
            dz = x[:, :, 2] - c[:, 2:3]
            d = dx * dx + dy * dy
            d = d + dz * dz
            dist = torch.minimum(dist, d)
            far = torch.argmax(dist, dim=1)
        idx[:, i] = far
    k = torch.minimum(L, torch.tensor(npoint, device=dev))
    idx[torch.arange(npoint, device=dev)[None, :] >= k[:, None]] = -1
    return idx


def reference(inputs):
    """idx [B, npoint] int64 (fps_reference: the kernel's arithmetic in eager torch fp32); launch's indices
    equal it exactly (compared as values: a wrong pick is off by whole indices)."""
    return fps_reference(inputs["xyz"], inputs["npoint"], inputs.get("lengths"))


def torch_baseline(inputs):
    """The eager loop torch users write (fps_reference with baseline=True), int64 indices."""
    return fps_reference(inputs["xyz"], inputs["npoint"], inputs.get("lengths"), baseline=True)


def bytes_moved(point) -> int:
    """xyz read once (12 bytes a point of each cloud's length; the head once, the tail once into the
    scratch, which then stays in L1 / L2), idx written (npoint a cloud, 4 or 8 bytes), the lengths read."""
    q = _check_point(point)
    B, N = q["B"], q["N"]
    lens = _lengths(B, N) if q["ragged"] else [N] * B
    ie = 4 if q["index_dtype"] == "int32" else 8
    return 12 * sum(lens) + B * q["npoint"] * ie + (8 * B if q["ragged"] else 0)


def flops(point) -> int:
    """Per pass and point of a cloud: 3 subtracts, 3 products, 2 adds and a min (9); min(npoint, L) - 1
    passes a cloud of L points (the argmax's compares not counted)."""
    q = _check_point(point)
    B, N = q["B"], q["N"]
    lens = _lengths(B, N) if q["ragged"] else [N] * B
    return sum(9 * L * (min(q["npoint"], L) - 1) for L in lens)


def grid(cfg, point) -> tuple[int]:
    """(B,): one program a cloud."""
    q = _check_point(point)
    _check_cfg(cfg)
    return (q["B"],)


def loop_iterations(cfg, point) -> int:
    """The sample loop's passes of the longest cloud: min(npoint, N) - 1 (each pass the head's update
    and, with a tail, cdiv(N - HEAD, CHUNK) chunks streamed)."""
    q = _check_point(point)
    _check_cfg(cfg)
    return min(q["npoint"], q["N"]) - 1


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): xyz as
    make_inputs lays it out (the first three channels of [B, N, channels] or of [B, channels, N]), lengths [B]
    int64 when ragged, idx [B, npoint] contiguous, the tail scratch [B, 4 TAILP] fp32 when there is a
    tail; EXACT 1 (the GPU's arithmetic)."""
    import torch
    q = _check_point(point)
    _check_cfg(cfg)
    B, N = q["B"], q["N"]
    C = q["channels"]
    xyz = _xyz_view(torch.empty((B, C, N) if q["channel_first"] else (B, N, C), dtype=torch.float32,
                                device="meta"), q["channel_first"])
    lengths = torch.empty((B,), dtype=torch.int64, device="meta") if q["ragged"] else None
    idx = torch.empty((B, q["npoint"]), dtype=_torch_index_dtype(q["index_dtype"]), device="meta")
    _, _, tailp = _sizes(N, cfg)
    scr = torch.empty((B, 4 * tailp), dtype=torch.float32, device="meta") if tailp else None
    return _kernel_args(xyz, lengths, idx, scr, q["npoint"], cfg)
