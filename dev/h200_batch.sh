#!/usr/bin/env bash
# One device call's worth of GPU work (the lent H200 has no network: wheels travel in .whl/).
#   dev/h200_batch.sh STEP...   steps: gpu-tests demo-pool bench gate-level1 gate-level2 gate-level3 gate-all
#                                           refcheck-level3 (level 3's references against fp64, into .kbm/gate.db)
#                                           regate-failed demo-protocols (needs .kbm/demo.db gated and mutated)
#                                           hang-bench (recovery after a crash and after the watchdog's kill)
#                                           crash-grid (a crash's launch-to-error time with IDLE idle contexts
#                                           beside it, default 0,2,6, and HOLD_GB held in it, default 0,20)
#                                           kb-pool (the live store $KB_STORE, first copied from $KB_SEED (default
#                                           .kbm/kb-seed.db, or its .gz, gated and mutated); SAMPLE share, default 0.1,
#                                           or several in turn ("0.5 0.6");
#                                           GPUS=2 on an nvidia-h200-x2, WORKERS per GPU; FIRST_KILL=1 runs
#                                           with --first-kill)
#                                           kb-targets (ceilings and targeted inputs, run on the official check's
#                                           witnessed survivors: the knowledge ladder)
#                                           kb-deep (issue 29's deep witness search on the DEEP_SAMPLE share: fuzz-shapes
#                                           on its mutants, then the targeted inputs on its official survivors;
#                                           resumable)
#                                           kb-refcheck (KernelBench references against fp64)
#                                           kb-redo (cells measured after a restored write, again; then the
#                                           first-kill gaps that opens; KB_SEED the shipped store, unpacked)
#                                           kb-mutate (the pool's compile step timed on this host: `kbm mutate`
#                                           of both levels into a scratch store holding .kbm/gate.db's verdicts)
#                                           workers-ab (1 against $WORKERS workers, one GPU each; merged into $KB_STORE)
#                                           demo-fill (audit filling missing cells, and refcheck, on the demo pool)
#                                           verify (kbm verify's GPU tests; bench/verify_agreement.py against the
#                                           shipped store; where .kbm/suite-kbv is carried (`kbm suite --format
#                                           kbv` wrote it), KBV's eval on that suite: bench/conformance.py --suite)
#                                           verify-bench (bench/verify_throughput.py: kbm verify against
#                                           KernelBench's own eval loop, seconds per submission)
#                                           eval-bench (bench/eval_throughput.py: .kbm/baseline's evaluator against
#                                           this checkout's, SAMPLE of the slice's mutants)
#                                           compare-floor (bench/compare_floor.py: the one-pass comparison alone
#                                           against reading both tensors once)
#                                           plan-bench (bench/plan_latency.py on this host's cores: a run's first
#                                           plans, problems compiled whole against in parts; no GPU used)
#                                           shards (the demo pool as one run and as two shards merged; their cells compared)
#                                           l3-pool (issue 28's pool, resumable from a carried .kbm/l3-live.db.xz)
#                                           l3-targets (kbm targets on level 3, run on kernelbench's survivors there)
#                                           l3-problem (one reworked network, L3_PROBLEM, mutated on the CPU into the
#                                           carried store: its gate, its share of the pool, its targets)
#                                           l3-unplaced (the LSTMs' mutants at every launch, from a carried
#                                           .kbm/l3-unplaced.db.xz, against the placed ones' survival)
#                                           kb-stress (issue 29: kernelbench-stress's stressed trials on the
#                                           official check's survivors of DEEP_SAMPLE, resumable like kb-deep)
#                                           kb-kbv (issue 29: KernelBench-Verified's published hidden tests on the
#                                           KBV_SAMPLE shares in turn, --first-kill, resumable like kb-deep)
#                                           kb-close (issue 29: each --first-kill run of the pool again, so every
#                                           audit's witnesses are exact at every installed tolerance; resumable)
#                                           list-shapes (the inputs a list-valued size broke: gate, probe and
#                                           targeted inputs again on the kb and level-3 stores)
#                                           redzones (issue 29: the equivalence candidates of the store's share
#                                           again on the targeted inputs, KBM_REDZONES=1; dev/redzones.py)
# Logs go to $OUT/logs.tgz, stores to $OUT (the kb steps' store as kb.db.xz); a gate step stops itself before the call's limit
# (BUDGET_S, default 560 s from the start) and resumes next time from .kbm/gate.db.
set -u
OUT=${OUT:-/tmp/kbm-out}
BUDGET_S=${BUDGET_S:-560}
begin=$(date +%s)
KB_STORE=${KB_STORE:-.kbm/kb-live.db}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
mkdir -p "$OUT/logs" .kbm
last_run() {  # the id of a store's latest evaluate run, for `kbm runs --run N`
    python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select max(id) from runs where kind = '"'evaluate'"'").fetchone()[0])' "$1"
}
ending() {  # a log's last two lines with text: a run's summary, or where it stopped (a blank line precedes that)
    grep -v '^[[:space:]]*$' "$1" | tail -n2 | tr '\n' ' '
}
left() { local l=$(( BUDGET_S - ($(date +%s) - begin) )); echo $(( l > 1 ? l : 1 )); }
stop_at() {  # run a command for at most $1 s: SIGINT, and SIGKILL 20 s later (timeout -k); at 15 s, SIGUSR1,
            # on which kbm prints every thread's stack: a stop that overruns its grace says where it hung
    local limit=$(( $1 > 1 ? $1 : 1 )) shell=$BASHPID; shift  # `left` minus a margin can fall below 1: timeout
    # then read "-25" as an option and ran nothing (list-shapes' level-3 targets, 2026-12-05)
    ( sleep $(( limit + 15 )); for t in $(pgrep -P "$shell" -x timeout); do pkill -USR1 -P "$t"; done ) & local watch=$!
    timeout -k 20 -s INT "$limit" "$@"; local rc=$?
    kill "$watch" 2>/dev/null
    return $rc
}
kb_store() {  # a fresh machine starts from the seed; carry it packed (KB_SEED.xz or .gz) once it outgrows the call's 64 MiB
    local seed=${KB_SEED:-.kbm/kb-seed.db}
    [ -f "$KB_STORE" ] && return
    if [ -f "$seed.xz" ]; then xz -dc "$seed.xz" > "$KB_STORE"
    elif [ -f "$seed.gz" ]; then gunzip -c "$seed.gz" > "$KB_STORE"
    elif [ -f "$seed" ]; then cp "$seed" "$KB_STORE"
    else shipped kernelbench "$KB_STORE"; fi  # no seed carried: the shipped pool
}
first_kill_runs() {  # each argument a `kbm run` of the kb store (global options first), with --first-kill, in
                    # turn while the budget lasts; stops at the first that does not finish (resumable)
    local part log rc
    for part in "$@"; do
        [ "$(left)" -gt 90 ] || return 0
        log="$OUT/logs/kb-$(echo "$part" | tr -cs 'a-z0-9.' '-').txt"
        # shellcheck disable=SC2086  # each part is its own words
        stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store "$KB_STORE" --kernelbench third_party/KernelBench \
            $part --first-kill --workers "${WORKERS:-2}" > "$log" 2>&1
        rc=$?
        echo "${part##*--inputs }: exit $rc; $(ending "$log")"
        [ $rc -eq 0 ] || return $rc
    done
}
shipped() {  # the shipped store $1 as kbm unpacks it (its supplements merged in), copied to $2
    cp "$(python3 -c 'import sys; from kbm_toolkit.store import shipped_store_path as p; print(p(sys.argv[1]))' "$1")" "$2"
}
gate() {
    stop_at "$(left)" python3 -m kbm_toolkit --store .kbm/gate.db --kernelbench third_party/KernelBench \
        gate --resume --timeout 150 "$@" > "$OUT/logs/gate-$(date +%s).txt" 2>&1
    echo "gate $* exit $?; $(cat "$OUT"/logs/gate-*.txt | grep -c ': passed') passed so far"  # grep -c of one file names none
}
l3_store() {  # the level-3 store: the carried live one, else the shipped one, else the gate's
    [ -f /tmp/l3-live.db ] && return
    if [ -f .kbm/l3-live.db.xz ]; then xz -dc .kbm/l3-live.db.xz > /tmp/l3-live.db
    elif [ -f kbm_toolkit/data/kernelbench-level3.db.xz ]; then shipped kernelbench-level3 /tmp/l3-live.db
    else cp .kbm/gate.db /tmp/l3-live.db; fi
}
KB3=(python3 -m kbm_toolkit --store /tmp/l3-live.db --kernelbench third_party/KernelBench
     --kbv third_party/kernel_bench_verified)  # an array, not a function: `timeout` (stop_at) runs only programs
