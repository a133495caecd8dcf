#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (ASan+UBSan) in build-fuzz (scripts/sanitized_build.sh,
# which installs clang when it is missing) and runs each one for
# SECONDS (default 60) from its seed corpus; prints the executions per target and fails on a crash.
# results.h5 goes through the sandboxed reader that show uses, so libhdf5's own crashes on forged
# files are contained there and any crash left is a finding.
#
#   scripts/fuzz.sh [SECONDS]
#
# Environment: WAVEL_JOBS=N build jobs (default nproc); WAVEL_FUZZ_TARGETS="config meshir ..." a subset;
# WAVEL_FUZZ_DIR=DIR where corpora, logs and crash files go (default build-fuzz/run); WAVEL_FUZZ_RUNS=N
# also stops each target after N executions (not results_h5_reader, which runs in fork mode, N jobs
# at once with WAVEL_FUZZ_FORK=N, default 1).
#
# results_h5_reader is the results.h5 reader in-process, with coverage. libhdf5 1.10 crashes on some
# forged files, so it runs in fork mode and goes on after a crash; each crash is then sorted by its
# top frame (inside libhdf5 or not) and replayed through the sandboxed target, which must turn it into
# an error. Only a crash outside libhdf5, or one the sandbox does not contain, fails the run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
seconds=${1:-60}
targets=${WAVEL_FUZZ_TARGETS:-config set meshir hf_config reference kernels checkpoint lock results_h5 results_h5_reader}
run_dir=${WAVEL_FUZZ_DIR:-$root/build-fuzz/run}

build_targets=$targets
# The reader target's crashes are replayed through the sandboxed one.
case " $targets " in *" results_h5_reader "*) build_targets="$targets results_h5" ;; esac
# shellcheck disable=SC2046
bash "$root/scripts/sanitized_build.sh" $(for t in $build_targets; do printf 'fuzz_%s ' "$t"; done)

