"""Calibration constants of the static throughput model (:mod:`occmodel.rank`), per GPU.

A calibration is six numbers and where they came from::

    bandwidth_gbs     achievable DRAM bandwidth, GB/s (a device-to-device copy, read + write)
    latency_ns        loaded DRAM latency, ns: bytes in flight / bandwidth of a streaming
                      Triton kernel with one tile in flight per CTA (Little's law read
                      backwards), at the heaviest load that stays latency-bound
    launch_us         cost of one kernel launch inside a CUDA graph (empty-kernel replays), us
    l2_bandwidth_gbs  L2 -> SM bandwidth, GB/s (a streaming read whose working set fits in L2)
    l2_latency_ns     L2 hit latency, ns (the latency probe on an L2-resident buffer)
    shared_bandwidth_gbs  shared-memory bandwidth of all SMs, GB/s: 128 B per clock per SM
                      (32 banks x 4 B) x SMs x the max SM clock (read from the device when
                      measured, the product's boost clock on the datasheet)
    latency_curve     optional: the loaded DRAM latency as a curve of load, pairs (bytes in
                      flight per SM, latency ns) from the same probe at 4 KB .. 256 KB per SM;
                      rank reads it at each config's own load (:func:`latency_at`) instead of
                      the single figure, which depends on where a threshold falls

They are written as YAML beside the spec, by default
``~/.cache/occmodel/calibration/<spec>-<gpu>.yaml`` (``$OCCMODEL_CACHE_DIR`` replaces
``~/.cache/occmodel``). :func:`occmodel.gpu_calibrate.measure` runs the micro-benchmarks
(torch and a GPU; it imports this module, never the other way round); everything here is pure.
`occmodel calibrate` runs it several times and keeps :func:`best_of` the repeats (each figure's
best: a disturbed run only slows a probe down), naming the figures whose repeats disagree
(:func:`spread_note`).

Without a calibration the model uses :func:`datasheet`: the spec product's bandwidth,
and the DEFAULT_* latency, launch and L2 figures below (assumptions, stated as such).
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Sequence

import yaml

from .errors import OccmodelError, SpecError
from .spec import HardwareSpec

DEFAULT_LATENCY_NS = 800.0       # loaded HBM/GDDR latency: a typical Hopper/Blackwell figure, not measured
DEFAULT_LAUNCH_US = 2.5          # a kernel back to back inside a CUDA graph, not measured
DEFAULT_L2_FACTOR = 2.5          # L2 bandwidth as a multiple of DRAM bandwidth, not measured
DEFAULT_L2_LATENCY_NS = 300.0    # L2 hit latency, not measured
DEFAULT_CLOCK_MHZ = 1800.0       # SM clock when the spec's product names none, not measured
SHARED_BYTES_PER_CLOCK = 128     # per SM: 32 banks x 4 B (CUDA C++ Programming Guide, shared memory)


class CalibrationError(OccmodelError):
    """A calibration file that is missing or malformed."""


@dataclass(frozen=True)
class Calibration:
    spec: str                    # spec name it was measured for ("sm_90")
    gpu: str                     # device name ("NVIDIA H200") or the product for datasheet figures
    sms: int
    bandwidth_gbs: float
    latency_ns: float
    launch_us: float
    l2_bandwidth_gbs: float
    source: str                  # "measured on ..." or "datasheet: ..."
    l2_latency_ns: float = DEFAULT_L2_LATENCY_NS
    shared_bandwidth_gbs: float = 0.0      # 0: derive from sms x 128 B x DEFAULT_CLOCK_MHZ (see __post_init__)
    latency_curve: tuple[tuple[float, float], ...] = ()    # (bytes in flight per SM, ns), ascending; () none

    def __post_init__(self):
        if not self.shared_bandwidth_gbs:
            object.__setattr__(self, "shared_bandwidth_gbs", shared_bandwidth_gbs(self.sms, DEFAULT_CLOCK_MHZ))
        object.__setattr__(self, "latency_curve", tuple(sorted((float(q), float(ns)) for q, ns in self.latency_curve)))

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["latency_curve"] = [[q, ns] for q, ns in self.latency_curve]
        return d


OPTIONAL_FIELDS = ("l2_latency_ns", "shared_bandwidth_gbs", "latency_curve")


def latency_at(cal: Calibration, in_flight_per_sm: float) -> float:
    """Loaded DRAM latency (ns) at `in_flight_per_sm` bytes in flight per SM: the calibration's
    curve, linear between its probes; below the lightest probe its latency; above the heaviest,
    the heaviest probe's latency grown by Little's law at that probe's bandwidth (in flight /
    bandwidth: more bytes queued behind the same throughput). The single ``latency_ns`` when
    the calibration has no curve (datasheet figures, older files)."""
    curve = cal.latency_curve
    if not curve:
        return cal.latency_ns
    q = max(0.0, float(in_flight_per_sm))
    if q <= curve[0][0]:
        return curve[0][1]
    for (q0, l0), (q1, l1) in zip(curve, curve[1:]):
        if q <= q1:
            return l0 + (l1 - l0) * (q - q0) / (q1 - q0) if q1 > q0 else l1
    q_last, l_last = curve[-1]
    return l_last * q / q_last


# A figure whose repeats differ by more than this (slowest over fastest) is named in `spread_note`: one
# disturbed run. Session 36: a fresh H100 start's first calibration ran its 1-CTA-per-SM latency probes 2-3.5x
# slower than its second and than a later start's three (903 vs 400-430 ns at 4 KiB per SM, 3,184 vs 900-980 ns
# at 16 KiB), while the runs on other starts agreed within 8 % (reports/GPU_NOTES.md section 44).
SPREAD_WARN = 1.25


def best_of(cals: Sequence[Calibration]) -> Calibration:
    """One calibration from repeats on one GPU: each bandwidth its highest, each latency and the launch cost
    its lowest, the latency curve its lowest at every probe the repeats share. A disturbance (another
    process, clocks still rising after a start) only ever slows a probe down, so the best repeat is the
    machine's; a median needs three repeats to outvote one bad run. CalibrationError when the repeats are of
    different GPUs or specs."""
    if not cals:
        raise CalibrationError("best_of needs at least one calibration")
    first = cals[0]
    for c in cals[1:]:
        if (c.spec, c.gpu, c.sms) != (first.spec, first.gpu, first.sms):
            raise CalibrationError(f"calibrations of different machines: {first.gpu} ({first.spec}, {first.sms} SMs) "
                                   f"and {c.gpu} ({c.spec}, {c.sms} SMs)")
    if len(cals) == 1:
        return first
    curve = tuple((q, min(dict(c.latency_curve)[q] for c in cals)) for q in _shared_probes(cals))
    return Calibration(spec=first.spec, gpu=first.gpu, sms=first.sms,
                       bandwidth_gbs=max(c.bandwidth_gbs for c in cals),
                       latency_ns=min(c.latency_ns for c in cals), launch_us=min(c.launch_us for c in cals),
                       l2_bandwidth_gbs=max(c.l2_bandwidth_gbs for c in cals),
                       l2_latency_ns=min(c.l2_latency_ns for c in cals),
                       shared_bandwidth_gbs=max(c.shared_bandwidth_gbs for c in cals), latency_curve=curve,
                       source=f"best of {len(cals)} repeats (highest bandwidths, lowest latencies); the first: "
                              + first.source)


def _shared_probes(cals: Sequence[Calibration]) -> list[float]:
    """The latency curve's probes (bytes in flight per SM) every calibration measured, ascending."""
    if not cals:
        return []
    return sorted(set.intersection(*(set(q for q, _ in c.latency_curve) for c in cals)))