l3_pack() {  # the level-3 store back, as l3-live.db.xz
    python3 -c "import sqlite3; sqlite3.connect('/tmp/l3-live.db').execute('pragma wal_checkpoint(TRUNCATE)')"
    xz -T0 -6 -c /tmp/l3-live.db > "$OUT/l3-live.db.xz"
}
for step in "$@"; do
    case $step in
        gpu-tests) timeout "$(left)" python3 -m pytest -m gpu -q -p no:cacheprovider --durations=6 > "$OUT/logs/pytest-gpu.txt" 2>&1
                   tail -1 "$OUT/logs/pytest-gpu.txt" ;;
        demo-pool) OUT="$OUT/logs" BUDGET=$(left) bash dev/h200_demo_pool.sh; mv "$OUT/logs/demo-whole.db" "$OUT/" ;;
        regate-failed) failed=$(python3 -c "import sqlite3; print(' '.join(r[0] for r in sqlite3.connect('.kbm/gate.db').execute(\"select problem from substrates where gate_status != 'passed'\")))")
                       stop_at "$(left)" python3 -m kbm_toolkit --store .kbm/gate.db --kernelbench third_party/KernelBench \
                           gate --timeout 150 $failed > "$OUT/logs/regate.txt" 2>&1; echo "regate $failed: exit $?" ;;
        bench) python3 bench/compile_throughput.py --mutants --level demo > "$OUT/logs/bench-mutants.txt" 2>&1
               python3 bench/compile_throughput.py --kernelbench third_party/KernelBench --repeat 1 \
                   > "$OUT/logs/bench-substrates.txt" 2>&1
               tail -n1 "$OUT/logs/bench-mutants.txt" "$OUT/logs/bench-substrates.txt" ;;
        demo-protocols)  # the shipped store's kill matrix: demo pool under every built-in protocol, and targets
            kbm_demo() { stop_at "$(left)" python3 -m kbm_toolkit --store .kbm/demo.db "$@"; }
            kbm_demo targets --level demo --emit .kbm/demo-targets > "$OUT/logs/demo-targets.txt" 2>&1
            echo "targets: exit $?"; cp .kbm/demo-targets/protocol.toml "$OUT/demo-targets.toml"
            for source in kernelbench kbv fuzz .kbm/demo-targets fuzz-shapes; do
                name=$(basename $source)
                kbm_demo run --inputs $source --level demo > "$OUT/logs/demo-run-$name.txt" 2>&1
                echo "run --inputs $source: exit $?"
                python3 -m kbm_toolkit --store .kbm/demo.db runs --run "$(last_run .kbm/demo.db)" --json \
                    > "$OUT/logs/throughput-$name.json"
            done
            python3 -c "import sqlite3; sqlite3.connect('.kbm/demo.db').execute('pragma wal_checkpoint(TRUNCATE)')"
            cp .kbm/demo.db "$OUT/" ;;
        hang-bench) timeout "$(left)" python3 bench/hang_recovery.py --json "$OUT/logs/hang.json" \
                        > "$OUT/logs/hang.txt" 2>&1; tail -n3 "$OUT/logs/hang.txt" ;;
        crash-grid) timeout "$(left)" python3 bench/hang_recovery.py --idle "${IDLE:-0,2,6}" --hold-gb "${HOLD_GB:-0,20}" \
                        --busy "${BUSY:-0}" --busy-ms "${BUSY_MS:-5}" --crash "${CRASH:-crash}" --json "$OUT/logs/crash-grid.json" > "$OUT/logs/crash-grid.txt" 2>&1
                    grep -v '^{' "$OUT/logs/crash-grid.txt" | tail -n 20 ;;
        kb-pool)  # the KernelBench pool's kill matrix over a SAMPLE of its mutants, as far as the budget reaches;
                  # resumable. The live store stays on a warm machine between calls; a fresh one starts from the seed.
            # SAMPLE may name several shares ("0.5 0.6"): each runs in turn while the budget lasts,
            # and the next starts only once one has finished every problem
            kb_store
            for share in ${SAMPLE:-0.1}; do
                [ "$(left)" -gt 90 ] || break
                stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store "$KB_STORE" \
                    --kernelbench third_party/KernelBench run --gpus "${GPUS:-1}" --workers "${WORKERS:-1}" \
                    --inputs kernelbench,kbv,fuzz --sample "$share" ${FIRST_KILL:+--first-kill} \
                    > "$OUT/logs/kb-run-$share.txt" 2>&1
                rc=$?
                echo "kb run --sample $share: exit $rc; $(ending "$OUT/logs/kb-run-$share.txt")"
                python3 -m kbm_toolkit --store "$KB_STORE" runs --run "$(last_run "$KB_STORE")"
                [ $rc -eq 0 ] || break
            done ;;
        kb-targets)  # issue 6 on the KernelBench pool: ceilings and targeted inputs, run on what the official check misses
            kb_store
            # one protocol for every problem with a substrate, so `kbm audit --adapter .kbm/kb-targets` sees both levels
            stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store "$KB_STORE" \
                --kernelbench third_party/KernelBench targets --emit .kbm/kb-targets > "$OUT/logs/kb-targets.txt" 2>&1
            echo "targets: exit $?; $(tail -n1 "$OUT/logs/kb-targets.txt")"
            cp .kbm/kb-targets/protocol.toml "$OUT/kb-targets.toml" 2>/dev/null
            stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store "$KB_STORE" \
                --kernelbench third_party/KernelBench run --gpus "${GPUS:-1}" --workers "${WORKERS:-1}" \
                --inputs .kbm/kb-targets --survivors-of kernelbench --witnessed --sample "${SAMPLE:-0.1}" \
                > "$OUT/logs/kb-targets-run.txt" 2>&1
            echo "targets run: exit $?; $(tail -n1 "$OUT/logs/kb-targets-run.txt")" ;;
        kb-deep)  # issue 29 part 2, the deep witness search, resumable from the carried store (KB_SEED, e.g. the
                  # shipped one unpacked): fuzz-shapes on every mutant of the DEEP_SAMPLE share (default 0.1: the
                  # share kb-targets ran on; --first-kill: audits stay exact), then `kbm targets`' inputs on every
                  # mutant of it kernelbench misses, witnessed or not
                  # SHAPES_S caps the fuzz-shapes part's seconds (0: skip it), so the targeted part gets its turn
            kb_store
            shapes_s=$(( $(left) - 25 )); [ -n "${SHAPES_S:-}" ] && [ "$SHAPES_S" -lt "$shapes_s" ] && shapes_s=$SHAPES_S
            [ "$shapes_s" -gt 0 ] && { stop_at "$shapes_s" python3 -m kbm_toolkit --store "$KB_STORE" --kernelbench third_party/KernelBench \
                run --inputs fuzz-shapes --first-kill --sample "${DEEP_SAMPLE:-0.1}" --workers "${SHAPES_WORKERS:-1}" \
                > "$OUT/logs/kb-deep-shapes.txt" 2>&1
            echo "fuzz-shapes: exit $?; $(ending "$OUT/logs/kb-deep-shapes.txt")"; }
            [ "$(left)" -gt 90 ] && { python3 -m kbm_toolkit --store "$KB_STORE" --kernelbench third_party/KernelBench \
                targets --emit .kbm/kb-targets > "$OUT/logs/kb-deep-targets.txt" 2>&1
                stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store "$KB_STORE" --kernelbench third_party/KernelBench \
                    run --inputs .kbm/kb-targets --survivors-of kernelbench --first-kill --sample "${DEEP_SAMPLE:-0.1}" \
                    --workers "${WORKERS:-2}" \
                    > "$OUT/logs/kb-deep-run.txt" 2>&1
                echo "targets on kernelbench's survivors: exit $?; $(ending "$OUT/logs/kb-deep-run.txt")"; } ;;
        kb-mutate)  # as `kbm mutate` builds the pool, on this host's cores; the kill matrix is timed by kb-pool
            cp .kbm/gate.db /tmp/mutate-timed.db
            for level in level1 level2; do
                began=$(date +%s)
                stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store /tmp/mutate-timed.db \
                    --kernelbench third_party/KernelBench mutate --level $level > "$OUT/logs/kb-mutate-$level.txt" 2>&1
                echo "mutate $level: exit $? in $(( $(date +%s) - began )) s; $(tail -n1 "$OUT/logs/kb-mutate-$level.txt")"
            done ;;
        kb-redo)  # the live store's cells measured after a restored write, measured again (resumable), then the
                  # first-kill gaps that opens filled as the pool ran (kernelbench, kbv, fuzz, each until it detects)
            kb_store
            stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store "$KB_STORE" --kernelbench third_party/KernelBench \
                run --redo-overwritten --workers "${WORKERS:-1}" > "$OUT/logs/kb-redo.txt" 2>&1
            echo "redo: exit $?; $(ending "$OUT/logs/kb-redo.txt")"
            stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store "$KB_STORE" --kernelbench third_party/KernelBench \
                run --inputs kernelbench,kbv,fuzz --first-kill --workers "${WORKERS:-1}" > "$OUT/logs/kb-fill.txt" 2>&1
            echo "fill: exit $?; $(ending "$OUT/logs/kb-fill.txt")"
            xz -T0 -6 -c "$KB_STORE" > "$OUT/kb.db.xz" ;;
        kb-refcheck)  # the KernelBench references against fp64 on the official inputs (kbm audit leaves out failures)
            kb_store
            for level in level1 level2; do
                stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store "$KB_STORE" \
                    --kernelbench third_party/KernelBench refcheck -a kernelbench --level $level \
                    > "$OUT/logs/kb-refcheck-$level.txt" 2>&1
                echo "refcheck $level: exit $?; $(tail -n1 "$OUT/logs/kb-refcheck-$level.txt")"
            done ;;
        workers-ab)  # the same sampled problems with 1 and with $WORKERS workers, one GPU each, side by side
            for w in 1 "${WORKERS:-3}"; do
                cp "${KB_SEED:-.kbm/kb-seed.db}" "/tmp/ab-$w.db"
                CUDA_VISIBLE_DEVICES=$(( w == 1 ? 0 : 1 )) stop_at "${AB_S:-100}" python3 -m kbm_toolkit \
                    --store "/tmp/ab-$w.db" --kernelbench third_party/KernelBench run --workers "$w" \
                    --inputs kernelbench,kbv,fuzz --sample "${SAMPLE:-0.1}" > "$OUT/logs/ab-$w.txt" 2>&1 &
            done
            wait
            for w in 1 "${WORKERS:-3}"; do
                echo "workers $w: $(python3 -c "import sqlite3; db=sqlite3.connect('/tmp/ab-$w.db'); print(db.execute('select count(*), sum(outcome in (\"crash\", \"timeout\")) from cells where run = (select max(id) from runs)').fetchone())") cells, crashes in ${AB_S:-100} s"
                kb_store
                python3 -m kbm_toolkit --store "$KB_STORE" merge "/tmp/ab-$w.db" | tail -n1
            done ;;
        demo-fill)  # issue 5 on the GPU: audit fills the cells a protocol lacks; refcheck's fp32-vs-fp64 on the H200
            cp .kbm/demo.db /tmp/fill.db
            python3 - <<'PY'
