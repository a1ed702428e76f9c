"""Long work is visible, and Triton's cache is contained.

* a sweep compiling more than a few dozen configs says first how many and about how long (from
  the cache's measured compile times, else a stated default), then shows progress: a bar with
  count and ETA on a terminal, plain lines when stderr is not one;
* a sweep larger than --max-configs (default 200) stops before compiling anything, with one
  line that says how to go on; --yes lifts the limit;
* occmodel's Triton cache is bounded (oldest entries go first, young ones never), and
  `occmodel cache info` / `cache clear [--older-than DAYS]` show and free the caches (compile
  results, Triton's, the model memo; never a calibration).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from occmodel import _cache, _sweep, cli

TESTS = Path(__file__).resolve().parent
ADD = f"{TESTS / 'kernels_for_tests.py'}:add_kernel"
ADD_SIG = "*fp16:16,*fp16:16,*fp16:16,i32"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OCCMODEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OCCMODEL_COMPILE_LOG", str(tmp_path / "compiles.log"))
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    return tmp_path


def compiles(tmp_path) -> int:
    log = tmp_path / "compiles.log"
    return len(log.read_text().split()) if log.exists() else 0


# ------------------------------------------------------------------ the gate
def test_a_default_sweep_that_large_asks_for_a_flag(cache):
    """`accuracy` with no sweep flags is the card's own sweep: 72 configs of decode_attention.
    Over --max-configs it stops before compiling anything, in one line that says how to go on."""
    pytest.importorskip("triton")
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "occmodel", "accuracy", "--spec", "sm_90",
                           "--max-configs", "50"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "would compile 72 new configs for sm_90" in err[0]
    assert "--yes" in err[0] and "--max-configs 72" in err[0] and "about" in err[0]
    assert compiles(cache) == 0                                   # nothing compiled


def test_max_configs_is_checked():
    assert cli.main(["compile", "--max-configs", "0"]) == 2


# ------------------------------------------------- announcement and progress
def test_announces_then_prints_plain_progress_lines(cache, monkeypatch, capsys):
    pytest.importorskip("triton")
    monkeypatch.setattr(_sweep, "ANNOUNCE", 1)                   # "a few dozen", scaled down to 3 configs
    monkeypatch.setattr(_sweep, "LINE_EVERY_S", 0.0)
    base = ["compile", "--kernel", ADD, "--signature", ADD_SIG, "--warps", "1", "--stages", "1", "--spec", "sm_90",
            "--format", "json"]
    assert cli.main(base + ["-D", "BLOCK=64,128,256"]) == 0
    err = capsys.readouterr().err
    assert "occmodel: compiling 3 new configs for sm_90 (0 of 3 cached): about" in err
    assert f"at {_sweep.DEFAULT_SECONDS:.1f} s each (a default: the cache holds too few compiles" in err
    assert "compiled 1/3 new configs" in err and "compiled 3/3 new configs" in err
    assert compiles(cache) == 3
    # now the cache has measured 3 compiles for sm_90: the estimate comes from them
    assert cli.main(base + ["-D", "BLOCK=64,512,1024"]) == 0
    err = capsys.readouterr().err
    assert "compiling 2 new configs for sm_90 (1 of 3 cached)" in err
    assert "(median of 3 compiles for sm_90 in the cache)" in err
    # --max-configs counts new compiles only: 2 cached + 1 new passes a limit of 1
    assert cli.main(base + ["-D", "BLOCK=512,1024,2048", "--max-configs", "1"]) == 0
    assert cli.main(base + ["-D", "BLOCK=32,16", "--max-configs", "1"]) == 2
    assert "would compile 2 new configs" in capsys.readouterr().err
    assert cli.main(base + ["-D", "BLOCK=32,16", "--max-configs", "1", "--yes"]) == 0


def test_the_terminal_bar_shows_count_and_eta(monkeypatch):
    from occmodel.compile_pool import _Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    class Res:
        def __init__(self, cached):
            self.cached, self.status = cached, "ok"

    fake = Tty()
    monkeypatch.setattr(sys, "stderr", fake)
    bar = _Progress(4, True)
    bar.plan(3, 120.0, 2, True)
    bar.update(Res(True))
    assert "1/4" in fake.getvalue() and "ETA 3 min" in fake.getvalue()     # 3 x 120 s / 2 at a time
    bar.update(Res(False))
    assert "2/4" in fake.getvalue()
    bar.update(Res(False))
    bar.update(Res(False))
    bar.close()
    assert fake.getvalue().endswith("\n") and "4/4" in fake.getvalue()


def test_small_sweeps_stay_quiet_off_a_terminal(monkeypatch, capsys):
    from occmodel.compile_pool import _Progress
    bar = _Progress(3, True)
    bar.plan(3, 1.0, 1, True)
    assert not bar.lines and not bar.enabled
    assert capsys.readouterr().err == ""


def test_duration_words():
    assert [_sweep.duration(s) for s in (4, 89, 600, 3600 * 2 + 300)] == ["4 s", "89 s", "10 min", "2 h 05 min"]


# ------------------------------------------------------------ Triton's cache
def fake_triton_entry(root: Path, name: str, size: int, age_s: float, tag: str = "0123456789abcdef") -> Path:
    d = root / "triton" / tag / name
    d.mkdir(parents=True)
    (d / "k.cubin").write_bytes(b"x" * size)
    old = time.time() - age_s
    os.utime(d / "k.cubin", (old, old))
    return d


def fake_compile_entry(root: Path, key: str, age_s: float) -> list[Path]:
    d = root / "compile" / key[:2]
    d.mkdir(parents=True, exist_ok=True)
    files = [d / f"{key}.json", d / f"{key}.ttgir"]
    files[0].write_text(json.dumps({"arch": "sm_90", "compile_seconds": 2.0, "status": "ok"}))
    files[1].write_text("ir")
    old = time.time() - age_s
    for f in files:
        os.utime(f, (old, old))
    return files


def test_triton_cache_is_trimmed_oldest_first_never_young(cache):
    root = cache / "cache"
    a = fake_triton_entry(root, "A", 1000, 3 * 86400)
    b = fake_triton_entry(root, "B", 1000, 2 * 86400)
    c = fake_triton_entry(root, "C", 1000, 5.0)              # being written now, perhaps
    assert _cache.trim_triton(limit=2000) == (1, 1000)       # the oldest goes
    assert not a.exists() and b.exists() and c.exists()
    assert _cache.trim_triton(limit=0) == (1, 1000)          # a young entry is never trimmed
    assert not b.exists() and c.exists()


def test_triton_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv("OCCMODEL_TRITON_CACHE_MB", "1.5")
    assert _cache.triton_limit() == int(1.5 * 1024 * 1024)
    monkeypatch.setenv("OCCMODEL_TRITON_CACHE_MB", "lots")
    assert _cache.triton_limit() == _cache.TRITON_LIMIT_MB * 1024 * 1024


def test_a_real_compile_uses_occmodels_triton_folder_only(cache, monkeypatch):
    pytest.importorskip("triton")
    import kernels_for_tests as K
    from occmodel.compile import compile_kernel
    monkeypatch.setenv("HOME", str(cache / "home"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache / "users-triton"))
    assert compile_kernel(K.add_kernel, K.ADD_SIG, {"BLOCK": 128}, arch="sm_90").ok
    assert len(_cache.triton_entries()) == 1
    assert not (cache / "users-triton").exists() and not (cache / "home" / ".triton").exists()


# ------------------------------------------------------- occmodel cache ...
def test_cache_info_and_clear(cache, capsys):
    root = cache / "cache"
    old = fake_compile_entry(root, "aa" + "0" * 62, 10 * 86400)
    new = fake_compile_entry(root, "ab" + "1" * 62, 60.0)
    fake_triton_entry(root, "OLD", 500, 10 * 86400)
    young = fake_triton_entry(root, "NEW", 700, 60.0)
    assert cli.main(["cache", "info", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"root", "compile", "triton"} <= set(doc)
    assert doc["root"] == str(root)
    assert doc["compile"]["entries"] == 2 and doc["compile"]["path"] == str(root / "compile")
    assert doc["compile"]["compile_seconds_median"] == {"sm_90": 2.0}
    assert doc["triton"]["entries"] == 2 and doc["triton"]["bytes"] == 1200
    assert doc["triton"]["limit_bytes"] == _cache.triton_limit()

    assert cli.main(["cache", "clear", "--older-than", "7", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cleared"]["compile"]["entries"] == 1 and doc["cleared"]["triton"] == {"entries": 1, "bytes": 500}
    assert not any(f.exists() for f in old) and all(f.exists() for f in new) and young.exists()

    assert cli.main(["cache", "clear"]) == 0
    assert "Cleared" in capsys.readouterr().out
    assert _cache.compile_entries() == [] and _cache.triton_entries() == []


def test_cache_clear_also_clears_the_model_memo(cache, capsys):
    """A real memo (predict writes it), an old fake one, and a calibration that must survive."""
    from occmodel import load_spec, model
    from occmodel.card import load_card
    root = cache / "cache"
    model._EXPR_CACHE.clear()
    model.predict(load_card("decode_attention"), load_spec("sm_120"), load_card("decode_attention").resolve())
    real = list((root / "model").rglob("*.json"))
    assert real, "predict wrote no memo"
    old = root / "model" / "ff" / ("ff" + "2" * 62 + ".json")
    old.parent.mkdir(parents=True, exist_ok=True)
    old.write_text('{"parts": [], "value": 1}')
    t = time.time() - 10 * 86400
    os.utime(old, (t, t))
    calibration = root / "calibration" / "sm_120-x.yaml"
    calibration.parent.mkdir(parents=True)
    calibration.write_text("spec: sm_120\n")

    assert cli.main(["cache", "info", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"]["path"] == str(root / "model") and doc["model"]["entries"] == len(real) + 1

    assert cli.main(["cache", "clear", "--older-than", "7", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cleared"]["model"]["entries"] == 1 and doc["model"]["entries"] == len(real)
    assert not old.exists() and all(f.exists() for f in real)

    assert cli.main(["cache", "clear", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cleared"]["model"]["entries"] == len(real) and doc["model"]["entries"] == 0
    assert not list((root / "model").rglob("*.json")) and _cache.model_entries() == []
    assert calibration.exists()                                   # a measurement, not a cache
    model._EXPR_CACHE.clear()                                     # the memo rebuilds: same numbers
    assert model.predict(load_card("decode_attention"), load_spec("sm_120"),
                         load_card("decode_attention").resolve()).shared == 37376


def test_cache_command_bad_input(cache, capsys):
    assert cli.main(["cache", "clear", "--older-than", "soon"]) == 2
    assert "not a number of days" in capsys.readouterr().err
    assert cli.main(["cache", "info", "--older-than", "3"]) == 2
    assert cli.main(["cache", "wipe"]) == 2
