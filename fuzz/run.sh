#!/usr/bin/env bash
# Runs every libFuzzer target for a fixed number of executions and reports the
# count reached per target; exits non-zero if any target found a crash, leak,
# timeout or out-of-memory (the input is saved under $OUT_DIR/<target>/).
#   usage: fuzz/run.sh [RUNS=1000000] [BUILD_DIR=build-fuzz] [TARGET...]
#   build: CXX=clang++ meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined \
#            -Db_lundef=false --buildtype=debugoptimized && ninja -C build-fuzz -j2
#   env:   FUZZ_PARALLEL=1 runs the targets at once (at nice $FUZZ_NICE, default 15); FUZZ_SECONDS caps each run.
# Seeds come from fuzz/corpus/<target>/ (small, in git); new inputs go to
# $OUT_DIR/<target>/corpus so the committed corpus stays as it is.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
build=${2:-build-fuzz}
shift $(( $# < 2 ? $# : 2 ))
out=${OUT_DIR:-fuzz/out}
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    for exe in "$build"/fuzz/fuzz_*; do [[ -x $exe && -f $exe ]] && targets+=("$(basename "$exe")"); done
fi
[[ ${#targets[@]} -gt 0 ]] || { echo "fuzz/run.sh: no fuzz targets in $build/fuzz (build with -Dfuzz=true)" >&2; exit 2; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

run_one() {
    local t=$1 name=${1#fuzz_}
    mkdir -p "$out/$t/corpus"
    local seeds=fuzz/corpus/$name
    [[ -d $seeds ]] || seeds=
    local extra=()
    [[ -n ${FUZZ_SECONDS:-} ]] && extra+=(-max_total_time="$FUZZ_SECONDS")
    # Large enough for the deep-nesting and huge-length seeds (200000 nested
    # arrays are 400 KB) and for fuzz_json's mutator to wrap in 100000 levels.
    local max_len=65536
    case $name in
        config|tokenizer_json|safetensors|json) max_len=1048576 ;;
        sentencepiece) max_len=262144 ;;
        gguf) max_len=65536 ;;  # the tiny model seeds are 20 KB
    esac
    nice -n ${FUZZ_NICE:-15} "$build/fuzz/$t" -runs="$runs" -max_len=$max_len -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$out/$t/" -print_final_stats=1 "${extra[@]}" \
        "$out/$t/corpus" $seeds > "$out/$t/log.txt" 2>&1
    local rc=$?
    local done_line
    done_line=$(grep -E '^(Done [0-9]+ runs|stat::number_of_executed_units)' "$out/$t/log.txt" | tail -n 1)
    echo "$t: rc=$rc ${done_line:-no summary (see $out/$t/log.txt)}"
    return $rc
}

status=0
if [[ ${FUZZ_PARALLEL:-0} == 1 ]]; then
    pids=()
    for t in "${targets[@]}"; do run_one "$t" & pids+=($!); done
    for p in "${pids[@]}"; do wait "$p" || status=1; done
else
    for t in "${targets[@]}"; do run_one "$t" || status=1; done
fi
exit $status
