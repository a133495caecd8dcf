#!/usr/bin/python3
"""Writes the paper-style comparison table of one or more wavel-dse results.h5 files.

usage: make_tables.py RESULTS.h5 [RESULTS2.h5 ...] --out DIR [--name NAME] [--check]

Writes DIR/NAME.md and DIR/NAME.csv: per setting (model, phase, requests, input and output tokens) the
throughput of the Wavel search's best schedule, of WaferLLM and of Full-Chip, the ratios Wavel/WaferLLM
and Wavel/Full-Chip, and a label where the setting was simulated as a layer subset and scaled; then the
arithmetic and geometric mean ratios per model, per model kind (dense, MoE) and overall, set beside the
Wavel paper's numbers. Every throughput is PREDICTED by the cost model; the provenance (config file,
params file, git hash) of every input is named. A baseline that was not placed (NaN) shows "n/a" and
is left out of the means (the count is given). The output depends only on the inputs: no timestamps
other than the files' own `created_utc`.

The table also states whether three rules hold (relative tolerance 1e-12): the Wavel column is at
least both baselines in every row; no schedule serves R requests slower than the same setting with
R' requests for a divisor R' of R (serving R as R/R' groups of R' one after another would give that
throughput: the request-grouping invariant); and every n/a baseline carries a reason. With --check a
row that breaks one makes the exit code 1, naming the rows.

Exit codes: 0 ok, 1 --check failed, 64 bad usage, 65 not a wavel results file, 66 input missing,
73 output cannot be written.
"""

import argparse
import csv
import io
import math
import os
import re
import sys

try:
    import h5py
    import numpy as np
    from wavel_results import EX_CANTCREAT, EX_DATAERR, EX_NOINPUT, EX_USAGE, NotResults, UsageParser, read_schedules, read_table, to_text
except ImportError as error:  # Debian: apt-get install python3-h5py python3-numpy
    sys.exit(f"make_tables.py: error: {error} (install python3-h5py and python3-numpy)")

EX_CHECK = 1  # --check found a row where the search is below a placed baseline
CHECK_RTOL = 1e-12  # Wavel counts as "at least" a baseline down to this relative shortfall (rounding)

# The paper's numbers (Wavel, SOSP 2026, as its abstract states them). The first two were measured on
# WSE-3 hardware; the MoE figure is itself a cost-model prediction in the paper.
PAPER_MEAN_VS_WAFERLLM = "1.31–1.35× (measured, WSE-3; mean per setting)"
PAPER_MAX_VS_FULLCHIP_DENSE = "up to 1.85× (measured, WSE-3)"
PAPER_VS_FULLCHIP_MOE = "2.97× (predicted by Wavel's cost model; mean or maximum not stated)"

# Fallback when a setting has no stored schedule to inspect for MoE kernels: the bundled MoE presets.
MOE_PRESETS = {"mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v2-lite"}
MOE_KERNELS = re.compile(r"\bkernel=moe_(dispatch|combine)\b")
LAYERS_LINE = re.compile(r"^layers\s+(\d+)\s+scale\s+(\S+)\s*$", re.MULTILINE)


