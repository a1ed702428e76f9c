"""What a thread holds at the busiest point of a kernel's main loop, read from its TTGIR.

    live_at_peak(ttgir_text, num_warps)   # {"live:acc:arg#1": 32.0, "live:s:tt.dot#1": 16.0, ...}

The main loop is the ``scf.for`` with a dot in its body (else the one carrying the most
words); without a loop, the function body. Its top-level ops are walked in order and each
SSA value is live from its definition to its last use:

* a value defined before the loop and used in it stays live for the whole body (it is
  held across iterations);
* a loop-carried value (an ``iter_args`` block argument) is live from the body's start
  to its last use; what the body yields is live from its definition to the yield;
* a value defined in the body is live from its op to its last use (values defined in a
  nested region -- a reduction's combiner -- belong to the op that holds it).

Words per thread of a value (32-bit registers) are the *distinct* words it needs, its tile
spread evenly over the threads -- ``max(1, elements / (32 x num_warps))`` x the element's
width (:func:`occmodel.layouts.elem_words`), the layout's replication left out (a layout
the sample cannot predict at a config never compiled) -- and less where the value is a
cheap function of smaller ones:

* a dense constant: 0 (an immediate); ``tt.make_range``: 1 (a lane offset);
* ``tt.splat``: its scalar's words; ``tt.broadcast`` / ``tt.expand_dims`` / ``tt.reshape``:
  at most its source's;
* an elementwise op (``arith.*``, ``math.*``, ``tt.addptr``): at most the sum of its
  operands' (a 64x64 pointer tile built from a broadcast row of pointers and a broadcast
  column of offsets needs the row, not 4096 addresses).

The point of the body where the live values' words sum highest is the peak; the values
live there, keyed by SSA name stem, defining op and ordinal (stable across configs of one
code path), are returned. An estimate of register pressure, not of ptxas's allocation:
callers calibrate on compiles. Pure: string processing.
"""

from __future__ import annotations

import math
import re

from .layouts import _TENSOR, elem_words

_DEF = re.compile(r"^\s*(%[\w.$-]+)(?::(\d+))?\s*=\s*\"?([\w.]+)\"?")
_TOKEN = re.compile(r"%[\w.$-]+(?:#\d+)?")
_PASS = ("tt.broadcast", "tt.expand_dims", "tt.reshape")


def strip_loc(line: str) -> str:
    """The line without its trailing ``loc(...)`` (nested parentheses included)."""
    i = line.rfind(" loc(")
    while i >= 0:
        depth, j = 0, i + 4
        for j in range(i + 4, len(line)):
            depth += line[j] == "("
            depth -= line[j] == ")"
            if depth == 0:
                break
        if line[j + 1:].strip():
            break                                  # not trailing: an operand's location
        line = line[:i]
        i = line.rfind(" loc(")
    return line.rstrip()