def spreads(cals: Sequence[Calibration]) -> dict[str, float]:
    """Per figure, its slowest repeat over its fastest (1.0: all agree): bandwidths max / min, latencies and
    the launch cost max / min; the curve's probes as 'latency_ns at Q KB'."""
    out: dict[str, float] = {}
    for name in ("bandwidth_gbs", "l2_bandwidth_gbs", "latency_ns", "l2_latency_ns", "launch_us"):
        vals = [getattr(c, name) for c in cals]
        out[name] = max(vals) / min(vals) if min(vals) > 0 else float("inf")
    for q in _shared_probes(cals):
        vals = [dict(c.latency_curve)[q] for c in cals]
        out[f"latency_ns at {q / 1024:g} KB"] = max(vals) / min(vals) if min(vals) > 0 else float("inf")
    return out


def spread_note(cals: Sequence[Calibration]) -> str | None:
    """A line naming the figures whose repeats differ by more than SPREAD_WARN, or None."""
    bad = {k: v for k, v in spreads(cals).items() if v > SPREAD_WARN}
    if not bad:
        return None
    return (f"{len(cals)} repeats disagree by more than {SPREAD_WARN:g}x on " + ", ".join(f"{k} ({v:.2f}x)" for k, v in bad.items())
            + ": the best repeat is kept; if the machine was busy or just started, calibrate again")


