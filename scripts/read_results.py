#!/usr/bin/python3
"""Prints a wavel-dse results.h5: provenance attributes on "/", then each table as aligned text or CSV.

usage: read_results.py results.h5 [--table NAME] [--columns A,B,...] [--wide] [--csv] [--full]

Tables print with 4 significant digits and as many columns as fit the terminal (--wide: all of them,
--columns: those named); --csv prints every value exactly.

Exit codes follow sysexits: 64 bad usage or unknown table, 65 not a wavel results file, 66 file missing.
"""

import argparse
import csv
import os
import shutil
import sys
import unicodedata

try:
    import h5py
    import numpy as np
    from wavel_results import EX_DATAERR, EX_NOINPUT, EX_USAGE, NotResults, UsageParser, list_tables, read_columns, to_text
except ImportError as error:  # Debian: apt-get install python3-h5py python3-numpy
    sys.exit(f"read_results.py: error: {error} (install python3-h5py and python3-numpy)")

MAX_LINE_CHARS = 120  # a truncated attribute line is cut here unless --full
MAX_CELL_CHARS = 40   # a longer text cell is cut here unless --wide


def to_python(value):
    """Plain Python scalars or lists from whatever h5py returned for an attribute or cell."""
    if isinstance(value, np.ndarray):
        return [to_python(v) for v in value.tolist()] if value.ndim else to_python(value[()])
    if isinstance(value, (bytes, np.bytes_, str)):
        return to_text(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def format_cell(value):
    if isinstance(value, float):
        return repr(value)  # shortest text that round-trips
    return str(value)


# The settings table's headline columns, printed first by default (the rest follow as space allows).
HEADLINE = {"settings": ["setting_id", "model", "phase", "concurrent_requests", "input_tokens", "output_tokens",
                         "waferllm_tokens_per_s", "wavel_tokens_per_s", "wavel_latency_s", "speedup_vs_waferllm",
                         "speedup_vs_fullchip"]}


def si(value):
    """4 significant digits with an SI prefix (the unit is in the header): 19.81k, 446µ, 1.2."""
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if value == 0:
        return "0"
    prefixes = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "µ"),
                (1e-9, "n")]
    for scale, prefix in prefixes:
        if abs(value) >= scale * 0.99995:
            return f"{value / scale:.4g}{prefix}"
    return f"{value:.4g}"


def readable_cell(value, wide):
    """A cell for people: 4 significant digits with an SI prefix, long texts cut (--wide keeps them)."""
    if isinstance(value, float):
        return si(value)
    text = str(value).replace("\n", "\\n")
    if not wide and len(text) > MAX_CELL_CHARS:
        text = text[:MAX_CELL_CHARS - 1] + "…"
    return text


def display_width(text):
    """Terminal columns: East Asian wide characters take two, combining marks none."""
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def pad(text, width, right):
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def shorten(text, full):
    """A config text or similar becomes its first line, with a note of what was left out."""
    if full:
        return text.rstrip("\n")
    lines = text.splitlines() or [""]
    first = lines[0]
    if len(first) > MAX_LINE_CHARS:
        first = first[:MAX_LINE_CHARS] + "…"
    if len(lines) > 1:
        first += f"  … ({len(lines) - 1} more lines; --full shows all)"
    return first


def print_attributes(file, full, out):
    if not file.attrs:
        return
    print("attributes:", file=out)
    names = sorted(file.attrs.keys())
    width = max(display_width(n) for n in names)
    for name in names:
        value = to_python(file.attrs[name])
        text = ", ".join(format_cell(v) for v in value) if isinstance(value, list) else format_cell(value)
        text = shorten(text, full).replace("\n", "\n" + " " * (width + 5))  # --full: indent continuations
        print(f"  {pad(name, width, False)} = {text}", file=out)
    print(file=out)


