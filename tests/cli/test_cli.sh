#!/usr/bin/env bash
# End-to-end checks of the real executable: exit codes and the first line of each message.
set -u
exe=$1; src=$2; tmp=$3
rm -rf "$tmp"; mkdir -p "$tmp"
fail=0
expect() {  # expect CODE PATTERN -- ARGS...
  local want=$1 pattern=$2; shift 3
  "$exe" "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" != "$want" ]; then echo "FAIL: wavel-dse $* exited $got, expected $want"; cat "$tmp/err"; fail=1; return; fi
  if [ -n "$pattern" ] && ! grep -qF -- "$pattern" "$tmp/out" "$tmp/err"; then
    echo "FAIL: wavel-dse $*: output lacks '$pattern'"; cat "$tmp/out" "$tmp/err"; fail=1; return; fi
  echo "ok: wavel-dse $* -> $got"
}
expect 0 "Usage: wavel-dse" -- --help
expect 0 "wavel-dse 0.1.0 (git " -- --version
expect 64 "unrecognised option" -- --bogus "$src/configs/quickstart.yaml"
# Did-you-mean for subcommands and options, and help per subcommand (issue 24, item 10).
expect 64 "unknown subcommand 'simulat'; did you mean 'simulate'?" -- simulat "$tmp/x.meshir"
expect 64 "unrecognised option '--dryrun'; did you mean '--dry-run'?" -- --dryrun "$src/configs/quickstart.yaml"
expect 64 "did you mean '--schedule'?" -- show "$tmp/x.h5" --schedul wavel
expect 0 "Options of 'show'" -- show --help
grep -q -- "--dry-run" "$tmp/out" && { echo "FAIL: show --help lists run's options"; fail=1; }
expect 0 "calibrate KERNEL.yaml..." -- calibrate --help
# Values and repeats the option table's kinds refuse, and options of another subcommand.
expect 64 "--setting: expected a whole number, got '1.5'" -- show "$tmp/x.h5" --setting 1.5
expect 64 "option --trace does not apply to 'show'" -- show "$tmp/x.h5" --trace "$tmp/t.json"
expect 64 "--output" -- --dry-run "$src/configs/tiny.yaml" -o "$tmp/a" -o "$tmp/b"
expect 64 "expected one CONFIG.yaml, got 2" -- --dry-run "$src/configs/tiny.yaml" "$src/configs/tiny.yaml"
# Messages name what the user gave (issue 24, item 15).
expect 66 "cannot read params file '$tmp/nope.yaml' (--params)" -- --dry-run "$src/configs/tiny.yaml" --params "$tmp/nope.yaml"
expect 64 "unknown wafer preset 'wse5' (--wafer); did you mean" -- check "$tmp/x.meshir" --wafer wse5
expect 66 "cannot read config file '$src/configs': it is a directory, not a file" -- --dry-run "$src/configs"
expect 66 "cannot read config file" -- "$tmp/none.yaml"
expect 78 "many_errors.yaml:9:23: error: workloads.models[1]: unknown model 'lama3-8b'" -- "$src/tests/data/configs/many_errors.yaml"
expect 0 "# 8 settings" -- --dry-run "$src/configs/quickstart.yaml" --output "$tmp/dry"
[ -e "$tmp/dry" ] && { echo "FAIL: --dry-run created $tmp/dry"; fail=1; }
# The dry run sizes each setting's search against the default options' and warns of long ones (issue 24, item 2).
grep -q "will take long" "$tmp/out" && { echo "FAIL: the default search is called long"; fail=1; }
grep -qE "^#  0 .* 1x$" "$tmp/out" || { echo "FAIL: dry run lacks the search size 1x of setting 0"; fail=1; }
expect 0 "warning: setting 0: its search is 3.3" -- --dry-run "$src/configs/quickstart.yaml" --set search.cut_step_pes=64
grep -q "# 8 settings will take long." "$tmp/out" || { echo "FAIL: cut_step_pes 64 not called long"; fail=1; }
# The README's "Run your own sweep", verbatim, from a directory outside the source tree (issue 40, item 2):
# the copied config's params_file (params/wse3.yaml) is found in the tool's data directory.
exe_abs=$(cd "$(dirname "$exe")" && pwd)/$(basename "$exe")
mkdir -p "$tmp/elsewhere" && cp "$src/configs/quickstart.yaml" "$tmp/elsewhere/my.yaml"
sed -i 's|dir: results/runs/quickstart|dir: results/runs/my|' "$tmp/elsewhere/my.yaml"
(cd "$tmp/elsewhere" && "$exe_abs" my.yaml >"$tmp/out" 2>"$tmp/err"); got=$?
if [ "$got" != 0 ]; then echo "FAIL: the README recipe (my.yaml in another directory) exited $got"; cat "$tmp/err"; fail=1
elif ! grep -q "parameters from params/wse3.yaml in the tool's data directory" "$tmp/out"; then
  echo "FAIL: the README recipe did not use the calibrated parameters"; tail -3 "$tmp/out"; fail=1