export ASAN_OPTIONS=detect_leaks=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMPI_MCA_plm=isolated OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_ess_singleton_isolated=1 HWLOC_COMPONENTS=-gl  # no name lookups at MPI start (src/cli/main.cpp)
mkdir -p "$run_dir"
status=0
printf '%-18s %12s %10s %s\n' target executions exec/s result
for t in $targets; do
  corpus="$run_dir/corpus/$t"; mkdir -p "$corpus" "$run_dir/crashes/$t"
  log="$run_dir/$t.log"
  seeds="$root/fuzz/corpus/$t"
  # -rss_limit_mb and -malloc_limit_mb: an input that needs more memory is a finding too.
  limits=(-rss_limit_mb=2048 -malloc_limit_mb=1024)
  if [ -n "${WAVEL_FUZZ_RUNS:-}" ]; then limits+=(-runs="$WAVEL_FUZZ_RUNS"); fi
  if [ "$t" = results_h5_reader ]; then
    seeds="$root/fuzz/corpus/results_h5"
    # -timeout=1: libhdf5's hangs are the sandbox's to stop (2 s of CPU there); here they cost time
    # (a hung job is killed and restarted). WAVEL_FUZZ_FORK=N runs N jobs at once in the one run.
    limits=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -fork="${WAVEL_FUZZ_FORK:-1}" -ignore_crashes=1 -ignore_ooms=1
            -ignore_timeouts=1 -timeout=1)
  fi
  asan=$ASAN_OPTIONS
  # results.h5 is read in a sandboxed child (src/io/sandboxed_read.cpp) whose address space is
  # limited; there a failed allocation returns NULL, as glibc's does in production.
  if [ "$t" = results_h5 ] || [ "$t" = results_h5_reader ]; then asan=$ASAN_OPTIONS:allocator_may_return_null=1; fi
  # MeshIR costs about 2 us per byte under ASan and coverage (a token, a field map, a string each):
  # 8 kB inputs (a header, regions and ~25 ops) run ~4x as many executions as 64 kB ones, and the
  # ways a large file could run away (every pair of regions overlapping) are unit-tested directly.
  max_len=65536
  if [ "$t" = meshir ]; then max_len=8192; fi
  rm -f "$run_dir/crashes/$t"/crash-* "$run_dir/crashes/$t"/oom-* "$run_dir/crashes/$t"/timeout-*
  (cd "$run_dir/crashes/$t" && ASAN_OPTIONS=$asan "$root/build-fuzz/fuzz/fuzz_$t" -max_total_time="$seconds" \
      -print_final_stats=1 -timeout=10 "${limits[@]}" -max_len=$max_len "$corpus" "$seeds") >"$log" 2>&1 || true
  found=0
  libhdf5=0
  not_again=0
  saved=()
  for crash in "$run_dir/crashes/$t"/crash-* "$run_dir/crashes/$t"/oom-* "$run_dir/crashes/$t"/timeout-*; do
    case $crash in *.log) ;; *) [ -e "$crash" ] && saved+=("$crash") ;; esac  # replay logs are not inputs
  done
  if [ "$t" = results_h5_reader ] && [ ${#saved[@]} -gt 0 ]; then
    # Contained if the sandboxed reader turns it into an error: one process replays them all, and
    # only if it dies are they replayed one by one to name the culprits.
    sandboxed() { ASAN_OPTIONS=$ASAN_OPTIONS:allocator_may_return_null=1 "$root/build-fuzz/fuzz/fuzz_results_h5" "$@"; }
    uncontained=()
    if ! sandboxed "${saved[@]}" >"$run_dir/crashes/$t/sandboxed-replay.log" 2>&1; then
      for crash in "${saved[@]}"; do
        sandboxed "$crash" >"$crash.sandboxed.log" 2>&1 || uncontained+=("$crash")
      done
    fi
    found=${#uncontained[@]}
    for crash in "${saved[@]}"; do
      case " ${uncontained[*]} " in *" $crash "*) continue ;; esac
      # libhdf5's if, of the frames in libhdf5 or in wavel, the top one is in libhdf5 (an OOM or a
      # timeout: contained is enough). Replayed with the fuzzing limits: libhdf5 sometimes hangs on
      # an input that crashed it while fuzzing. A crash that does not recur is counted apart.
      case $(basename "$crash") in
        crash-*)
          top=$(ASAN_OPTIONS=$asan "$root/build-fuzz/fuzz/fuzz_results_h5_reader" -timeout=5 -rss_limit_mb=2048 -malloc_limit_mb=1024 "$crash" 2>&1 |
                grep -E '^ +#[0-9]+ ' | grep -E 'libhdf5|wavel::' | head -1 || true)
          case $top in
            *libhdf5*) libhdf5=$((libhdf5 + 1)) ;;
            "") not_again=$((not_again + 1)) ;;
            *) found=$((found + 1)); echo "not in libhdf5: $crash" >>"$log" ;;
          esac ;;
        *) libhdf5=$((libhdf5 + 1)) ;;
      esac
    done
  else
    found=${#saved[@]}
  fi
  if [ $found -gt 0 ]; then result="$found CRASH(ES) (see $log and $run_dir/crashes/$t)"; status=1
  else result=ok; fi
  if [ $libhdf5 -gt 0 ]; then result="$result; $libhdf5 inside libhdf5, contained by the sandbox ($run_dir/crashes/$t)"; fi
  if [ $not_again -gt 0 ]; then result="$result; $not_again did not recur in replay (contained by the sandbox)"; fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1 || true)
  if [ "$t" = results_h5_reader ]; then
    # Fork mode prints no final stats: its progress lines count the executions of all jobs.
    execs=$(sed -n 's/^#\([0-9]*\): cov.*/\1/p' "$log" | tail -1 || true)
    rate=$(sed -n 's/^#[0-9]*: cov.* exec\/s \([0-9]*\).*/\1/p' "$log" | tail -1 || true)
  fi
  printf '%-18s %12s %10s %s\n' "$t" "${execs:-?}" "${rate:-?}" "$result"
done
exit $status
