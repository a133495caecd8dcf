#!/usr/bin/python3
"""Plots a wavel-dse results.h5: Pareto fronts, wafer floorplans of the best schedules, calibration scatter.

usage: plot_results.py RESULTS.h5 --out DIR [--setting ID ...] [--schedule NAME ...] [--calibration FILE ...]

Writes into DIR:
- pareto_<id>.png: the setting's Pareto front (/front: throughput against latency, colour and size by
  PEs used), with the Full-Chip and WaferLLM baselines from /settings marked apart;
- floorplan_<id>.png and .svg: the MeshIR of the setting's best schedule (`wavel` in /schedules) drawn on
  the wafer grid: each region a rectangle coloured by the layers it holds (legend), the part its ops use,
  defective PEs, and arrows for the transfers between regions (solid) and for op-order region changes
  without a transfer op (dashed). `--schedule fullchip` etc. adds floorplan_<id>_<name>.png/.svg;
- tornado_<id>.png/.svg and coexplore_<problem>.png/.svg for a hardware what-if sweep (plot_whatif.py);
- calibration_scatter.png: predicted (cost model) against simulated, log-log with the y = x line: per op
  (/sim_op_pairs), per schedule (/sim_pairs), and per --calibration file: the sim_pairs.csv or results.h5
  of `wavel-dse calibrate CONFIG.yaml` (simulated cycles; the model before and after the fit), or the
  validation.csv or results.h5 of `wavel-dse validate` / `calibrate REFERENCE.yaml` (measured tokens/s).

Every throughput and latency is PREDICTED by the cost model, and the axes say so. Settings default to all.
Exit codes: 0 ok, 64 bad usage, 65 not a wavel results file (or unreadable MeshIR / calibration file),
66 input missing, 73 output cannot be written.
"""

import argparse
import csv
import math
import os
import re
import sys

os.environ.setdefault("MPLBACKEND", "Agg")
try:
    import h5py
    import numpy as np
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import colors as mcolors
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch, Patch, Rectangle
    from matplotlib.ticker import FuncFormatter
    import plot_whatif
    import wavel_results
    from meshir_text import parse_meshir, block_of, blocks_label
    from wavel_results import EX_CANTCREAT, EX_DATAERR, EX_NOINPUT, EX_USAGE, NotResults, UsageParser, read_schedules, to_text
except ImportError as error:  # Debian: apt-get install python3-h5py python3-matplotlib
    sys.exit(f"plot_results.py: error: {error} (install python3-h5py and python3-matplotlib)")

PREDICTED = "predicted (cost model)"
# Fixed metadata so that the same results give byte-identical SVG and PNG files.
SVG_METADATA = {"Date": None, "Creator": "wavel-dse plot_results.py"}
PNG_METADATA = {"Software": "wavel-dse plot_results.py"}
matplotlib.rcParams["svg.hashsalt"] = "wavel-dse"


# ---------------------------------------------------------------------------------------------------
# Reading results


def read_table(file, name, required=True):
    """{column: numpy array or list of str} of table `name`; None when absent and not required."""
    return wavel_results.read_table(file, name, required, arrays=True)


def rows_where(table, column, value):
    return [i for i, v in enumerate(table[column]) if v == value]


def setting_title(settings, index):
    return (f"setting {int(settings['setting_id'][index])}: {settings['model'][index]} {settings['phase'][index]}, "
            f"{int(settings['concurrent_requests'][index])} req, in {int(settings['input_tokens'][index])}, "
            f"out {int(settings['output_tokens'][index])}")


def subset_note(settings, index):
    if "layer_subset_layers" in settings and int(settings["layer_subset_layers"][index]) > 0:
        total = int(settings["model_layers"][index]) if "model_layers" in settings else 0
        return f" [layer subset {int(settings['layer_subset_layers'][index])}/{total or '?'}, scaled]"
    return ""


# ---------------------------------------------------------------------------------------------------
# Plots


