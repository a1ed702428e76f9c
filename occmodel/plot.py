"""Pictures of the numbers occupancy / model compute (matplotlib, Agg: no display needed).

* :func:`occupancy_figure` -- the three curves NVIDIA's Occupancy Calculator draws:
  resident warps per SM against threads per block, registers per thread and shared
  memory per block, each with the other two held at the current config (marked).
* :func:`heatmap_figure` -- a kernel card's predicted occupancy over two config axes;
  configs that do not fit are hatched and crossed, every cell is annotated.

Curves are exact, not interpolated: a value is drawn as a step over the interval of
inputs that share it (``steps-pre``; threads sampled per warp, registers per register,
shared memory per 128-byte allocation unit). The data come from
:func:`occmodel.occupancy.occupancy_grid` and :func:`occmodel.model.predict`; this
module only draws. matplotlib is optional (``pip install 'occmodel[plot]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .errors import ConfigError, OccmodelError
from .occupancy import occupancy, occupancy_grid
from .spec import HardwareSpec, load_spec

SUFFIXES = (".png", ".svg")
CURVE = "#1f6fb4"
CURRENT = "#d62728"
HATCH, CROSS = "#e3a39c", "#a93226"


def pyplot():
    """matplotlib.pyplot on the Agg backend; OccmodelError (one line) when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        raise OccmodelError("plotting needs matplotlib, which is not installed; "
                            "pip install 'occmodel[plot]' (or matplotlib)") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def check_out(out: str | Path) -> Path:
    """The output path, ConfigError unless it ends in .png or .svg."""
    path = Path(out)
    if path.suffix.lower() not in SUFFIXES:
        raise ConfigError(f"--out {str(out)!r} must end in {' or '.join(SUFFIXES)} (the format follows the suffix)")
    return path


def save(fig, out: str | Path) -> Path:
    """Write the figure to `out` (atomically: a failed write leaves no half file);
    OccmodelError naming the file and the reason when it cannot be written."""
    import io
    path = check_out(out)
    import matplotlib
    svg = path.suffix.lower() == ".svg"
    buf = io.BytesIO()
    try:
        with matplotlib.rc_context({"svg.hashsalt": "occmodel"} if svg else {}):   # stable ids: same data, same file
            fig.savefig(buf, format=path.suffix.lower()[1:], dpi=None if svg else 150, bbox_inches="tight",
                        metadata={"Date": None} if svg else None)
    finally:
        pyplot().close(fig)
    from .report import write_output
    write_output(path, buf.getvalue(), "--out")
    return path


