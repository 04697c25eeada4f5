#!/usr/bin/env bash
# On a GPU machine: gate, mutate and evaluate the demo pool twice — once straight through, once
# killed halfway (kill -9 of the parent and its worker) and resumed — then compare the two kill
# matrices cell by cell. Logs and stores go to ${OUT:-/tmp/kbm-out}.
set -u
OUT=${OUT:-/tmp/kbm-out}
BUDGET=${BUDGET:-3600}
mkdir -p "$OUT"
begin=$(date +%s)
left() { local l=$(( BUDGET - ($(date +%s) - begin) )); echo $(( l > 1 ? l : 1 )); }
kbm() { timeout -k 20 -s INT "$(left)" python3 -m kbm_toolkit "$@"; }
export PYTHONUNBUFFERED=1
A="$OUT/demo-whole.db"
B=/tmp/demo-resumed.db
rm -f "$A"* "$B"*
kbm --store "$A" gate --level demo > "$OUT/demo-gate.txt" 2>&1 || echo "gate exit $?"
kbm --store "$A" mutate --level demo > "$OUT/demo-mutate.txt" 2>&1 || echo "mutate exit $?"
python3 - "$A" "$B" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1]); dst = sqlite3.connect(sys.argv[2]); src.backup(dst)
PY
start=$(date +%s)
kbm --store "$A" run --inputs gate --level demo > "$OUT/demo-run-whole.txt" 2>&1 || echo "run exit $?"
whole=$(( $(date +%s) - start ))
echo "uninterrupted run: ${whole}s"
last=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select max(id) from runs where kind = '"'evaluate'"'").fetchone()[0])' "$A")
python3 -m kbm_toolkit --store "$A" runs --run "$last" --json > "$OUT/demo-throughput.json"
setsid python3 -m kbm_toolkit --store "$B" run --inputs gate --level demo > "$OUT/demo-run-killed.txt" 2>&1 &
pid=$!
sleep $(( whole / 2 > 5 ? whole / 2 : 5 ))
kill -9 -- -"$pid" 2>/dev/null; wait "$pid" 2>/dev/null
echo "killed at $(python3 -c "import sqlite3;print(sqlite3.connect('$B').execute('select count(*) from cells').fetchone()[0])") cells"
kbm --store "$B" run --inputs gate --level demo > "$OUT/demo-run-resumed.txt" 2>&1 || echo "resume exit $?"
python3 bench/compare_cells.py "$A" "$B" | tee "$OUT/demo-compare.txt"