def save(fig, path, formats):
    for ext in formats:
        target = f"{path}.{ext}"
        meta = SVG_METADATA if ext == "svg" else PNG_METADATA
        fig.savefig(target + ".partial", format=ext, dpi=150, bbox_inches="tight", metadata=meta)
        os.replace(target + ".partial", target)
    plt.close(fig)
    return [f"{path}.{ext}" for ext in formats]


def plot_pareto(settings, front, index, out_dir):
    sid = int(settings["setting_id"][index])
    rows = rows_where(front, "setting_id", sid)
    fig, ax = plt.subplots(figsize=(7, 4.8))
    lat = np.array([front["latency_s"][i] for i in rows], dtype=float)
    tps = np.array([front["tokens_per_s"][i] for i in rows], dtype=float)
    pes = np.array([front["pes_used"][i] for i in rows], dtype=float)
    grid_pes = max([1.0] + list(pes) + [float(settings[f"{b}_pes_used"][index]) for b in ("fullchip", "waferllm")
                                         if f"{b}_pes_used" in settings])
    norm = mcolors.Normalize(vmin=0, vmax=grid_pes)
    handles = []
    if rows:
        order = np.argsort(lat, kind="stable")
        ax.plot(lat[order], tps[order], color="0.6", lw=1, zorder=1, drawstyle="steps-post")
        sizes = 30 + 220 * pes / grid_pes
        scatter = ax.scatter(lat, tps, c=pes, s=sizes, cmap="viridis", norm=norm, edgecolors="k", linewidths=0.5,
                             zorder=3)
        fig.colorbar(scatter, ax=ax, label="PEs used")
        best = [k for k, i in enumerate(rows) if int(front["point"][i]) == 0]
        if best:
            ax.scatter(lat[best], tps[best], s=420, facecolors="none", edgecolors="crimson", linewidths=1.5, zorder=4)
            handles.append(Line2D([], [], marker="o", ls="", mfc="none", mec="crimson", ms=14,
                                  label="best throughput (schedule 'wavel')"))
        handles.append(Line2D([], [], marker="o", ls="", mfc="0.7", mec="k", ms=8,
                              label=f"Wavel front ({len(rows)} points)"))
    for base, marker, colour, label in (("fullchip", "s", "tab:orange", "Full-Chip"),
                                        ("waferllm", "D", "tab:blue", "WaferLLM")):
        t = float(settings[f"{base}_tokens_per_s"][index])
        l = float(settings[f"{base}_latency_s"][index])
        if math.isfinite(t) and math.isfinite(l):
            ax.scatter([l], [t], marker=marker, s=140, facecolors="none", edgecolors=colour, linewidths=2.2, zorder=5)
            handles.append(Line2D([], [], marker=marker, ls="", mfc="none", mec=colour, mew=2, ms=10,
                                  label=f"{label} baseline"))
        else:
            handles.append(Line2D([], [], ls="", label=f"{label}: not placed (n/a)"))
    values_l = [v for v in list(lat) + [float(settings[f"{b}_latency_s"][index]) for b in ("fullchip", "waferllm")]
                if math.isfinite(v) and v > 0]
    if values_l and max(values_l) / min(values_l) > 20:
        ax.set_xscale("log")
    # Latencies span microseconds (decode) to seconds (long prefill): label the axis in a unit that keeps
    # the tick labels short.
    unit, factor = "s", 1.0
    if values_l and max(values_l) < 1e-3:
        unit, factor = "µs", 1e6
    elif values_l and max(values_l) < 1.0:
        unit, factor = "ms", 1e3
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * factor:.4g}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 100 else f"{v:.4g}"))
    metric = "TPOT" if settings["phase"][index] == "decode" else "TTFT"
    ax.set_xlabel(f"latency ({metric}) [{unit}], {PREDICTED}")
    ax.set_ylabel(f"throughput [tokens/s], {PREDICTED}")
    ax.set_title(f"Pareto front, {PREDICTED}\n{setting_title(settings, index)}{subset_note(settings, index)}",
                 fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(handles=handles, fontsize=8, loc="best")
    return save(fig, os.path.join(out_dir, f"pareto_{sid}"), ["png"])


def plot_floorplan(settings, schedules, index, schedule_name, out_dir):
    sid = int(settings["setting_id"][index])
    texts = [schedules["meshir"][i] for i in rows_where(schedules, "setting_id", sid)
             if schedules["schedule"][i] == schedule_name]
    if not texts:
        print(f"plot_results.py: note: setting {sid} has no stored schedule '{schedule_name}'; no floorplan",
              file=sys.stderr)
        return []
    s = parse_meshir(texts[0])
    grid_w, grid_h = s["grid"]
    # Blocks are numbered from the layers the ops name (a layer-subset schedule holds fewer than the model).
    seen = [int(m.group(1)) for m in (re.match(r"layer\.(\d+)\.", op["name"]) for op in s["ops"]) if m]
    layers = max(seen) + 1 if seen else 0
    region_blocks = {r: set() for r in s["regions"]}
    used = {r: set() for r in s["regions"]}
    stages = {r: set() for r in s["regions"]}
    kernels = {r: set() for r in s["regions"]}
    for op in s["ops"]:
        r = op["region"]
        if r not in region_blocks:
            raise NotResults(f"setting {sid} schedule '{schedule_name}': op {op['index']} names unknown region {r}")
        block = block_of(op["name"], layers)
        if block is not None:
            region_blocks[r].add(block)
        used[r].add(op["used"])
        if op.get("kernel") != "transfer":  # a transfer sits in its source region but at the next stage
            stages[r].add(op["stage"])
        kernels[r].add(op.get("kernel", ""))

    # Colour by the first block a region holds, so colours follow the model's depth.
    order = sorted(s["regions"], key=lambda r: (min(region_blocks[r]) if region_blocks[r] else 10 ** 9, r))
    cmap = plt.get_cmap("turbo")
    colour = {r: cmap(0.08 + 0.84 * (k / max(1, len(order) - 1))) for k, r in enumerate(order)}

    aspect = grid_h / grid_w
    wafers = s["wafers"]
    width = 7.5 if wafers == 1 else 4.0
    # One panel per wafer of a pipeline; transfers between wafers leave through the I/O edge.
    fig, axes = plt.subplots(1, wafers, figsize=(width * wafers + 4.5, max(4.0, min(14.0, width * aspect))),
                             squeeze=False)
    axes = axes[0]
    wafer_of = lambda r: s["region_wafer"].get(r, 0)
    for k, ax in enumerate(axes):
        ax.add_patch(Rectangle((0, 0), grid_w, grid_h, fill=False, ec="k", lw=2))
    handles = []
    for r in order:
        ax = axes[wafer_of(r)]
        x, y, w, h = s["regions"][r]
        ax.add_patch(Rectangle((x, y), w, h, fc=colour[r], ec="k", lw=1.0, alpha=0.25))
        for ux, uy, uw, uh in sorted(used[r]):
            ax.add_patch(Rectangle((ux, uy), uw, uh, fc=colour[r], ec=colour[r], lw=0.8, alpha=0.55,
                                   hatch="//" if (uw, uh) != (w, h) else None))
        stage_text = ",".join(str(v) for v in sorted(stages[r]))
        ax.text(x + w / 2, y + h / 2, f"R{r}\nstage {stage_text}", ha="center", va="center", fontsize=7,
                bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.7))
        label = f"R{r} ({w}×{h}): {blocks_label(region_blocks[r], layers)}"
        if kernels[r] & {"moe_dispatch", "moe_combine"}:
            label += " [MoE]"
        handles.append(Patch(fc=colour[r], ec="k", alpha=0.6, label=label))
    if s["defects"]:
        dx, dy = zip(*s["defects"])
        for ax in axes:
            ax.scatter(np.array(dx) + 0.5, np.array(dy) + 0.5, marker="x", c="red", s=25, zorder=6)
        handles.append(Line2D([], [], marker="x", ls="", c="red", label=f"defective PE ({len(s['defects'])})"))

    def centre(r):
        x, y, w, h = s["regions"][r]
        return x + w / 2, y + h / 2

    transfers, implied = {}, {}
    previous = None
    for op in s["ops"]:
        r = op["region"]
        if op.get("kernel") == "transfer" and op["to_region"] >= 0 and op["to_region"] != r:
            transfers[(r, op["to_region"])] = transfers.get((r, op["to_region"]), 0) + 1
        elif previous is not None and previous != r and (previous, r) not in transfers:
            implied[(previous, r)] = implied.get((previous, r), 0) + 1
        previous = op["to_region"] if op.get("kernel") == "transfer" and op["to_region"] >= 0 else r
    def edge_point(r):
        cx, cy = centre(r)
        return {"west": (0, cy), "east": (grid_w, cy), "north": (cx, 0), "south": (cx, grid_h)}[s["io_edge"]]

    links = {(a, b): n for (a, b), n in transfers.items() if wafer_of(a) != wafer_of(b)}
    for (a, b) in links:
        del transfers[(a, b)]
        for end, text in ((a, f"to wafer {wafer_of(b)}"), (b, f"from wafer {wafer_of(a)}")):
            ax = axes[wafer_of(end)]
            start, stop = (centre(end), edge_point(end)) if end == a else (edge_point(end), centre(end))
            ax.add_patch(FancyArrowPatch(start, stop, arrowstyle="-|>", mutation_scale=14, color="tab:red", lw=1.6,
                                         shrinkA=4, shrinkB=4, zorder=7))
            ax.text(*edge_point(end), text, fontsize=7, color="tab:red", zorder=8)
    if links:
        handles.append(Line2D([], [], color="tab:red", lw=1.6, label=f"link between systems ({len(links)})"))
    for (a, b), count in sorted(transfers.items()):
        ax = axes[wafer_of(a)]
        ax.add_patch(FancyArrowPatch(centre(a), centre(b), arrowstyle="-|>", mutation_scale=14, color="k", lw=1.4,
                                     shrinkA=14, shrinkB=14,
                                     connectionstyle="arc3,rad=0.12", zorder=7))
        if count > 1:
            mx, my = (centre(a)[0] + centre(b)[0]) / 2, (centre(a)[1] + centre(b)[1]) / 2
            ax.text(mx, my, f"×{count}", fontsize=7, zorder=8)
    for (a, b), count in sorted(implied.items()):
        if wafer_of(a) != wafer_of(b):
            continue
        ax = axes[wafer_of(a)]
        ax.add_patch(FancyArrowPatch(centre(a), centre(b), arrowstyle="-|>", mutation_scale=12, color="0.35",
                                     shrinkA=14, shrinkB=14,
                                     lw=1.0, ls="--", connectionstyle="arc3,rad=-0.12", zorder=7))
    if transfers:
        handles.append(Line2D([], [], color="k", lw=1.4, label=f"transfer op ({sum(transfers.values())})"))
    if implied:
        handles.append(Line2D([], [], color="0.35", lw=1.0, ls="--", label="next op on another region (no transfer op)"))
    handles.append(Patch(fc="0.5", alpha=0.55, hatch="//", label="used part of a region (hatched: less than all)"))

    for k, ax in enumerate(axes):
        ax.set_xlim(-0.01 * grid_w, grid_w * 1.01)
        ax.set_ylim(grid_h * 1.01, -0.01 * grid_h)  # y grows downwards, as PE rows do
        ax.set_aspect("equal")
        ax.set_xlabel("x [PE]" if wafers == 1 else f"wafer {k}: x [PE]")
        ax.set_ylabel("y [PE]")
    ax = axes[-1]
    scale = (f", MeshIR 'layers {s['layers']} scale {s['scale']:g}': layer subset, costs scaled"
             if s["scale"] != 1 else "")
    on_wafers = "" if wafers == 1 else f" on each of {wafers} wafers (one panel each)"
    (ax.set_title if wafers == 1 else fig.suptitle)(
                 f"floorplan of schedule '{schedule_name}' (MeshIR '{s['name']}'), {grid_w}×{grid_h} PEs{on_wafers}{scale}\n"
                 f"{setting_title(settings, index)}{subset_note(settings, index)}; "
                 f"{s['microbatches']} micro-batches\n"
                 f"throughput {float(settings_throughput(settings, index, schedule_name)):,.0f} tokens/s, {PREDICTED}",
                 fontsize=9)
    ncol = 1 if len(handles) <= 28 else 2
    ax.legend(handles=handles, fontsize=7 if len(handles) <= 28 else 6, loc="upper left",
              bbox_to_anchor=(1.02, 1.0), ncol=ncol, title="a: attention, f: FFN/MoE", title_fontsize=7)
    stem = f"floorplan_{sid}" if schedule_name == "wavel" else f"floorplan_{sid}_{re.sub(r'[^A-Za-z0-9_.-]', '_', schedule_name)}"
    return save(fig, os.path.join(out_dir, stem), ["png", "svg"])


