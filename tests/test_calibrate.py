"""Calibration files (pure) and `occmodel calibrate` without a GPU."""

import subprocess
import sys

import pytest

from occmodel import calibrate as C
from occmodel.spec import load_spec


def test_datasheet_figures_and_defaults_are_said():
    cal = C.datasheet(load_spec("sm_120"))
    # sm_120's first product: RTX PRO 6000 Blackwell, L2 default = 2.5 x its bandwidth
    assert cal.gpu == "RTX PRO 6000 Blackwell" and cal.latency_ns == C.DEFAULT_LATENCY_NS
    assert cal.l2_bandwidth_gbs == pytest.approx(C.DEFAULT_L2_FACTOR * cal.bandwidth_gbs)
    assert "not measurements" in cal.source


def test_save_load_round_trip_and_default_path(tmp_path, monkeypatch):
    monkeypatch.setenv("OCCMODEL_CACHE_DIR", str(tmp_path))
    spec = load_spec("sm_90")
    cal = C.Calibration(spec="sm_90", gpu="NVIDIA H200", sms=132, bandwidth_gbs=4200.0, latency_ns=900.0,
                        launch_us=2.1, l2_bandwidth_gbs=11000.0, source="measured")
    path = C.default_path("sm_90", cal.gpu)
    assert path == tmp_path / "calibration" / "sm_90-nvidia-h200.yaml"
    C.save(cal, path)
    assert C.load(path) == cal
    assert C.resolve(spec) == cal                       # the cached one is found for the spec
    with pytest.raises(Exception, match="measured for sm_90, not sm_120"):
        C.resolve(load_spec("sm_120"), path)