def shared_bandwidth_gbs(sms: int, clock_mhz: float) -> float:
    return round(sms * SHARED_BYTES_PER_CLOCK * clock_mhz * 1e6 / 1e9, 1)


def datasheet(spec: HardwareSpec, product: str | None = None) -> Calibration:
    """Figures for a GPU nobody calibrated: the spec product's datasheet bandwidth and
    clock, the DEFAULT_* latencies / launch / L2 factor."""
    prod = spec.product(product)
    clock = prod.boost_clock_mhz or DEFAULT_CLOCK_MHZ
    clock_note = (f"clock {clock:g} MHz from the datasheet" if prod.boost_clock_mhz
                  else f"clock {clock:g} MHz (a default, not the product's figure)")
    return Calibration(spec=spec.name, gpu=prod.name, sms=prod.sms, bandwidth_gbs=float(prod.memory_bandwidth_gbs),
                       latency_ns=DEFAULT_LATENCY_NS, launch_us=DEFAULT_LAUNCH_US,
                       l2_bandwidth_gbs=DEFAULT_L2_FACTOR * prod.memory_bandwidth_gbs,
                       l2_latency_ns=DEFAULT_L2_LATENCY_NS,
                       shared_bandwidth_gbs=shared_bandwidth_gbs(prod.sms, clock),
                       source=f"datasheet: {prod.source}; latency {DEFAULT_LATENCY_NS:g} ns, L2 latency "
                              f"{DEFAULT_L2_LATENCY_NS:g} ns, launch {DEFAULT_LAUNCH_US:g} us and L2 = "
                              f"{DEFAULT_L2_FACTOR:g} x DRAM bandwidth are defaults, not measurements; {clock_note}")


def cache_root() -> Path:
    return Path(os.environ.get("OCCMODEL_CACHE_DIR") or Path.home() / ".cache" / "occmodel")


def default_path(spec_name: str, gpu: str) -> Path:
    """~/.cache/occmodel/calibration/<spec>-<gpu slug>.yaml"""
    slug = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-") or "gpu"
    return cache_root() / "calibration" / f"{spec_name}-{slug}.yaml"


def save(cal: Calibration, path: Path) -> Path:
    """Write `cal` as YAML (atomically: a crash leaves the old file); CalibrationError naming the file."""
    from ._cache import atomic_write
    path = Path(path)
    text = "# occmodel calibration: constants of the static throughput model (occmodel rank)\n"
    text += yaml.safe_dump(cal.as_dict(), sort_keys=False)
    try:
        atomic_write(path, text.encode())
    except OSError as exc:
        raise CalibrationError(f"cannot write calibration file {str(path)!r}: {exc.strerror or exc}") from None
    return path


# what a GPU can plausibly have: bounds that catch typos and units mix-ups, not real hardware
_LIMITS = {"sms": (1, 10_000), "bandwidth_gbs": (1.0, 1e6), "latency_ns": (1.0, 1e6), "launch_us": (0.01, 1e5),
           "l2_bandwidth_gbs": (1.0, 1e7), "l2_latency_ns": (1.0, 1e6), "shared_bandwidth_gbs": (1.0, 1e8),
           "curve_bytes": (1.0, 1e9)}


