"""The model's numeric form (numpy source printed by sympy, memoised on disk) gives exactly
what the sympy expressions give, on a cold memo and on a warm one; a warm memo spares
`occmodel predict` the import of sympy."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from occmodel import load_spec, model
from occmodel.card import load_card

ROOT = Path(__file__).parent.parent


def _fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("OCCMODEL_CACHE_DIR", str(tmp_path))
    model._EXPR_CACHE.clear()


@pytest.mark.parametrize("name", ["decode_attention", "decode_attention_nopipe", "matmul"])
@pytest.mark.parametrize("arch", ["sm_120", "sm_90", "sm_80"])
def test_memoised_numbers_equal_the_expressions(name, arch, monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    card, spec = load_card(name), load_spec(arch)
    cfgs = card.sweep()[:40]
    cold = model.predict_many(card, spec, cfgs)
    assert list((tmp_path / "model").rglob("*.json")), "the memo was not written"
    model._EXPR_CACHE.clear()
    warm = model.predict_many(card, spec, cfgs)
    for i, cfg in enumerate(cfgs):
        shared, regs = model.expressions(card, spec, cfg)
        syms = card.symbols()
        numeric = {syms[k]: v for k, v in cfg.items() if k in syms}
        want_s = round(float(shared.subs(numeric)))
        want_r = round(float(regs.subs(numeric)))
        assert cold["shared"][i] == warm["shared"][i] == want_s, cfg
        assert cold["regs_estimate"][i] == warm["regs_estimate"][i] == want_r, cfg


def test_a_damaged_memo_is_rebuilt(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    card, spec = load_card("decode_attention"), load_spec("sm_120")
    want = int(model.predict(card, spec, card.resolve()).shared)
    for f in (tmp_path / "model").rglob("*.json"):
        f.write_text('{"parts": "wrong", "value": {"shared": "1", "regs": "1"}}')
    model._EXPR_CACHE.clear()
    assert int(model.predict(card, spec, card.resolve()).shared) == want == 37376


def test_a_warm_predict_imports_no_sympy(tmp_path):
    env = {**os.environ, "OCCMODEL_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    code = ("import sys; from occmodel import cli; rc = cli.main(['predict', '--warps', '8', '--stages', '3',"
            " '--format', 'json']); print('SYMPY', 'sympy' in sys.modules, file=sys.stderr); sys.exit(rc)")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert "SYMPY True" in runs[0].stderr and "SYMPY False" in runs[1].stderr
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)
