"""The model: predicted shared memory, registers and occupancy of a card's configs.

A card states its shared memory and register need as sympy expressions over its
numeric parameters (``card.shared_memory(cc, cfg)``, ``card.registers(cc, cfg)``);
this module evaluates them (vectorised for sweeps), feeds the result to the exact
occupancy rules, and answers the symbolic questions (largest num_stages that fits,
budget left for one more resident block). Pure: no torch, no GPU; imports the card
module (triton, for its @jit kernel) but compiles nothing.

Building a card's expressions costs sympy's import and about a second of sympy work, more
than the rest of ``occmodel predict``. So the numeric form of each expression (numpy source
printed by sympy) and whatever a command derives from the expressions (:func:`memo`) are
kept on disk under ``$OCCMODEL_CACHE_DIR/model/``, keyed by the card's source files
(:func:`card_fingerprint`), this module and the arch: a second run imports no sympy. A
memo that cannot be read is rebuilt, one that cannot be written is skipped; the memo
never changes a number (tests/test_model_memo.py).
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from .card import Config, KernelCard
from .occupancy import LIMITERS, Occupancy, limits_arrays, occupancy
from .spec import HardwareSpec

MEMO_VERSION = 1


@dataclass(frozen=True)
class Prediction:
    config: Config
    threads: int
    shared: int                 # predicted bytes of shared memory per block (static + dynamic)
    regs_estimate: int          # the register expression's value (may exceed 255: predicts spills)
    occupancy: Occupancy | None  # from the predicted registers (capped at 255) and shared memory
    fits: bool
    reason: str                 # why it does not fit ("" if it does)

    @property
    def regs(self) -> int:
        """Registers ptxas would allocate: the estimate, capped at 255."""
        return min(self.regs_estimate, 255)

    @property
    def spills_predicted(self) -> bool:
        return self.regs_estimate > 255


def _key(card: KernelCard, cfg: Config) -> tuple:
    """Configs with equal string parameters (dtype...) share one expression."""
    return tuple(sorted((k, v) for k, v in cfg.items() if isinstance(v, str)))


# --------------------------------------------------------------- the memo
_FINGERPRINTS: dict[int, tuple[KernelCard, str | None]] = {}


def card_fingerprint(card: KernelCard) -> str | None:
    """A hash of what a card's expressions can depend on: the source files of its class and
    every base class, its name, parameters and baseline, and this module (None: a class with no
    source file, e.g. built in a notebook; such a card is never memoised)."""
    hit = _FINGERPRINTS.get(id(card))
    if hit is not None and hit[0] is card:
        return hit[1]
    h = hashlib.sha256(f"occmodel-model-{MEMO_VERSION}".encode())
    files = {__file__, str(Path(__file__).with_name("exprfmt.py"))}
    digest: str | None
    try:
        for cls in type(card).__mro__[:-1]:
            files.add(sys.modules[cls.__module__].__file__)
        for f in sorted(files):
            h.update(f.encode() + b"\0" + Path(f).read_bytes())
        h.update(repr((card.name, card.params, sorted(dict(card.baseline).items(), key=str))).encode())
        digest = h.hexdigest()
    except (KeyError, TypeError, AttributeError, OSError):
        digest = None
    _FINGERPRINTS[id(card)] = (card, digest)
    return digest


def _memo_path(parts: tuple) -> Path:
    from ._cache import model_dir
    key = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
    return model_dir() / key[:2] / f"{key}.json"


def memo(card: KernelCard, parts: tuple, build: Callable[[], Any]) -> Any:
    """`build()` (a JSON value derived from the card's expressions), memoised on disk under
    the card's fingerprint and `parts`."""
    fp = card_fingerprint(card)
    if fp is None:
        return build()
    path = _memo_path((fp, *parts))
    try:
        entry = json.loads(path.read_text())
        if isinstance(entry, dict) and entry.get("parts") == json.loads(json.dumps([fp, *parts], default=str)):
            return entry["value"]
    except (OSError, ValueError, KeyError):
        pass
    value = build()
    try:
        from ._cache import atomic_write
        atomic_write(path, json.dumps({"parts": [fp, *parts], "value": value}, default=str).encode())
    except OSError:
        pass                              # a memo is an optimisation: never fail a command for it
    return value


# --------------------------------------------------------- the expressions
_EXPR_CACHE: dict[tuple, tuple] = {}


def _numeric_names(card: KernelCard) -> list[str]:
    return sorted(p.name for p in card.all_params if not isinstance(p.default, str))


def _build_exprs(card: KernelCard, cc: tuple[int, int], strkey: tuple):
    """(shared, regs) as sympy expressions (imports sympy)."""
    import sympy
    cfg = dict(strkey)
    for p in card.all_params:          # string params only come from strkey; numbers stay symbolic
        cfg.setdefault(p.name, p.default)
    return sympy.sympify(card.shared_memory(cc, cfg)), sympy.sympify(card.registers(cc, cfg))


def _numpy_source(card: KernelCard, cc: tuple[int, int], strkey: tuple) -> dict[str, str]:
    from sympy.printing.numpy import NumPyPrinter
    shared, regs = _build_exprs(card, cc, strkey)
    printer = NumPyPrinter({"fully_qualified_modules": True})
    return {"shared": printer.doprint(shared), "regs": printer.doprint(regs)}


def _compiled_exprs(card: KernelCard, cc: tuple[int, int], strkey: tuple):
    """(names, f_shared, f_regs): numpy functions of the numeric parameters (sorted names),
    cached per card object, arch and string params, and on disk (:func:`memo`)."""
    key = (id(card), cc, strkey)
    hit = _EXPR_CACHE.get(key)
    if hit is not None and hit[0] is card:
        return hit[1]
    import functools
    import math

    import numpy
    names = _numeric_names(card)
    code = memo(card, ("numpy", list(cc), [list(kv) for kv in strkey]), lambda: _numpy_source(card, cc, strkey))
    args = ", ".join(names)
    env = {"numpy": numpy, "functools": functools, "math": math}
    value = (names, eval(f"lambda {args}: ({code['shared']})", env),  # noqa: S307 - sympy's own printout
             eval(f"lambda {args}: ({code['regs']})", env))         # noqa: S307
    _EXPR_CACHE[key] = (card, value)
    return value


_EXISTS: dict[tuple, tuple] = {}


def model_exists(card: KernelCard, cc: tuple[int, int], cfg: Config) -> bool:
    """Whether the card states both expressions for this arch and config (memoised per
    arch and string parameters, in memory and on disk: asking imports no sympy once known)."""
    strkey = _key(card, cfg)
    key = (id(card), tuple(cc), strkey)
    hit = _EXISTS.get(key)
    if hit is not None and hit[0] is card:
        return hit[1]
    answer = bool(memo(card, ("has-model", list(cc), [list(kv) for kv in strkey]),
                       lambda: card.shared_memory(cc, cfg) is not None and card.registers(cc, cfg) is not None))
    _EXISTS[key] = (card, answer)
    return answer


def expressions(card: KernelCard, spec: HardwareSpec, cfg: Config):
    """(shared-memory bytes, registers per thread) as sympy expressions for this arch."""
    return _build_exprs(card, spec.compute_capability, _key(card, cfg))


def _evaluate(card: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config]):
    import numpy as np
    shared = np.zeros(len(cfgs), dtype=np.int64)
    regs = np.zeros(len(cfgs), dtype=np.int64)
    groups: dict[tuple, list[int]] = {}
    for i, cfg in enumerate(cfgs):
        groups.setdefault(_key(card, cfg), []).append(i)
    for strkey, idx in groups.items():
        names, f_shared, f_regs = _compiled_exprs(card, spec.compute_capability, strkey)
        cols = [np.array([cfgs[i][n] for i in idx], dtype=np.int64) for n in names]
        shared[idx] = np.broadcast_to(np.asarray(f_shared(*cols), dtype=np.float64).round(), len(idx))
        regs[idx] = np.broadcast_to(np.asarray(f_regs(*cols), dtype=np.float64).round(), len(idx))
    return shared, regs


