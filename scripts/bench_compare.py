#!/usr/bin/env python3
"""Compares Google Benchmark binaries on a machine whose speed drifts: runs them in turn, ROUNDS
times, each on one core (taskset, when present) with one thread, and prints per benchmark and per
binary the max and median of its wavelet-hops/s (when it reports them) and the median CPU time.

    scripts/bench_compare.py FILTER ROUNDS OLD_BINARY NEW_BINARY [MORE ...]

Example (a bench built from an older commit against this build):
    scripts/bench_compare.py 'Shift64|Allreduce256|Decode' 8 /tmp/old/bench/wavel_bench_sim build/bench/wavel_bench_sim
"""
import json
import os
import shutil
import statistics
import subprocess
import sys


def main(argv):
    if len(argv) < 5:
        sys.stderr.write(__doc__)
        return 64
    pattern, rounds, binaries = argv[1], int(argv[2]), argv[3:]
    pin = ['taskset', '-c', str(os.cpu_count() - 1)] if shutil.which('taskset') else []
    env = dict(os.environ, OMP_NUM_THREADS='1', OMP_PROC_BIND='false')
    runs = [{} for _ in binaries]  # by position: the same binary may be given twice
    for _ in range(rounds):
        for i, b in enumerate(binaries):
            out = subprocess.run(pin + [b, f'--benchmark_filter={pattern}', '--benchmark_format=json',
                                        '--benchmark_min_time=0.3'],
                                 capture_output=True, text=True, env=env, check=True).stdout
            for bm in json.loads(out)['benchmarks']:
                runs[i].setdefault(bm['name'], []).append((bm.get('wavelet_hops_per_s', 0.0) / 1e6, bm['cpu_time'],
                                                           bm['time_unit']))
    for name in runs[0]:
        print(name)
        for i, b in enumerate(binaries):
            got = runs[i].get(name, [])
            if not got:
                continue
            hops = [g[0] for g in got]
            cpu = statistics.median(g[1] for g in got)
            print(f'  {b}: wavelet-hops/s max {max(hops):.1f} M, median {statistics.median(hops):.1f} M; '
                  f'CPU time median {cpu:.3f} {got[0][2]} ({len(got)} runs)')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