def settings_throughput(settings, index, schedule_name):
    column = f"{schedule_name}_tokens_per_s"
    return settings[column][index] if column in settings else float("nan")


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return reader.fieldnames or [], list(reader)


def calibration_series(path):
    """[(label, predicted, observed, observed-kind, unit)] from a calibrate/validate output file."""
    name = os.path.basename(path)
    if h5py.is_hdf5(path):
        with h5py.File(path, "r") as file:
            if "sim_calibration_pairs" in file:
                t = read_table(file, "sim_calibration_pairs")
                return sim_calibration_series(name, t["sim_cycles"], t["model_cycles_before"],
                                              t["model_cycles_after"], t["held_out"])
            if "validation" in file:
                t = read_table(file, "validation")
                return validation_series(name, t["measured_tokens_per_s"], t["predicted_tokens_per_s"],
                                         t["held_out"])
            if "sim_op_pairs" in file:
                t = read_table(file, "sim_op_pairs")
                return [(f"{name}: per op", np.asarray(t["model_cycles"], float), np.asarray(t["sim_cycles"], float),
                         "simulated", "cycles")]
        raise NotResults(f"{path}: no sim_calibration_pairs, validation or sim_op_pairs table")
    fields, rows = read_csv(path)
    column = lambda key: np.array([float(r[key]) for r in rows])  # noqa: E731
    if {"sim_cycles", "model_cycles_before", "model_cycles_after"} <= set(fields):
        return sim_calibration_series(name, column("sim_cycles"), column("model_cycles_before"),
                                      column("model_cycles_after"), column("held_out") if "held_out" in fields else None)
    if {"measured_tokens_per_s", "predicted_tokens_per_s"} <= set(fields):
        return validation_series(name, column("measured_tokens_per_s"), column("predicted_tokens_per_s"),
                                 column("held_out") if "held_out" in fields else None)
    raise NotResults(f"{path}: neither a sim_pairs.csv (sim_cycles, model_cycles_before/after) nor a "
                   "validation.csv (measured_tokens_per_s, predicted_tokens_per_s)")


