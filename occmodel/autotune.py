"""Pre-screen ``@triton.autotune`` configs for a target GPU before any of them is benchmarked.

    @triton.autotune(configs, key=["M", "N", "K"],
                     prune_configs_by={"early_config_prune": occmodel.autotune.pruner(spec="sm_120")})
    @triton.jit
    def kernel(...): ...

Contract. Triton (3.6 and 3.9 alike) calls ``early_config_prune(configs, named_args, **kwargs)``
once per new tuning key: ``named_args`` maps the kernel's parameter names to the launch's
*positional* arguments, ``kwargs`` holds its keyword arguments plus ``grid`` and ``warmup``.
It must return a non-empty list of the given Config objects. The pruner:

* finds the kernel (``kernel=`` or the calling Autotuner's ``fn``), unwrapping heuristics
  and evaluating them for each config;
* with ``use="compile"`` compiles each config for the *target* spec's arch (no GPU needed;
  :func:`occmodel.compile.compile_kernel`, cached), the signature specialised from the real
  arguments as Triton's launcher would, constexprs from ``config.kwargs`` and the launch,
  ``num_warps`` / ``num_stages`` / ``maxnreg`` / ``num_ctas`` from the config; it drops a
  config whose compile fails, whose shared memory exceeds the per-block limit, which spills
  more than ``max_spills`` (driver n_spills: local bytes / 4) or which keeps fewer than
  ``min_blocks`` blocks resident per SM (:func:`occmodel.occupancy.occupancy` with the real
  registers and static + dynamic shared memory);
* with ``use="model"`` predicts the same from a kernel card (:func:`occmodel.model.predict`,
  config keys matched to card parameters; spills only as "the estimate exceeds 255");
* optionally keeps the best ``top_k`` survivors. ``by="estimate"`` (the default) orders them by
  :mod:`occmodel.rank`'s static estimate of the time per launch (``rank.estimate_many``, from
  the same evidence: compiled with its TTGIR for ``use="compile"``, the card's model for
  ``use="model"``; constants from ``calibration=``, else :func:`occmodel.calibrate.resolve`:
  a cached calibration of the spec, else the spec product's datasheet) at the workload point;
  configs the estimate cannot tell apart (a tie at the cut) are kept together, and the note says
  so. It needs a workload point and the workload hooks (grid, loop_iterations, bytes_moved,
  flops): the point is ``point=`` (a dict, or ``f(launch_args) -> dict`` called with the
  launch's arguments by name), else the kernel's workload parameters when the launch passes
  them all (e.g. M, N, K of the matmul card); the hooks come from ``card=`` or
  ``launcher=`` (a bare kernel's :class:`~occmodel.launcher.Launcher`). Without either, or
  when an estimate fails, it falls back to ``by="occupancy"`` and says so: ``pruner.note``
  holds the reason, logged as a warning (``pruner.ranked_by`` says which order was used).
  ``by="occupancy"`` ranks by resident warps per SM (more first), then spills (fewer first),
  then the given order; ``by="spills"`` ranks by spills first, then resident warps. Resident
  warps do not predict throughput (num_warps 4 -> 8 doubled them on the H200's decode kernel
  and lost up to 47 %): prefer the estimate.

Every decision is logged on logger ``occmodel.autotune`` and kept as plain rows in
``pruner.decisions`` (the last call). A config that cannot be compiled is dropped with its
reason, never raised; if *no* config survives, :class:`~occmodel.errors.ConfigError` says why
(Triton would otherwise fail with a generic message).
"""

from __future__ import annotations

import inspect
import json
import logging
import math
from typing import Any, Callable, Mapping, Sequence

from .errors import CompileError, ConfigError, KernelError, OccmodelError
from .spec import HardwareSpec, load_spec

LOG = logging.getLogger("occmodel.autotune")
USES = ("compile", "model")
RANKINGS = ("estimate", "occupancy", "spills")
ROW_KEYS = ("index", "config", "kept", "reason", "source", "status", "n_regs", "n_spills", "shared",
            "blocks_per_sm", "warps_per_sm", "occupancy", "limiter", "cached", "estimate_us", "bound")


