"""Hardware what-if plots of a wavel-dse results.h5 (imported by plot_results.py):
- tornado_<id>.png/.svg: for base setting <id>, the change of the best schedule's tokens/s when one wafer
  key moves from the base hardware point (/sensitivity), largest effect on top;
- coexplore_<problem>.png/.svg: every hardware point's Pareto front of one problem: tokens/s against SRAM
  per PE (colour: link bytes per cycle), and joules per token against tokens/s with the front over
  hardware x schedule (/hardware_front) drawn and labelled.
Every figure is PREDICTED by the cost model."""

import matplotlib.pyplot as plt
import numpy as np

PREDICTED = "PREDICTED by the cost model"


def _title(settings, index):
    return (f"{settings['model'][index]} {settings['phase'][index]}, {int(settings['concurrent_requests'][index])} req, "
            f"in {int(settings['input_tokens'][index])}, out {int(settings['output_tokens'][index])}, "
            f"{int(settings['wafers'][index])} wafer(s)")


def _fmt(value):
    return f"{value:.6g}"


def plot_tornado(settings, sensitivity, out_dir, save):
    ids = [int(v) for v in settings["setting_id"]]
    written = []
    for base in sorted(set(int(v) for v in sensitivity["base_setting_id"])):
        rows = [i for i, v in enumerate(sensitivity["base_setting_id"]) if int(v) == base]
        change = np.array([float(sensitivity["change"][i]) for i in rows]) * 100.0
        change = np.where(np.isfinite(change), change, -100.0)  # nothing placed: all throughput lost
        labels = [f"{sensitivity['key'][i]}: {_fmt(float(sensitivity['base_value'][i]))} -> "
                  f"{_fmt(float(sensitivity['value'][i]))}" for i in rows]
        order = np.argsort(np.abs(change))
        fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.6), constrained_layout=True)
        ax.barh(range(len(rows)), change[order], color=["tab:green" if c >= 0 else "tab:red" for c in change[order]])
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([labels[k] for k in order], fontsize=8)
        ax.axvline(0.0, color="k", lw=0.8)
        ax.set_xlabel("change of the best schedule's tokens/s against the base hardware (%, predicted)")
        index = ids.index(base)
        ax.set_title(f"Which single hardware change helps: {_title(settings, index)}\n"
                     f"base {float(sensitivity['base_wavel_tokens_per_s'][rows[0]]):.4g} tokens/s", fontsize=9)
        written += save(fig, f"{out_dir}/tornado_{base}", ["png", "svg"])
    return written


def plot_coexplore(settings, front, hardware, hardware_front, out_dir, save):
    ids = [int(v) for v in settings["setting_id"]]
    hw_of = {int(s): int(h) for s, h in zip(settings["setting_id"], settings["hardware"])}
    sram_kib = {int(h): float(v) / 1024.0 for h, v in zip(hardware["hardware"], hardware["sram_per_pe_bytes"])}
    link = {int(h): float(v) for h, v in zip(hardware["hardware"], hardware["link_bytes_per_cycle"])}
    labels = {int(h): str(v) for h, v in zip(hardware["hardware"], hardware["label"])}
    written = []
    for problem in sorted(set(int(v) for v in hardware_front["problem"])):
        on_front = [i for i, v in enumerate(hardware_front["problem"]) if int(v) == problem]
        first = int(hardware_front["setting_id"][on_front[0]])
        # The problem's settings: same row of the settings table but for the hardware point.
        key = ("model", "phase", "concurrent_requests", "input_tokens", "output_tokens", "wafers")
        ref = ids.index(first)
        members = [ids[i] for i in range(len(ids)) if all(settings[k][i] == settings[k][ref] for k in key)]
        points = [i for i, s in enumerate(front["setting_id"]) if int(s) in members]
        if not points:
            continue
        tps = np.array([float(front["tokens_per_s"][i]) for i in points])
        joules = np.array([float(front["j_per_token"][i]) for i in points])
        hws = [hw_of[int(front["setting_id"][i])] for i in points]
        fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), constrained_layout=True)
        sc = left.scatter([sram_kib[h] for h in hws], tps, c=[link[h] for h in hws], cmap="viridis", s=22)
        fig.colorbar(sc, ax=left, label="link bytes per cycle")
        left.set_xlabel("SRAM per PE (KiB)")
        left.set_ylabel("tokens/s, each point's front (predicted)")
        left.set_yscale("log")
        right.scatter(tps, joules, color="0.7", s=14, label="front points, every hardware point")
        f_tps = np.array([float(hardware_front["tokens_per_s"][i]) for i in on_front])
        f_j = np.array([float(hardware_front["j_per_token"][i]) for i in on_front])
        order = np.argsort(f_tps)
        right.plot(f_tps[order], f_j[order], color="tab:red", marker="o", lw=1.2, label="front over hardware x schedule")
        for i in on_front:
            right.annotate(labels[int(hardware_front["hardware"][i])],
                           (float(hardware_front["tokens_per_s"][i]), float(hardware_front["j_per_token"][i])),
                           fontsize=7, xytext=(4, 4), textcoords="offset points")
        right.set_xscale("log")
        right.set_yscale("log")
        right.set_xlabel("tokens/s (predicted)")
        right.set_ylabel("joules per token (predicted)")
        right.legend(fontsize=8)
        fig.suptitle(f"Hardware x schedule co-exploration ({PREDICTED}): {_title(settings, ref)}", fontsize=10)
        written += save(fig, f"{out_dir}/coexplore_{problem}", ["png", "svg"])
    return written


def plot_whatif(settings, tables, out_dir, save):
    """tables: the /sensitivity, /front, /hardware and /hardware_front tables (None when absent)."""
    sensitivity, front, hardware, hardware_front = tables
    written = []
    if sensitivity is not None and len(sensitivity["setting_id"]) > 0:
        written += plot_tornado(settings, sensitivity, out_dir, save)
    if hardware is not None and hardware_front is not None and len(hardware_front["problem"]) > 0:
        written += plot_coexplore(settings, front, hardware, hardware_front, out_dir, save)
    return written