def test_load_names_every_bad_field(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("spec: sm_90\ngpu: x\nsms: 132\nbandwidth_gbs: -1\n")
    with pytest.raises(C.CalibrationError) as exc:
        C.load(p)
    text = str(exc.value)
    assert "bandwidth_gbs: must be a positive number" in text and "latency_ns: required field" in text
    with pytest.raises(C.CalibrationError, match="does not exist"):
        C.load(tmp_path / "missing.yaml")


def _gpu() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.skipif(_gpu(), reason="a GPU is visible")
def test_calibrate_without_gpu_exits_2_with_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "occmodel", "calibrate", "--spec", "sm_90", "--out",
                           str(tmp_path / "c.yaml")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs a CUDA GPU" in lines[0]
    assert not (tmp_path / "c.yaml").exists()


def test_rank_uses_a_calibration_file(tmp_path):
    cal = C.Calibration(spec="sm_90", gpu="NVIDIA H200", sms=132, bandwidth_gbs=4200.0, latency_ns=3000.0,
                        launch_us=2.0, l2_bandwidth_gbs=11000.0, source="measured on a test")
    path = C.save(cal, tmp_path / "c.yaml")
    proc = subprocess.run([sys.executable, "-m", "occmodel", "rank", "--spec", "sm_90", "--points", "C=64",
                           "--warps", "4", "--stages", "2", "--calibration", str(path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "latency 3000 ns" in proc.stdout and "measured on a test" in proc.stdout


def test_shared_bandwidth_and_l2_latency_fields():
    # H200: 132 SMs x 128 B x 1980 MHz = 33,454.08 GB/s; L2 latency a stated default
    cal = C.datasheet(load_spec("sm_90"), "H200")
    assert cal.shared_bandwidth_gbs == pytest.approx(33454.1) and cal.l2_latency_ns == C.DEFAULT_L2_LATENCY_NS
    assert "clock 1980 MHz from the datasheet" in cal.source
    # sm_120's RTX PRO 6000: 188 x 128 B = 24,064 B per clock x 2597 MHz = 62,494.2 GB/s
    assert C.datasheet(load_spec("sm_120")).shared_bandwidth_gbs == pytest.approx(62494.2, abs=0.1)
    # a product without a clock: the default clock, said so
    assert "not the product's figure" in C.datasheet(load_spec("sm_100")).source


def test_old_calibration_files_load_with_defaults(tmp_path):
    p = tmp_path / "old.yaml"
    p.write_text("spec: sm_90\ngpu: NVIDIA H200\nsms: 132\nbandwidth_gbs: 3932.8\nlatency_ns: 523.9\n"
                 "launch_us: 0.5\nl2_bandwidth_gbs: 7143.5\nsource: measured\n")
    cal = C.load(p)
    assert cal.l2_latency_ns == C.DEFAULT_L2_LATENCY_NS and cal.shared_bandwidth_gbs > 0
    assert "not in the file: defaults" in cal.source


# Two H100 starts of session 36 (reports/h200/rank_study_round33_h100.json and _sc_h100.json): the first
# start's first calibration ran its 1-CTA-per-SM latency probes 2-3.5x slow; its second agreed with the
# other start's.
def _h100(bw, l2, lat, l2_lat, curve):
    return C.Calibration(spec="sm_90", gpu="NVIDIA H100 80GB HBM3", sms=132, bandwidth_gbs=bw, latency_ns=lat,
                         launch_us=0.8, l2_bandwidth_gbs=l2, source="measured", l2_latency_ns=l2_lat,
                         shared_bandwidth_gbs=33454.1, latency_curve=curve)


SLOW = _h100(2978.4, 12141.4, 6615.7, 332.4, ((4096, 903.0), (16384, 3183.5), (262144, 13738.0)))
GOOD = _h100(2936.2, 12930.9, 1815.7, 296.8, ((4096, 407.8), (16384, 959.7), (262144, 13518.0)))


def test_best_of_keeps_each_figures_best_repeat():
    best = C.best_of([SLOW, GOOD])
    assert best.bandwidth_gbs == 2978.4 and best.l2_bandwidth_gbs == 12930.9          # the highest
    assert best.latency_ns == 1815.7 and best.l2_latency_ns == 296.8                    # the lowest
    assert best.latency_curve == ((4096, 407.8), (16384, 959.7), (262144, 13518.0))
    assert C.latency_at(best, 16384) == 959.7 and C.latency_at(SLOW, 16384) == 3183.5
    assert "best of 2 repeats" in best.source
    assert C.best_of([GOOD]) == GOOD
    # a probe only one repeat has is dropped: the curve is read where every repeat measured
    extra = _h100(2900.0, 12000.0, 1800.0, 300.0, ((4096, 400.0), (8192, 520.0), (16384, 950.0), (262144, 13000.0)))
    assert [q for q, _ in C.best_of([GOOD, extra]).latency_curve] == [4096, 16384, 262144]
    with pytest.raises(C.CalibrationError, match="different machines"):
        C.best_of([GOOD, C.datasheet(load_spec("sm_90"))])


def test_spreads_name_the_disturbed_figures():
    s = C.spreads([SLOW, GOOD])
    assert s["latency_ns at 4 KB"] == pytest.approx(903.0 / 407.8) and s["bandwidth_gbs"] == pytest.approx(2978.4 / 2936.2)
    note = C.spread_note([SLOW, GOOD])
    assert "latency_ns at 4 KB (2.21x)" in note and "latency_ns at 16 KB (3.32x)" in note
    assert "bandwidth_gbs" not in note and "256 KB" not in note                         # within 1.25x
    assert C.spread_note([GOOD, GOOD]) is None


def test_calibrate_repeats_keep_the_best_and_say_the_spread(tmp_path, monkeypatch):
    """The command's aggregation with the GPU probes replaced by the two recorded H100 calibrations."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    import json
    from occmodel import gpu_calibrate
    from occmodel.cli import main
    from occmodel.commands import calibrate as cmd
    runs = iter([SLOW, GOOD, GOOD])
    monkeypatch.setattr(cmd, "_require_gpu", lambda: None)
    monkeypatch.setattr(gpu_calibrate, "measure", lambda spec, quick=False, progress=None: next(runs))
    out = tmp_path / "c.yaml"
    import contextlib, io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["calibrate", "--spec", "sm_90", "--out", str(out), "--repeats", "3", "--format", "json"])
    assert rc == 0
    doc = json.loads(buf.getvalue())
    assert len(doc["repeats"]) == 3 and C.load(out).latency_curve == GOOD.latency_curve
    text = json.dumps(doc)
    assert "3 repeats disagree" in text and "latency_ns at 16 KB (3.32x)" in text