def _split(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside brackets."""
    out, depth, cur, i = [], 0, "", 0
    while i < len(text):
        if depth == 0 and text.startswith(sep, i):
            out.append(cur.strip())
            cur, i = "", i + len(sep)
            continue
        depth += text[i] in "<({["
        depth -= text[i] in ">)}]"
        cur, i = cur + text[i], i + 1
    return out + ([cur.strip()] if cur.strip() else [])


def result_types(op: str, text: str) -> list[str]:
    """Result types of an op from its printed text (its last line for a multi-line op)."""
    arrow = _split(text, " -> ")
    if len(arrow) > 1:
        t = arrow[-1].split(" {")[0].strip()
        return _split(t[1:-1], ",") if t.startswith("(") and t.endswith(")") else [t]
    to = _split(text, " to ")
    if len(to) > 1 and op.startswith("arith."):            # casts: truncf %x : A to B
        return [to[-1]]
    colon = _split(text, " : ")
    types = _split(colon[-1], ",") if len(colon) > 1 else []
    if not types:
        return []
    if op == "arith.select":                               # : i1-type, value-type
        return [types[-1]]
    t = types[0]
    if op == "tt.load":                                    # a load returns the pointee
        t = re.sub(r"!tt\.ptr<(\w+)>", r"\1", t)
    if op in ("arith.cmpi", "arith.cmpf"):
        t = re.sub(r"^(tensor<(?:\d+x)+)[^,>]+", r"\1i1", t) if t.startswith("tensor") else "i1"
    return [t]


def spread_words(type_text: str, num_warps: int) -> float:
    """32-bit words per thread of a value of this type, its tile spread evenly over the
    threads (at least one element each); scalars by element width; memdescs, tokens 0."""
    m = _TENSOR.search(type_text.strip())
    if not m:
        t = type_text.strip()
        return elem_words(t) if t and not t.startswith("!ttg") and not t.startswith("(") else 0.0
    numel = math.prod(int(d) for d in m.group(1).split("x") if d)
    return max(1.0, numel / (32 * num_warps)) * elem_words(m.group(2))


def _ops(lines: list[str]) -> list[list[str]]:
    """A block's top-level ops, each the list of its lines (a nested region belongs to its op)."""
    ops, cur, depth = [], [], 0
    for ln in lines:
        bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', ln)
        cur.append(ln)
        depth += bare.count("{") - bare.count("}")
        if depth <= 0:
            ops.append(cur)
            cur, depth = [], 0
    return ops + ([cur] if cur else [])


def _region(lines: list[str], i: int) -> list[str]:
    """The lines inside the region opened on line i (without its closing line)."""
    depth = 0
    for j in range(i, len(lines)):
        bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', lines[j])
        depth += bare.count("{") - bare.count("}")
        if depth <= 0:
            return lines[i + 1:j]
    return lines[i + 1:]


def _loop_types(head: str) -> list[str]:
    m = re.search(r"->\s*\((.*)\)\s*:", head) or re.search(r"->\s*(.*?)\s*:\s*i\d+\s*\{", head)
    return _split(m.group(1), ",") if m else []


def _iter_args(head: str) -> list[str]:
    return re.findall(r"(%[\w.$-]+) = %[\w.$#-]+", head.split("iter_args(", 1)[1]) if "iter_args(" in head else []


def main_loop(lines: list[str], num_warps: int) -> int | None:
    """Index of the main loop's line: the ``scf.for`` with a dot in its body, else the one
    carrying the most words; None without a loop."""
    best, score = None, -1.0
    for i, ln in enumerate(lines):
        if not re.search(r"= scf\.for ", ln):
            continue
        s = sum(spread_words(t, num_warps) for t in _loop_types(strip_loc(ln)))
        if any("tt.dot" in b or "warp_group_dot" in b for b in _region(lines, i)):
            s += 1e9
        if s > score:
            best, score = i, s
    return best


def value_types(lines: list[str]) -> dict[str, str]:
    """SSA name -> type of every value of the function (results, loop arguments)."""
    types: dict[str, str] = {}
    opened: list[tuple[str, str]] = []                     # generic ops whose type is on their closing line
    for ln in lines:
        s = strip_loc(ln)
        m = _DEF.match(s)
        if m and m.group(3) == "scf.for":
            ts = _loop_types(s)
            for k, t in enumerate(ts):
                types[f"{m.group(1)}#{k}"] = t
            for a, t in zip(_iter_args(s), ts):
                types[a] = t
            iv = re.search(r"scf\.for (%[\w.$-]+) =", s)
            if iv:
                types[iv.group(1)] = "i32"
        elif m and s.endswith("({"):
            opened.append((m.group(1), m.group(3)))
        elif m and not s.endswith("{"):
            ts = result_types(m.group(3), s)
            if m.group(2):
                types.update({f"{m.group(1)}#{k}": t for k, t in enumerate(ts)})
            elif ts:
                types[m.group(1)] = ts[0]
        if s.lstrip().startswith("})") and opened:
            name, op = opened.pop()
            ts = result_types(op, s.lstrip()[2:])
            if ts:
                types[name] = ts[0]
    return types


def distinct_words(lines: list[str], types: dict[str, str], num_warps: int) -> dict[str, float]:
    """SSA name -> distinct words per thread (the module doc's rules), in program order."""
    out: dict[str, float] = {}

    def of(v: str) -> float:
        return out.get(v, spread_words(types.get(v, ""), num_warps))
    for ln in lines:
        s = strip_loc(ln)
        m = _DEF.match(s)
        if not m or m.group(2):
            continue
        name, op = m.group(1), m.group(3)
        own = spread_words(types.get(name, ""), num_warps)
        args = [a for a in _TOKEN.findall(_split(s[m.end():], " : ")[0]) if a != name]
        tensor = types.get(name, "").startswith("tensor")
        if op == "arith.constant":
            out[name] = 0.0 if "dense<" in s else own
        elif op == "tt.make_range":
            out[name] = 1.0
        elif op == "tt.splat" or op in _PASS:
            out[name] = min(own, sum(of(a) for a in args))
        elif tensor and (op.startswith(("arith.", "math.")) or op == "tt.addptr"):
            out[name] = min(own, sum(of(a) for a in args))
        else:
            out[name] = own
    return out


def live_at_peak(ttgir: str, num_warps: int) -> dict[str, float]:
    """{key: words} of the values live at the main loop body's peak (module doc)."""
    lines = ttgir.splitlines()
    start = next((i for i, ln in enumerate(lines) if "tt.func" in ln), None)
    if start is None:
        return {}
    fn = lines[start:]
    types = value_types(fn)
    words = distinct_words(fn, types, num_warps)
    loop = main_loop(fn, num_warps)
    if loop is None:
        body, carried = _region(fn, 0), []
    else:
        head = strip_loc(fn[loop])
        body, carried = _region(fn, loop), _iter_args(head)
        for a in carried:
            words[a] = spread_words(types.get(a, ""), num_warps)
    opname = {m.group(1): m.group(3) for m in (_DEF.match(strip_loc(ln)) for ln in fn) if m}
    ops = _ops(body)
    first: dict[str, int] = {}                             # value -> (def, last use) in op indices
    span: dict[str, list[int]] = {}
    for k, op in enumerate(ops):
        head = _DEF.match(strip_loc(op[0]))
        mine = set()
        if head:
            mine = {head.group(1)} | ({f"{head.group(1)}#{j}" for j in range(int(head.group(2)))}
                                      if head.group(2) else set())
            for v in mine:
                span[v] = [k, k]
        inner = set()
        for ln in op[1:]:
            d = _DEF.match(strip_loc(ln))
            if d:
                inner.add(d.group(1))
            for a in re.findall(r"\^bb\d+\((.*?)\):", ln):
                inner |= set(re.findall(r"%[\w.$-]+", a))
        for t in _TOKEN.findall("\n".join(strip_loc(ln) for ln in op)):
            if t in mine or t in inner or t.split("#")[0] in inner:
                continue
            if t not in span:
                span[t] = [-1, len(ops) if t not in carried else k]   # outside: live throughout
            span[t][1] = max(span[t][1], k)
            first.setdefault(t, k)
    best, peak = -1, -1.0
    for k in range(len(ops)):
        w = sum(words.get(v, 0.0) for v, (d, u) in span.items() if d < k <= u or d == k)
        if w > peak:
            best, peak = k, w
    out: dict[str, float] = {}
    seen: dict[str, int] = {}
    live = [v for v, (d, u) in span.items() if d < best <= u or d == best]
    for v in sorted(live, key=lambda v: (span[v][0], first.get(v, span[v][0]), v)):
        if not words.get(v):
            continue
        key = f"{re.sub(r'_[0-9]+$', '', v.lstrip('%').split('#')[0])}:{opname.get(v.split('#')[0], 'arg')}"
        seen[key] = seen.get(key, 0) + 1
        out[f"live:{key}#{seen[key]}"] = words[v]
    return out
