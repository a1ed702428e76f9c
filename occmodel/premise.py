"""Premises: *lever -> mechanism -> outcome*, one per lever. Pure.

A candidate that changes k parameters is k premises, each judged from the baseline
with only that lever changed, plus (k >= 2) one for the combination: an engineer
runs num_warps=8 and num_stages=3 as separate experiments for this reason.
:func:`lever_configs` lists those configs; :func:`judge` states and decides one
premise from the evidence of two configs (occmodel.evidence.Evidence, duck-typed:
``shared``, ``regs``, ``spills``, ``blocks_per_sm``, ``warps_per_sm``, ``fits``,
``source``, ``pipeline``, ``config``).

The rules, one per kind of lever (:data:`RULES`; the first that applies decides):

=================  ====================================================  ===========================================
lever              claim (the mechanism)                                  decided by (its own quantities)
=================  ====================================================  ===========================================
num_warps up       raises resident warps per SM (occupancy)               warps/SM rise
num_warps down     cuts the dots' shared-memory operand reads             compiled operand reads per iteration fall
num_stages up      deepens the software pipeline (loads in flight)        compiled ring depth of a load that matters
                                                                          rises (TTGIR); a model: shared memory grows
num_stages down    frees shared memory, so more blocks fit per SM         blocks/SM rise
BLOCK_* up         moves more bytes per loop iteration (fewer, fuller     compiled main-loop bytes per iteration rise;
                   iterations, more reuse per load)                       a model: shared memory grows
BLOCK_* down       shrinks the block, so more blocks fit per SM           blocks/SM rise
anything else      no rule: "unchecked: no rule for NAME"                 --
=================  ====================================================  ===========================================

Every premise lists what else changed (:func:`also_changed`): each compiled quantity
that moved besides the rule's own — registers, spills, shared memory, blocks/SM,
warps/SM, the ring depth of each loop load, operand reads and bytes per iteration —
so a gain that comes from spills vanishing is never credited to occupancy.
Measured outcomes and verdicts live in stats.py; :func:`verdict_line` joins them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

MECHANISM_HOLDS = "holds"
MECHANISM_FAILS = "fails"
MECHANISM_UNCHECKED = "unchecked"      # no rule, or the evidence needs a compile that was not made
DOES_NOT_FIT = "does not fit"


@dataclass(frozen=True)
class Premise:
    name: str                          # "num_warps 4->8", or "num_warps 4->8 + num_stages 2->3" (combination)
    levers: tuple[str, ...]            # the parameters changed
    claim: str                         # the premise in words
    mechanism: str                     # MECHANISM_HOLDS | MECHANISM_FAILS | DOES_NOT_FIT | MECHANISM_UNCHECKED
    evidence: str                      # the numbers that decided it
    also_changed: tuple[str, ...] = ()  # other quantities that moved, e.g. "spills 198 -> 0"
    note: str = ""                     # a side effect worth knowing (e.g. occupancy falls)
    config: Mapping[str, Any] = field(default_factory=dict)   # the config the premise is about
    major: tuple[str, ...] = ()        # the entries of also_changed big enough to explain an outcome

    @property
    def combination(self) -> bool:
        return len(self.levers) > 1

    @property
    def lever(self) -> str:
        return self.name

    @property
    def why(self) -> str:
        return self.evidence

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "levers": list(self.levers), "claim": self.claim, "mechanism": self.mechanism,
                "evidence": self.evidence, "also_changed": list(self.also_changed), "major": list(self.major),
                "note": self.note, "config": dict(self.config)}


def lever(base: Mapping[str, Any], cand: Mapping[str, Any]) -> str:
    """'num_warps 4->8, num_stages 2->3' (the changed parameters, in config order)."""
    changed = [f"{k} {_v(base.get(k))}->{_v(cand[k])}" for k in cand if base.get(k) != cand[k]]
    return ", ".join(changed) if changed else "no change"


def _v(value: Any) -> str:
    return str(getattr(value, "name", value)) if not isinstance(value, (int, float, str, bool)) else str(value)


def changed(base: Mapping[str, Any], cand: Mapping[str, Any]) -> list[str]:
    return [k for k in cand if base.get(k) != cand[k]]


def lever_configs(base: Mapping[str, Any], cand: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(premise name, config) per lever: the baseline with only that parameter changed, then the
    candidate itself as the combination when it changes two or more."""
    names = changed(base, cand)
    out = [(lever(base, {**base, k: cand[k]}), {**base, k: cand[k]}) for k in names]
    if len(names) > 1:
        out.append((" + ".join(n for n, _ in out), dict(cand)))
    return out