def print_table(name, columns, out, wide=False, width_budget=160):
    rows = len(columns[0][2]) if columns else 0
    if not wide and name in HEADLINE:  # the headline columns first
        first = [c for c in columns if c[0] in HEADLINE[name]]
        first.sort(key=lambda c: HEADLINE[name].index(c[0]))
        columns = first + [c for c in columns if c[0] not in HEADLINE[name]]
    print(f"table {name} ({rows} rows, {len(columns)} columns)", file=out)
    if not columns:
        print(file=out)
        return
    headers = [n for n, _, _ in columns]
    units = [f"[{u}]" if u else "" for _, u, _ in columns]  # a second header row
    cells = [[readable_cell(v, wide) for v in values] for _, _, values in columns]
    right = [all(isinstance(v, (int, float)) for v in values) and bool(values) for _, _, values in columns]
    widths = [max([display_width(h), display_width(u)] + [display_width(c) for c in col])
              for h, u, col in zip(headers, units, cells)]
    shown = len(columns)
    if not wide:  # as many columns as fit, in the table's order
        used, shown = 0, 0
        for w in widths:
            if shown and used + 2 + w > width_budget:
                break
            used += (2 if shown else 0) + w
            shown += 1
    keep = range(shown)
    print("  ".join(pad(headers[c], widths[c], right[c]) for c in keep).rstrip(), file=out)
    if any(units[c] for c in keep):
        print("  ".join(pad(units[c], widths[c], right[c]) for c in keep).rstrip(), file=out)
    print("  ".join("-" * widths[c] for c in keep), file=out)
    for row in range(rows):
        print("  ".join(pad(cells[c][row], widths[c], right[c]) for c in keep).rstrip(), file=out)
    if shown < len(columns):
        print(f"… {len(columns) - shown} more columns: --wide shows them all, --columns A,B,... some, --csv every value "
              "exactly", file=out)
    print(file=out)


def write_csv(columns, out):
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([n for n, _, _ in columns])
    rows = len(columns[0][2]) if columns else 0
    for row in range(rows):
        writer.writerow([format_cell(values[row]) for _, _, values in columns])


def main(argv):
    parser = UsageParser(description="Print a wavel-dse results.h5 file (provenance attributes and tables).")
    parser.add_argument("path", help="results file written by wavel-dse")
    parser.add_argument("--table", metavar="NAME", help="print only this table")
    parser.add_argument("--csv", action="store_true", help="print tables as CSV (no attributes)")
    parser.add_argument("--full", action="store_true", help="print long attribute texts in full")
    parser.add_argument("--wide", action="store_true", help="print every column and whole text cells")
    parser.add_argument("--columns", metavar="A,B,...", help="print only these columns of each table, in this order")
    args = parser.parse_args(argv)
    budget = max(80, shutil.get_terminal_size((160, 24)).columns)

    prog = os.path.basename(sys.argv[0]) or "read_results.py"
    if not os.path.isfile(args.path):
        print(f"{prog}: error: no such file: {args.path}", file=sys.stderr)
        return EX_NOINPUT
    if not h5py.is_hdf5(args.path):
        print(f"{prog}: error: {args.path} is not an HDF5 file, so not a wavel results file", file=sys.stderr)
        return EX_DATAERR
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")

    try:
        with h5py.File(args.path, "r") as file:
            tables = list_tables(file)
            if not tables and "format_version" not in file.attrs:
                raise NotResults("it has neither tables (groups with a `columns` attribute) nor a format_version")
            if args.table is not None:
                if args.table not in tables:
                    known = ", ".join(tables) or "none"
                    print(f"{prog}: error: no table '{args.table}' in {args.path} (tables: {known})",
                          file=sys.stderr)
                    return EX_USAGE
                tables = [args.table]
            contents = [(name, read_columns(file[name])) for name in tables]
            if args.columns:
                wanted = [c for c in args.columns.split(",") if c]
                for name, columns in contents:
                    missing = [c for c in wanted if c not in [n for n, _, _ in columns]]
                    if len(tables) == 1 and missing:
                        print(f"{prog}: error: table '{name}' has no column {', '.join(missing)}", file=sys.stderr)
                        return EX_USAGE
                contents = [(name, [next(col for col in columns if col[0] == c) for c in wanted
                                    if c in [n for n, _, _ in columns]]) for name, columns in contents]
            if args.csv:
                for index, (name, columns) in enumerate(contents):
                    if len(contents) > 1:  # several tables: label each block; use --table for one clean CSV
                        print(("\n" if index else "") + f"# table {name}")
                    write_csv(columns, sys.stdout)
            else:
                print_attributes(file, args.full, sys.stdout)
                for name, columns in contents:
                    print_table(name, columns, sys.stdout, args.wide or bool(args.columns), budget)
    except BrokenPipeError:
        raise
    except NotResults as error:
        print(f"{prog}: error: {args.path} is not a wavel results file: {error}", file=sys.stderr)
        return EX_DATAERR
    except (OSError, KeyError) as error:
        print(f"{prog}: error: cannot read {args.path}: {error}", file=sys.stderr)
        return EX_DATAERR
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # e.g. piped into head: stop quietly, like other filters
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