else echo "ok: the README recipe from another directory -> 0"; fi
# The narrow table (issue 40, items 4 and 6): a title naming the config, what was done to place each row.
head -1 "$tmp/out" | grep -q "^my.yaml: 8 settings on wse3, every throughput and latency PREDICTED" || { echo "FAIL: no title line"; fail=1; }
grep -qE "^ +5  llama2-13b +prefill +8 +2048 +0  subset 20/40 " "$tmp/out" || { echo "FAIL: setting 5 not 'subset 20/40'"; fail=1; }
grep -q "^placed as 'subset k/L'" "$tmp/out" || { echo "FAIL: no footer for subset rows"; fail=1; }
[ "$(head -10 "$tmp/out" | wc -L)" -le 140 ] || { echo "FAIL: the narrow table is wider than 140 characters"; fail=1; }
ln -sfn "$tmp/elsewhere/results/runs/my" "$tmp/run"
# stdout carries data only: notes (search statistics, where the results went) go to stderr.
data_only() {  # data_only WHAT: the last command's stdout has no note lines
  if grep -qE '^(search|results|written|warning):' "$tmp/out"; then echo "FAIL: $1 printed notes on stdout"; grep -E '^(search|results|written|warning):' "$tmp/out"; fail=1; fi
}
data_only run
grep -q "^results: results/runs/my/results.h5" "$tmp/err" || { echo "FAIL: run's results line is not on stderr"; fail=1; }
h5dump -a /config_hash_fnv1a64 "$tmp/run/results.h5" >/dev/null || { echo "FAIL: no provenance attribute"; fail=1; }
/usr/bin/python3 "$src/scripts/read_results.py" "$tmp/run/results.h5" >"$tmp/read.txt" || { echo "FAIL: read_results.py"; fail=1; }
grep -q "llama2-13b" "$tmp/read.txt" || { echo "FAIL: read_results.py printed no rows"; fail=1; }
# Readable by default (issue 40, item 6): lines fit a wide terminal, 4 digits with SI prefixes, --wide for all.
[ "$(COLUMNS=160 /usr/bin/python3 "$src/scripts/read_results.py" "$tmp/run/results.h5" --table settings | wc -L)" -le 160 ] \
  || { echo "FAIL: read_results.py prints lines wider than 160 characters"; fail=1; }
/usr/bin/python3 "$src/scripts/read_results.py" "$tmp/run/results.h5" --table settings | grep -qE "^ +2  llama3-8b .* [0-9.]+k +[0-9.]+µ" \
  || { echo "FAIL: read_results.py's settings rows lack SI-prefixed values"; fail=1; }
/usr/bin/python3 "$src/scripts/read_results.py" "$tmp/run/results.h5" --table settings --wide | grep -q "hypervolume" \
  || { echo "FAIL: read_results.py --wide lacks a column"; fail=1; }