def split_held(label, predicted, observed, held, kind, unit):
    predicted, observed = np.asarray(predicted, float), np.asarray(observed, float)
    if held is None:
        return [(label, predicted, observed, kind, unit)]
    held = np.asarray(held).astype(bool)
    out = [(f"{label}, training", predicted[~held], observed[~held], kind, unit)]
    if held.any():
        out.append((f"{label}, held out", predicted[held], observed[held], kind, unit))
    return out


def sim_calibration_series(name, sim, before, after, held):
    return (split_held(f"{name}: model before fit", before, sim, None, "simulated", "cycles")
            + split_held(f"{name}: model after fit", after, sim, held, "simulated", "cycles"))


def validation_series(name, measured, predicted, held):
    return split_held(f"{name}: WaferLLM schedule", predicted, measured, held, "measured (WaferLLM, published)",
                      "tokens/s")


def scatter_panel(ax, series, title):
    lo, hi = math.inf, -math.inf
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    for k, (label, predicted, observed, _, _) in enumerate(series):
        keep = np.isfinite(predicted) & np.isfinite(observed) & (predicted > 0) & (observed > 0)
        if not keep.any():
            continue
        p, o = predicted[keep], observed[keep]
        mape = 100.0 * float(np.mean(np.abs(p - o) / o))
        ax.scatter(p, o, s=18, marker=markers[k % len(markers)], alpha=0.75,
                   label=f"{label} (n={int(keep.sum())}, MAPE {mape:.2f} %)")
        lo, hi = min(lo, p.min(), o.min()), max(hi, p.max(), o.max())
    if not math.isfinite(lo):
        ax.text(0.5, 0.5, "no pairs", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title, fontsize=9)
        return
    lo, hi = lo / 1.5, hi * 1.5
    ax.plot([lo, hi], [lo, hi], color="k", lw=1, ls="--", label="y = x")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal")
    unit, kind = series[0][4], series[0][3]
    ax.set_xlabel(f"{PREDICTED} [{unit}]")
    ax.set_ylabel(f"{kind} [{unit}]")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=6.5, loc="upper left")