def _check_value(name: str, kind: str, v: Any) -> str | None:
    """Why `v` is not a valid value of field `name` (None when it is)."""
    import math
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"must be a number, got {v!r}"[:120]
    if not math.isfinite(v):
        return f"must be a finite number, got {v!r}"
    if kind == "int" and v != int(v):
        return f"must be a whole number, got {v!r}"
    if v <= 0:
        return f"must be a positive number, got {v!r}"
    lo, hi = _LIMITS.get(name, (0.0, math.inf))
    if not lo <= v <= hi:
        return f"must be a positive number in {lo:g}..{hi:g}, got {v!r}"
    return None


def _check_curve(v: Any) -> str | None:
    """Why `v` is not a latency curve (a list of [bytes in flight per SM, ns] pairs), or None."""
    if not isinstance(v, list) or not all(isinstance(p, list) and len(p) == 2 for p in v):
        return f"must be a list of [bytes in flight per SM, latency ns] pairs, got {v!r}"[:160]
    for q, ns in v:
        bad = _check_value("curve_bytes", "float", q) or _check_value("latency_ns", "float", ns)
        if bad:
            return f"pair [{q!r}, {ns!r}]: {bad}"[:160]
    if len({float(q) for q, _ in v}) != len(v):
        return "two pairs with the same bytes in flight"
    return None


def load(path: str | os.PathLike) -> Calibration:
    """Read a calibration YAML; CalibrationError naming every missing or bad field."""
    path = Path(path)
    if not path.is_file():
        raise CalibrationError(f"calibration file {str(path)!r} does not exist "
                               "(write one with `occmodel calibrate` on the GPU)")
    try:
        if path.stat().st_size > 1 << 20:
            raise CalibrationError(f"calibration file {str(path)!r} is over 1 MB; a calibration is a few lines")
        data = yaml.safe_load(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise CalibrationError(f"cannot read calibration file {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CalibrationError(f"calibration file {str(path)!r} is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise CalibrationError(f"{path}: malformed YAML: {str(exc).splitlines()[0]}") from None
    except (RecursionError, ValueError) as exc:
        raise CalibrationError(f"{path}: malformed YAML: {type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise CalibrationError(f"{path}: must be a mapping of {', '.join(f.name for f in fields(Calibration))}")
    errors, values, defaulted = [], {}, []
    for f in fields(Calibration):
        v = data.get(f.name)
        if v is None and f.name in OPTIONAL_FIELDS:      # files written before these existed
            defaulted.append(f.name)
            continue
        if v is None:
            errors.append(f"{f.name}: required field")
        elif f.name == "latency_curve":
            why = _check_curve(v)
            if why:
                errors.append(f"latency_curve: {why}")
            else:
                values[f.name] = tuple((float(q), float(ns)) for q, ns in v)
        elif f.type in ("float", "int") and _check_value(f.name, f.type, v):
            errors.append(f"{f.name}: {_check_value(f.name, f.type, v)}")
        elif f.type == "str" and not isinstance(v, (str, int, float)):
            errors.append(f"{f.name}: must be text, got a {type(v).__name__}")
        else:
            values[f.name] = int(v) if f.type == "int" else float(v) if f.type == "float" else str(v)
    if errors:
        hint = "" if Path(path).parent != cache_root() / "calibration" else \
            " (a cached calibration: fix or delete it, or pass --calibration FILE)"
        raise CalibrationError(f"{path}: " + "; ".join(errors) + hint)
    if defaulted:
        values["source"] = values.get("source", "") + f"; {', '.join(defaulted)} not in the file: defaults"
    return Calibration(**values)


def find(spec: HardwareSpec) -> Calibration | None:
    """The single cached calibration for this spec, if exactly one exists."""
    hits = sorted((cache_root() / "calibration").glob(f"{spec.name}-*.yaml"))
    return load(hits[0]) if len(hits) == 1 else None


def resolve(spec: HardwareSpec, path: str | os.PathLike | None = None, product: str | None = None) -> Calibration:
    """--calibration FILE, else the cached one for the spec, else the datasheet figures.
    SpecError if a given calibration was measured for a different spec."""
    cal = load(path) if path is not None else find(spec)
    if cal is None:
        return datasheet(spec, product)
    if cal.spec != spec.name:
        raise SpecError(f"calibration {str(path)!r} was measured for {cal.spec}, not {spec.name}; "
                        f"pass --spec {cal.spec}")
    return cal
