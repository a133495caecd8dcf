#!/usr/bin/env bash
# The documents agree with the code and with each other (issue 40, item 7): each figure in one place.
set -u
exe=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); src=$2; tmp=$3
rm -rf "$tmp"; mkdir -p "$tmp"
fail=0
check() {  # check DESCRIPTION COMMAND...: the command must succeed
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
# Nothing cites a document the repository does not hold.
check "README, docs/ and results/README cite no domain.md" \
  bash -c "! grep -n 'domain\.md' '$src/README.md' '$src'/docs/*.md '$src/results/README.md'"
# Every relative link of README, docs/ and results/README names a file the repository holds (issue 36, item 5).
check "relative links of README, docs/ and results/README resolve" python3 - "$src" <<'PY'
import os, re, sys, glob
src = sys.argv[1]; bad = 0
for f in [os.path.join(src, 'README.md'), os.path.join(src, 'results', 'README.md')] + sorted(glob.glob(os.path.join(src, 'docs', '*.md'))):
    text = re.sub(r'```.*?```', '', open(f, encoding='utf-8').read(), flags=re.S)
    for target in re.findall(r'\]\(([^)\s]+)\)', text):
        path = target.split('#')[0]
        if re.match(r'[a-z]+:', target) or not path: continue
        if not os.path.exists(os.path.join(os.path.dirname(f), path)):
            print(f"{os.path.relpath(f, src)}: no such file: {target}"); bad = 1
sys.exit(bad)
PY
# The README is a guide (issue 36, item 5): short, and it links every reference document.
check "README.md has at most 200 lines" test "$(wc -l <"$src/README.md")" -le 200
for doc in "$src"/docs/*.md; do
  check "README links docs/$(basename "$doc")" grep -qF "(docs/$(basename "$doc"))" "$src/README.md"
done
# paper.sh's header names the params file each paper config uses.
for cfg in "$src"/configs/paper/*.yaml; do
  p=$(sed -n 's/^ *params_file: *\([^ #]*\).*/\1/p' "$cfg" | head -1)
  check "paper.sh's header names $(basename "$cfg")'s params file ($p)" \
    bash -c "head -8 '$src/scripts/paper.sh' | grep -qF 'configs/params/$(basename "$p")'"
done
# The plotted settings are listed once: plot_results.py's index.md holds exactly paper.sh's ids.
for sweep in dense moe; do
  want=$(sed -n "s/^${sweep}_plots=(\(.*\))$/\1/p" "$src/scripts/paper.sh")
  got=$(sed -n 's/^| \([0-9][0-9]*\) |.*/\1/p' "$src/results/paper/plots/$sweep/index.md" | tr '\n' ' ' | sed 's/ $//')
  check "plots/$sweep/index.md lists paper.sh's ids ($want)" test "$want" = "$got"
done
check "results/README states no paper.sh run time of its own (paper/timing.txt has them)" \
  bash -c "! grep -nE '(about|took) [0-9.]+ min' '$src/results/README.md'"
check "results/paper/timing.txt has both sweeps" bash -c "grep -q '^dense: [0-9]* s' '$src/results/paper/timing.txt' && grep -q '^moe: [0-9]* s' '$src/results/paper/timing.txt'"
# validate's -o default is what --help says.
(cd "$tmp" && "$exe" validate "$src/tests/data/reference/waferllm_measured.yaml" >/dev/null 2>&1)
check "validate writes to results/runs/validate-<input stem> by default" test -s "$tmp/results/runs/validate-waferllm_measured/validation.csv"
check "validate --help names that default" bash -c "'$exe' validate --help | grep -qF 'results/runs/<subcommand>-<input stem>'"
exit $fail