import sqlite3
db = sqlite3.connect("/tmp/fill.db")
# only inputs fuzz judges valid at its 1e-2: cells on an input it rejects are never missing
gone = db.execute("delete from cells where input in (select i.id from inputs i join input_checks k on k.input = i.id "
                  "where i.label like 'log-uniform fuzz%' and i.problem = 'demo/1_LeakyReLU' and k.valid = 1 "
                  "and k.margin <= 1e-2)").rowcount
db.commit()
print(f"removed {gone} fuzz cells of demo/1_LeakyReLU on valid inputs")
PY
            timeout -k 20 "$(left)" python3 -m kbm_toolkit --store /tmp/fill.db audit -a fuzz > "$OUT/logs/fill-audit.txt" 2>&1
            echo "audit -a fuzz: exit $?; $(python3 -c "import sqlite3; print(sqlite3.connect('/tmp/fill.db').execute(\"select count(*) from cells c join inputs i on i.id = c.input where i.label like 'log-uniform fuzz%' and i.problem = 'demo/1_LeakyReLU'\").fetchone()[0])") fuzz cells of demo/1_LeakyReLU after"
            head -n3 "$OUT/logs/fill-audit.txt"
            for a in kernelbench kbv; do
                timeout -k 20 "$(left)" python3 -m kbm_toolkit --store /tmp/fill.db refcheck -a $a --level demo \
                    > "$OUT/logs/refcheck-demo-$a.txt" 2>&1
                echo "refcheck -a $a: exit $?; $(tail -n1 "$OUT/logs/refcheck-demo-$a.txt")"
            done
            cp /tmp/fill.db "$OUT/demo-filled.db" ;;
        verify)
            timeout "$(left)" python3 -m pytest -m gpu tests/test_verify.py -q -p no:cacheprovider \
                > "$OUT/logs/pytest-verify.txt" 2>&1
            echo "pytest -m gpu tests/test_verify.py: $(tail -n1 "$OUT/logs/pytest-verify.txt")"
            stop_at "$(( $(left) - 25 ))" python3 bench/verify_agreement.py --kernelbench third_party/KernelBench \
                --kbv third_party/kernel_bench_verified --workers "${WORKERS:-4}" --out .kbm/verify-agreement \
                > "$OUT/logs/verify-agreement.txt" 2>&1
            echo "verify agreement: exit $?"; tail -n 9 "$OUT/logs/verify-agreement.txt"
            if [ -d .kbm/suite-kbv ]; then  # carried only when the suite's check is wanted
                stop_at "$(( $(left) - 25 ))" python3 bench/conformance.py --kernelbench third_party/KernelBench \
                    --kbv third_party/kernel_bench_verified --suite .kbm/suite-kbv --protocols \
                    --per-problem "${PER_PROBLEM:-10}" --workers 8 --out .kbm/suite-conformance.jsonl \
                    > "$OUT/logs/suite-conformance.txt" 2>&1
                echo "KBV's eval on the suite: exit $?"; tail -n 5 "$OUT/logs/suite-conformance.txt"
            fi
            cp .kbm/suite-conformance.jsonl .kbm/verify-agreement/rows.jsonl "$OUT/logs/" 2>/dev/null ;;
        verify-bench)
            stop_at "$(( $(left) - 25 ))" python3 bench/verify_throughput.py --kernelbench third_party/KernelBench \
                --out .kbm/verify-throughput > "$OUT/logs/verify-throughput.txt" 2>&1
            echo "verify throughput: exit $?"; tail -n 23 "$OUT/logs/verify-throughput.txt" ;;
        eval-bench)  # issue 27's bench: the evaluator of .kbm/baseline (`git archive 38527c9`, carried) against
                     # this checkout's, on bench/eval_throughput.py's slice at SAMPLE (default 0.3) of its mutants,
                     # WORKERS per GPU (default 1), REPEAT (baseline, new) pairs (2: each evaluator against itself too),
                     # NEW_ARGS more options for this checkout's `kbm run` only (e.g. "--spares 2"), BASELINE=none
                     # to run this checkout's alone (e.g. WORKERS=1: compare without another worker's slices). At SAMPLE=1.0
                     # on a fresh machine give it BUDGET_S >= 420: old's compile-cache fill takes ~62 s, old ~130 s,
                     # new ~90 s, and the bench starts no run it cannot finish (at 320 the new run was skipped)
            xz -dc kbm_toolkit/data/kernelbench.db.xz > /tmp/kb-bench.db
            stop_at "$(( $(left) - 25 ))" python3 bench/eval_throughput.py --store /tmp/kb-bench.db \
                $([ "${BASELINE:-}" = none ] || echo --baseline "${BASELINE:-.kbm/baseline}") --kernelbench third_party/KernelBench --sample "${SAMPLE:-0.3}" \
                ${WORKERS:+--workers "$WORKERS"} ${REPEAT:+--repeat "$REPEAT"} ${NEW_ARGS:+--new-args "$NEW_ARGS"} \
                --budget "$(( $(left) - 45 ))" --out "$OUT/logs/eval-throughput" > "$OUT/logs/eval-throughput.txt" 2>&1
            echo "eval throughput: exit $?"; tail -n 20 "$OUT/logs/eval-throughput.txt" ;;
        compare-floor)  # issue 27 item 1: the one-pass comparison alone against reading both tensors once, on the
                        # pool's five largest outputs; beside eval-bench's in-run figure, whose CUDA-event times with
                        # WORKERS=2 also span the other worker's time slices
            timeout "$(left)" python3 bench/compare_floor.py --repeats 7 > "$OUT/logs/compare-floor.txt" 2>&1
            echo "compare floor: exit $?; $(tail -n 1 "$OUT/logs/compare-floor.txt")" ;;
        plan-bench)  # issue 27 item 3: how soon the compile pool hands the workers their first plans, on the
                     # host's cores (the CPU measurement had 2), from an empty cache; the variants alternate
                     # PLAN_REPEAT times (default 2: the whole variant, alone and first, once paid 10x a compile)
            timeout "$(left)" python3 bench/plan_latency.py --kernelbench third_party/KernelBench --problems 12 \
                --consumers 3 --workers 12 --repeat "${PLAN_REPEAT:-2}" > "$OUT/logs/plan-bench.txt" 2>&1
            echo "plan bench: exit $?; $(tail -n 1 "$OUT/logs/plan-bench.txt")" ;;
        shards)  # issue 27: the demo pool under kernelbench's inputs as one run, and as two shards merged
            python3 -c "import sqlite3, sys; sys.path.insert(0, 'bench'); from eval_throughput import prepare_input