# ------------------------------------------------------------- the calculator
def occupancy_curves(spec: HardwareSpec | str, threads: int, regs: int, smem: int,
                     carveout: int | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"threads" | "regs" | "smem": (x, resident warps per SM)} with the other two inputs fixed."""
    spec = load_spec(spec)
    sm = spec.sm
    xs = {"threads": np.arange(sm.warp_size, sm.max_threads_per_block + 1, sm.warp_size),
          "regs": np.arange(1, sm.max_registers_per_thread + 1),
          "smem": np.arange(0, sm.shared_memory_per_block_optin + 1, sm.shared_memory_allocation_unit)}
    grids = {"threads": (xs["threads"], regs, smem), "regs": (threads, xs["regs"], smem),
             "smem": (threads, regs, xs["smem"])}
    return {k: (xs[k], occupancy_grid(spec, *grids[k], carveout)["warps_per_sm"]) for k in xs}


def occupancy_figure(spec: HardwareSpec | str, threads: int, regs: int, smem: int, carveout: int | None = None):
    """The three curves (one Axes each, the curve's Line2D has gid "curve", the current
    config's marker gid "current"); shared memory is drawn in KB."""
    plt = pyplot()
    spec = load_spec(spec)
    sm = spec.sm
    occ = occupancy(spec, threads, regs, smem, carveout, with_headroom=False)
    curves = occupancy_curves(spec, threads, regs, smem, carveout)
    panels = [("threads", "threads per block", 1, threads, "threads"),
              ("regs", "registers per thread", 1, regs, "registers"),
              ("smem", "shared memory per block (KB)", 1024, smem, "shared memory")]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8), sharey=True)
    for ax, (key, label, scale, now, what) in zip(axes, panels):
        x, y = curves[key]
        ax.plot(x / scale, y, drawstyle="steps-pre", color=CURVE, lw=2, gid="curve", label="resident warps per SM")
        ax.plot([now / scale], [occ.warps_per_sm], "o", ms=9, color=CURRENT, mec="white", mew=1.5, zorder=5,
                gid="current", label="this config")
        unit = " KB" if scale > 1 else f" {what}"
        ax.text(0.02, 0.975, f"this config: {now / scale:,.4g}{unit} \u2192 {occ.warps_per_sm} warps/SM",
                transform=ax.transAxes, va="top", color=CURRENT, fontsize=9.5, fontweight="bold")
        ax.axhline(sm.max_warps_per_sm, color="0.55", lw=1, ls="--", label=f"max {sm.max_warps_per_sm} warps per SM")
        ax.set_xlabel(label)
        ax.set_xlim(0, x[-1] / scale * 1.02)
        ax.set_title(f"varying {label.split(' (')[0]}", fontsize=11)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("resident warps per SM")
    axes[0].set_ylim(0, sm.max_warps_per_sm * 1.12)
    right = axes[-1].secondary_yaxis("right", functions=(lambda w: 100 * w / sm.max_warps_per_sm,
                                                         lambda p: p * sm.max_warps_per_sm / 100))
    right.set_ylabel("occupancy (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9.5, frameon=False)
    carve = "driver default" if carveout is None else f"{carveout}%"
    limit = f"limited by {occ.limiter.replace('_', ' ')}" if occ.fits else f"does not fit: {occ.reason}"
    fig.suptitle(f"{spec.name}: {threads} threads, {regs} registers/thread, {smem / 1024:,.4g} KB shared "
                 f"(carveout {carve}) -> {occ.blocks_per_sm} block{'s' * (occ.blocks_per_sm != 1)}, "
                 f"{occ.warps_per_sm} warps/SM "
                 f"({100 * occ.occupancy:.1f}%), {limit}", fontsize=12)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


# ----------------------------------------------------------------- heat map
def heatmap_cells(card, spec: HardwareSpec, x: tuple[str, Sequence], y: tuple[str, Sequence],
                  fixed: Mapping[str, Any] | None = None, base: Mapping[str, Any] | None = None,
                  carveout: int | None = None) -> list[list[dict[str, Any]]]:
    """cells[row][col] for y values (rows) x x values (cols): the config, its Evidence
    (occmodel.evidence: the card's model, or compiled for a kernel without one; None when
    the kernel rejects the config) under "prediction", and the reason."""
    from .evidence import gather
    rows, valid = [], []
    for yv in y[1]:
        row = []
        for xv in x[1]:
            asked = {**(fixed or {}), x[0]: xv, y[0]: yv}
            try:
                cfg = card.resolve(asked, base=base)
            except ConfigError as exc:
                row.append({"asked": asked, "config": None, "prediction": None, "reason": str(exc)})
                continue
            cell = {"asked": asked, "config": cfg, "prediction": None, "reason": ""}
            row.append(cell)
            valid.append(cell)
        rows.append(row)
    for cell, ev in zip(valid, gather(card, spec, [c["config"] for c in valid], carveout=carveout)):
        cell.update(prediction=ev, reason=ev.reason)
    return rows


def heatmap_figure(card, spec: HardwareSpec | str, x: tuple[str, Sequence], y: tuple[str, Sequence],
                   fixed: Mapping[str, Any] | None = None, base: Mapping[str, Any] | None = None,
                   carveout: int | None = None):
    """Predicted occupancy per (x, y) cell; the image's array holds the occupancy fraction,
    masked where the config does not fit or is invalid."""
    plt = pyplot()
    from matplotlib.patches import Patch, Rectangle
    spec = load_spec(spec)
    cells = heatmap_cells(card, spec, x, y, fixed, base, carveout)
    value = np.ma.masked_all((len(y[1]), len(x[1])))
    for i, row in enumerate(cells):
        for j, c in enumerate(row):
            if c["prediction"] is not None and c["prediction"].fits:
                value[i, j] = c["prediction"].occupancy.occupancy
    fig, ax = plt.subplots(figsize=(1.25 * len(x[1]) + 3.2, 0.85 * len(y[1]) + 2.2))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#eeeeee")
    top = max(0.25, float(value.max()) if value.count() else 0.25)
    im = ax.imshow(value, cmap=cmap, vmin=0, vmax=top, origin="lower", aspect="auto")
    for i, row in enumerate(cells):
        for j, c in enumerate(row):
            pred = c["prediction"]
            if pred is not None and pred.fits:
                o = pred.occupancy
                light = o.occupancy > 0.6 * top
                ax.text(j, i, f"{100 * o.occupancy:.0f}%\n{o.warps_per_sm} warp{'s' * (o.warps_per_sm != 1)}/SM", ha="center", va="center",
                        fontsize=9, color="black" if light else "white")
                continue
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", edgecolor=HATCH, lw=0))
            ax.text(j, i + 0.12, "\u2715", ha="center", va="center", fontsize=17, color=CROSS, fontweight="bold")
            label = "invalid" if pred is None else f"needs {pred.shared / 1024:.0f} KB" if "shared" in c["reason"] \
                else "too many registers"
            ax.text(j, i - 0.22, label, ha="center", va="center", fontsize=8.5, color=CROSS,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "#eeeeee", "ec": "none"})
    ax.set_xticks(range(len(x[1])), [str(v) for v in x[1]])
    ax.set_yticks(range(len(y[1])), [str(v) for v in y[1]])
    ax.set_xlabel(x[0])
    ax.set_ylabel(y[0])
    bar = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.03)
    bar.set_label("predicted occupancy (resident warps / max)")
    bar.ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{100 * v:.0f}%"))
    limit = spec.sm.shared_memory_per_block_optin
    ax.legend(handles=[Patch(facecolor="#eeeeee", edgecolor=HATCH, hatch="//",
                             label=f"\u2715 does not fit {spec.name} (per-block shared memory limit "
                                   f"{limit / 1024:.0f} KB)")],
              loc="upper center", bbox_to_anchor=(0.5, -0.11), fontsize=8.5, frameon=False)
    note = ", ".join(f"{k}={v}" for k, v in (fixed or {}).items())
    ax.set_title(f"{card.name} on {spec.name}: predicted occupancy\n"
                 f"{note + '; ' if note else ''}other parameters at the {'given' if base else 'card'} baseline",
                 fontsize=11)
    fig.tight_layout()
    return fig, cells