def as_float(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def finite(value):
    return value is not None and not math.isnan(value)


class Source:
    """One input file: its provenance and its settings rows."""

    def __init__(self, index, path, file):
        self.index = index
        self.path = path
        attrs = file.attrs
        self.provenance = {key: to_text(attrs[key]) if key in attrs else "(missing)"
                           for key in ("config_file", "params_file", "git_hash", "tool_version",
                                       "format_version", "created_utc")}
        settings = read_table(file, "settings")
        needed = ["setting_id", "model", "phase", "concurrent_requests", "input_tokens", "output_tokens",
                  "wavel_tokens_per_s", "waferllm_tokens_per_s", "fullchip_tokens_per_s"]
        missing = [c for c in needed if c not in settings]
        if missing:
            raise NotResults(f"/settings lacks column(s) {', '.join(missing)}")
        # Each problem's choice over its wafer counts, as wavel-dse made it (absent with one count).
        self.wafer_counts = read_table(file, "wafer_counts", required=False)
        # The texts of the three schedules each row reads, and no others: a run stores every front
        # point's, and with split heads one text is over a megabyte.
        meshir = {}
        schedules = read_schedules(file, required=False)
        if schedules is not None:
            names = schedules["schedule"]
            wanted = [i for i, name in enumerate(names) if name in ("wavel", "fullchip", "waferllm")]
            for i, text in zip(wanted, schedules["meshir"].take(wanted)):
                meshir[(int(schedules["setting_id"][i]), names[i])] = text
        self.rows = []
        for i, sid in enumerate(settings["setting_id"]):
            sid = int(sid)
            row = {
                "file": path,
                "file_index": index,
                "setting_id": sid,
                "model": settings["model"][i],
                "phase": settings["phase"][i],
                "concurrent_requests": int(settings["concurrent_requests"][i]),
                "input_tokens": int(settings["input_tokens"][i]),
                "output_tokens": int(settings["output_tokens"][i]),
                "wavel": as_float(settings["wavel_tokens_per_s"][i]),
                "waferllm": as_float(settings["waferllm_tokens_per_s"][i]),
                "fullchip": as_float(settings["fullchip_tokens_per_s"][i]),
                "wavel_source": settings["wavel_source"][i] if "wavel_source" in settings else "",
            }
            for key in ("waferllm", "fullchip"):
                column = f"{key}_na_reason"
                row[column] = settings[column][i] if column in settings else None
                for end in ("lo", "hi"):
                    column = f"speedup_vs_{key}_{end}"
                    row[f"wavel_over_{key}_{end}"] = as_float(settings[column][i]) if column in settings else math.nan
            # Older files have no wafers column: one wafer.
            row["wafers"] = int(settings["wafers"][i]) if "wafers" in settings else 1
            row["stage_layers"] = settings["stage_layers"][i] if "stage_layers" in settings else ""
            row["has_subset_column"] = "layer_subset_layers" in settings
            row["subset_layers"] = int(settings["layer_subset_layers"][i]) if row["has_subset_column"] else 0
            row["model_layers"] = int(settings["model_layers"][i]) if "model_layers" in settings else 0
            texts = [meshir[key] for key in ((sid, "wavel"), (sid, "fullchip"), (sid, "waferllm")) if key in meshir]
            row["moe"] = (any(MOE_KERNELS.search(t) for t in texts) if texts
                          else row["model"].lower() in MOE_PRESETS)
            row["meshir_scale"] = meshir_layer_scale(meshir.get((sid, "wavel")))
            row["subset_label"] = subset_label(row)
            # A baseline that cannot place the setting's subset runs the largest one it can (scaled the same way).
            for key, label in (("waferllm", "WaferLLM"), ("fullchip", "Full-Chip")):
                column = f"{key}_layer_subset_layers"
                own = int(settings[column][i]) if column in settings else row["subset_layers"]
                row[f"{key}_subset_layers"] = own
                row[f"{key}_subset_label"] = (f"{label} on layer subset {own}/{row['model_layers'] or '?'}, scaled"
                                              if finite(row[key]) and own != row["subset_layers"] and own > 0 else "")
                column = f"{key}_request_groups"
                groups = int(settings[column][i]) if column in settings else 1
                if finite(row[key]) and groups > 1:
                    per_group = row["concurrent_requests"] // groups
                    row[f"{key}_subset_label"] = "; ".join(
                        x for x in [row[f"{key}_subset_label"], f"{label} as {groups} groups of {per_group} requests"] if x)
            self.rows.append(row)


def meshir_layer_scale(text):
    """(layers, scale) from a MeshIR `layers N scale K` line, or None."""
    if not text:
        return None
    match = LAYERS_LINE.search(text)
    if not match:
        return None
    return int(match.group(1)), as_float(match.group(2))


def subset_label(row):
    """'layer subset k/L, scaled' when the setting was simulated on k of the model's L layers."""
    k, layers = row["subset_layers"], row["model_layers"]
    if k > 0:
        return f"layer subset {k}/{layers if layers > 0 else '?'}, scaled"
    if row["has_subset_column"]:
        return ""  # 0: the whole model
    # Older files have no layer_subset_layers column: the schedule's own scale line still tells.
    scale = row["meshir_scale"]
    if scale is not None and finite(scale[1]) and scale[1] != 1.0:
        return f"layer subset (MeshIR scale {scale[1]:g}), scaled"
    return ""


def ratio(numerator, denominator):
    if not (finite(numerator) and finite(denominator)) or denominator <= 0:
        return math.nan
    return numerator / denominator


def comparable(row, key):
    """False where the baseline could place only a smaller layer subset than the search's: its figure
    is an estimate on other layers (labelled in its row), not a schedule of the search's space."""
    own = row.get(f"{key}_subset_layers", row.get("subset_layers", 0))
    return not own or own == row.get("subset_layers", 0)


def check_row(row):
    """Descriptions of each baseline that beats the Wavel column in this row, and of each n/a without
    a reason (empty: the row passes)."""
    problems = []
    for key, label in (("waferllm", "WaferLLM"), ("fullchip", "Full-Chip")):
        reason = row.get(f"{key}_na_reason")
        if not finite(row[key]) and reason is not None and not str(reason).strip():
            problems.append(f"{label} is n/a without a reason")
    for key, label in (("waferllm", "WaferLLM"), ("fullchip", "Full-Chip")):
        base = row[key]
        if not finite(base):
            continue
        if not comparable(row, key):
            continue
        wavel = row["wavel"]
        if not finite(wavel) or wavel < base * (1.0 - CHECK_RTOL):
            problems.append(f"Wavel {fmt_repr(wavel)} < {label} {fmt_repr(base)}")
    return problems


def check_grouping(rows):
    """Adds a problem to each row whose schedule is slower than the same schedule of the same setting
    with fewer requests that divide its own (file, model, phase and lengths equal), or n/a where that
    one is placed: R requests can always be served as R/R' groups of R' one after another. Rows on
    different layer subsets compare too: every throughput is whole-model, normalised per layer."""
    by_key = {}
    for r in rows:
        key = (r["file"], r["model"], r["wafers"], r["phase"], r["input_tokens"], r["output_tokens"])
        by_key.setdefault(key, []).append(r)
    for members in by_key.values():
        for r in members:
            for smaller in members:
                n, m = r["concurrent_requests"], smaller["concurrent_requests"]
                if m >= n or n % m != 0:
                    continue
                for key, label in (("wavel", "Wavel"), ("waferllm", "WaferLLM"), ("fullchip", "Full-Chip")):
                    if not finite(smaller[key]):
                        continue
                    if not finite(r[key]):
                        r["problems"].append(f"grouping: {label} n/a at {n} requests but placed at {m}")
                    elif r[key] < smaller[key] * (1.0 - CHECK_RTOL):
                        r["problems"].append(f"grouping: {label} at {n} requests {fmt_repr(r[key])} < at {m} "
                                             f"requests {fmt_repr(smaller[key])}")


def row_name(row, multi):
    where = f"{row['file']} " if multi else ""
    return (f"{where}setting {row['setting_id']} ({row['model']} {row['phase']}, "
            f"{row['concurrent_requests']} req, in {row['input_tokens']}, out {row['output_tokens']})")


def means(values):
    """(n, arithmetic mean, geometric mean) of the finite positive values."""
    kept = [v for v in values if finite(v) and v > 0]
    if not kept:
        return 0, math.nan, math.nan
    arithmetic = math.fsum(kept) / len(kept)
    geometric = math.exp(math.fsum(math.log(v) for v in kept) / len(kept))
    return len(kept), arithmetic, geometric


def fmt_repr(value):
    return "n/a" if not finite(value) else repr(float(value))


def fmt_tps(value):
    """Throughput for the markdown table: four significant digits with a thousands separator."""
    if not finite(value):
        return "n/a"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def fmt_ratio(value):
    return "n/a" if not finite(value) else f"{value:.3f}×"


def fmt_ratio_interval(row, key):
    """The ratio with its 90 % interval over parameter draws when the file has one."""
    text = fmt_ratio(ratio(row["wavel"], row[key]))
    lo, hi = row[f"wavel_over_{key}_lo"], row[f"wavel_over_{key}_hi"]
    if finite(ratio(row["wavel"], row[key])) and finite(lo) and finite(hi):
        text += f" [{lo:.2f}, {hi:.2f}]"
    return text


def md_escape(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def summary_rows(rows):
    """Mean ratios per model, per model kind, per phase, per request count and overall, as dicts; each
    ratio's mean is over the rows where both its schedules are placed."""
    groups = []
    for model in sorted({r["model"] for r in rows}):
        members = [r for r in rows if r["model"] == model]
        kind = "MoE" if any(r["moe"] for r in members) else "dense"
        groups.append((model, kind, members))
    dense = [r for r in rows if not r["moe"]]
    moe = [r for r in rows if r["moe"]]
    if dense and moe:
        groups.append(("all dense models", "dense", dense))
        groups.append(("all MoE models", "MoE", moe))
    for phase in ("prefill", "decode"):
        members = [r for r in rows if r["phase"] == phase]
        if members:
            groups.append((f"{phase} settings", "all", members))
    for requests in sorted({r["concurrent_requests"] for r in rows}):
        groups.append((f"{requests} requests", "all", [r for r in rows if r["concurrent_requests"] == requests]))
    groups.append(("overall", "all", rows))
    out = []
    for label, kind, members in groups:
        entry = {"group": label, "kind": kind, "settings": len(members)}
        for key in ("waferllm", "fullchip"):
            ratios = [ratio(r["wavel"], r[key]) if comparable(r, key) else math.nan for r in members]
            n, arithmetic, geometric = means(ratios)
            entry[f"n_{key}"] = n
            entry[f"na_{key}"] = len(members) - n
            entry[f"arith_{key}"] = arithmetic
            entry[f"geo_{key}"] = geometric
            kept = [v for v in ratios if finite(v)]
            entry[f"max_{key}"] = max(kept) if kept else math.nan
        out.append(entry)
    return out


CSV_COLUMNS = ["file", "setting_id", "model", "model_kind", "phase", "concurrent_requests", "input_tokens",
               "output_tokens", "wavel_tokens_per_s", "waferllm_tokens_per_s", "fullchip_tokens_per_s",
               "wavel_over_waferllm", "wavel_over_fullchip", "wavel_source", "layer_subset", "check",
               "wavel_over_waferllm_lo", "wavel_over_waferllm_hi", "wavel_over_fullchip_lo", "wavel_over_fullchip_hi",
               "waferllm_na_reason", "fullchip_na_reason", "waferllm_layer_subset", "fullchip_layer_subset", "wafers"]


def write_csv(rows, out):
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in rows:
        writer.writerow([r["file"], r["setting_id"], r["model"], "MoE" if r["moe"] else "dense", r["phase"],
                         r["concurrent_requests"], r["input_tokens"], r["output_tokens"],
                         fmt_repr(r["wavel"]), fmt_repr(r["waferllm"]), fmt_repr(r["fullchip"]),
                         fmt_repr(ratio(r["wavel"], r["waferllm"])), fmt_repr(ratio(r["wavel"], r["fullchip"])),
                         r["wavel_source"], r["subset_label"], "FAIL" if r["problems"] else "ok",
                         fmt_repr(r["wavel_over_waferllm_lo"]), fmt_repr(r["wavel_over_waferllm_hi"]),
                         fmt_repr(r["wavel_over_fullchip_lo"]), fmt_repr(r["wavel_over_fullchip_hi"]),
                         r["waferllm_na_reason"] or "", r["fullchip_na_reason"] or "",
                         r["waferllm_subset_label"], r["fullchip_subset_label"], r["wafers"]])


def whole_model_rows(sources, rows):
    """Per problem of each file with several wafer counts: its one-wafer row, and the deployments on the
    fewest wafers and with the best tokens/s per wafer, as wavel-dse chose them (its /wafer_counts)."""
    out = []
    by_id = {(r["file"], r["setting_id"]): r for r in rows}
    one_wafer = {(r["file"], r["model"], r["phase"], r["concurrent_requests"], r["input_tokens"], r["output_tokens"]): r
                 for r in rows if r["wafers"] == 1}
    for s in sources:
        t = s.wafer_counts
        if t is None:
            continue
        for i in range(len(t["model"])):
            key = (s.path, t["model"][i], t["phase"][i], int(t["concurrent_requests"][i]), int(t["input_tokens"][i]),
                   int(t["output_tokens"][i]))
            out.append({"key": key, "one": one_wafer.get(key),
                        "fewest": by_id.get((s.path, int(t["fewest_setting_id"][i]))),
                        "best": by_id.get((s.path, int(t["per_wafer_setting_id"][i]))),
                        "tried": [int(x) for x in t["wafer_counts"][i].split(",")]})
    return out


def write_markdown(name, sources, rows, failures, out, whole=()):
    multi = len(sources) > 1
    w = lambda line="": print(line, file=out)  # noqa: E731
    w(f"# {name}: Wavel search against WaferLLM and Full-Chip")
    w()
    w("**Every throughput and ratio in this file is PREDICTED by the wavel-dse cost model; none is measured.**")
    w("The paper's figures quoted for comparison are the paper's own (measured on WSE-3 hardware unless marked).")
    w()
    w("## Provenance")
    w()
    w("| # | file | config file | params file | git hash | tool version | created (UTC, from the file) |")
    w("|---|---|---|---|---|---|---|")
    for s in sources:
        p = s.provenance
        w(f"| {s.index} | {md_escape(s.path)} | {md_escape(p['config_file'])} | {md_escape(p['params_file'])} | "
          f"{md_escape(p['git_hash'])} | {md_escape(p['tool_version'])} | {md_escape(p['created_utc'])} |")
    params = sorted({s.provenance["params_file"] for s in sources})
    w()
    w(f"Cost-model parameters: {', '.join(params)} (the results' `params_file`, relative to the config file).")
    if any(s.provenance["git_hash"].endswith("-dirty") for s in sources):
        w("A git hash ending in `-dirty` means the tool was built from a source tree with uncommitted changes.")
    w()
    w("## Throughput per setting (PREDICTED by the cost model)")
    w()
    head = "| " + ("file | " if multi else "") + "id | model | phase | requests | in | out | "
    head += ("Wavel search tok/s | WaferLLM tok/s | Full-Chip tok/s | Wavel / WaferLLM | Wavel / Full-Chip | "
             "best from | note |")
    w(head)
    w("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        reasons = [f"{label} n/a: {r[key + '_na_reason']}" for key, label in (("waferllm", "WaferLLM"), ("fullchip", "Full-Chip"))
                   if not finite(r[key]) and r[key + "_na_reason"]]
        note = "; ".join(x for x in [r["subset_label"], r["waferllm_subset_label"], r["fullchip_subset_label"],
                                     "MoE" if r["moe"] else ""] + reasons +
                         ["CHECK FAILED" if r["problems"] else ""] if x)
        cells = ([str(r["file_index"])] if multi else []) + [
            str(r["setting_id"]), md_escape(r["model"]), r["phase"], str(r["concurrent_requests"]),
            str(r["input_tokens"]), str(r["output_tokens"]), fmt_tps(r["wavel"]), fmt_tps(r["waferllm"]),
            fmt_tps(r["fullchip"]), fmt_ratio_interval(r, "waferllm"),
            fmt_ratio_interval(r, "fullchip"), md_escape(r["wavel_source"]), md_escape(note)]
        w("| " + " | ".join(cells) + " |")
    w()
    na_w = sum(1 for r in rows if not finite(r["waferllm"]))
    na_f = sum(1 for r in rows if not finite(r["fullchip"]))
    w(f"{len(rows)} settings. \"n/a\": the baseline was not placed (the note says why), "
      f"WaferLLM in {na_w} and Full-Chip in {na_f} of them; those rows are left out of the means below. "
      "[lo, hi]: 90 % interval of the ratio over draws of the fitted parameters' uncertainty (the same draws "
      "for every schedule of a setting).")
    subsets = sum(1 for r in rows if r["subset_label"])
    if subsets:
        w(f"{subsets} settings were costed on a subset of the model's layers and scaled to the full depth "
          "(labelled in the note column). A baseline whose regions cannot hold that subset runs the largest "
          "subset it can place, also scaled to the full depth, so every ratio compares whole-model throughput "
          "normalised per decoder layer (the note names such a baseline's own subset). Such a baseline's "
          "figure is an estimate on other layers than the search's: the check does not compare the two, and "
          "the means below leave those ratios out.")
    w("\"best from\": `search` when the search found the best schedule, `seed:<baseline>` when a baseline "
      "was itself the best point of the front (ratio 1).")
    w()
    if failures:
        w(f"**Check FAILED** (Wavel at least both baselines, the request-grouping invariant, a reason for "
          f"every n/a; relative tolerance {CHECK_RTOL:g}); {len(failures)} row(s):")
        w()
        for r in failures:
            w(f"- {md_escape(row_name(r, multi))}: {'; '.join(r['problems'])}")
    else:
        w(f"Check passed: the Wavel-search column is at least both baselines in every row, no schedule serves "
          f"R requests slower than R' requests for a divisor R' of R (the request-grouping invariant), and "
          f"every n/a has a reason (relative tolerance {CHECK_RTOL:g}; n/a baselines and baselines on a smaller "
          f"layer subset than the search's skipped).")
    w()
    w("## Mean speedup (PREDICTED by the cost model)")
    w()
    w("Ratios are Wavel tok/s over the baseline's for the same setting. The geometric mean is the one to quote "
      "for ratios (it is symmetric: a 2× gain and a 2× loss average to 1×); the arithmetic mean is given "
      "beside it for comparison with papers that use it. n: settings with the baseline placed and on the search's layers; left out: n/a, or on a smaller layer subset.")
    w()
    w("| models | kind | settings | vs WaferLLM: n (left out) | geometric mean | arithmetic mean | max | "
      "vs Full-Chip: n (left out) | geometric mean | arithmetic mean | max |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    summary = summary_rows(rows)
    for e in summary:
        w(f"| {md_escape(e['group'])} | {e['kind']} | {e['settings']} | {e['n_waferllm']} ({e['na_waferllm']}) | "
          f"{fmt_ratio(e['geo_waferllm'])} | {fmt_ratio(e['arith_waferllm'])} | {fmt_ratio(e['max_waferllm'])} | "
          f"{e['n_fullchip']} ({e['na_fullchip']}) | {fmt_ratio(e['geo_fullchip'])} | "
          f"{fmt_ratio(e['arith_fullchip'])} | {fmt_ratio(e['max_fullchip'])} |")
    w()
    w("## Beside the paper")
    w()
    by_group = {e["group"]: e for e in summary}
    dense = [r for r in rows if not r["moe"]]
    moe = [r for r in rows if r["moe"]]
    overall = by_group["overall"]

    def kind_entry(members, kind):
        if not members:
            return None
        if dense and moe:
            return by_group[f"all {kind} models"]
        return overall

    dense_e, moe_e = kind_entry(dense, "dense"), kind_entry(moe, "MoE")
    na = "n/a (no such settings in these results)"
    w("| claim | paper | this run (PREDICTED by the cost model) |")
    w("|---|---|---|")
    w(f"| mean throughput over WaferLLM, all settings | {PAPER_MEAN_VS_WAFERLLM} | "
      f"geometric {fmt_ratio(overall['geo_waferllm'])}, arithmetic {fmt_ratio(overall['arith_waferllm'])} "
      f"over {overall['n_waferllm']} settings ({overall['na_waferllm']} left out)"
      + (f"; dense models only: geometric {fmt_ratio(dense_e['geo_waferllm'])}, arithmetic "
         f"{fmt_ratio(dense_e['arith_waferllm'])} over {dense_e['n_waferllm']} ({dense_e['na_waferllm']} left out)"
         if dense and moe else "") + " |")
    if dense_e:
        w(f"| throughput over Full-Chip, dense models | {PAPER_MAX_VS_FULLCHIP_DENSE} | "
          f"max {fmt_ratio(dense_e['max_fullchip'])}; geometric mean {fmt_ratio(dense_e['geo_fullchip'])}, "
          f"arithmetic {fmt_ratio(dense_e['arith_fullchip'])} over {dense_e['n_fullchip']} settings "
          f"({dense_e['na_fullchip']} left out) |")
    else:
        w(f"| throughput over Full-Chip, dense models | {PAPER_MAX_VS_FULLCHIP_DENSE} | {na} |")
    if moe_e:
        w(f"| throughput over Full-Chip, MoE models | {PAPER_VS_FULLCHIP_MOE} | "
          f"geometric mean {fmt_ratio(moe_e['geo_fullchip'])}, arithmetic {fmt_ratio(moe_e['arith_fullchip'])}, "
          f"max {fmt_ratio(moe_e['max_fullchip'])} over {moe_e['n_fullchip']} settings "
          f"({moe_e['na_fullchip']} left out) |")
    else:
        w(f"| throughput over Full-Chip, MoE models | {PAPER_VS_FULLCHIP_MOE} | {na} |")
    w()
    w("The paper's settings, wafer (WSE-3) and measurement are not those of this sweep unless the config says "
      "so; the comparison is of orders of magnitude and trends, not a reproduction.")
    if not whole:
        return
    w()
    w("## Whole-model deployments over several wafers (PREDICTED by the cost model)")
    w()
    w("The tables above are the one-wafer rows (a model that does not fit runs there as a labelled layer subset, "
      "the paper's method). Here the same settings run whole, as pipelines over the config's `cluster.wafers`: "
      "the fewest wafers that place the whole model, and the deployment with the best tokens/s per wafer "
      "(each problem's choice as wavel-dse made it, /wafer_counts).")
    w()
    w("| " + ("file | " if multi else "") + "model | phase | requests | in | out | one wafer: Wavel tok/s | "
      "one wafer: Wavel / WaferLLM | fewest wafers | its layers per wafer | its tok/s | its Wavel / WaferLLM | "
      "best tok/s per wafer (wafers) | wafers tried |")
    w("|" + "---|" * (13 + (1 if multi else 0)))
    for e in whole:
        f, model, phase, requests, inp, outp = e["key"]
        one, fewest, best = e["one"], e["fewest"], e["best"]
        one_cells = [fmt_tps(one["wavel"]) + (f" ({one['subset_label']})" if one["subset_label"] else ""),
                     fmt_ratio(ratio(one["wavel"], one["waferllm"]))] if one else ["—", "—"]
        if fewest:
            fewest_cells = [str(fewest["wafers"]), fewest["stage_layers"] or f"all {fewest['model_layers']}",
                            fmt_tps(fewest["wavel"]), fmt_ratio(ratio(fewest["wavel"], fewest["waferllm"])),
                            f"{fmt_tps(best['wavel'] / best['wafers'])} ({best['wafers']})"]
        else:
            fewest_cells = ["none placed", "—", "—", "—", "—"]
        cells = ([md_escape(f)] if multi else []) + [
            md_escape(model), phase, str(requests), str(inp), str(outp)] + one_cells + fewest_cells + [
            ", ".join(str(x) for x in e["tried"])]
        w("| " + " | ".join(cells) + " |")


def main(argv):
    parser = UsageParser(prog="make_tables.py",
                         description="Comparison tables (markdown and CSV) of wavel-dse results files.")
    parser.add_argument("results", nargs="+", metavar="RESULTS.h5", help="results files written by wavel-dse")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing)")
    parser.add_argument("--name", default="results", help="file stem: writes NAME.md and NAME.csv (default results)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if in any row the Wavel throughput is below a placed baseline's")
    args = parser.parse_args(argv)
    prog = "make_tables.py"
    if not re.fullmatch(r"[A-Za-z0-9._-]+", args.name):
        parser.error(f"--name must be a plain file stem (letters, digits, '.', '_', '-'), got '{args.name}'")

    sources = []
    for index, path in enumerate(args.results):
        if not os.path.isfile(path):
            print(f"{prog}: error: no such file: {path}", file=sys.stderr)
            return EX_NOINPUT
        if not h5py.is_hdf5(path):
            print(f"{prog}: error: {path} is not an HDF5 file, so not a wavel results file", file=sys.stderr)
            return EX_DATAERR
        try:
            with h5py.File(path, "r") as file:
                sources.append(Source(index, path, file))
        except NotResults as error:
            print(f"{prog}: error: {path} is not a wavel results file: {error}", file=sys.stderr)
            return EX_DATAERR
        except (OSError, KeyError, ValueError) as error:
            print(f"{prog}: error: cannot read {path}: {error}", file=sys.stderr)
            return EX_DATAERR

    rows = [r for s in sources for r in sorted(s.rows, key=lambda r: r["setting_id"])]
    for r in rows:
        r["problems"] = check_row(r)
    check_grouping(rows)
    failures = [r for r in rows if r["problems"]]

    markdown, table = io.StringIO(), io.StringIO()
    # The paper's tables and means are over one wafer; pipelines get their own section.
    single = [r for r in rows if r["wafers"] == 1]
    write_markdown(args.name, sources, single, [r for r in failures], markdown, whole_model_rows(sources, rows))
    write_csv(rows, table)
    paths = [os.path.join(args.out, f"{args.name}.md"), os.path.join(args.out, f"{args.name}.csv")]
    try:
        os.makedirs(args.out, exist_ok=True)
        for path, text in zip(paths, (markdown.getvalue(), table.getvalue())):
            with open(path + ".partial", "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            os.replace(path + ".partial", path)
    except OSError as error:
        print(f"{prog}: error: cannot write to {args.out}: {error}", file=sys.stderr)
        return EX_CANTCREAT

    print(f"wrote {paths[0]} and {paths[1]}: {len(rows)} settings (throughputs PREDICTED by the cost model)")
    multi = len(sources) > 1
    if failures:
        print(f"{prog}: check failed in {len(failures)} row(s):",
              file=sys.stderr if args.check else sys.stdout)
        for r in failures:
            print(f"  {row_name(r, multi)}: {'; '.join(r['problems'])}", file=sys.stderr if args.check else sys.stdout)
        if args.check:
            return EX_CHECK
    else:
        print("check: the Wavel-search column is at least both baselines in every row, the request-grouping "
              "invariant holds and every n/a has a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