# ------------------------------------------------------------------ evidence readers
def _main(ev):
    rep = getattr(ev, "pipeline", None)
    return rep.main if rep is not None else None


def _loads(ev) -> dict[str, Any]:
    """Every loop load of a compiled config, keyed by (loop position, name)."""
    rep = getattr(ev, "pipeline", None)
    out = {}
    for i, lp in enumerate(rep.loops if rep is not None else ()):
        for ld in lp.loads:
            out[f"{ld.name}" + (f" (loop {i})" if len(rep.loops) > 1 else "")] = ld
    return out


def _describe_load(ld) -> str:
    if ld is None:
        return "absent"
    if not ld.pipelined:
        return "plain"
    return f"{ld.kind} x{ld.buffers}"


def operand_reads(ev) -> int | None:
    """The main loop's dots' shared-memory operand reads per iteration (bank conflicts counted as the
    extra wavefronts they take); None without a compiled dot."""
    m = _main(ev)
    return m.dot_read_bytes if m is not None and m.dots else None


def loop_bytes(ev) -> int | None:
    """Bytes the compiled main loop loads per iteration (every load's slot or tile)."""
    m = _main(ev)
    return sum(ld.slot_bytes for ld in m.loads) if m is not None and m.loads else None


def prefetch_change(base_ev, cand_ev) -> tuple[bool, str]:
    """(deeper, why) from the compiled TTGIR of both configs (occmodel.pipeline.prefetch_change)."""
    from .pipeline import prefetch_change as compare
    if getattr(cand_ev, "pipeline", None) is None or getattr(base_ev, "pipeline", None) is None:
        return False, "no compiled TTGIR to compare"
    return compare(base_ev.pipeline, cand_ev.pipeline)


# ------------------------------------------------------------------ what else changed
QUANTITIES = ("registers", "spills", "shared", "blocks/SM", "warps/SM", "pipeline", "operand reads",
              "bytes per iteration")