def predict(card: KernelCard, spec: HardwareSpec, cfg: Config, carveout: int | None = None) -> Prediction:
    """Predicted shared memory, registers and exact occupancy of one config."""
    shared, regs = (int(a[0]) for a in _evaluate(card, spec, [cfg]))
    threads = 32 * int(cfg["num_warps"])
    occ = occupancy(spec, threads=threads, regs=min(regs, 255), smem=shared, carveout=carveout)
    return Prediction(config=dict(cfg), threads=threads, shared=shared, regs_estimate=regs,
                      occupancy=occ, fits=occ.fits, reason=occ.reason)


def predict_many(card: KernelCard, spec: HardwareSpec, cfgs: Sequence[Config],
                 carveout: int | None = None) -> dict:
    """Vectorised predictions for a sweep: arrays shared, regs_estimate, threads,
    blocks_per_sm, warps_per_sm, occupancy, limiter (index into LIMITERS), fits."""
    import numpy as np
    shared, regs = _evaluate(card, spec, cfgs)
    threads = np.array([32 * int(c["num_warps"]) for c in cfgs], dtype=np.int64)
    lim = limits_arrays(spec, threads, np.minimum(regs, 255), shared, carveout)
    blocks = lim["resident"]
    stacked = np.stack([lim[n] for n in LIMITERS])
    return {"shared": shared, "regs_estimate": regs, "threads": threads, "blocks_per_sm": blocks,
            "warps_per_sm": blocks * lim["warps_per_block"],
            "occupancy": blocks * lim["warps_per_block"] / spec.sm.max_warps_per_sm,
            "limiter": np.argmax(stacked == blocks, axis=0), "fits": blocks > 0}


def largest_fitting(card: KernelCard, spec: HardwareSpec, cfg: Config, param: str,
                    candidates: Iterable[int]) -> int | None:
    """The largest value of `param` (others as in cfg) whose predicted config still
    fits one block on an SM of `spec`; None if none of `candidates` fits."""
    values = sorted(set(int(v) for v in candidates))
    cfgs = [{**cfg, param: v} for v in values]
    fits = predict_many(card, spec, cfgs)["fits"]
    ok = [v for v, f in zip(values, fits) if f]
    return ok[-1] if ok else None