# Inspection: show a stored schedule, check and simulate it, with a trace.
expect 0 "stored schedules of setting 2" -- show "$tmp/run/results.h5" --setting 2
expect 65 "no setting 99 in this file (its settings: 0..7)" -- show "$tmp/run/results.h5" --setting 99
expect 64 "--setting must be a setting id (0 or more), got -1" -- show "$tmp/run/results.h5" --setting -1
"$exe" show "$tmp/run/results.h5" --setting 2 --schedule wavel >"$tmp/wavel.meshir" || { echo "FAIL: show wavel"; fail=1; }
# Errors that name the right thing (issue 40, item 8).
expect 66 "cannot read MeshIR file '$tmp/nope.meshir'" -- check "$tmp/nope.meshir"
expect 65 "not a MeshIR text file: it is an HDF5 file" -- check "$tmp/run/results.h5"
[ "$(wc -l <"$tmp/err")" -le 3 ] || { echo "FAIL: check of an HDF5 file printed more than 3 lines"; fail=1; }
expect 64 "--schedule wavel needs --setting N: this file stores schedules of 8 settings" -- show "$tmp/run/results.h5" --schedule wavel
expect 0 "  setting 7: fullchip waferllm wavel" -- show "$tmp/run/results.h5"
expect 64 "is a sweep config (it has workloads:), not a reference file" -- validate "$src/configs/tiny.yaml"
expect 78 "this is a model file (a Hugging Face config.json), not a sweep config" -- "$src/tests/data/hf/llama3-8b/config.json"
expect 0 "Usage: wavel-dse [run] CONFIG.yaml" -- help
expect 0 "Options of 'show'" -- help show
expect 0 "verified OK" -- check "$tmp/wavel.meshir" --params "$src/configs/params/wse2-waferllm.yaml"
grep -q "PREDICTED (parameters: '$src/configs/params/wse2-waferllm.yaml' (--params))" "$tmp/out" || { echo "FAIL: --params not named"; fail=1; }
# A shown schedule carries the run's parameters; check and simulate use them and say so (item 3).
expect 0 "the schedule's own 'param' lines" -- check "$tmp/wavel.meshir"
/usr/bin/python3 - "$tmp/run/summary.csv" "$tmp/out" <<'PY' || { echo "FAIL: check of a shown schedule disagrees with its run"; fail=1; }
import csv, re, sys
row = [r for r in csv.DictReader(open(sys.argv[1])) if r["setting_id"] == "2"][0]
value, prefix = re.search(r"PREDICTED \(.*\): TPOT [^,]+, (\S+) (k?)tok/s", open(sys.argv[2]).read()).groups()
shown = float(value) * (1000 if prefix == "k" else 1)
assert abs(shown / float(row["wavel_tokens_per_s"]) - 1) < 5e-3, (shown, row["wavel_tokens_per_s"])  # 3-4 digits printed
PY
grep -v "^param \|^costed_on " "$tmp/wavel.meshir" >"$tmp/bare.meshir"
expect 0 "the calibrated ones for wse3" -- check "$tmp/bare.meshir"
# A what-if run's schedule is re-costed on the preset, and show says so.
cat >"$tmp/hw.yaml" <<'YAML'
wafer: {preset: wse3, sweep_mode: one_at_a_time, sweep: {simd_fp16_lanes: [16]}}
workloads: {models: [llama3-8b], phases: [decode], concurrent_requests: [1]}
search: {sram_boundaries: false, max_cut_depth: 2, cut_ratios: [0.5], strip_counts: [3]}
cost: {draws: 0}
YAML
"$exe" "$tmp/hw.yaml" --output "$tmp/hw" >/dev/null 2>&1 || { echo "FAIL: the what-if run"; fail=1; }
expect 0 "swept 2 hardware points (wafer.sweep); check and simulate re-cost this schedule on the wse3 preset" -- show "$tmp/hw/results.h5" --setting 1 --schedule wavel
sed 's/^param alpha_cycles_per_hop /param alpha_cycles_per_hp /' "$tmp/wavel.meshir" >"$tmp/typo.meshir"
expect 65 "unknown parameter 'alpha_cycles_per_hp'; did you mean 'alpha_cycles_per_hop'?" -- check "$tmp/typo.meshir"
expect 0 "model against simulator over ops, MAPE (mean |model - sim| / sim)" -- simulate "$tmp/wavel.meshir" --trace "$tmp/trace.json"
/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['traceEvents']" "$tmp/trace.json" \
  || { echo "FAIL: trace.json is not a Chrome trace"; fail=1; }
# Calibration against the simulator, then a run with the fitted parameters.
expect 0 "Spearman" -- calibrate "$src/configs/tiny.yaml" --output "$tmp/cal"
data_only "calibrate CONFIG.yaml"
[ -s "$tmp/cal/params.yaml" ] && [ -s "$tmp/cal/sim_pairs.csv" ] || { echo "FAIL: calibrate wrote no params.yaml or sim_pairs.csv"; fail=1; }
# One MAPE (issue 40, item 1): the printed held-out row, the CSV row and the mean over sim_pairs.csv agree.
/usr/bin/python3 - "$tmp/cal" "$tmp/out" <<'PY' || { echo "FAIL: calibrate CONFIG's MAPEs disagree"; fail=1; }
import csv, sys
d = sys.argv[1]
pairs = [r for r in csv.DictReader(open(d + "/sim_pairs.csv")) if r["held_out"] == "1"]
for col, key in (("model_cycles_before", "mape_pct_before_fit"), ("model_cycles_after", "mape_pct_after_fit")):
    mean = 100 * sum(abs(float(r[col]) - float(r["sim_cycles"])) / float(r["sim_cycles"]) for r in pairs) / len(pairs)
    row = [r for r in csv.DictReader(open(d + "/sim_agreement.csv")) if r["scope"] == "sampled ops, held out"][0]
    assert abs(float(row[key]) - mean) < 1e-9 * max(1, mean), (key, row[key], mean)
