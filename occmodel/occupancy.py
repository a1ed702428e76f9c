"""Exact occupancy: resident blocks per SM the way the CUDA driver computes it.

The rules are NVIDIA's (``cuda_occupancy.h``, which triton's wheel ships), and
they are checked against ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` on a
real H200 (tests/data/h200_driver_occupancy.csv):

* warps:     max_warps_per_sm // ceil(threads / 32); 0 when threads > 1024.
* registers: regs * 32 rounded up to the allocation unit (256) per warp; warps
  per sub-partition = (regs_per_sm / 4) // that; 0 when the block's registers,
  with its warps rounded up to the 4 sub-partitions, exceed regs_per_block.
* shared:    smem + 1 KB reserved, rounded up to 128 B, per block; the SM's
  shared memory is the carveout (a percent of the maximum, rounded up to the
  next supported size; None = the maximum); if one block needs more than the
  carveout, the next size that holds it is used. 0 when a block needs more
  than the opt-in per-block limit.
* blocks:    the per-SM block cap.

``smem`` is all shared memory of one block (static + dynamic). Kernels are
assumed to opt in to the large per-block limit, as Triton's launcher does.
Pure. One set of rules (:func:`_rules`) serves scalars and sweeps: plain Python
integers for one config (no numpy import: the calculator starts instantly), numpy
arrays for :func:`limits_arrays` / :func:`occupancy_grid` sweeps.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .spec import HardwareSpec, load_spec

UNLIMITED = 2**31 - 1          # a limit that does not apply (e.g. a kernel using 0 registers)
LIMITERS = ("warps", "blocks", "registers", "shared_memory", "barriers")
"""Order used to name one limiter when several tie: hardware caps first, since
relaxing a resource that ties with a cap gains nothing."""


@dataclass(frozen=True)
class Headroom:
    """How far registers / shared memory can move before resident blocks change.

    ``*_to_lose`` is how many more units the block can take and keep its resident
    blocks (None: no amount loses a block within the legal range);
    ``*_to_gain`` is how many fewer it must use to gain one (None: another limit
    binds, so no reduction helps)."""

    regs_to_lose: int | None
    regs_to_gain: int | None
    smem_to_lose: int | None
    smem_to_gain: int | None


@dataclass(frozen=True)
class Occupancy:
    threads: int
    regs: int
    smem: int
    carveout: int | None
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float               # warps_per_sm / max warps per SM
    limiter: str                   # the binding limit (see LIMITERS); ties: all are in `limiters`
    limiters: tuple[str, ...]
    limits: dict[str, int]         # blocks per SM each limit alone allows (UNLIMITED if none)
    warps_per_block: int
    regs_per_block: int            # registers allocated to one block
    smem_per_block: int            # shared memory allocated to one block (reserved + rounding)
    smem_per_sm: int               # the SM's shared memory under this carveout
    headroom: Headroom | None
    reason: str                    # why 0 blocks fit; "" when the block fits

    @property
    def fits(self) -> bool:
        return self.blocks_per_sm > 0

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "headroom"}
        d["limits"] = dict(self.limits)
        d["limiters"] = list(self.limiters)
        d["headroom"] = None if self.headroom is None else vars(self.headroom).copy()
        return d


# ------------------------------------------------------------------ checks
def check_inputs(spec: HardwareSpec, threads: int, regs: int, smem: int, carveout: int | None) -> None:
    """Raise ConfigError for values no kernel can have (not for ones that merely do not fit)."""
    sm = spec.sm
    for name, value in (("threads", threads), ("regs", regs), ("smem", smem)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ConfigError(f"{name} must be an integer, got {value!r}")
    if not 1 <= threads <= sm.max_threads_per_block:
        raise ConfigError(f"threads={threads} is out of range; allowed 1..{sm.max_threads_per_block}")
    if not 0 <= regs <= sm.max_registers_per_thread:
        raise ConfigError(f"regs={regs} is out of range; allowed 0..{sm.max_registers_per_thread} "
                          "registers per thread")
    if smem < 0:
        raise ConfigError(f"smem={smem} is negative; shared memory per block is bytes >= 0")
    if carveout is not None and (isinstance(carveout, bool) or not isinstance(carveout, numbers.Integral)
                                 or not 0 <= carveout <= 100):
        raise ConfigError(f"carveout={carveout!r} is out of range; allowed None (driver default) "
                          "or a percent 0..100")


# ------------------------------------------------------------- the rules
class _Scalar:
    """Python-int versions of the few array operations the rules use."""

    @staticmethod
    def where(cond, a, b):
        return a if cond else b

    @staticmethod
    def maximum(a, b):
        return max(a, b)

    @staticmethod
    def align(options: list[int], nbytes: int) -> int:
        """Round bytes up to the next carveout the SM supports (the largest if none holds it)."""
        return next((o for o in options if o >= nbytes), options[-1])


class _Numpy:
    def __init__(self):
        import numpy as np
        self.np = np
        self.where, self.maximum = np.where, np.maximum

    def align(self, options: list[int], nbytes):
        np = self.np
        opts = np.asarray(options, dtype=np.int64)
        idx = np.searchsorted(opts, nbytes, side="left")
        return opts[np.minimum(idx, len(opts) - 1)]


def _rules(spec: HardwareSpec, threads, regs, smem, carve, bars, xp) -> dict[str, Any]:
    """The driver's rules, once, for ints (xp=_Scalar) or int64 arrays (xp=_Numpy()).
    ``carve`` < 0 means the driver default."""
    sm = spec.sm
    options = [kb * 1024 for kb in sm.carveout_kb]
    warps_per_block = (threads + sm.warp_size - 1) // sm.warp_size

    # warps
    by_warps = xp.where(threads > sm.max_threads_per_block, 0, sm.max_warps_per_sm // warps_per_block)

    # registers (allocated per warp, in units; warps spread over sub-partitions)
    unit, parts = sm.register_allocation_unit, sm.warp_allocation_granularity
    regs_per_warp = -(-(regs * sm.warp_size) // unit) * unit
    regs_per_block = regs_per_warp * warps_per_block
    regs_assumed = regs_per_warp * (-(-warps_per_block // parts) * parts)
    too_many = ((regs_assumed > sm.registers_per_block) | (regs_per_block > sm.registers_per_block)
                | (regs > sm.max_registers_per_thread))
    warps_per_part = (sm.registers_per_sm // parts) // xp.maximum(regs_per_warp, 1)
    by_regs = xp.where(regs_per_warp > 0, (warps_per_part * parts) // warps_per_block, UNLIMITED)
    by_regs = xp.where(too_many, 0, by_regs)

    # shared memory
    sunit = sm.shared_memory_allocation_unit
    smem_per_block = -(-(smem + sm.reserved_shared_memory_per_block) // sunit) * sunit
    limit_per_block = sm.shared_memory_per_block_optin + sm.reserved_shared_memory_per_block
    preference = xp.where(carve < 0, sm.shared_memory_per_sm, (carve * sm.shared_memory_per_sm) // 100)
    preference = xp.align(options, preference)
    smem_per_sm = xp.where(preference >= smem_per_block, preference, xp.align(options, smem_per_block))
    by_smem = xp.where(smem_per_block > 0, smem_per_sm // xp.maximum(smem_per_block, 1), UNLIMITED)
    by_smem = xp.where(smem_per_block > limit_per_block, 0, by_smem)

    # block barriers (compute capability >= 9): a block normally uses one
    if spec.compute_capability[0] >= 9:
        by_bars = xp.where(bars > 0, (sm.barriers_per_block_slot * sm.max_blocks_per_sm) // xp.maximum(bars, 1),
                           UNLIMITED)
    else:
        by_bars = UNLIMITED
    return {"warps": by_warps, "blocks": sm.max_blocks_per_sm, "registers": by_regs, "shared_memory": by_smem,
            "barriers": by_bars, "smem_per_block": smem_per_block, "smem_per_sm": smem_per_sm,
            "regs_per_block": regs_per_block, "warps_per_block": warps_per_block}


def _limits_scalar(spec: HardwareSpec, threads: int, regs: int, smem: int, carveout=None,
                   barriers: int = 1) -> dict[str, int]:
    """limits_arrays for one config, in plain Python integers."""
    out = _rules(spec, int(threads), int(regs), int(smem), -1 if carveout is None else int(carveout),
                 int(barriers), _Scalar)
    out = {k: int(v) for k, v in out.items()}
    out["resident"] = min(out[name] for name in LIMITERS)
    return out


def limits_arrays(spec: HardwareSpec, threads, regs, smem, carveout=None, barriers=1) -> dict:
    """Blocks per SM allowed by each limit, for broadcastable integer arrays.

    ``carveout`` may be None or an array with -1 meaning the driver default.
    Returns int64 arrays: one per name in LIMITERS, plus ``resident`` (their min),
    ``smem_per_block``, ``smem_per_sm`` and ``regs_per_block``. No validation.
    """
    xp = _Numpy()
    np = xp.np
    a = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    carve = a(-1 if carveout is None else carveout)
    r = _rules(spec, a(threads), a(regs), a(smem), carve, a(barriers), xp)
    arrays = np.broadcast_arrays(*(a(r[name]) for name in LIMITERS))
    out = dict(zip(LIMITERS, (x.astype(np.int64) for x in arrays)))
    out["resident"] = np.minimum.reduce(arrays)
    for key in ("smem_per_block", "smem_per_sm", "regs_per_block", "warps_per_block"):
        out[key] = np.broadcast_to(a(r[key]), out["resident"].shape)
    return out


def occupancy_grid(spec: HardwareSpec | str, threads, regs, smem, carveout=None) -> dict:
    """Vectorised occupancy for sweeps: arrays of blocks_per_sm, warps_per_sm,
    occupancy and limiter (an index into LIMITERS), broadcast over the inputs."""
    spec = load_spec(spec)
    import numpy as np
    lim = limits_arrays(spec, threads, regs, smem, carveout)
    blocks = lim["resident"]
    warps = blocks * lim["warps_per_block"]
    stacked = np.stack([lim[name] for name in LIMITERS])
    return {"blocks_per_sm": blocks, "warps_per_sm": warps,
            "occupancy": warps / spec.sm.max_warps_per_sm,
            "limiter": np.argmax(stacked == blocks, axis=0)}


def _blocks(spec: HardwareSpec, threads: int, regs: int, smem: int, carveout: int | None) -> int:
    return _limits_scalar(spec, threads, regs, smem, carveout)["resident"]


def _last_true(pred, lo: int, hi: int) -> int:
    """Largest x in [lo, hi] with pred(x), given pred(lo) and pred monotone (True then False)."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pred(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def headroom(spec: HardwareSpec, threads: int, regs: int, smem: int, carveout: int | None) -> Headroom:
    """Exact headroom by bisection; resident blocks never rise with regs or smem."""
    sm = spec.sm
    now = _blocks(spec, threads, regs, smem, carveout)
    max_regs, max_smem = sm.max_registers_per_thread, sm.shared_memory_per_block_optin

    def lose(value: int, top: int, blocks_at) -> int | None:
        if now == 0:
            return None
        last_same = _last_true(lambda x: blocks_at(x) >= now, value, top)
        return None if last_same == top and blocks_at(top) >= now else last_same + 1 - value

    def gain(value: int, blocks_at) -> int | None:
        if value == 0 or blocks_at(0) <= now:
            return None
        # largest x < value that still gains a block; blocks_at(x) > now is True then False
        return value - _last_true(lambda x: blocks_at(x) > now, 0, value)

    by_regs = lambda r: _blocks(spec, threads, r, smem, carveout)  # noqa: E731
    by_smem = lambda s: _blocks(spec, threads, regs, s, carveout)  # noqa: E731
    return Headroom(regs_to_lose=lose(regs, max_regs, by_regs), regs_to_gain=gain(regs, by_regs),
                    smem_to_lose=lose(smem, max_smem, by_smem), smem_to_gain=gain(smem, by_smem))


