#!/usr/bin/python3
"""Prints a wavel-dse results.h5: provenance attributes on "/", then each table as aligned text or CSV.

usage: read_results.py results.h5 [--table NAME] [--csv] [--full]

Exit codes follow sysexits: 64 bad usage or unknown table, 65 not a wavel results file, 66 file missing.
"""

import argparse
import csv
import os
import sys
import unicodedata

try:
    import h5py
    import numpy as np
    from wavel_results import EX_DATAERR, EX_NOINPUT, EX_USAGE, NotResults, UsageParser, list_tables, read_columns, to_text
except ImportError as error:  # Debian: apt-get install python3-h5py python3-numpy
    sys.exit(f"read_results.py: error: {error} (install python3-h5py and python3-numpy)")

MAX_LINE_CHARS = 120  # a truncated attribute line is cut here unless --full


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


def print_table(name, columns, out):
    rows = len(columns[0][2]) if columns else 0
    print(f"table {name} ({rows} rows, {len(columns)} columns)", file=out)
    if not columns:
        print(file=out)
        return
    headers = [f"{n} [{u}]" if u else n for n, u, _ in columns]
    # Newlines inside strings would break the alignment, so they are shown escaped.
    cells = [[format_cell(v).replace("\n", "\\n") for v in values] for _, _, values in columns]
    right = [all(isinstance(v, (int, float)) for v in values) and bool(values) for _, _, values in columns]
    widths = [max([display_width(h)] + [display_width(c) for c in col]) for h, col in zip(headers, cells)]
    print("  ".join(pad(h, w, r) for h, w, r in zip(headers, widths, right)).rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in range(rows):
        print("  ".join(pad(col[row], w, r) for col, w, r in zip(cells, widths, right)).rstrip(), file=out)
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
    args = parser.parse_args(argv)

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
            if args.csv:
                for index, (name, columns) in enumerate(contents):
                    if len(contents) > 1:  # several tables: label each block; use --table for one clean CSV
                        print(("\n" if index else "") + f"# table {name}")
                    write_csv(columns, sys.stdout)
            else:
                print_attributes(file, args.full, sys.stdout)
                for name, columns in contents:
                    print_table(name, columns, sys.stdout)
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