printed = [l for l in open(sys.argv[2]) if l.startswith("sampled ops, held out")][0].split()
assert abs(float(printed[5]) - float(row["mape_pct_before_fit"])) < 0.006, printed
PY
# calibrate searches what the run searches: on a 12 x 12 grid the tiny model runs as a 2-layer subset
# (its whole model fits nowhere, so a whole-model search had no schedule and calibrate exited 65).
cat >"$tmp/tiny12.yaml" <<EOF
wafer: {preset: wse3, grid_w_pes: 12, grid_h_pes: 12}
workloads: {models: [$src/configs/models/tiny-llama/config.json], phases: [decode], concurrent_requests: [2], input_tokens: [128], output_tokens: [32]}
cost: {params_file: $src/configs/params/wse3.yaml}
search: {max_cut_depth: 1}
EOF
expect 0 "Spearman" -- calibrate "$tmp/tiny12.yaml" --output "$tmp/cal12"
grep -q "^0,front.0,decode," "$tmp/cal12/sim_schedules.csv" || { echo "FAIL: calibrate did not search the layer subset the run places"; fail=1; }
expect 0 "results: $tmp/tuned/results.h5" -- "$src/configs/tiny.yaml" --params "$tmp/cal/params.yaml" --output "$tmp/tuned"
# A rerun into the same directory says what happens to the previous results; --wide prints every column.
expect 0 "holds a previous run's results (results.h5, summary.csv); they are set aside as *.stale" -- "$src/configs/tiny.yaml" --output "$tmp/tuned" --wide
grep -q "fullchip TPOT|TTFT" "$tmp/out" || { echo "FAIL: --wide lacks the full-chip columns"; fail=1; }
ls "$tmp/tuned"/*.stale >/dev/null 2>&1 && { echo "FAIL: *.stale left after a finished rerun"; fail=1; }
expect 0 "held-out test" -- calibrate "$src/tests/data/reference/waferllm_measured.yaml" --output "$tmp/calref"
data_only calibrate
expect 0 "leave-one-model-out" -- validate "$src/tests/data/reference/waferllm_measured.yaml" --params "$src/configs/params/wse2-waferllm.yaml" --output "$tmp/val"
data_only validate
grep -q "^written: $tmp/val/validation.csv" "$tmp/err" || { echo "FAIL: validate's written line is not on stderr"; fail=1; }
# Two-level calibration: kernel constants on the WSE-3 kernel measurements, then end to end from them.
k="$src/tests/data/reference/wse3_kernels"
expect 0 "LOPO MAPE" -- calibrate "$k/meshgemm.yaml" "$k/meshgemv.yaml" "$k/shift.yaml" --output "$tmp/calk"
data_only "calibrate KERNEL.yaml"
[ -s "$tmp/calk/params.yaml" ] && [ -s "$tmp/calk/kernel_validation.csv" ] || { echo "FAIL: kernel calibrate wrote no params.yaml or kernel_validation.csv"; fail=1; }
expect 0 "leave-one-model-out" -- calibrate "$src/tests/data/reference/waferllm_measured.yaml" --params "$tmp/calk/params.yaml" --output "$tmp/cal2"
# Both levels write the simulator's timing; the end-to-end level refits only WSE-2's k-iteration and routes.
grep -q "^sim_timing:" "$tmp/calk/params.yaml" && grep -q "^sim_timing:" "$tmp/cal2/params.yaml" || { echo "FAIL: no sim_timing section written"; fail=1; }
[ "$(grep -A9 '^sim_timing:' "$tmp/calk/params.yaml" | grep kernel_launch_cycles)" = "$(grep -A9 '^sim_timing:' "$tmp/cal2/params.yaml" | grep kernel_launch_cycles)" ] || { echo "FAIL: the end-to-end level moved the simulator's launch"; fail=1; }
grep -q "sim_tokens_per_s" "$tmp/cal2/validation.csv" || { echo "FAIL: validation.csv lacks the simulator's predictions"; fail=1; }
expect 64 "give one file per kernel" -- calibrate "$k/shift.yaml" "$k/shift.yaml" --output "$tmp/calx"
expect 64 "only when they are kernel measurement files" -- calibrate "$src/tests/data/reference/waferllm_measured.yaml" "$k/shift.yaml" --output "$tmp/calx"
expect 64 "--wafer applies to 'calibrate' only with kernel measurement files" -- calibrate "$src/tests/data/reference/waferllm_measured.yaml" --wafer wse2 --output "$tmp/calx"
expect 64 "unknown wafer preset 'wse9'" -- calibrate "$k/shift.yaml" --wafer wse9 --output "$tmp/calx"
# A sweep of which nothing can be placed says why under the table and exits 65, its results written (item 13).
expect 65 "no setting of the sweep could be placed on the wafer" -- "$src/configs/tiny.yaml" --set "workloads.models=[llama3-70b]" --output "$tmp/nofit"
grep -q "^no fit, setting 0, fullchip: weights + KV cache" "$tmp/out" || { echo "FAIL: no-fit reasons not under the table"; cat "$tmp/out"; fail=1; }
[ -s "$tmp/nofit/summary.csv" ] && [ -s "$tmp/nofit/results.h5" ] || { echo "FAIL: a sweep with nothing placed wrote no results"; fail=1; }
# A params file whose covariance is not positive semi-definite is refused where it is read (issue 24, item 5).
printf 'beta_cycles_per_stage: 10\nuncertainty:\n  names: [beta_cycles_per_stage, scalar_op_cycles]\n  ln_covariance:\n    - [1, 2]\n    - [2, 1]\n' >"$tmp/notpsd.yaml"
expect 78 "notpsd.yaml:5:5: error: uncertainty.ln_covariance: the covariance is not positive semi-definite" -- validate "$src/tests/data/reference/waferllm_measured.yaml" --params "$tmp/notpsd.yaml" --output "$tmp/calx"
expect 78 "notpsd.yaml:5:5: error: uncertainty.ln_covariance" -- --dry-run "$src/configs/tiny.yaml" --params "$tmp/notpsd.yaml"
expect 78 "notpsd.yaml:5:5: error: uncertainty.ln_covariance" -- check "$tmp/wavel.meshir" --params "$tmp/notpsd.yaml"
sed 's/^grid .*/grid 8 8/' "$tmp/wavel.meshir" >"$tmp/bad.meshir"
expect 65 "outside" -- check "$tmp/bad.meshir"
# A pipeline over two systems (issue 23): placed whole, its MeshIR checked and simulated from the file.
expect 0 "2+2 on 2" -- "$src/configs/tiny.yaml" --set "cluster.wafers=[2]" --output "$tmp/pipe"
"$exe" show "$tmp/pipe/results.h5" --setting 0 --schedule wavel >"$tmp/pipe.meshir" 2>/dev/null
grep -q "^wafers 2 link_bytes_per_s" "$tmp/pipe.meshir" || { echo "FAIL: the stored pipeline schedule has no wafers line"; fail=1; }
expect 0 "verified OK" -- check "$tmp/pipe.meshir"
expect 0 "link.0-1" -- simulate "$tmp/pipe.meshir"
sed 's/ wafer 1$/ wafer 7/' "$tmp/pipe.meshir" >"$tmp/badpipe.meshir"
expect 65 "lies on wafer 7" -- check "$tmp/badpipe.meshir"
expect 78 "cluster.wafers" -- --dry-run "$src/configs/tiny.yaml" --set "cluster.wafers=[0]"
# The wafer count searched (cluster.max_wafers): each problem's choice in the table, CSV and HDF5.
expect 0 "Wafer counts per problem" -- "$src/configs/tiny.yaml" --set "cluster.max_wafers=2" --set "cluster.target_ttft_s=1" --output "$tmp/wc"
head -1 "$tmp/wc/wafer_counts.csv" | grep -q "^model,phase,concurrent_requests,input_tokens,output_tokens,wafer_counts,target,fewest_wafers" \
  && [ "$(wc -l <"$tmp/wc/wafer_counts.csv")" = 3 ] && grep -q "^tiny-llama,prefill,2,128,0,\"1,2\",1," "$tmp/wc/wafer_counts.csv" \
  || { echo "FAIL: wafer_counts.csv"; cat "$tmp/wc/wafer_counts.csv"; fail=1; }
h5dump -d /wafer_counts/fewest_wafers "$tmp/wc/results.h5" >/dev/null 2>&1 || { echo "FAIL: no /wafer_counts in results.h5"; fail=1; }
expect 78 "cluster.max_wafers" -- --dry-run "$src/configs/tiny.yaml" --set "cluster.max_wafers=2" --set "cluster.wafers=[1]"
expect 78 "cannot be split over 5 wafers" -- "$src/configs/tiny.yaml" --set "cluster.wafers=[5]" --output "$tmp/pipe5"
exit $fail