def also_changed(base_ev, cand_ev, own: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """(every quantity that moved besides `own`, the major ones among them). Major: spills
    appear or vanish, registers move by >= 10 %, a load changes between plain and pipelined,
    resident blocks/SM change."""
    out, major = [], []

    def add(name, a, b, fmt="{:,}", big=False):
        if name in own or a is None or b is None or a == b:
            return
        text = f"{name} {fmt.format(a)} -> {fmt.format(b)}"
        out.append(text)
        if big:
            major.append(text)

    r0, r1 = base_ev.regs, cand_ev.regs
    add("registers", r0, r1, big=r0 is not None and r1 is not None and abs(r1 - r0) >= 0.1 * max(r0, 1))
    s0, s1 = base_ev.spills, cand_ev.spills
    add("spills", s0, s1, big=s0 is not None and s1 is not None and (s0 == 0) != (s1 == 0))
    add("shared", base_ev.shared, cand_ev.shared, "{:,} B")
    add("blocks/SM", base_ev.blocks_per_sm, cand_ev.blocks_per_sm, big=True)
    add("warps/SM", base_ev.warps_per_sm, cand_ev.warps_per_sm)
    b, c = _loads(base_ev), _loads(cand_ev)
    for name in sorted(set(b) | set(c)):
        d0, d1 = _describe_load(b.get(name)), _describe_load(c.get(name))
        if d0 != d1:
            # a num_stages rule reads ring depths itself; a load turning async (or plain) is still news
            if "pipeline" in own and "plain" not in (d0, d1) and "absent" not in (d0, d1):
                continue
            text = f"load {name} {d0} -> {d1}"
            out.append(text)
            if (d0 == "plain") != (d1 == "plain"):
                major.append(text)
    add("operand reads", operand_reads(base_ev), operand_reads(cand_ev), "{:,} B/iter")
    add("bytes per iteration", loop_bytes(base_ev), loop_bytes(cand_ev), "{:,} B")
    return out, major


# ------------------------------------------------------------------ the rules
@dataclass(frozen=True)
class Rule:
    """One kind of lever: when it applies, its claim, its own quantities and how it decides."""

    name: str
    applies: Callable[[str, Any, Any], bool]
    claim: Callable[[str], str]                 # the lever text -> the claim
    own: tuple[str, ...]
    decide: Callable[[Any, Any, str], tuple[str, str, str]]   # (base_ev, cand_ev, source) -> (mechanism, evidence, note)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _warps_up(b, c, src):
    bw, cw = b.warps_per_sm, c.warps_per_sm
    side = ""
    r0, r1 = operand_reads(b), operand_reads(c)
    if r0 is not None and r1 is not None and r1 > r0:
        side = f"compiled dot-operand reads rise {r0:,} -> {r1:,} B per iteration"
    if cw > bw:
        return MECHANISM_HOLDS, f"{src} resident warps/SM {bw} -> {cw}: the mechanism happens", side
    verb = "stay" if cw == bw else "fall"
    return MECHANISM_FAILS, f"{src} resident warps/SM {verb} {bw} -> {cw}: the mechanism does not happen", side


def _warps_down(b, c, src):
    occ = f"resident warps/SM {b.warps_per_sm} -> {c.warps_per_sm} ({src})"
    r0, r1 = operand_reads(b), operand_reads(c)
    if r0 is None or r1 is None:
        return MECHANISM_UNCHECKED, "needs the compiled TTGIR's dot layouts (compile for the spec's arch; a kernel " \
                                    "without a dot in its main loop has no operand reads to cut)", occ
    loaded = loop_bytes(b)
    per = f" ({r0 / loaded:.1f} -> {r1 / loaded:.1f} B per loaded byte)" if loaded else ""
    text = f"compiled dot-operand reads from shared memory {r0:,} -> {r1:,} B per iteration{per}"
    return (MECHANISM_HOLDS, text + ": the mechanism happens", occ) if r1 < r0 else \
        (MECHANISM_FAILS, text + ": the reads do not fall", occ)


def _stages_up(b, c, src):
    note = f"resident warps/SM fall {b.warps_per_sm} -> {c.warps_per_sm} ({src})" \
        if c.warps_per_sm < b.warps_per_sm else ""
    shared = f"{src} shared memory {b.shared:,} -> {c.shared:,} B"
    if getattr(b, "pipeline", None) is not None and getattr(c, "pipeline", None) is not None:
        deeper, why = prefetch_change(b, c)
        return (MECHANISM_HOLDS if deeper else MECHANISM_FAILS,
                f"{why}; {shared}: " + ("the loads are prefetched deeper" if deeper
                                        else "num_stages does not deepen the prefetch"), note)
    if c.shared > b.shared:
        return MECHANISM_HOLDS, f"{shared}: Triton adds pipeline buffers", note
    return MECHANISM_FAILS, f"{shared} stays flat: no load is pipelined deeper, so num_stages is a no-op", note


def _more_blocks(b, c, src):
    text = f"{src} resident blocks/SM {b.blocks_per_sm} -> {c.blocks_per_sm} (shared {b.shared:,} -> {c.shared:,} B)"
    if c.blocks_per_sm > b.blocks_per_sm:
        return MECHANISM_HOLDS, text + ": the mechanism happens", ""
    return MECHANISM_FAILS, text + ": no block is added", ""


def _tile_up(b, c, src):
    l0, l1 = loop_bytes(b), loop_bytes(c)
    occ = f"resident warps/SM {b.warps_per_sm} -> {c.warps_per_sm} ({src})" \
        if c.warps_per_sm != b.warps_per_sm else ""
    if l0 is not None and l1 is not None:
        text = f"compiled main loop loads {l0:,} -> {l1:,} B per iteration"
        return (MECHANISM_HOLDS, text + ": the mechanism happens", occ) if l1 > l0 else \
            (MECHANISM_FAILS, text + ": the iteration does not grow", occ)
    if c.shared > b.shared:
        return MECHANISM_HOLDS, f"{src} shared memory {b.shared:,} -> {c.shared:,} B: the tiles grow", occ
    return MECHANISM_UNCHECKED, f"{src} shared memory stays {b.shared:,} B; needs the compiled TTGIR's loop loads", occ


RULES: tuple[Rule, ...] = (
    Rule("num_warps up", lambda p, o, n: p == "num_warps" and n > o,
         lambda lv: f"{lv} raises resident warps per SM, so throughput rises", ("warps/SM",), _warps_up),
    Rule("num_warps down", lambda p, o, n: p == "num_warps" and n < o,
         lambda lv: f"{lv} cuts the dot operands' shared-memory reads per loop iteration (fewer warps re-read "
                    "the same tiles), so throughput rises", ("operand reads",), _warps_down),
    Rule("num_stages up", lambda p, o, n: p == "num_stages" and n > o,
         lambda lv: f"{lv} deepens the software pipeline (more loads in flight), so throughput rises",
         ("pipeline", "shared"), _stages_up),
    Rule("num_stages down", lambda p, o, n: p == "num_stages" and n < o,
         lambda lv: f"{lv} frees shared memory (a shallower pipeline), so more blocks fit per SM and throughput "
                    "rises", ("shared", "blocks/SM", "warps/SM", "pipeline"), _more_blocks),
    Rule("tile up", lambda p, o, n: p.startswith("BLOCK") and _num(o) and _num(n) and n > o,
         lambda lv: f"{lv} moves more bytes per loop iteration (fewer, fuller iterations, more reuse per load), "
                    "so throughput rises", ("bytes per iteration", "shared"), _tile_up),
    Rule("tile down", lambda p, o, n: p.startswith("BLOCK") and _num(o) and _num(n) and n < o,
         lambda lv: f"{lv} shrinks the block (less shared memory and fewer registers), so more blocks fit per SM "
                    "and throughput rises", ("shared", "blocks/SM", "warps/SM", "bytes per iteration"), _more_blocks),
)


def rule_for(param: str, old: Any, new: Any) -> Rule | None:
    return next((r for r in RULES if r.applies(param, old, new)), None)


def _source(b, c) -> str:
    return b.source if b.source == c.source else f"{b.source} / {c.source}"


def judge_lever(base_ev, cand_ev, param: str) -> Premise:
    """The premise of changing `param` alone (base -> cand differ in that parameter)."""
    b, c = base_ev.config, cand_ev.config
    name = lever({param: b.get(param)}, {param: c[param]})
    rule = rule_for(param, b.get(param), c[param])
    if rule is None:
        return Premise(name, (param,), f"{name}: no premise rule for {param}", MECHANISM_UNCHECKED,
                       f"unchecked: no rule for {param} (occmodel has rules for num_warps, num_stages and BLOCK_* "
                       "tile sizes); only a measurement can judge it", tuple(_changes(base_ev, cand_ev, ())[0]),
                       config=c)
    claim = rule.claim(name)
    for who, ev in (("baseline", base_ev), ("candidate", cand_ev)):
        if ev.status != "ok" or ev.occupancy is None:
            return Premise(name, (param,), claim, MECHANISM_UNCHECKED,
                           f"the {who} has no evidence ({ev.source} {ev.status}: {ev.message})", config=c)
    ch, major = also_changed(base_ev, cand_ev, rule.own)
    if not cand_ev.fits:
        return Premise(name, (param,), claim, DOES_NOT_FIT,
                       f"the candidate does not fit on the SM ({cand_ev.source}: {cand_ev.reason}); nothing to "
                       "measure", tuple(ch), config=c, major=tuple(major))
    mech, evidence, note = rule.decide(base_ev, cand_ev, _source(base_ev, cand_ev))
    tail = {MECHANISM_HOLDS: "; only a measurement can say whether throughput follows",
            MECHANISM_FAILS: ", so the premise is refuted before any timing"}.get(mech, "")
    return Premise(name, (param,), claim, mech, evidence + tail, tuple(ch), note, config=c, major=tuple(major))


def _changes(base_ev, cand_ev, own) -> tuple[list[str], list[str]]:
    """also_changed when both configs have evidence, else nothing to compare."""
    if getattr(base_ev, "occupancy", None) is None or getattr(cand_ev, "occupancy", None) is None:
        return [], []
    return also_changed(base_ev, cand_ev, own)


def judge(base_ev, cand_ev) -> Premise:
    """The premise of base -> cand: one lever's rule when a single parameter changed, else the
    combination, whose mechanism holds when any of its levers' mechanisms still happens at
    the combined config."""
    names = changed(base_ev.config, cand_ev.config)
    if not names:
        return Premise("no change", (), "no change", MECHANISM_UNCHECKED, "the candidate equals the baseline",
                       config=cand_ev.config)
    if len(names) == 1:
        return judge_lever(base_ev, cand_ev, names[0])
    parts = []
    for p in names:
        # each lever's rule read between the baseline and the combination (the others changed too)
        parts.append((p, judge_lever(base_ev, cand_ev, p)))
    name = " + ".join(lever({p: base_ev.config.get(p)}, {p: cand_ev.config[p]}) for p in names)
    mechs = [pr.mechanism for _, pr in parts]
    if DOES_NOT_FIT in mechs:
        mech = DOES_NOT_FIT
    elif MECHANISM_HOLDS in mechs:
        mech = MECHANISM_HOLDS
    elif all(m == MECHANISM_FAILS for m in mechs):
        mech = MECHANISM_FAILS
    else:
        mech = MECHANISM_UNCHECKED
    evidence = "; ".join(f"{p}: {pr.mechanism} ({pr.evidence.split(';')[0]})" for p, pr in parts)
    ch, major = _changes(base_ev, cand_ev, ())
    return Premise(name, tuple(names), f"{name} together: throughput rises", mech, evidence, tuple(ch),
                   config=cand_ev.config, major=tuple(major))


# ------------------------------------------------------------------ outcome + premise
def verdict_line(premise: Premise, measured: str, delta: float | None = None) -> str:
    """The verdict said with its cause: the measured verdict (stats.py), then whether the stated
    mechanism happened and the major changes beside it that a gain or loss may come from."""
    pct = "" if delta is None else f" {100 * delta:+.1f}%"
    head = f"{measured}{pct}"
    if premise.mechanism in (MECHANISM_FAILS, DOES_NOT_FIT):
        if measured in ("CONFIRMED", "REFUTED"):
            cause = f"; likely cause: {', '.join(premise.major or premise.also_changed[:3])}" \
                if (premise.major or premise.also_changed) else ""
            return (f"REFUTED (the mechanism does not happen) — measured {measured}{pct} all the same{cause}")
        return f"REFUTED (the mechanism does not happen) — measured {head}"
    if measured == "CONFIRMED" and premise.major:
        return (f"{head} — {premise.evidence.split(':')[0]}; {', '.join(premise.major)} changed too: the gain "
                "cannot be credited to the premise's mechanism alone")
    if measured == "REFUTED" and premise.major:
        return f"{head} — {', '.join(premise.major)} changed too"
    return head
