#!/usr/bin/env bash
# One device call's worth of GPU work (the lent H200 has no network: wheels travel in .whl/).
#   scripts/h200_batch.sh STEP...   steps: gpu-tests demo-pool bench gate-level1 gate-level2 gate-all
#                                           regate-failed demo-protocols (needs .kbm/demo.db gated and mutated)
#                                           hang-bench (recovery after a crash and after the watchdog's kill)
#                                           kb-pool (needs $KB_STORE, default .kbm/kb.db, gated and mutated; returns kb.db.gz;
#                                           GPUS=2 on an nvidia-h200-x2, WORKERS per GPU)
# Logs go to $OUT/logs.tgz, stores to $OUT; a gate step stops itself before the call's limit
# (BUDGET_S, default 560 s from the start) and resumes next time from .kbm/gate.db.
set -u
OUT=${OUT:-/tmp/kbm-out}
BUDGET_S=${BUDGET_S:-560}
begin=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
mkdir -p "$OUT/logs" .kbm
left() { local l=$(( BUDGET_S - ($(date +%s) - begin) )); echo $(( l > 1 ? l : 1 )); }
gate() {
    timeout -k 20 -s INT "$(left)" python3 -m kbm_toolkit --store .kbm/gate.db --kernelbench third_party/KernelBench \
        gate --resume --timeout 150 "$@" > "$OUT/logs/gate-$(date +%s).txt" 2>&1
    echo "gate $* exit $?; $(grep -c ': passed' "$OUT"/logs/gate-*.txt | awk -F: '{s+=$2} END {print s}') passed so far"
}
for step in "$@"; do
    case $step in
        gpu-tests) timeout "$(left)" python3 -m pytest -m gpu -q -p no:cacheprovider --durations=6 > "$OUT/logs/pytest-gpu.txt" 2>&1
                   tail -1 "$OUT/logs/pytest-gpu.txt" ;;
        demo-pool) OUT="$OUT/logs" BUDGET=$(left) bash scripts/h200_demo_pool.sh; mv "$OUT/logs/demo-whole.db" "$OUT/" ;;
        regate-failed) failed=$(python3 -c "import sqlite3; print(' '.join(r[0] for r in sqlite3.connect('.kbm/gate.db').execute(\"select problem from substrates where gate_status != 'passed'\")))")
                       timeout -k 20 -s INT "$(left)" python3 -m kbm_toolkit --store .kbm/gate.db --kernelbench third_party/KernelBench \
                           gate --timeout 150 $failed > "$OUT/logs/regate.txt" 2>&1; echo "regate $failed: exit $?" ;;
        bench) python3 bench/compile_throughput.py --mutants --level demo > "$OUT/logs/bench-mutants.txt" 2>&1
               python3 bench/compile_throughput.py --kernelbench third_party/KernelBench --repeat 1 \
                   > "$OUT/logs/bench-substrates.txt" 2>&1
               tail -n1 "$OUT/logs/bench-mutants.txt" "$OUT/logs/bench-substrates.txt" ;;
        demo-protocols)  # the shipped store's kill matrix: demo pool under every built-in protocol, and targets
            kbm_demo() { timeout -k 20 -s INT "$(left)" python3 -m kbm_toolkit --store .kbm/demo.db "$@"; }
            kbm_demo targets --level demo --emit .kbm/demo-targets > "$OUT/logs/demo-targets.txt" 2>&1
            echo "targets: exit $?"; cp .kbm/demo-targets/protocol.toml "$OUT/demo-targets.toml"
            for source in kernelbench kbv fuzz .kbm/demo-targets fuzz-shapes; do
                name=$(basename $source)
                kbm_demo run --inputs $source --level demo > "$OUT/logs/demo-run-$name.txt" 2>&1
                echo "run --inputs $source: exit $?"
                python3 bench/eval_throughput.py --store .kbm/demo.db --analyse-run last \
                    --json "$OUT/logs/throughput-$name.json" | tail -n1
            done
            python3 -c "import sqlite3; sqlite3.connect('.kbm/demo.db').execute('pragma wal_checkpoint(TRUNCATE)')"
            cp .kbm/demo.db "$OUT/" ;;
        hang-bench) timeout "$(left)" python3 bench/hang_recovery.py --json "$OUT/logs/hang.json" \
                        > "$OUT/logs/hang.txt" 2>&1; tail -n3 "$OUT/logs/hang.txt" ;;
        kb-pool)  # the KernelBench pool's kill matrix, as far as the call's budget reaches; resumable
            for source in kernelbench kbv fuzz; do
                [ "$(left)" -gt 30 ] || break
                timeout -k 20 -s INT "$(left)" python3 -m kbm_toolkit --store ${KB_STORE:-.kbm/kb.db} --kernelbench third_party/KernelBench \
                    run --gpus "${GPUS:-1}" --workers "${WORKERS:-1}" --inputs $source > "$OUT/logs/kb-run-$source.txt" 2>&1
                echo "kb run --inputs $source: exit $?; $(tail -n1 "$OUT/logs/kb-run-$source.txt")"
            done
            python3 -c "import sqlite3; sqlite3.connect('${KB_STORE:-.kbm/kb.db}').execute('pragma wal_checkpoint(TRUNCATE)')"
            gzip -c ${KB_STORE:-.kbm/kb.db} > "$OUT/kb.db.gz" ;;
        gate-level1) gate --level level1 ;;
        gate-level2) gate --level level2 ;;
        gate-all) gate ;;
    esac
done
python3 -c "import sqlite3; sqlite3.connect('.kbm/gate.db').execute('pragma wal_checkpoint(TRUNCATE)')" 2>/dev/null
cp .kbm/gate.db "$OUT/" 2>/dev/null
tar -czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
echo "batch done in $(( $(date +%s) - begin ))s"
