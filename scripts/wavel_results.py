"""Reading wavel-dse results.h5 files, shared by read_results.py, make_tables.py and plot_results.py:
exit codes, argument errors, strings and column-ordered tables (groups with a `columns` attribute)."""

import argparse
import sys

import h5py
import numpy as np

EX_USAGE, EX_DATAERR, EX_NOINPUT, EX_CANTCREAT = 64, 65, 66, 73


class NotResults(Exception):
    """The file is readable HDF5 but not laid out as write_results_h5 writes it; exit 65."""


class UsageParser(argparse.ArgumentParser):
    """argparse with the sysexits usage code (64) instead of 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(EX_USAGE)


def to_text(value):
    """h5py hands strings back as bytes (fixed-length ones NUL-padded), attributes sometimes as 0-d arrays."""
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", errors="replace").rstrip("\0")
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return to_text(value[()])
    return str(value)


def list_tables(file):
    return [name for name, obj in file.items() if isinstance(obj, h5py.Group) and "columns" in obj.attrs]


def read_columns(group, arrays=False):
    """[(name, units, values)] in the order of the group's `columns` attribute; strings decoded.
    Numeric columns are lists, or numpy arrays with `arrays`."""
    columns = []
    for name in (to_text(n) for n in np.atleast_1d(group.attrs["columns"])):
        if name not in group or not isinstance(group[name], h5py.Dataset):
            raise NotResults(f"table '{group.name}' lists column '{name}' but has no such dataset")
        dataset = group[name]
        if dataset.ndim != 1:
            raise NotResults(f"column '{dataset.name}' is not one-dimensional")
        units = to_text(dataset.attrs["units"]) if "units" in dataset.attrs else ""
        data = dataset[()]
        if data.dtype.kind in ("S", "O", "U"):
            values = [to_text(v) for v in data.tolist()]
        else:
            values = data if arrays else data.tolist()
        columns.append((name, units, values))
    if len({len(values) for _, _, values in columns}) > 1:
        raise NotResults(f"table '{group.name}' has columns of different lengths")
    return columns


class LazyTexts:
    """A text column read only where asked: a run stores every front point's MeshIR, over a megabyte
    each with split heads, and the scripts read a few."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __getitem__(self, i):
        return to_text(self.dataset[i])

    def take(self, rows):
        """The texts of `rows` (ascending), in one read."""
        return [to_text(v) for v in self.dataset[list(rows)]] if rows else []


def read_schedules(file, required=True):
    """The /schedules table, its MeshIR column read lazily (LazyTexts); None when it is absent and
    not `required`."""
    if "schedules" not in file or "columns" not in file["schedules"].attrs:
        if required:
            raise NotResults("it has no /schedules table")
        return None
    group = file["schedules"]
    return {"setting_id": group["setting_id"][()].tolist(),
            "schedule": [to_text(v) for v in group["schedule"][()].tolist()],
            "meshir": LazyTexts(group["meshir"])}


def read_table(file, name, required=True, arrays=False):
    """{column: values} of table `name`; None when it is absent and not `required`."""
    if name not in file or "columns" not in file[name].attrs:
        if required:
            raise NotResults(f"it has no /{name} table")
        return None
    return {column: values for column, _, values in read_columns(file[name], arrays)}
