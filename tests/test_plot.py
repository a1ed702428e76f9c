"""Plots render headless (Agg) and draw exactly the numbers occupancy() and predict() give."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from occmodel import cli, load_spec, occupancy  # noqa: E402
from occmodel.card import load_card  # noqa: E402
from occmodel.errors import ConfigError, OccmodelError  # noqa: E402
from occmodel.model import predict  # noqa: E402
from occmodel import plot  # noqa: E402


def _line(ax, gid):
    (line,) = [ln for ln in ax.get_lines() if ln.get_gid() == gid]
    return np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)


def _drawn_at(x, y, at):
    """The value a steps-pre curve shows at `at`: the y of the first sample >= at."""
    return y[np.searchsorted(x, at, side="left")]


@pytest.mark.parametrize("spec_name, threads, regs, smem, carveout", [
    ("sm_120", 128, 96, 61440, None),
    ("sm_90", 256, 168, 110000, 50),
    ("sm_80", 384, 40, 20000, None),
])
def test_calculator_curves_are_occupancy_at_every_x(spec_name, threads, regs, smem, carveout):
    spec = load_spec(spec_name)
    fig = plot.occupancy_figure(spec, threads, regs, smem, carveout)
    ax_threads, ax_regs, ax_smem = fig.axes[:3]
    now = occupancy(spec, threads, regs, smem, carveout).warps_per_sm
    x, y = _line(ax_threads, "curve")
    for t in (1, 31, 32, 33, 64, 100, threads, 500, 640, 641, 1024):
        assert _drawn_at(x, y, t) == occupancy(spec, t, regs, smem, carveout).warps_per_sm, t
    x, y = _line(ax_regs, "curve")
    for r in (1, 24, 32, 33, 64, 65, regs, 128, 200, 255):
        assert _drawn_at(x, y, r) == occupancy(spec, threads, r, smem, carveout).warps_per_sm, r
    x, y = _line(ax_smem, "curve")                      # drawn in KB
    for s in (0, 1, 1000, 8192, 20000, smem, 48 * 1024 + 1, spec.sm.shared_memory_per_block_optin):
        assert _drawn_at(x * 1024, y, s) == occupancy(spec, threads, regs, s, carveout).warps_per_sm, s
    for ax, at in ((ax_threads, threads), (ax_regs, regs), (ax_smem, smem / 1024)):
        assert [list(v) for v in _line(ax, "current")] == [[at], [now]]
    assert f"{now} warps/SM" in fig._suptitle.get_text()
    plot.pyplot().close(fig)


def test_heatmap_cells_are_model_predictions():
    card, spec = load_card("decode_attention"), load_spec("sm_120")
    warps, stages = [1, 2, 4, 8], [1, 2, 3, 4, 5]
    fig, _ = plot.heatmap_figure(card, spec, ("num_warps", warps), ("num_stages", stages), fixed={"BLOCK_T": 32})
    ax = fig.axes[0]
    image = ax.images[0].get_array()
    assert image.shape == (len(stages), len(warps))
    texts = [t.get_text() for t in ax.texts]
    for i, s in enumerate(stages):
        for j, w in enumerate(warps):
            pred = predict(card, spec, card.resolve({"num_warps": w, "num_stages": s, "BLOCK_T": 32}))
            if pred.fits:
                assert image[i, j] == pytest.approx(pred.occupancy.occupancy)
                assert f"{100 * pred.occupancy.occupancy:.0f}%\n{pred.occupancy.warps_per_sm} warp" in "|".join(texts)
            else:
                assert np.ma.is_masked(image[i, j])
                assert f"needs {pred.shared / 1024:.0f} KB" in texts
    assert image.mask.sum() == 8                      # num_stages 4 and 5 exceed 99 KB with BLOCK_T=32
    assert len(ax.patches) == 8 and all(p.get_hatch() == "//" for p in ax.patches)
    assert "does not fit sm_120" in ax.get_legend().get_texts()[0].get_text()
    plot.pyplot().close(fig)


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_cli_writes_the_format_of_the_suffix(tmp_path, capsys, suffix, magic):
    out = tmp_path / f"fig{suffix}"
    assert cli.main(["plot", "heatmap", "--kernel", "matmul", "--x", "num_warps=4,8", "--y", "num_stages=2,3,4",
                     "-D", "BLOCK_K=64", "--out", str(out), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["out"] == str(out) and doc["kind"] == "heatmap" and len(doc["sections"][0]["rows"]) == 6
    assert out.read_bytes().startswith(magic)
    occ = tmp_path / f"occ{suffix}"
    assert cli.main(["plot", "occupancy", "--threads", "128", "--regs", "96", "--smem", "60K", "--out", str(occ)]) == 0
    assert occ.read_bytes().startswith(magic)


def test_runs_without_a_display(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "MPLBACKEND", "WAYLAND_DISPLAY")}
    out = tmp_path / "fig.png"
    proc = subprocess.run([sys.executable, "-m", "occmodel", "plot", "occupancy", "--spec", "sm_90", "--warps", "8",
                           "--regs", "128", "--out", str(out)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 10_000


def test_bad_input_and_missing_matplotlib_are_one_line(tmp_path, monkeypatch, capsys):
    with pytest.raises(ConfigError, match=r"--out 'fig.pdf' must end in .png or .svg"):
        plot.check_out("fig.pdf")
    assert cli.main(["plot", "heatmap", "--x", "num_warps=4", "--y", "num_warps=8", "--out", "x.png"]) == 2
    assert "already the other axis" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(OccmodelError, match=r"plotting needs matplotlib.*pip install 'occmodel\[plot\]'"):
        plot.pyplot()
    assert cli.main(["plot", "occupancy", "--threads", "128", "--regs", "32", "--out", str(tmp_path / "f.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "plotting needs matplotlib" in err[0]