def plot_calibration(file, calibration, out_dir):
    """calibration: [(path, series)] read beforehand, so a bad file fails before any plot is written."""
    panels = []
    op_pairs = read_table(file, "sim_op_pairs", required=False)
    if op_pairs is not None and len(op_pairs["setting_id"]):
        series = []
        kernels = op_pairs["kernel"]
        for kernel in sorted(set(kernels)):
            idx = [i for i, k in enumerate(kernels) if k == kernel]
            series.append((kernel, np.asarray(op_pairs["model_cycles"], float)[idx],
                           np.asarray(op_pairs["sim_cycles"], float)[idx], "simulated", "cycles"))
        panels.append((series, "per op (/sim_op_pairs), by kernel"))
    pairs = read_table(file, "sim_pairs", required=False)
    if pairs is not None and len(pairs["setting_id"]):
        names = pairs["schedule"]
        series = []
        for group in sorted({n.split(".")[0] for n in names}):
            idx = [i for i, n in enumerate(names) if n.split(".")[0] == group]
            series.append((f"schedule {group}", np.asarray(pairs["model_latency_s"], float)[idx],
                           np.asarray(pairs["sim_latency_s"], float)[idx], "simulated", "s"))
        panels.append((series, "per schedule latency (/sim_pairs)"))
    for path, series in calibration:
        panels.append((series, f"{os.path.basename(os.path.dirname(os.path.abspath(path)))}/"
                               f"{os.path.basename(path)}"))
    if not panels:
        print("plot_results.py: note: no /sim_op_pairs, /sim_pairs or --calibration data; no calibration scatter",
              file=sys.stderr)
        return []
    ncols = min(2, len(panels))
    nrows = (len(panels) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.2 * ncols, 5.8 * nrows), squeeze=False)
    for ax, (series, title) in zip(axes.flat, panels):
        scatter_panel(ax, series, title)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(f"calibration: {PREDICTED} against simulated / measured (log-log, dashed: y = x)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / fig.get_figheight()))
    return save(fig, os.path.join(out_dir, "calibration_scatter"), ["png"])


def index_row(settings, index, files):
    """One line of index.md: which setting a plot shows, from the results file itself."""
    def cell(name, default=""):
        return to_text(settings[name][index]) if name in settings else default
    subset = int(settings["layer_subset_layers"][index]) if "layer_subset_layers" in settings else 0
    layers = int(settings["model_layers"][index]) if "model_layers" in settings else 0
    placed = f"subset {subset}/{layers}" if subset > 0 else "whole"
    wafers = int(settings["wafers"][index]) if "wafers" in settings else 1
    names = ", ".join(os.path.basename(f) for f in files)
    return (f"| {int(settings['setting_id'][index])} | {cell('model')} | {cell('phase')} | "
            f"{int(settings['concurrent_requests'][index])} | {int(settings['input_tokens'][index])}/"
            f"{int(settings['output_tokens'][index])} | {wafers} | {placed} | {names} |")


def write_index(out, results, rows):
    """index.md: the plotted settings, so no document has to repeat their ids by hand."""
    path = os.path.join(out, "index.md")
    text = (f"# Plots of {results} (written by scripts/plot_results.py; every value {PREDICTED})\n\n"
            "| setting | model | phase | requests | input/output | wafers | placed as | files |\n"
            "|---|---|---|---|---|---|---|---|\n" + "".join(r + "\n" for r in rows))
    with open(path + ".partial", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".partial", path)
    return path


def main(argv):
    parser = UsageParser(prog="plot_results.py", description="Plots of a wavel-dse results.h5 (matplotlib, Agg).")
    parser.add_argument("results", metavar="RESULTS.h5", help="results file written by wavel-dse run")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing)")
    parser.add_argument("--setting", type=int, action="append", metavar="ID",
                        help="setting id to plot (repeatable; default all)")
    parser.add_argument("--schedule", action="append", metavar="NAME",
                        help="also draw the floorplan of this stored schedule (fullchip, waferllm, front.N)")
    parser.add_argument("--calibration", action="append", default=[], metavar="FILE",
                        help="sim_pairs.csv / validation.csv / results.h5 of `wavel-dse calibrate` or `validate`")
    args = parser.parse_args(argv)
    prog = "plot_results.py"
    for path in [args.results] + args.calibration:
        if not os.path.isfile(path):
            print(f"{prog}: error: no such file: {path}", file=sys.stderr)
            return EX_NOINPUT
    if not h5py.is_hdf5(args.results):
        print(f"{prog}: error: {args.results} is not an HDF5 file, so not a wavel results file", file=sys.stderr)
        return EX_DATAERR
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as error:
        print(f"{prog}: error: cannot create {args.out}: {error}", file=sys.stderr)
        return EX_CANTCREAT
    written = []
    try:
        calibration = [(path, calibration_series(path)) for path in args.calibration]
    except NotResults as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EX_DATAERR
    except (OSError, KeyError, ValueError) as error:
        print(f"{prog}: error: cannot read a --calibration file: {error}", file=sys.stderr)
        return EX_DATAERR
    try:
        with h5py.File(args.results, "r") as file:
            settings = read_table(file, "settings")
            front = read_table(file, "front")
            schedules = read_schedules(file)
            ids = [int(v) for v in settings["setting_id"]]
            chosen = args.setting if args.setting else ids
            unknown = [v for v in chosen if v not in ids]
            if unknown:
                print(f"{prog}: error: no setting {', '.join(map(str, unknown))} in {args.results} "
                      f"(ids: {', '.join(map(str, ids))})", file=sys.stderr)
                return EX_USAGE
            rows = []
            for sid in chosen:
                index = ids.index(sid)
                mine = plot_pareto(settings, front, index, args.out)
                for name in ["wavel"] + [n for n in (args.schedule or []) if n != "wavel"]:
                    mine += plot_floorplan(settings, schedules, index, name, args.out)
                rows.append(index_row(settings, index, mine))
                written += mine
            written.append(write_index(args.out, args.results, rows))
            written += plot_calibration(file, calibration, args.out)
            whatif = (read_table(file, "sensitivity", False), front, read_table(file, "hardware", False),
                      read_table(file, "hardware_front", False))
            written += plot_whatif.plot_whatif(settings, whatif, args.out, save)
    except NotResults as error:
        print(f"{prog}: error: {args.results}: {error}", file=sys.stderr)
        return EX_DATAERR
    except (KeyError, ValueError) as error:
        print(f"{prog}: error: {args.results} is not a wavel results file: {error}", file=sys.stderr)
        return EX_DATAERR
    except OSError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EX_CANTCREAT
    print(f"wrote {len(written)} files to {args.out} (every throughput and latency {PREDICTED})")
    for path in written:
        print(f"  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
