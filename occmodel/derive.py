"""A model of a kernel's shared memory and registers DERIVED from a few compiles' IR.

    dm = derive_model(jobs_for, sweep, arch="sm_120", fraction=0.3)
    dm.shared(cfg)       # bytes (static + dynamic) for a config never compiled, or None
    dm.why_not(cfg)      # why None
    dm.regs(cfg)         # registers per thread, 1..255 (dm.spills(cfg): the estimate passed 255)
    dm.buffers           # [(buffer, expression, bytes)] at the base config; dm.buffers_at(cfg)
    dm.expression("shared"), dm.expression("regs")

`sweep` is a list of configs (dicts of constexprs plus num_warps and num_stages);
`jobs_for(cfg)` builds the compile job of one config (a CompileJob or its mapping; a
bare kernel with a signature and a card alike). The sample is *designed*
(:mod:`occmodel.derive_design`); each sampled config is compiled with its IR kept.

Shared memory, exact by construction where it answers:
1. Triton's allocator is run on each sample TTGIR (``triton_compat.allocate_shared``)
   and every buffer read with its shape, bytes, alignment, offset and liveness
   (:mod:`occmodel.allocation`); configs whose buffer lists match take one code path
   (a *piece*: num_stages=1 is usually another). A layout conversion that Triton's layout
   passes put beside its producer on one config and its consumer on another (two source
   lines) is one buffer when it converts the same value (:func:`same_conversions`).
2. Each buffer's size is expressed in the swept parameters, dimension by dimension for
   a ``local_alloc`` (a ring's depth is its first dimension: S-1, S...), in bytes for a
   scratch buffer (:mod:`occmodel.derive_fit`): the simplest exact forms; where several
   fit the sample and differ at a config, that config is not covered.
3. A config's piece comes from the parameters that decide the code path on the sample;
   its total is Triton's allocator replayed on the predicted sizes with the liveness of
   the nearest sampled config of that piece (buffers not live together share space).
   A config whose code path no sample showed is not covered.

Registers, an estimate: the register pressure of the main loop -- the 32-bit words per
thread of the values live together at its busiest point (accumulators and running maxima
carried across it, loop-invariant operands, the QK^T-like tiles a dot produces in it), by
a liveness walk of the SSA body (:mod:`occmodel.liveness`; a tile's words spread evenly
over the threads, a broadcast or splat counted as its source). Each value live there is
expressed in the parameters like a buffer (``c x BLOCK_N x HEAD_DIM / num_warps``), so the
peak is known at configs never compiled; calibrated on the sample by least squares
(regs = a + b x peak words, b >= 0), anchored on the nearest sampled config of the same
num_warps (its actual registers plus the estimate's change from it), clamped to 1..255.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import sympy

from .allocation import Allocation, Buffer, check, parse_allocated, replay
from .derive_fit import Form, agree, exact_forms
from .errors import ConfigError
from .liveness import live_at_peak

LAUNCH = ("num_warps", "num_stages")
MAX_COMBOS = 256


@dataclass
class Sampled:
    """One compiled sample config and what was read from it."""

    cfg: dict[str, Any]
    alloc: Allocation
    shared: int                       # total shared of the compile (static + dynamic)
    static: int
    regs: int
    spills: int
    holds: dict[str, float]           # words per value live at the main loop's peak ("live:acc:arg#1" ...)
    replay_error: str = ""            # "" when replaying the allocator reproduced the compile


# ------------------------------------------------------------- evidence
def read_compile(res, cfg: Mapping[str, Any], cc: int) -> Sampled:
    """A Sampled from a keep_ir CompileResult (runs Triton's allocator on its TTGIR)."""
    from . import triton_compat as tc
    alloc = parse_allocated(tc.allocate_shared(res.ttgir, cc))
    err = check(alloc)
    if not err and alloc.shared != res.shared:
        err = f"ttg.shared {alloc.shared} B but the compile reports {res.shared} B"
    return Sampled(dict(cfg), alloc, res.total_shared, res.static_shared or 0, res.n_regs, res.n_spills or 0,
                   held_values(res.ttgir, int(cfg["num_warps"])), err)


def held_values(ttgir: str, num_warps: int) -> dict[str, float]:
    """Register words per thread of the values live at the main loop's busiest point
    (:func:`occmodel.liveness.live_at_peak`), keyed ``live:stem:op#n``."""
    return live_at_peak(ttgir, num_warps)


# ------------------------------------------------------------------ model
@dataclass
class DerivedModel:
    params: list[str]                          # swept numeric parameters
    sample: list[Sampled]
    arch: str
    structural: list[tuple[str, ...]] = field(default_factory=list)   # minimal sets deciding the piece
    _forms: dict[tuple, list[Form]] = field(default_factory=dict)
    _coef: tuple[float, float] = (0.0, 0.0)
    _held_forms: dict[str, list[Form]] = field(default_factory=dict)
    _presence: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)
    _presence_with: dict[str, list] = field(default_factory=dict)
    fraction: float = 0.0                      # share of the sweep compiled
    failed: list[str] = field(default_factory=list)          # sampled configs that did not compile
    sample_index: list[int] = field(default_factory=list)    # their positions in the sweep

    # ------------------------------------------------------------ fitting
    def fit(self) -> "DerivedModel":
        self.sample = same_conversions(self.sample)
        self.structural = _structural(self.sample, self.params)
        for s in self.sample:
            for b in s.alloc.buffers:
                for i in range(len(b.dims) if b.kind == "explicit" else 1):
                    self._forms.setdefault(("all", b.key, i), None)
        for key in list(self._forms):
            _, bkey, i = key
            self._forms[key] = self._fit_buffer(bkey, i, None)
        self._fit_regs()
        return self

    def _points(self, bkey: str, i: int, structure):
        pts, vals = [], []
        for s in self.sample:
            if structure is not None and explicit_of(s.alloc) != structure:
                continue
            for b in s.alloc.buffers:
                if b.key == bkey:
                    pts.append(s.cfg)
                    vals.append(b.dims[i] if b.kind == "explicit" else b.bytes)
        return pts, vals

    def _fit_buffer(self, bkey: str, i: int, structure) -> list[Form]:
        """The simplest exact forms; for a scratch buffer (its size follows the op's tile and
        layouts, which num_stages does not choose) first without num_stages, so that a
        reduction's scratch is not fitted by a spurious 2048/num_stages."""
        pts, vals = self._points(bkey, i, structure)
        if bkey.startswith("scratch") and "num_stages" in self.params:
            forms = exact_forms(pts, vals, [p for p in self.params if p != "num_stages"])
            if forms:
                return forms
        return exact_forms(pts, vals, self.params)

    def forms(self, b: Buffer, i: int, structure) -> list[Form]:
        """Forms of a buffer's dimension i (explicit) or bytes (scratch): over the whole
        sample, else over its piece (configs with the same explicit buffers) only."""
        return self._fitted(b, i, structure)[0]

    def _fitted(self, b: Buffer, i: int, structure) -> tuple[list[Form], tuple | None]:
        f = self._forms.get(("all", b.key, i))
        if f:
            return f, None
        structure = self._explicit(structure)
        key = ("piece", b.key, i, structure)
        if key not in self._forms:
            self._forms[key] = self._fit_buffer(b.key, i, structure)
        return self._forms[key], structure

    def _unseen(self, b: Buffer, structure, cfg) -> list[str]:
        """Parameters cfg moves that the sample never varied where buffer b exists: its
        size cannot be extrapolated along them (one point fits a constant, not a rule).
        Where b's size comes from a form fitted over every code path and depends on
        num_stages, also num_stages when cfg's own code path was sampled at one value of it:
        a ring's depth is what the code path decides (num_stages-1 for a cp.async ring,
        num_stages for a TMA / wgmma one on sm_90), and a form fitted across code paths can
        hold on every sampled point and still mix them."""
        forms, st = self._fitted(b, 0, structure)
        pts = [s.cfg for s in self.sample if (st is None or explicit_of(s.alloc) == st)
               and any(o.key == b.key for o in s.alloc.buffers)]
        out = [p for p in self.params if len({c[p] for c in pts}) == 1 and cfg[p] != pts[0][p]]
        if st is None:
            own = self._explicit(structure)
            mine = [s.cfg for s in self.sample if explicit_of(s.alloc) == own
                    and any(o.key == b.key for o in s.alloc.buffers)]
            used = set().union(*[{x.name for x in f.expr.free_symbols}
                                 for i in range(len(b.dims) if b.kind == "explicit" else 1)
                                 for f in self.forms(b, i, structure)]) & {"num_stages"}
            out += [p for p in self.params if p in used and p not in out and mine
                    and len({c[p] for c in mine}) == 1 and cfg[p] != mine[0][p]]
        return out

    # ------------------------------------------------------------- pieces
    def presence_sets(self, key: str) -> list[tuple[str, ...]]:
        """The smallest parameter sets whose values decide, on the sample, whether buffer
        `key` exists ([()] for a buffer every sampled config has)."""
        if key not in self._presence:
            self._presence[key] = _deciding(self.sample, self.params,
                                            lambda s: any(b.key == key for b in s.alloc.buffers))
        return self._presence[key]

    def _present(self, key: str, cfg, depth: int = 0) -> tuple[bool | None, str]:
        """Does buffer `key` exist at cfg: (True/False, "") or (None, why). Three rules; an
        answer when those that answer agree (they fit the same sample, so a disagreement means
        the sample cannot tell which one holds: no answer):

        1. every smallest parameter set deciding it on the sample has cfg's values on a
           sampled config, and those configs agree;
        2. it exists on a *box* of parameter values (a product of value ranges: a layout
           scratch only at BLOCK_N>=64 with num_warps<=2) -- the smallest box holding every
           sampled config that has it holds none that lacks it -- and cfg is inside that box
           (exists), or stretching the box to cfg takes in a sampled config that lacks it
           (cannot exist: no box fits the sample and holds cfg). The same with "exists" and
           "lacks" swapped (lacks it on a box). Otherwise boxes that fit the sample disagree
           at cfg, and so no answer;
        3. :meth:`_present_with`: decided together with other buffers' presence;
        4. when none answers: the n-th buffer of one op and line (key ``...#n``) cannot
           exist where the (n-1)-th does not."""
        votes, why = set(), ""
        for sset in self.presence_sets(key):
            match = next((s for s in self.sample if all(s.cfg[p] == cfg[p] for p in sset)), None)
            if match is None:
                vals = ", ".join(f"{p}={cfg[p]}" for p in sset)
                why = (f"buffer {self._label(key)} exists or not depending on {', '.join(sset)}; "
                       f"no sampled config has {vals}")
                votes = set()
                break
            votes.add(any(b.key == key for b in match.alloc.buffers))
        if len(votes) != 1:
            why = why or (f"the sample does not tell which parameters decide whether buffer {self._label(key)} "
                          "exists here (" + " or ".join(", ".join(x) for x in self.presence_sets(key)) + ")")
            votes = set()
        has = [any(b.key == key for b in s.alloc.buffers) for s in self.sample]
        for label in (True, False):
            v = _box_verdict([s.cfg for s, h in zip(self.sample, has) if h == label],
                             [s.cfg for s, h in zip(self.sample, has) if h != label], cfg, self.params)
            if v is not None:
                votes.add(v == label)
        if not depth:
            v = self._present_with(key, cfg)
            if v is not None:
                votes.add(v)
        prev = re.sub(r"#(\d+)$", lambda m: f"#{int(m.group(1)) - 1}", key)
        if not votes and prev != key and not key.endswith("#1") and any(
                b.key == prev for s in self.sample for b in s.alloc.buffers):
            # the n-th buffer of one op and source line exists only where the (n-1)-th does
            there, _ = self._present(prev, cfg, depth)
            if there is False:
                votes.add(False)
        if len(votes) == 1:
            return votes.pop(), ""
        if len(votes) > 1:
            return None, (f"rules that fit the sample disagree on whether buffer {self._label(key)} exists here "
                          "(the sample cannot tell them apart)")
        return None, why

    def _present_with(self, key: str, cfg) -> bool | None:
        """Rule 3 of :meth:`_present`: the smallest sets (up to 3 columns) of parameters and
        *other buffers' presence* that decide whether `key` exists on the sample -- a ring
        index buffer that exists from num_stages=3 up unless the layout-conversion scratch of
        BLOCK_N=64 with num_warps=2 does: (num_stages, that scratch) decides it. Those other
        buffers' presence at cfg comes from rules 1-2; an answer when every such set that
        holds one and has cfg's values on a sampled config agrees, and one at least does."""
        if key not in self._presence_with:
            others = [k for k in self._keys("explicit") + self._keys("scratch") if k != key]
            cols = {p: (lambda s, p=p: s.cfg[p]) for p in self.params}
            cols.update({k: (lambda s, k=k: any(b.key == k for b in s.alloc.buffers)) for k in others})
            table = [{c: f(s) for c, f in cols.items()} for s in self.sample]
            has = [any(b.key == key for b in s.alloc.buffers) for s in self.sample]
            found = []
            for r in range(1, 4):
                for sset in itertools.combinations(list(cols), r):
                    seen: dict[tuple, bool] = {}
                    if all(seen.setdefault(tuple(row[c] for c in sset), h) == h for row, h in zip(table, has)):
                        found.append((sset, seen))
                if found:
                    break
            self._presence_with[key] = [(ss, seen) for ss, seen in found if any(c not in self.params for c in ss)]
        votes = set()
        for sset, seen in self._presence_with[key]:
            vals = []
            for c in sset:
                if c in self.params:
                    vals.append(cfg[c])
                else:
                    v, _ = self._present(c, cfg, depth=1)
                    if v is None:
                        break
                    vals.append(v)
            else:
                if tuple(vals) in seen:
                    votes.add(seen[tuple(vals)])
        return votes.pop() if len(votes) == 1 else None

    def _explicit(self, structure) -> frozenset[str] | None:
        """The explicit buffers' keys of a structure (None stays None)."""
        if structure is None:
            return None
        kinds = {b.key: b.kind for s in self.sample for b in s.alloc.buffers}
        return frozenset(k for k in structure if kinds.get(k) == "explicit")

    def _label(self, key: str) -> str:
        return next(b.label for s in self.sample for b in s.alloc.buffers if b.key == key)

    def _keys(self, kind: str) -> list[str]:
        out: dict[str, None] = {}
        for s in self.sample:
            for b in s.alloc.buffers:
                if b.kind == kind:
                    out.setdefault(b.key)
        return list(out)

    def _piece(self, cfg: Mapping[str, Any]) -> tuple[Sampled | None, str]:
        """(a sampled config on cfg's code path -- the nearest one, its scratch buffers
        adjusted to those cfg has -- and "") or (None, why).

        A code path is the set of buffers. Each buffer's presence is decided separately, by
        the smallest set of parameters that decides it on the sample (a layout-conversion
        scratch that exists only for BLOCK_N=64 with num_warps=2 needs those two values seen
        together, not every combination of all parameters). The explicit buffers (their
        liveness spans the kernel) must match a sampled config's exactly; a scratch buffer
        lives at one op only, so one the nearest config lacks is placed where a sampled config
        on the same code path has it, relative to the explicit buffers (:func:`_with_scratch`)."""
        unseen = [p for p in self.params if all(s.cfg[p] != cfg[p] for s in self.sample)]
        if unseen:
            vals = ", ".join(f"{p}={cfg[p]}" for p in unseen)
            return None, f"no sampled config has {vals}: the code path there is unknown"
        want: list[str] = []
        for kind in ("explicit", "scratch"):
            for key in self._keys(kind):
                there, why = self._present(key, cfg)
                if there is None:
                    return None, why
                if there:
                    want.append(key)
        explicit = self._explicit(want)
        cands = [s for s in self.sample if explicit_of(s.alloc) == explicit and not s.replay_error]
        if not cands:
            if any(explicit_of(s.alloc) == explicit for s in self.sample):
                return None, "replaying Triton's allocator did not reproduce the compile on this code path"
            return None, ("no sampled config has the buffers this config's parameters imply (a combination "
                          "of code paths never compiled)")

        def dist(s: Sampled):
            return (set(s.alloc.structure) != set(want),
                    sum(s.cfg[p] != cfg[p] for p in self.params),
                    sum(abs(math.log2(s.cfg[p] / cfg[p])) for p in self.params if s.cfg[p] and cfg[p]))
        tpl = min(cands, key=dist)
        if set(tpl.alloc.structure) == set(want):
            return tpl, ""
        return _with_scratch(tpl, [k for k in want if k not in explicit], cands)

    def _values(self, cfg, b: Buffer, structure) -> set[int]:
        """Every size the simplest forms of buffer b give at cfg (one value when they agree)."""
        def vals(forms):
            out = set()
            for f in forms:
                v = f(cfg)
                if abs(v - round(v)) > 1e-6 or v <= 0:
                    return set()
                out.add(int(round(v)))
            return out
        if b.kind == "scratch":
            forms = self.forms(b, 0, structure)
            return vals(forms) if forms else self._same_conversion(cfg, b)
        per = [vals(self.forms(b, i, structure)) for i in range(len(b.dims))]
        if any(not v for v in per):
            return set()
        elt = b.bytes // max(1, math.prod(b.dims))
        return {math.prod(combo) * elt for combo in itertools.product(*per)}

    def _same_conversion(self, cfg, b: Buffer) -> set[int]:
        """A scratch buffer whose bytes no simple form fits (an epilogue conversion whose
        padding follows the layouts in steps): its bytes where a sampled config has the same
        op on a tile of the same shape (each dimension of the op's tensor expressed in the
        parameters like a buffer's) with the same num_warps -- the layouts Triton picks, hence
        the scratch, follow from those -- when every such config agrees; else unknown."""
        pts = [(s, o) for s in self.sample for o in s.alloc.buffers if o.key == b.key]
        if not pts or "num_warps" not in cfg:
            return set()
        dims = []
        for i in range(len(b.dims)):
            if any(len(o.dims) != len(b.dims) for _, o in pts):
                return set()
            d = agree(exact_forms([s.cfg for s, _ in pts], [o.dims[i] for _, o in pts], self.params,
                                  minmax=False), cfg)
            if d is None:
                return set()
            dims.append(d)
        same = {o.bytes for s, o in pts if list(o.dims) == dims and s.cfg["num_warps"] == cfg["num_warps"]}
        return same if len(same) == 1 else set()

    def layout_gap(self, cfg: Mapping[str, Any]) -> str:
        """"" or which (parameter, num_warps) value pair no sampled config on cfg's code path
        shows. Triton picks layouts from the tile shape and num_warps together, so a code path
        seen with BLOCK=64 and with num_warps=2 but never with both may not be the one they
        take together; the designed sample compiles such configs while its budget lasts."""
        tpl, why = self._piece(cfg)
        if tpl is None or "num_warps" not in self.params:
            return why
        cands = [s for s in self.sample if explicit_of(s.alloc) == explicit_of(tpl.alloc)]
        for p in self.params:
            if p != "num_warps" and not any(s.cfg[p] == cfg[p] and s.cfg["num_warps"] == cfg["num_warps"]
                                            for s in cands):
                return f"no sampled config on this code path has {p}={cfg[p]} with num_warps={cfg['num_warps']}"
        return ""

    def _sizes(self, cfg, tpl: Sampled) -> tuple[list[set[int]] | None, str]:
        sizes = []
        for b in tpl.alloc.buffers:
            unseen = self._unseen(b, tpl.alloc.structure, cfg)
            if unseen:
                return None, (f"buffer {b.label} was sampled at one value of {', '.join(unseen)} only; "
                              "its size there is unknown")
            branch = self._branch_unseen(b, tpl.alloc.structure, cfg)
            if branch:
                return None, branch
            v = self._values(cfg, b, tpl.alloc.structure)
            if not v:
                return None, f"no exact form of buffer {b.label}'s size fits every sampled config"
            sizes.append(v)
        return sizes, ""

    def _branch_unseen(self, b: Buffer, structure, cfg) -> str:
        """"" or why a Min/Max form of b may not answer at cfg: the term that decides it there
        decided it on sampled configs that all share one value of a parameter cfg moves, or on
        none (for an explicit buffer, on a tie, each tied term alone). A
        Min/Max is two regimes (a scratch that stops growing, two code paths one form joins:
        an mma.sync ring S-1 deep beside a wgmma ring S deep is Min(S, BM/16) on a sample that
        saw BM=32 at one num_stages); each regime is extrapolated only along what it saw vary."""
        pts = [(s.cfg, o) for s in self.sample for o in s.alloc.buffers if o.key == b.key]
        for i in range(len(b.dims) if b.kind == "explicit" else 1):
            for f in self.forms(b, i, structure):
                if not isinstance(f.expr, (sympy.Min, sympy.Max)):
                    continue
                terms = f.expr.args
                pick = min if isinstance(f.expr, sympy.Min) else max

                def active(c):
                    vals = [float(t.subs({x: c[x.name] for x in t.free_symbols})) for t in terms]
                    best = pick(vals)
                    return {k for k, v in enumerate(vals) if abs(v - best) < 1e-9}
                mine = active(cfg)
                # an explicit buffer's dimension (a ring's depth...): on a tie each tied term must
                # hold here on its own; a scratch's Min/Max (one that stops growing): either term
                for k in (mine if b.kind == "explicit" else [None]):
                    sup = [c for c, _ in pts if (active(c) == {k} if k is not None else active(c) & mine)]
                    k = k if k is not None else min(mine)
                    if not sup:
                        return (f"buffer {b.label}: no sampled config is decided by the term {terms[k]} of {f} "
                                "that decides it here")
                    flat = [p for p in self.params if len({c[p] for c in sup}) == 1 and cfg[p] != sup[0][p]]
                    if flat:
                        return (f"buffer {b.label}: the term {terms[k]} of {f} that decides it here was sampled "
                                f"at one value of {', '.join(flat)} only")
        return ""

    def _total(self, cfg, tpl: Sampled) -> tuple[int | None, str]:
        """Triton's allocator replayed over every combination of the candidate sizes; an
        answer only when they all give one total (an ambiguous buffer that never decides
        the total -- a reduction's scratch inside a dead loop buffer -- is harmless)."""
        sizes, why = self._sizes(cfg, tpl)
        if sizes is None:
            return None, why
        combos = math.prod(len(v) for v in sizes)
        if combos > MAX_COMBOS:
            return None, f"{combos} combinations of ambiguous buffer sizes; the sample cannot pin them"
        totals = {replay(list(c), tpl.alloc.buffers)[1] for c in itertools.product(*[sorted(v) for v in sizes])}
        if len(totals) > 1:
            amb = [b for b, v in zip(tpl.alloc.buffers, sizes) if len(v) > 1]
            fs = self.forms(amb[0], 0, tpl.alloc.structure) if amb else []
            return None, (f"the sample cannot pin buffer {amb[0].label if amb else '?'} and it decides the total "
                          f"here ({' vs '.join(map(str, fs[:3]))}): totals {sorted(totals)}")
        return totals.pop() + tpl.static, ""

    # -------------------------------------------------------------- public
    def why_not(self, cfg: Mapping[str, Any]) -> str:
        """"" when :meth:`shared` answers for cfg, else the reason it does not."""
        return self._shared(cfg)[1]

    def shared(self, cfg: Mapping[str, Any]) -> int | None:
        return self._shared(cfg)[0]

    def _shared(self, cfg) -> tuple[int | None, str]:
        missing = [p for p in self.params if p not in cfg]
        if missing:
            raise ConfigError(f"config {dict(cfg)} lacks {', '.join(missing)}")
        tpl, why = self._piece(cfg)
        if tpl is None:
            return None, why
        return self._total(cfg, tpl)

    def buffers_at(self, cfg: Mapping[str, Any]) -> list[tuple[str, str, int | None]]:
        """(buffer, bytes expression, bytes at cfg) on cfg's code path ([] if not covered)."""
        tpl, _ = self._piece(cfg)
        if tpl is None:
            return []
        out = []
        for b in tpl.alloc.buffers:
            expr = self.buffer_expr(b, tpl.alloc.structure)
            v = self._values(cfg, b, tpl.alloc.structure)
            out.append((b.label, str(expr) if expr is not None else "?", v.pop() if len(v) == 1 else None))
        return out

    @property
    def buffers(self) -> list[tuple[str, str, int | None]]:
        return self.buffers_at(self.sample[0].cfg)

    def buffer_expr(self, b: Buffer, structure) -> sympy.Expr | None:
        if b.kind == "scratch":
            f = self.forms(b, 0, structure)
            return f[0].expr if f else None
        parts = []
        for i in range(len(b.dims)):
            f = self.forms(b, i, structure)
            if not f:
                return None
            parts.append(f[0].expr)
        return sympy.Mul(*parts, sympy.Integer(b.bytes // max(1, math.prod(b.dims))), evaluate=True)

    def expression(self, quantity: str = "shared") -> str:
        """Readable model: per code path, Max over the allocator's stacks of live buffers."""
        if quantity == "regs":
            a, b = self._coef
            return f"clamp({a:.1f} + {b:.3f} x peak live words, 1, 255)"
        if quantity != "shared":
            raise ConfigError(f"quantity {quantity!r}; valid: shared, regs")
        pieces = []
        for st, tpl in _pieces(self.sample).items():
            cond = _condition(tpl, self.structural, self.sample)
            pieces.append(f"[{cond}] " + str(self._stack_expr(tpl)))
        return "; ".join(pieces)

    def _stack_expr(self, tpl: Sampled) -> sympy.Expr:
        bufs = tpl.alloc.buffers
        ends = {}
        exprs = [self.buffer_expr(b, tpl.alloc.structure) for b in bufs]
        for i, b in sorted(enumerate(bufs), key=lambda t: t[1].offset):
            below = [j for j, o in enumerate(bufs) if o.offset + o.bytes == b.offset and j in ends
                     and o.start < b.end and b.start < o.end]
            base = ends[below[0]] if below else sympy.Integer(b.offset)
            ends[i] = base + (exprs[i] if exprs[i] is not None else sympy.Symbol(f"?{b.name}"))
        tops = [ends[i] for i, b in enumerate(bufs) if not any(
            o.offset == b.offset + b.bytes and o.start < b.end and b.start < o.end for o in bufs)]
        return sympy.Max(*tops) if tops else sympy.Integer(0)

    # ----------------------------------------------------------- registers
    def _held(self, cfg, tpl: Sampled) -> float:
        """Words per thread live at the peak of cfg's main loop: the values live there on
        `tpl` (a sampled config on cfg's code path), each expressed in the parameters over
        every sampled config that has it (a tile's words: c x BLOCK_N x HEAD_DIM / num_warps),
        else scaled from `tpl` by num_warps."""
        total = 0.0
        for k, v in tpl.holds.items():
            if k not in self._held_forms:
                pts = [s for s in self.sample if k in s.holds]
                self._held_forms[k] = exact_forms([s.cfg for s in pts], [s.holds[k] for s in pts], self.params,
                                                  minmax=False) if all(float(s.holds[k]).is_integer()
                                                                       for s in pts) else []
            got = agree(self._held_forms[k], cfg)
            total += float(got) if got is not None else v * _scale(k, tpl.cfg, cfg)
        return total

    def _fit_regs(self) -> None:
        """regs = a + b x peak live words (b >= 0), least squares on the sampled configs
        that did not spill."""
        rows = [s for s in self.sample if s.spills == 0 and s.regs < 255] or self.sample
        y = np.array([s.regs for s in rows], float)
        x = np.array([sum(s.holds.values()) for s in rows], float)
        a, b = float(y.mean()), 0.0
        if len(rows) > 1 and np.ptp(x) > 0:
            b, a = (float(c) for c in np.polyfit(x, y, 1))
            if b < 0:
                a, b = float(y.mean()), 0.0
        self._coef = (a, b)

    def _regs_raw(self, cfg) -> float | None:
        """The calibrated estimate, anchored on the nearest sampled config that did not spill
        (same num_warps first): its actual registers plus the estimate's change from it there
        to cfg -- what the least squares leaves unexplained (ptxas's own choices) is mostly
        shared by neighbours."""
        a, b = self._coef
        raw = a + b * self._held(cfg, self._nearest_any(cfg))
        pool = [s for s in self.sample if s.regs < 255 and s.spills == 0]
        if "num_warps" in cfg:
            pool = [s for s in pool if s.cfg.get("num_warps") == cfg["num_warps"]] or pool
        if not pool:
            return raw
        near = min(pool, key=lambda s: (sum(s.cfg[p] != cfg[p] for p in self.params),
                                        sum(abs(math.log2(s.cfg[p] / cfg[p])) for p in self.params
                                            if s.cfg[p] and cfg[p])))
        return raw + near.regs - (a + b * self._held(near.cfg, near))

    def _nearest_any(self, cfg) -> Sampled:
        tpl, _ = self._piece(cfg)
        if tpl is not None:
            return tpl
        return min(self.sample, key=lambda s: sum(s.cfg[p] != cfg[p] for p in self.params))

    def regs(self, cfg: Mapping[str, Any]) -> int:
        """Estimated registers per thread, clamped to 1..255."""
        return int(min(255, max(1, round(self._regs_raw(cfg)))))

    def spills(self, cfg: Mapping[str, Any]) -> bool:
        """The estimate crossed 255: ptxas will cap registers and spill."""
        return self._regs_raw(cfg) > 255


def same_conversions(sample: Sequence[Sampled]) -> list[Sampled]:
    """The sample with each layout conversion whose own location moved between configs under
    one key.

    A ``ttg.convert_layout`` is keyed, like every buffer, by its own location -- but Triton's
    layout passes (RemoveLayoutConversions) create and move conversions and give each the
    location of the op they put it beside: on Liger's neighborhood-attention QK^T kernel the
    epilogue's f32 conversion out of the mma layout is at the ``tl.where`` (line 184) on one
    config and at the ``tl.store`` (line 193) on another, with nothing in the parameters
    deciding which. Two conversion keys A and B are one buffer when, on the sample,
    (1) they never occur on one config, (2) every buffer of both converts the same value --
    the same defining op, and the same n-th conversion of it in IR order (``Buffer.src``) --
    with the same rank and element type, and (3) each is the other's only such key. B's
    buffers then take A's key (A: the key on more sampled configs, then the first in order).
    Sizes, presence and code paths are then derived for the one buffer."""
    occurs: dict[str, set[int]] = {}
    ident: dict[str, set[tuple]] = {}
    for i, s in enumerate(sample):
        for b in s.alloc.buffers:
            if b.kind == "scratch" and b.op == "ttg.convert_layout":
                occurs.setdefault(b.key, set()).add(i)
                ident.setdefault(b.key, set()).add((b.src, len(b.dims), b.dtype))
    keys = [k for k in occurs if len(ident[k]) == 1 and next(iter(ident[k]))[0]]
    cand = {a: [b for b in keys if b != a and ident[b] == ident[a] and not occurs[a] & occurs[b]] for a in keys}
    rename: dict[str, str] = {}
    for a in keys:
        if len(cand[a]) == 1 and cand[cand[a][0]] == [a] and a not in rename and cand[a][0] not in rename:
            b = cand[a][0]
            keep, drop = sorted((a, b), key=lambda k: (-len(occurs[k]), keys.index(k)))
            rename[drop] = keep
    if not rename:
        return list(sample)
    out = []
    for s in sample:
        if not any(b.key in rename for b in s.alloc.buffers):
            out.append(s)
            continue
        bufs = tuple(Buffer(**{**b.__dict__, "key": rename.get(b.key, b.key)}) for b in s.alloc.buffers)
        out.append(Sampled(**{**s.__dict__, "alloc": Allocation(s.alloc.shared, bufs)}))
    return out


def explicit_of(alloc: Allocation) -> frozenset[str]:
    """The keys of an allocation's explicit (local_alloc) buffers: its code path, less scratch."""
    return frozenset(b.key for b in alloc.buffers if b.kind == "explicit")


def _with_scratch(tpl: Sampled, scratch: Sequence[str], cands: Sequence[Sampled]) -> tuple[Sampled | None, str]:
    """`tpl` with exactly the scratch buffers `scratch` (keys), or (None, why).

    A scratch buffer is live at its own op only, so for Triton's allocator all that matters
    is which explicit buffers are live there and its order among the other scratch ops. A
    missing one is taken from the nearest config in `cands` (same explicit buffers) that has
    it and put at an op of `tpl` with the same relations: the explicit buffers live there
    and the scratch ops before and after it. Times are scaled by 4 so a placed scratch sits
    between ops ([4x+1, 4x+2)) and meets exactly the explicit buffers live at op x."""
    ex = [b for b in tpl.alloc.buffers if b.kind == "explicit"]
    have = {b.key: b for b in tpl.alloc.buffers if b.kind == "scratch" and b.key in scratch}
    timed = {k: 4 * b.start for k, b in have.items()}             # a time per scratch buffer (scaled)
    placed = {}
    for key in scratch:
        if key in have:
            continue
        donors = [s for s in cands if any(b.key == key for b in s.alloc.buffers)]
        if not donors:
            return None, f"scratch buffer {key} was never sampled on this code path"
        d = min(donors, key=lambda s: sum(s.cfg[p] != tpl.cfg[p] for p in tpl.cfg))
        db = {b.key: b for b in d.alloc.buffers}
        t = db[key].start

        def rel(t, b):
            return "in" if b.start <= t < b.end else ("before" if t < b.start else "after")
        want_ex = {b.key: rel(t, b) for b in d.alloc.buffers if b.kind == "explicit"}
        want_sc = {k: db[k].start < t for k in have if k in db}
        lo = min([b.start for b in ex] + [0]) - 1
        hi = max([b.end for b in ex] + [v // 4 for v in timed.values()] + [0]) + 1
        fits = [x for x in range(lo, hi + 1)
                if all(rel(x, b) == want_ex.get(b.key) for b in ex)
                and all((4 * x + 1 > timed[k]) == before for k, before in want_sc.items())]
        if not fits:
            return None, (f"scratch buffer {db[key].label} cannot be placed on this code path's liveness "
                          "as the sampled configs have it")
        placed[key] = db[key]
        timed[key] = 4 * fits[0] + 1
    bufs = [Buffer(**{**b.__dict__, "start": 4 * b.start, "end": 4 * b.end}) for b in ex]
    for key in sorted(timed, key=lambda k: timed[k]):
        b = have.get(key) or placed[key]
        bufs.append(Buffer(**{**b.__dict__, "start": timed[key], "end": timed[key] + 1}))
    alloc = Allocation(-1, tuple(bufs))
    return Sampled(dict(tpl.cfg), alloc, -1, tpl.static, tpl.regs, tpl.spills, dict(tpl.holds)), ""


def _box_verdict(inside: Sequence[Mapping], outside: Sequence[Mapping], cfg, params) -> bool | None:
    """With `inside` the sampled configs that have a property and `outside` those that lack
    it, and the property held on a box (a product of per-parameter value ranges, lo <= p <= hi:
    a layout's regime, a ring that exists from num_stages=2 up, change at thresholds): True when
    every box that fits holds cfg, False when none does, None when they disagree or no box
    fits. The smallest box holding `inside` must hold nothing of `outside`; it holds cfg ->
    True; the smallest box holding `inside` and cfg holds something of `outside` -> False."""
    if not inside:
        return None

    def box(cfgs):
        return {p: (min(c[p] for c in cfgs), max(c[p] for c in cfgs)) for p in params}

    def holds(b, c):
        return all(b[p][0] <= c[p] <= b[p][1] for p in params)
    small = box(inside)
    if any(holds(small, c) for c in outside):
        return None
    if holds(small, cfg):
        return True
    big = box(list(inside) + [cfg])
    return False if any(holds(big, c) for c in outside) else None


def _scale(key: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """A held value's words at another config when no exact form was found: per thread,
    a tile's share scales with 1/num_warps."""
    return a["num_warps"] / b["num_warps"] if "num_warps" in a else 1.0


def _pieces(sample: Sequence[Sampled]) -> dict[tuple, Sampled]:
    out: dict[tuple, Sampled] = {}
    for s in sample:
        out.setdefault(s.alloc.structure, s)
    return out


def _condition(tpl: Sampled, structural, sample) -> str:
    if len(_pieces(sample)) == 1 or not structural:
        return "all configs"
    sset = structural[0]
    vals = sorted({tuple(s.cfg[p] for p in sset) for s in sample if s.alloc.structure == tpl.alloc.structure})
    return " or ".join(", ".join(f"{p}={v}" for p, v in zip(sset, vs)) for vs in vals)


def _structural(sample: Sequence[Sampled], params: Sequence[str]) -> list[tuple[str, ...]]:
    """The smallest parameter sets whose values determine the explicit buffers on the sample."""
    return _deciding(sample, params, lambda s: explicit_of(s.alloc))


def _deciding(sample: Sequence[Sampled], params: Sequence[str], what) -> list[tuple[str, ...]]:
    """The smallest parameter sets whose values determine what(sampled config) on the sample."""
    for r in range(0, len(params) + 1):
        found = []
        for sset in itertools.combinations(params, r):
            seen: dict[tuple, Any] = {}
            if all(seen.setdefault(tuple(s.cfg[p] for p in sset), what(s)) == what(s) for s in sample):
                found.append(sset)
        if found:
            return found
    return [tuple(params)]


def derive_model(jobs_for, sweep, arch: Any = "sm_120", fraction: float = 0.3, **kw) -> DerivedModel:
    """Compile a designed sample of `sweep` and derive the model (see
    :func:`occmodel.derive_design.derive_model` for the options)."""
    from .derive_design import derive_model as _derive
    return _derive(jobs_for, sweep, arch=arch, fraction=fraction, **kw)


def shared_after_allocation(job) -> int:
    """Dynamic shared memory (``ttg.shared``) of one compile job, stopping the compile right
    after Triton's shared-memory allocation: front end, TTIR, TTGIR, allocation -- no LLVM,
    no ptxas, several times faster than a full compile. Exact for Triton's dynamic shared
    memory; static shared memory (from ptxas; 0 for every Triton kernel measured) is not
    included. Raises what the compiler raises (a failing kernel has no answer here)."""
    from . import triton_compat as tc
    from .compile import _check_arch, _request
    from .compile_pool import _as_job
    job = _as_job(job)
    req = _request(job.fn, job.signature, job.constexprs, job.args, job.arch, job.num_warps, job.num_stages,
                   job.options)
    _check_arch(req.cc)
    types = {n: s.partition(":")[0] for n, s in req.signature.items()}
    divisible = {n for n, s in req.signature.items() if s.endswith(":16")}
    constants = dict(req.constants, **{n: 1 for n, s in req.signature.items() if s.endswith(":1")})
    ttgir = tc.compile_to_ttgir(req.fn, types, divisible, constants, req.cc, req.compiler_options)
    m = re.search(r"ttg\.shared = (\d+)", tc.allocate_shared(ttgir, req.cc))
    return int(m.group(1))