import lzma, shutil; shutil.copyfileobj(lzma.open('kbm_toolkit/data/demo.db.xz'), open('/tmp/demo-src.db', 'wb'))
keys = [r[0] for r in sqlite3.connect('/tmp/demo-src.db').execute('select distinct problem from mutants')]
print(prepare_input(__import__('pathlib').Path('/tmp/demo-src.db'), __import__('pathlib').Path('/tmp/demo-base.db'), keys))"
            for s in one s0 s1; do cp /tmp/demo-base.db /tmp/demo-$s.db; done
            kbm_demo() { stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store "$@"; }
            kbm_demo /tmp/demo-one.db run --inputs kernelbench --level demo > "$OUT/logs/shards-one.txt" 2>&1
            echo "one run: exit $?"
            kbm_demo /tmp/demo-s0.db run --inputs kernelbench --level demo --shard 0/2 > "$OUT/logs/shards-0.txt" 2>&1
            echo "shard 0/2: exit $?"
            kbm_demo /tmp/demo-s1.db run --inputs kernelbench --level demo --shard 1/2 > "$OUT/logs/shards-1.txt" 2>&1
            echo "shard 1/2: exit $?"
            kbm_demo /tmp/demo-s0.db merge /tmp/demo-s1.db > "$OUT/logs/shards-merge.txt" 2>&1
            echo "merge: exit $?"
            python3 bench/compare_cells.py /tmp/demo-one.db /tmp/demo-s0.db --rel 1e-6 > "$OUT/logs/shards-compare.txt" 2>&1
            echo "compare one run against the merged shards: exit $?"; head -n 30 "$OUT/logs/shards-compare.txt" ;;
        l3-targets)  # issue 28 item 4's targeted witnesses: `kbm targets --level level3` (ceilings on the GPU),
                     # then their inputs on the mutants kernelbench misses in the L3_SAMPLE share (default: the
                     # widest share the store's networks were evaluated on, so new survivors are not left out);
                     # the store as for l3-pool, returned as l3-live.db.xz, the protocol as l3-targets.toml
            l3_store
            widest=$(python3 -c "import sqlite3; print(sqlite3.connect('/tmp/l3-live.db').execute(
                \"select coalesce(max(sample), 0.01) from problems where level = 'level3'\").fetchone()[0])")
            stop_at "$(( $(left) - 60 ))" python3 -m kbm_toolkit --store /tmp/l3-live.db --kernelbench third_party/KernelBench \
                targets --level level3 --out .kbm/l3-targets > "$OUT/logs/l3-targets.txt" 2>&1
            echo "targets --level level3: exit $?; $(tail -n 1 "$OUT/logs/l3-targets.txt")"
            cp .kbm/l3-targets/protocol.toml "$OUT/l3-targets.toml" 2>/dev/null
            stop_at "$(( $(left) - 45 ))" python3 -m kbm_toolkit --store /tmp/l3-live.db --kernelbench third_party/KernelBench \
                run --level level3 --inputs .kbm/l3-targets --survivors-of kernelbench --sample "${L3_SAMPLE:-$widest}" \
                --workers "${WORKERS:-2}" ${FIRST_KILL:+--first-kill} > "$OUT/logs/l3-targets-run.txt" 2>&1
            echo "targets run: exit $?; $(tail -n 2 "$OUT/logs/l3-targets-run.txt")"
            l3_pack ;;
        l3-pool)  # issue 28 item 4: the level-3 pool under L3_INPUTS (default kernelbench,kbv,fuzz) at an
                  # L3_SAMPLE share (default 0.1; FIRST_KILL=1 runs with --first-kill), resumable: the store
                  # travels as .kbm/l3-live.db.xz (carry it, and third_party/kernel_bench_verified: kbv's inputs; without it the
                  # first call starts from the shipped @kernelbench-level3, else from .kbm/gate.db and mutates)
            l3_store
            if [ "$(python3 -c "import sqlite3; print(sqlite3.connect('/tmp/l3-live.db').execute(
                    \"select count(*) from sqlite_master where name = 'mutants'\").fetchone()[0] and sqlite3.connect(
                    '/tmp/l3-live.db').execute(\"select count(*) from mutants where problem like 'level3/%'\").fetchone()[0])")" = 0 ]; then
                "${KB3[@]}" mutate --level level3 > "$OUT/logs/l3-pool-mutate.txt" 2>&1
                echo "mutate --level level3: exit $?; $(tail -n 1 "$OUT/logs/l3-pool-mutate.txt")"
            fi
            log="$OUT/logs/l3-pool-run-$(date +%s).txt"
            stop_at "$(( $(left) - 45 ))" "${KB3[@]}" run --level level3 --inputs "${L3_INPUTS:-kernelbench,kbv,fuzz}" \
                --sample "${L3_SAMPLE:-0.1}" --workers "${WORKERS:-2}" ${FIRST_KILL:+--first-kill} > "$log" 2>&1
            rc=$?  # 130: stopped at the call's limit, and the next call resumes; anything else, the log's last line says
            echo "run --level level3: exit $rc; $(tail -n 1 "$log")"
            l3_pack ;;
        l3-problem)  # issue 28: a network whose substrate changed, mutated on the CPU (`kbm mutate --ungated
                     # L3_PROBLEM` into the carried .kbm/l3-live.db.xz): its gate at the new source, the pool's
                     # inputs on its L3_SAMPLE share (default 0.01, as the shipped store's 1% networks), its
                     # targets (ceilings and checks against the new substrate) on kernelbench's survivors
            l3_store
            stop_at "$(( $(left) - 60 ))" "${KB3[@]}" gate --resume --timeout 150 "$L3_PROBLEM" > "$OUT/logs/l3-problem-gate.txt" 2>&1
            echo "gate $L3_PROBLEM: exit $?; $(grep -E 'passed|failed|unrefereeable' "$OUT/logs/l3-problem-gate.txt" | tail -n 1)"
            stop_at "$(( $(left) - 60 ))" "${KB3[@]}" run "$L3_PROBLEM" --inputs kernelbench,kbv,fuzz --sample "${L3_SAMPLE:-0.01}" \
                --first-kill --workers "${WORKERS:-2}" > "$OUT/logs/l3-problem-run.txt" 2>&1
            echo "run: exit $?; $(tail -n 2 "$OUT/logs/l3-problem-run.txt" | head -n 1)"
            stop_at "$(( $(left) - 60 ))" "${KB3[@]}" targets "$L3_PROBLEM" --out .kbm/l3-targets-one > "$OUT/logs/l3-problem-targets.txt" 2>&1
            echo "targets: exit $?; $(tail -n 1 "$OUT/logs/l3-problem-targets.txt")"
            stop_at "$(( $(left) - 45 ))" "${KB3[@]}" run "$L3_PROBLEM" --inputs .kbm/l3-targets-one --survivors-of kernelbench \
                --sample "${L3_SAMPLE:-0.01}" --first-kill --workers "${WORKERS:-2}" > "$OUT/logs/l3-problem-targets-run.txt" 2>&1
            echo "targets run: exit $?; $(tail -n 2 "$OUT/logs/l3-problem-targets-run.txt" | head -n 1)"
            l3_pack ;;
        l3-unplaced)  # issue 28: why kbm's LSTMs survive less than the paper's. The carried
                      # .kbm/l3-unplaced.db.xz holds the four LSTM networks' mutants made with `kbm mutate
                      # --ungated --unplaced` (each kernel mutant at every launch, as a fused kernel's fault);
                      # they run as the pool did, at L3_SAMPLE (default 0.1), resumable, returned as l3-unplaced.db.xz
            [ -f /tmp/l3-unplaced.db ] || xz -dc .kbm/l3-unplaced.db.xz > /tmp/l3-unplaced.db
            stop_at "$(( $(left) - 45 ))" python3 -m kbm_toolkit --store /tmp/l3-unplaced.db --kernelbench third_party/KernelBench \
                --kbv third_party/kernel_bench_verified run --level level3 --inputs kernelbench,kbv,fuzz \
                --sample "${L3_SAMPLE:-0.1}" --first-kill --workers "${WORKERS:-2}" > "$OUT/logs/l3-unplaced.txt" 2>&1
            echo "run --level level3 (unplaced LSTMs): exit $?; $(ending "$OUT/logs/l3-unplaced.txt")"
            python3 -c "import sqlite3; sqlite3.connect('/tmp/l3-unplaced.db').execute('pragma wal_checkpoint(TRUNCATE)')"
            xz -T0 -6 -c /tmp/l3-unplaced.db > "$OUT/l3-unplaced.db.xz" ;;
        kb-stress)  # issue 29: kernelbench-stress's stressed trials (the official five beside memory stress) on the
                    # official check's survivors of the DEEP_SAMPLE share (default 0.1), --first-kill: its own audit
                    # is then complete there, and a stressed kill witnesses a race the quiet schedule hides
            kb_store
            stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store "$KB_STORE" --kernelbench third_party/KernelBench \
                run --inputs kernelbench-stress --survivors-of kernelbench --first-kill --sample "${DEEP_SAMPLE:-0.1}" \
                --workers "${WORKERS:-2}" > "$OUT/logs/kb-stress.txt" 2>&1
            echo "kernelbench-stress on kernelbench's survivors: exit $?; $(ending "$OUT/logs/kb-stress.txt")"
            # the stressed inputs of problems with no survivor to run them on, checked against the correct kernel
            # (one launch each): else the audit calls the protocol incomplete there
            [ "$(left)" -gt 90 ] && { stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store "$KB_STORE" \
                --kernelbench third_party/KernelBench run --inputs kernelbench-stress --checks-only \
                > "$OUT/logs/kb-stress-checks.txt" 2>&1
                echo "kernelbench-stress checks: exit $?; $(ending "$OUT/logs/kb-stress-checks.txt")"; } ;;
        kb-kbv)  # issue 29: KernelBench-Verified's published hidden tests (the carried checkout) on each KBV_SAMPLE
                 # share in turn (default 0.2; "0.2 0.3" widens), --first-kill: kbv's own audit with the checkout
                 # is then exact on that share, and its hidden inputs join the witness search there
            kb_store
            parts=(); for share in ${KBV_SAMPLE:-0.2}; do
                parts+=("--kbv third_party/kernel_bench_verified run --inputs kbv --sample $share"); done
            first_kill_runs "${parts[@]}" ;;
        kb-close)  # issue 29: every --first-kill run of the pool again, under the rule that settles a mutant only
                   # where it holds at every installed protocol's tolerance (evaluation/first_kill.py): the cells the
                   # older rule skipped (a kbv kill at 1e-3 that the official audit's 1e-2 cannot count, a 1e-2 kill
                   # on an input head's 1e-4 cannot use); resumable, each run stored as it goes
            kb_store
            first_kill_runs "--kbv third_party/kernel_bench_verified run --inputs kbv" "run --inputs fuzz-shapes" \
                "run --inputs kb-targets --survivors-of kernelbench" "run --inputs kernelbench,kbv,fuzz" ;;
        list-shapes)  # the inputs a list-valued size once broke in every reference (docs/kernelbench-pool.md, "A fault
                      # of kbm's own"), on the kb store and the level-3 store: each problem gated again, the probe
                      # run on all its mutants, its targeted inputs checked again and run on kernelbench's survivors
            stores=(); [[ "${LIST_STORES:-kb l3}" == *kb* ]] && { kb_store; stores+=("$KB_STORE"); }
            [[ "${LIST_STORES:-kb l3}" == *l3* ]] && { l3_store; stores+=(/tmp/l3-live.db); }  # LIST_STORES=l3: resume one
            for db in "${stores[@]}"; do
                tag=$(basename "$db" .db)
                # LIST_PROBLEMS (those of them the store has) instead: problems whose gate shapes changed since
                problems=$(python3 -c 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); print(" ".join(sorted(
                    {r[0] for r in db.execute("select key from problems")} & set(sys.argv[2:]) if len(sys.argv) > 2 else
                    {r[0] for r in db.execute("select problem from gate_inputs where note like ? union select i.problem "
                    "from input_checks k join inputs i on i.id = k.input where k.note like ?", ["%unhashable%"] * 2)})))' \
                    "$db" ${LIST_PROBLEMS:-})
                [ -z "$problems" ] && { echo "$tag: no input a list-valued size broke"; continue; }
                # the whole protocol again, never a few problems' (it replaces the one the store keeps)
                emit=.kbm/kb-targets; level=(); [ "$db" = /tmp/l3-live.db ] && { emit=.kbm/l3-targets; level=(--level level3); }
                # a sampled store (level 3: 3%) is run on its own share: without --sample a run widens it to every mutant
                share=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
                    "select max(sample) from problems").fetchone()[0] or "")' "$db")
                sample=(); [ -n "$share" ] && sample=(--sample "$share")
                kbm_l=(python3 -m kbm_toolkit --store "$db" --kernelbench third_party/KernelBench
                       --kbv third_party/kernel_bench_verified)  # an array: `timeout` runs only programs
                stop_at "$(( $(left) - 25 ))" "${kbm_l[@]}" gate $problems > "$OUT/logs/list-gate-$tag.txt" 2>&1
                echo "$tag gate again: exit $?; $(grep -c ': passed' "$OUT/logs/list-gate-$tag.txt") passed of $(wc -w <<< "$problems")"
                stop_at "$(( $(left) - 25 ))" "${kbm_l[@]}" run --inputs probe "${sample[@]}" --workers "${WORKERS:-2}" $problems \
                    > "$OUT/logs/list-probe-$tag.txt" 2>&1
                echo "$tag probe: exit $?; $(ending "$OUT/logs/list-probe-$tag.txt")"
                stop_at "$(( $(left) - 60 ))" "${kbm_l[@]}" targets "${level[@]}" --out "$emit" > "$OUT/logs/list-targets-$tag.txt" 2>&1
                stop_at "$(( $(left) - 25 ))" "${kbm_l[@]}" run --inputs "$emit" --survivors-of kernelbench --first-kill "${sample[@]}" \
                    --workers "${WORKERS:-2}" $problems > "$OUT/logs/list-run-$tag.txt" 2>&1
                echo "$tag targets on kernelbench's survivors: exit $?; $(ending "$OUT/logs/list-run-$tag.txt")"
            done
            [ -f /tmp/l3-live.db ] && l3_pack ;;  # a kb-only call has no level-3 store to return
        redzones)  # issue 29: the equivalence candidates of the store's DEEP_SAMPLE share (default 0.1) measured again
                   # on the targeted inputs with KBM_REDZONES=1, in a narrowed copy (dev/redzones.py); the copy comes
                   # back as rz.db.xz, and a carried .kbm/rz.db.xz resumes it
            kb_store
            python3 -m kbm_toolkit --store "$KB_STORE" --kernelbench third_party/KernelBench targets --emit .kbm/kb-targets \
                > "$OUT/logs/redzones-targets.txt" 2>&1
            if [ -f .kbm/rz.db.xz ] && [ ! -f /tmp/rz.db ]; then xz -dc .kbm/rz.db.xz > /tmp/rz.db
                python3 -c 'import sqlite3, sys; print(" ".join(r[0] for r in sqlite3.connect(sys.argv[1]).execute(
                    "select distinct problem from redzone_candidates order by problem")))' /tmp/rz.db > /tmp/rz-problems.txt
            elif [ ! -f /tmp/rz.db ]; then cp "$KB_STORE" /tmp/rz.db
                python3 dev/redzones.py narrow /tmp/rz.db --sample "${DEEP_SAMPLE:-0.1}" --witness fuzz --witness fuzz-shapes \
                    --witness kbv --witness kernelbench --witness kernelbench-head --witness .kbm/kb-targets \
                    --rerun .kbm/kb-targets > /tmp/rz-problems.txt; fi
            ( export KBM_REDZONES=1
              stop_at "$(( $(left) - 40 ))" python3 -m kbm_toolkit --store /tmp/rz.db --kernelbench third_party/KernelBench \
                  run $(cat /tmp/rz-problems.txt) --inputs .kbm/kb-targets --sample "${DEEP_SAMPLE:-0.1}" \
                  --workers "${WORKERS:-2}" > "$OUT/logs/redzones-run.txt" 2>&1
              echo "redzones: exit $?; $(ending "$OUT/logs/redzones-run.txt")" )
            python3 dev/redzones.py compare /tmp/rz.db | tee "$OUT/logs/redzones.txt"
            xz -T0 -6 -c /tmp/rz.db > "$OUT/rz.db.xz" ;;
        gate-level1) gate --level level1 ;;
        gate-level2) gate --level level2 ;;
        gate-level3) gate --level level3 ;;
        refcheck-level3)
            for a in kernelbench kbv kernelbench-head; do
                stop_at "$(( $(left) - 25 ))" python3 -m kbm_toolkit --store .kbm/gate.db \
                    --kernelbench third_party/KernelBench refcheck -a $a --level level3 \
                    > "$OUT/logs/refcheck-level3-$a.txt" 2>&1
                echo "refcheck -a $a --level level3: exit $?; $(tail -n1 "$OUT/logs/refcheck-level3-$a.txt")"
            done ;;
        gate-all) gate ;;
    esac
done
python3 -c "import sqlite3; sqlite3.connect('.kbm/gate.db').execute('pragma wal_checkpoint(TRUNCATE)')" 2>/dev/null
if [ -f "$KB_STORE" ]; then  # whichever kb step wrote it (pool, targets, refcheck, workers-ab): it comes back
    python3 -c "import sqlite3; sqlite3.connect('$KB_STORE').execute('pragma wal_checkpoint(TRUNCATE)')"
    # xz: the whole pool's store gzipped (17 MB) outgrew the 16 MiB a returned file may hold; xz packs it to 9 MB
    xz -T0 -6 -c "$KB_STORE" > "$OUT/kb.db.xz"
fi
cp .kbm/gate.db "$OUT/" 2>/dev/null
tar -czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
echo "batch done in $(( $(date +%s) - begin ))s"