def occupancy(spec: HardwareSpec | str, threads: int, regs: int, smem: int,
              carveout: int | None = None, *, barriers: int = 1, with_headroom: bool = True) -> Occupancy:
    """Resident blocks/warps per SM for one kernel launch config, as the driver computes it.

    threads: threads per block (1..1024); regs: registers per thread (0..255);
    smem: shared memory of one block, static + dynamic, bytes; carveout: None
    for the driver default or a percent 0..100 (CU_FUNC_ATTRIBUTE_PREFERRED_
    SHARED_MEMORY_CARVEOUT); barriers: block barriers the kernel uses.
    """
    spec = load_spec(spec)
    check_inputs(spec, threads, regs, smem, carveout)
    threads, regs, smem = int(threads), int(regs), int(smem)
    lim = _limits_scalar(spec, threads, regs, smem, carveout, barriers)
    limits = {name: int(lim[name]) for name in LIMITERS}
    blocks = int(lim["resident"])
    binding = tuple(name for name in LIMITERS if limits[name] == blocks)
    wpb = int(lim["warps_per_block"])
    sm = spec.sm
    reason = ""
    if blocks == 0:
        if limits["warps"] == 0:
            reason = f"{threads} threads per block exceeds the {sm.max_threads_per_block} allowed"
        elif limits["registers"] == 0:
            reason = (f"{regs} registers x {threads} threads needs {int(lim['regs_per_block'])} registers "
                      f"(warps rounded to {sm.warp_allocation_granularity} sub-partitions) > "
                      f"{sm.registers_per_block} per block")
        elif limits["shared_memory"] == 0:
            reason = (f"shared memory {smem} B (+{sm.reserved_shared_memory_per_block} B reserved) exceeds the "
                      f"{sm.shared_memory_per_block_optin} B per-block opt-in limit of {spec.name}")
    return Occupancy(
        threads=threads, regs=regs, smem=smem, carveout=carveout,
        blocks_per_sm=blocks, warps_per_sm=blocks * wpb,
        occupancy=blocks * wpb / sm.max_warps_per_sm,
        limiter=binding[0], limiters=binding, limits=limits, warps_per_block=wpb,
        regs_per_block=int(lim["regs_per_block"]), smem_per_block=int(lim["smem_per_block"]),
        smem_per_sm=int(lim["smem_per_sm"]),
        headroom=headroom(spec, threads, regs, smem, carveout) if with_headroom else None,
        reason=reason)
