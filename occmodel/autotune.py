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
* optionally keeps the best ``top_k`` survivors: ``by="occupancy"`` ranks by resident warps
  per SM (more first), then spills (fewer first), then the given order; ``by="spills"``
  ranks by spills first, then resident warps.

Every decision is logged on logger ``occmodel.autotune`` and kept as plain rows in
``pruner.decisions`` (the last call). A config that cannot be compiled is dropped with its
reason, never raised; if *no* config survives, :class:`~occmodel.errors.ConfigError` says why
(Triton would otherwise fail with a generic message).
"""

from __future__ import annotations

import inspect
import json
import logging
from typing import Any, Callable, Mapping, Sequence

from .errors import CompileError, ConfigError, KernelError, OccmodelError
from .spec import HardwareSpec, load_spec

LOG = logging.getLogger("occmodel.autotune")
USES = ("compile", "model")
RANKINGS = ("occupancy", "spills")
ROW_KEYS = ("index", "config", "kept", "reason", "source", "status", "n_regs", "n_spills", "shared",
            "blocks_per_sm", "warps_per_sm", "occupancy", "limiter", "cached")


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
                 card, card_config, processes, log):
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
        if use == "model":
            from .card import load_card
            if card is None:
                raise ConfigError("use='model' needs card= (a KernelCard or a built-in card name)")
            card = load_card(card)
        self.kernel, self.to_signature = kernel, kernel_args_to_signature
        self.max_spills, self.min_blocks, self.top_k, self.by, self.use = max_spills, min_blocks, top_k, by, use
        self.card, self.card_config = card, dict(card_config or {})
        self.processes, self.log = processes, log
        self.decisions: list[dict[str, Any]] = []
        self._memo: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------ triton calls this
    def __call__(self, configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list:
        configs = list(configs)
        if self.use == "model":
            rows = [self._predicted(cfg) for cfg in configs]
        else:
            chain = self._kernel()
            fn = chain[-1]
            names = set(fn.arg_names)
            values = dict(named_args, **{k: v for k, v in kwargs.items() if k in names})
            rows = self._compiled(chain, values, configs)
        for i, row in enumerate(rows):
            row.update(index=i, config=describe(configs[i]), source=self.use)
        self._rank(rows)
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
                    num_warps=config.num_warps, num_stages=config.num_stages, options=options or None)

    def _compiled(self, chain: list, values: dict[str, Any], configs: list) -> list[dict[str, Any]]:
        from .compile import _jsonable
        rows: list[dict[str, Any] | None] = [None] * len(configs)
        todo: dict[str, tuple[dict, list[int]]] = {}
        for i, config in enumerate(configs):
            try:
                job = self._job(chain, values, config)
            except Exception as exc:            # a bad config is a dropped row, never a crash
                rows[i] = dict(kept=False, status="error", reason=f"cannot compile: {_one_line(exc)}")
                continue
            key = self.memo_key(getattr(job["fn"], "cache_key", id(job["fn"])), job["signature"],
                                {k: _jsonable(v) for k, v in job["constexprs"].items()}, job["arch"],
                                job["num_warps"], job["num_stages"], job["options"])
            if key in self._memo:
                rows[i] = dict(self._memo[key])
            else:
                todo.setdefault(key, (job, []))[1].append(i)
        results = self._compile_all([job for job, _ in todo.values()]) if todo else []
        for (key, (job, idx)), res in zip(todo.items(), results):
            row = self._judge(res, job["num_warps"]) if not isinstance(res, str) else \
                dict(kept=False, status="error", reason=f"cannot compile: {res}")
            if row["status"] != "error":
                self._memo[key] = row
            for i in idx:
                rows[i] = dict(row)
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

    def _judge(self, res, num_warps: int) -> dict[str, Any]:
        from .evidence import from_result
        row = dict(status=res.status, cached=res.cached, n_regs=res.n_regs, n_spills=res.n_spills,
                   shared=res.total_shared)
        if not res.ok:
            return dict(row, kept=False, reason=f"compile failed ({res.status}): {res.message}")
        return self._fit(row, from_result(self.spec, res, pipeline=False), res.n_spills or 0)

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
        return row

    def _rank(self, rows: list[dict[str, Any]]) -> None:
        alive = [r for r in rows if r["kept"]]
        if self.top_k is None or len(alive) <= self.top_k:
            return
        def order(r):
            warps, spills = -(r.get("warps_per_sm") or 0), r.get("n_spills") or 0
            return (warps, spills, r["index"]) if self.by == "occupancy" else (spills, warps, r["index"])
        for rank, r in enumerate(sorted(alive, key=order), start=1):
            if rank > self.top_k:
                r.update(kept=False, reason=f"not in top_k={self.top_k} by {self.by} (rank {rank}: "
                                            f"{r.get('warps_per_sm')} warps/SM, {r.get('n_spills')} spills)")

    def _log(self, rows: list[dict[str, Any]]) -> None:
        if self.log is None:
            return
        emit = self.log if callable(self.log) else (lambda msg: LOG.log(self.log, msg))
        for r in rows:
            if not r["kept"]:
                emit(f"dropped [{r['config']}] for {self.spec.name}: {r['reason']}")
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
                       f"by={self.by}"])


def pruner(spec: str | HardwareSpec = "sm_120", kernel_args_to_signature: Callable[[dict], Mapping] | None = None,
           max_spills: int = 0, min_blocks: int = 1, top_k: int | None = None, by: str = "occupancy",
           use: str = "compile", card=None, log: int | Callable[[str], None] | None = logging.INFO, *,
           kernel=None, card_config: Mapping[str, Any] | None = None, processes: int = 1) -> Pruner:
    """An ``early_config_prune`` function that keeps the configs that fit `spec` (see the module doc).

    kernel_args_to_signature: optional ``f(args) -> {name: "*fp16:16", ...}`` giving the AOT
      signature of the runtime parameters from the launch's arguments (name -> value), instead of
      specialising the values themselves. kernel: the @triton.jit function (default: the calling
      Autotuner's). card / card_config: the KernelCard (or built-in name) and fixed card
      parameters (e.g. dtype) for ``use="model"``. processes > 1 compiles misses in parallel
      (:func:`occmodel.compile_pool.compile_many`, spawn workers: the calling script needs an
      ``if __name__ == "__main__":`` guard). log: logging level of the decision lines on
      ``occmodel.autotune``, a callable taking each line, or None for silence.
    """
    return Pruner(spec, kernel, kernel_args_to_signature, max_spills, min_blocks, top_k, by, use, card,
                  card_config, processes, log)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


__all__ = ["LOG", "ROW_KEYS", "Pruner", "describe", "pruner"]