def describe(config) -> str:
    """'BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=3' for a triton.Config."""
    parts = [f"{k}={v}" for k, v in config.kwargs.items()]
    parts += [f"num_warps={config.num_warps}", f"num_stages={config.num_stages}"]
    for extra in ("num_ctas", "maxnreg"):
        value = getattr(config, extra, None)
        if value is not None and not (extra == "num_ctas" and value == 1):
            parts.append(f"{extra}={value}")
    return ", ".join(parts)


class Pruner:
    """The ``early_config_prune`` callable (build it with :func:`pruner`)."""

    def __init__(self, spec, kernel, kernel_args_to_signature, max_spills, min_blocks, top_k, by, use,
                 card, card_config, processes, log, point=None, launcher=None, calibration=None, product=None):
        self.spec: HardwareSpec = load_spec(spec)
        if use not in USES:
            raise ConfigError(f"use={use!r} is not allowed; allowed: {', '.join(USES)}")
        if by not in RANKINGS:
            raise ConfigError(f"by={by!r} is not allowed; allowed: {', '.join(RANKINGS)}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise ConfigError(f"top_k={top_k!r} is not allowed; allowed: None or an integer >= 1")
        if not isinstance(max_spills, int) or max_spills < 0:
            raise ConfigError(f"max_spills={max_spills!r} is not allowed; allowed: an integer >= 0")
        if not isinstance(min_blocks, int) or min_blocks < 1:
            raise ConfigError(f"min_blocks={min_blocks!r} is not allowed; allowed: an integer >= 1")
        if point is not None and not (callable(point) or isinstance(point, Mapping)):
            raise ConfigError(f"point={point!r} is not allowed; allowed: None, a dict such as {{'M': 4096}}, or "
                              "a function of the launch's arguments by name returning one")
        if use == "model" and card is None:
            raise ConfigError("use='model' needs card= (a KernelCard or a built-in card name)")
        if card is not None:
            from .card import load_card
            card = load_card(card)
        if launcher is not None:
            from .launcher import load_launcher
            launcher = load_launcher(launcher)
        if calibration is not None and not hasattr(calibration, "latency_ns"):
            from .calibrate import load
            calibration = load(calibration)
        self.kernel, self.to_signature = kernel, kernel_args_to_signature
        self.max_spills, self.min_blocks, self.top_k, self.by, self.use = max_spills, min_blocks, top_k, by, use
        self.card, self.card_config = card, dict(card_config or {})
        self.processes, self.log = processes, log
        self.point, self.launcher, self.calibration, self.product = point, launcher, calibration, product
        self.decisions: list[dict[str, Any]] = []
        self.ranked_by: str | None = None     # the order top_k used last call ("estimate", "occupancy", "spills")
        self.note = ""                        # how top_k ranked, and why not by the estimate when it fell back
        self.last_point: dict[str, Any] | None = None
        self._memo: dict[str, dict[str, Any]] = {}
        self._workload_kernel = None

    # ------------------------------------------------------------ triton calls this
    def __call__(self, configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list:
        configs = list(configs)
        chain = self._kernel() if self.use == "compile" else None
        names = set(chain[-1].arg_names) if chain else set(named_args)
        values = dict(named_args, **{k: v for k, v in kwargs.items() if k in names})
        self.ranked_by, self.note, self.last_point = None, "", None
        self._chain, self._config_of = chain, configs
        point = why = None
        if self.top_k is not None and self.by == "estimate":
            point, why = self._workload_point(chain, values)
        keep_ir = point is not None
        if self.use == "model":
            rows = [self._predicted(cfg) for cfg in configs]
        else:
            rows = self._compiled(chain, values, configs, keep_ir)
        for i, row in enumerate(rows):
            row.update(index=i, config=describe(configs[i]), source=self.use)
        self._rank(rows, point, why)
        self.decisions = [{k: r.get(k) for k in ROW_KEYS} for r in rows]
        self._log(rows)
        kept = [cfg for cfg, row in zip(configs, rows) if row["kept"]]
        if not kept:
            why = "; ".join(f"{r['config']}: {r['reason']}" for r in rows[:3])
            raise ConfigError(f"no config of {len(rows)} fits {self.spec.name}"
                              f" (max_spills={self.max_spills}): {why}"
                              f"{' ...' if len(rows) > 3 else ''}")
        return kept

    def bind(self, kernel) -> "Pruner":
        """Use `kernel` (a @triton.jit function, possibly autotuned) from now on; returns self."""
        self.kernel = kernel
        return self

    # ------------------------------------------------------------ helpers
    def _kernel(self) -> list:
        """The wrapper chain down to the JITFunction: [outermost, ..., JITFunction]."""
        from .compile import jit_function
        top = self.kernel
        if isinstance(top, str):
            from .compile_pool import load_kernel
            top = self.kernel = load_kernel(top)
        if top is None:
            from triton.runtime.autotuner import Autotuner
            frame, nearest = inspect.currentframe(), None
            for _ in range(12):                 # the Autotuner that called us (prune_configs / run)
                frame = frame.f_back if frame is not None else None
                if frame is None:
                    break
                owner = frame.f_locals.get("self")
                if isinstance(owner, Autotuner):
                    nearest = nearest or owner
                    if getattr(owner, "early_config_prune", None) is self:
                        nearest = owner
                        break
            top = nearest.fn if nearest is not None else None
        if top is None:
            raise KernelError("the pruner does not know its kernel: pass pruner(kernel=fn) or "
                              "pruner(...).bind(fn) when calling it outside triton.autotune")
        chain = [top]
        while not hasattr(chain[-1], "params") and hasattr(chain[-1], "fn"):
            chain.append(chain[-1].fn)
        chain[-1] = jit_function(chain[-1])
        return chain

    # ------------------------------------------------------------ compile
    def _job(self, chain: list, values: dict[str, Any], config) -> dict[str, Any]:
        """compile_kernel's arguments for one config (CompileError / any error: not compilable)."""
        from .compile import signature_from_args
        fn = chain[-1]
        merged = dict(values, **config.kwargs)
        for wrapper in chain[:-1]:              # @triton.heuristics: outermost first, as at launch
            for name, rule in (getattr(wrapper, "values", None) or {}).items():
                merged[name] = rule({**merged, **config.all_kwargs()})
        if self.to_signature is not None:
            sig = dict(self.to_signature(dict(values)))
            consts = {k: v for k, v in merged.items() if k not in sig}
        else:
            sig, consts = signature_from_args(fn, merged)
        options = {}
        if getattr(config, "maxnreg", None) is not None:
            options["maxnreg"] = config.maxnreg
        if getattr(config, "num_ctas", 1) not in (None, 1):
            options["num_ctas"] = config.num_ctas
        return dict(fn=fn, signature=sig, constexprs=consts, arch=self.spec.arch,
                    num_warps=config.num_warps, num_stages=config.num_stages, options=options or None,
                    merged=merged)

    def _compiled(self, chain: list, values: dict[str, Any], configs: list,
                  keep_ir: bool = False) -> list[dict[str, Any]]:
        """One row per config; with `keep_ir` (ranking by the estimate) each row also holds its
        Evidence with the TTGIR's pipelining (``_ev``) and the launch's constexprs (``_merged``)."""
        from .compile import _jsonable
        rows: list[dict[str, Any] | None] = [None] * len(configs)
        todo: dict[str, tuple[dict, list[int]]] = {}
        for i, config in enumerate(configs):
            try:
                job = self._job(chain, values, config)
            except Exception as exc:            # a bad config is a dropped row, never a crash
                rows[i] = dict(kept=False, status="error", reason=f"cannot compile: {_one_line(exc)}")
                continue
            merged = dict(job.pop("merged"), _consts=job["constexprs"])
            if keep_ir:
                job["keep_ir"] = True
            key = self.memo_key(getattr(job["fn"], "cache_key", id(job["fn"])), job["signature"],
                                {k: _jsonable(v) for k, v in job["constexprs"].items()}, job["arch"],
                                job["num_warps"], job["num_stages"], job["options"], keep_ir)
            if key in self._memo:
                rows[i] = dict(self._memo[key], _merged=merged)
            else:
                todo.setdefault(key, (job, []))[1].append((i, merged))
        results = self._compile_all([job for job, _ in todo.values()]) if todo else []
        for (key, (job, idx)), res in zip(todo.items(), results):
            row = self._judge(res, job["num_warps"], keep_ir) if not isinstance(res, str) else \
                dict(kept=False, status="error", reason=f"cannot compile: {res}")
            if row["status"] != "error":
                self._memo[key] = row
            for i, merged in idx:
                rows[i] = dict(row, _merged=merged)
        return rows

    def _compile_all(self, jobs: list[dict]) -> list:
        """A CompileResult, or the error text, per job; in parallel when processes > 1."""
        from .compile import compile_kernel
        if self.processes and self.processes > 1 and len(jobs) > 1:
            from .compile_pool import compile_many
            pending = list(range(len(jobs)))
            out: list = [None] * len(jobs)
            while pending:
                try:
                    for i, res in zip(pending, compile_many([jobs[i] for i in pending], self.processes,
                                                            progress=False)):
                        out[i] = res
                    break
                except CompileError as exc:      # "job k: ..." names the bad one; drop it and go on
                    head, _, msg = str(exc).partition(": ")
                    k = int(head.split()[-1]) if head.startswith("job ") else 0
                    out[pending.pop(k)] = msg or str(exc)
                except Exception as exc:         # the pool itself failed: compile here instead
                    LOG.debug("compile_many failed (%s); compiling in this process", _one_line(exc))
                    break
            jobs_left = [i for i in range(len(jobs)) if out[i] is None]
        else:
            out, jobs_left = [None] * len(jobs), list(range(len(jobs)))
        for i in jobs_left:
            try:
                out[i] = compile_kernel(**jobs[i])
            except Exception as exc:
                out[i] = _one_line(exc)
        return out

    def _judge(self, res, num_warps: int, keep_ir: bool = False) -> dict[str, Any]:
        from .evidence import from_result
        row = dict(status=res.status, cached=res.cached, n_regs=res.n_regs, n_spills=res.n_spills,
                   shared=res.total_shared)
        if not res.ok:
            return dict(row, kept=False, reason=f"compile failed ({res.status}): {res.message}")
        ev = from_result(self.spec, res, pipeline=keep_ir)
        return dict(self._fit(row, ev, res.n_spills or 0), _ev=ev)

    def _fit(self, row: dict[str, Any], ev, spills: int) -> dict[str, Any]:
        """Fill occupancy fields from an Evidence and the verdict (shared limit, spills, resident blocks)."""
        sm = self.spec.sm
        occ = ev.occupancy
        if occ is None:
            return dict(row, kept=False, reason=ev.message or "no occupancy")
        row.update(blocks_per_sm=occ.blocks_per_sm, warps_per_sm=occ.warps_per_sm,
                   occupancy=round(occ.occupancy, 4), limiter=occ.limiter if occ.fits else "-")
        shared = ev.shared
        reason = ""
        if shared > sm.shared_memory_per_block_optin:
            reason = (f"shared memory {shared:,} B > {sm.shared_memory_per_block_optin:,} B per-block limit "
                      f"of {self.spec.name}")
        elif spills > self.max_spills:
            reason = f"{spills} spills > max_spills={self.max_spills}"
        elif occ.blocks_per_sm < self.min_blocks:
            reason = occ.reason or f"{occ.blocks_per_sm} resident blocks/SM < min_blocks={self.min_blocks} " \
                                   f"(limiter: {occ.limiter})"
        return dict(row, kept=not reason, reason=reason)

    # -------------------------------------------------------------- model
    def _predicted(self, config) -> dict[str, Any]:
        from .evidence import gather
        card = self.card
        names = {p.name for p in card.all_params}
        given = {k: v for k, v in config.kwargs.items() if k in names}
        try:
            cfg = card.resolve({**self.card_config, **given, "num_warps": config.num_warps,
                                "num_stages": config.num_stages})
        except OccmodelError as exc:
            return dict(kept=False, status="error", reason=str(exc))
        ev = gather(card, self.spec, [cfg], compile=False)[0]
        if ev.status != "ok":
            return dict(kept=False, status="error", reason=ev.message)
        row = dict(status="model", cached=None, n_regs=ev.regs, n_spills=None, shared=ev.shared)
        row = self._fit(row, ev, 0)
        if row["kept"] and ev.spills_predicted and self.max_spills == 0:
            row.update(kept=False, reason=f"register estimate {ev.regs_estimate} > 255: spills predicted")
        return dict(row, _ev=ev, _cfg=cfg)

    # -------------------------------------------------------------- ranking
    def _workload(self, chain: list | None):
        """The KernelCard whose hooks give grid, loop iterations, bytes and flops: the card, else a
        bare kernel over the launcher (None: neither given)."""
        if self.card is not None:
            return self.card
        if self.launcher is None:
            return None
        if self._workload_kernel is None or self._workload_kernel.fn is not chain[-1]:
            from .bare import bare_kernel
            self._workload_kernel = bare_kernel(chain[0], launcher=self.launcher)   # its wrappers' heuristics too
        return self._workload_kernel

    def _workload_point(self, chain: list | None, values: dict[str, Any]) -> tuple[dict | None, str]:
        """(the workload point, '') or (None, why there is none)."""
        try:
            kernel = self._workload(chain)
        except Exception as exc:                # a launcher that cannot describe this kernel: fall back, say why
            return None, f"no workload hooks: {_one_line(exc)}"
        if kernel is None:
            return None, ("no workload hooks (grid, loop_iterations, bytes_moved, flops): pass card= (a card of "
                          "this kernel) or launcher= (a launcher with those functions)")
        names = [p.name for p in kernel.workload_params]
        try:
            if self.point is not None:
                point = self.point(dict(values)) if callable(self.point) else self.point
                point = dict(point)
            elif names and all(n in values for n in names if n not in kernel.optional_workload):
                point = {n: _plain(values[n]) for n in names if n in values}
            else:
                given = ", ".join(names) if names else "none declared"
                return None, (f"no workload point: pass point={{...}} or point=lambda args: {{...}} (the kernel's "
                              f"workload parameters: {given}; the launch passes "
                              f"{', '.join(n for n in names if n in values) or 'none of them'})")
            if names:
                point = kernel.resolve_point(point)
        except Exception as exc:                # the user's point function failed: fall back, say why
            return None, f"no workload point: {_one_line(exc)}"
        return point, ""

    def _estimates(self, rows: list[dict[str, Any]], point: dict[str, Any]) -> str:
        """Fill estimate_us / bound of the alive rows; '' or why the estimate cannot rank them."""
        from . import calibrate, rank
        kernel = self._workload(self._chain)
        alive = [r for r in rows if r["kept"]]
        try:
            product = self.product or _local_product(self.spec)
            cal = self.calibration or calibrate.resolve(self.spec, None, product)
            cfgs = [self._rank_config(kernel, r) for r in alive]
            est = rank.estimate_many(kernel, self.spec, cal, cfgs, [point], [r["_ev"] for r in alive], product)
        except Exception as exc:                # a hook that fails is a fallback, never a crash
            return f"the estimate failed: {_one_line(exc)}"
        for r, (e,) in zip(alive, est):
            r.update(estimate_us=round(e.total_s * 1e6, 3) if math.isfinite(e.total_s) else None, bound=e.bound,
                     _total=e.total_s)
        self._cal = cal
        return ""

    def _rank_config(self, kernel, row: dict[str, Any]) -> dict[str, Any]:
        """The config the workload hooks take: the card's resolved config, else the launch's
        constexprs plus num_warps and num_stages (what a launcher's grid(cfg, point) gets)."""
        if "_cfg" in row:
            return row["_cfg"]
        merged = dict(row.get("_merged") or {})
        consts = merged.pop("_consts", {})
        cfg = self._config_of[row["index"]]
        launch = {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
        if kernel is self.card:
            names = {p.name for p in kernel.all_params}
            return kernel.resolve({**self.card_config, **{k: v for k, v in merged.items() if k in names}, **launch})
        return {**consts, **launch}

    def _rank(self, rows: list[dict[str, Any]], point: dict[str, Any] | None = None, why: str = "") -> None:
        alive = [r for r in rows if r["kept"]]
        if self.top_k is None:
            return
        by = self.by
        if by == "estimate":
            why = why or self._estimates(rows, point)
            if why:
                by = "occupancy"
                self.note = (f"top_k={self.top_k} ranked by occupancy (resident warps/SM), NOT by the rank "
                             f"estimate: {why}")
            else:
                self.last_point = point
        self.ranked_by = by
        if by == "estimate":
            self._cut_by_estimate(alive, point)
            return
        if len(alive) <= self.top_k:
            return

        def order(r):
            warps, spills = -(r.get("warps_per_sm") or 0), r.get("n_spills") or 0
            return (warps, spills, r["index"]) if by == "occupancy" else (spills, warps, r["index"])
        for place, r in enumerate(sorted(alive, key=order), start=1):
            if place > self.top_k:
                r.update(kept=False, reason=f"not in top_k={self.top_k} by {by} (rank {place}: "
                                            f"{r.get('warps_per_sm')} warps/SM, {r.get('n_spills')} spills)")

    def _cut_by_estimate(self, alive: list[dict[str, Any]], point: dict[str, Any]) -> None:
        """Keep the top_k smallest estimates; a tie at the cut keeps every config of it (the
        estimate cannot order them) and the note says so."""
        from .rank import standing
        k = self.top_k
        where = ", ".join(f"{n}={v}" for n, v in point.items())
        cal = self._cal
        self.note = (f"top_k={k} ranked by the rank estimate at {where or 'the point'} (constants: {cal.gpu}, "
                     f"{cal.source.split(':')[0]})")
        if not alive:
            return
        totals = [r["_total"] for r in alive]
        place = standing(totals)
        order = sorted(range(len(alive)), key=lambda i: (place[i], alive[i]["index"]))
        cut = place[order[min(k, len(order)) - 1]]
        kept = [i for i in order if place[i] <= cut]
        if len(kept) > k:
            tied = sum(1 for i in order if place[i] == cut)
            self.note += (f"; the #{cut} place is a {tied}-way tie on the estimate: all {tied} kept "
                          f"({len(kept)} configs for top_k={k})")
        for i in order:
            r = alive[i]
            if place[i] > cut:
                r.update(kept=False, reason=f"not in top_k={k} by estimate (rank {place[i]}: "
                                            f"{r['estimate_us']:g} us, {r['bound']}-bound at {where})")

    def _log(self, rows: list[dict[str, Any]]) -> None:
        if self.log is None:
            return
        emit = self.log if callable(self.log) else (lambda msg: LOG.log(self.log, msg))
        for r in rows:
            if not r["kept"]:
                emit(f"dropped [{r['config']}] for {self.spec.name}: {r['reason']}")
        if self.note:
            if self.ranked_by != self.by and not callable(self.log):   # a fallback: say it where it is seen
                LOG.log(max(self.log, logging.WARNING), self.note)
            else:
                emit(self.note)
        n = sum(r["kept"] for r in rows)
        emit(f"kept {n} of {len(rows)} configs for {self.spec.name} ({self.use})")

    def memo_key(self, *parts: Any) -> str:
        return json.dumps(parts, sort_keys=True, default=str)

    def report(self):
        """The last decisions as an :class:`occmodel.report.Report` (render with report.render)."""
        from .report import Report, Section
        cols = [(k, k) for k in ROW_KEYS if k not in ("index", "source")]
        title = f"autotune pre-screen for {self.spec.name} ({self.use}): kept " \
                f"{sum(r['kept'] for r in self.decisions)} of {len(self.decisions)}"
        return Report("autotune", [Section(title, cols, self.decisions)],
                      [f"max_spills={self.max_spills}, min_blocks={self.min_blocks}, top_k={self.top_k}, "
                       f"by={self.by}"] + ([self.note] if self.note else []),
                      extra={"ranked_by": self.ranked_by, "note": self.note, "point": self.last_point})


def _local_product(spec: HardwareSpec) -> str | None:
    """The spec product of the GPU this process already uses (torch imported, a device of the spec's
    arch visible), so datasheet figures are the H200's on an H200; None otherwise (the spec's first).
    Never imports torch itself."""
    import sys
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_available():
            return None
        if tuple(torch.cuda.get_device_capability(0)) != tuple(spec.compute_capability):
            return None
        prod = spec.product_for_gpu(torch.cuda.get_device_name(0))
        return prod.name if prod else None
    except Exception:                          # no driver, a broken install: the spec's default product
        return None


def pruner(spec: str | HardwareSpec = "sm_120", kernel_args_to_signature: Callable[[dict], Mapping] | None = None,
           max_spills: int = 0, min_blocks: int = 1, top_k: int | None = None, by: str = "estimate",
           use: str = "compile", card=None, log: int | Callable[[str], None] | None = logging.INFO, *,
           kernel=None, card_config: Mapping[str, Any] | None = None, processes: int = 1,
           point: Mapping[str, Any] | Callable[[dict], Mapping[str, Any]] | None = None, launcher=None,
           calibration=None, product: str | None = None) -> Pruner:
    """An ``early_config_prune`` function that keeps the configs that fit `spec` (see the module doc).

    kernel_args_to_signature: optional ``f(args) -> {name: "*fp16:16", ...}`` giving the AOT
      signature of the runtime parameters from the launch's arguments (name -> value), instead of
      specialising the values themselves. kernel: the @triton.jit function (default: the calling
      Autotuner's). card / card_config: the KernelCard (or built-in name) and fixed card
      parameters (e.g. dtype) for ``use="model"``. processes > 1 compiles misses in parallel
      (:func:`occmodel.compile_pool.compile_many`, spawn workers: the calling script needs an
      ``if __name__ == "__main__":`` guard). log: logging level of the decision lines on
      ``occmodel.autotune``, a callable taking each line, or None for silence (a fallback from
      the estimate to occupancy is logged at WARNING at least, and kept in ``pruner.note``).
    top_k / by: keep the best top_k survivors by the rank estimate (default; see the module doc),
      by "occupancy" or by "spills". point: the workload point of the estimate, a dict or
      ``f(launch_args) -> dict``. card / launcher: the workload hooks (with use="compile" the card
      only supplies them; the compile still uses the launch's real arguments). calibration: a
      Calibration or a calibration YAML path (default: calibrate.resolve(spec), i.e. a cached
      calibration of the spec, else the datasheet); product: the spec's product for datasheet figures
      (default: the local GPU's when torch already runs on one of the spec's arch, else the spec's first).
    """
    return Pruner(spec, kernel, kernel_args_to_signature, max_spills, min_blocks, top_k, by, use, card,
                  card_config, processes, log, point, launcher, calibration, product)


def _plain(value: Any) -> Any:
    """A launch argument as a workload value (ints stay ints; tensors and the rest as given)."""
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


__all__ = ["LOG", "ROW_KEYS", "Pruner", "describe", "pruner"]
