#!/usr/bin/env bash
# Prompt-lookup speculation (`--spec ngram[:N]`, docs/RUNTIME.md) on and off,
# on two tasks: "copy", greedy, where the answer repeats the prompt's text
# (a rewrite / extraction job), and "free", sampled at temperature 1, a story
# where little repeats. Each task runs R times alternating off / on; prints
# the median decode tok/s of each, their ratio, and the acceptance line of
# the last speculative run. Greedy runs also check that both outputs are the
# same bytes.
#
#   bash bench/spec_lookup.sh MODEL [R=5] [extra staticlm generate flags...]
#   bash bench/spec_lookup.sh "$(bash tools/get_model.sh | tail -1)" 5 -t 2
#
# STATICLM (default build/tools/staticlm) is the binary; SPEC (default ngram)
# the --spec value; N (default 120) the tokens generated per run.
set -euo pipefail

model="${1:?usage: bench/spec_lookup.sh MODEL [R] [flags...]}"
reps="${2:-5}"
shift $(( $# >= 2 ? 2 : 1 ))
bin="${STATICLM:-build/tools/staticlm}"
spec="${SPEC:-ngram}"
n="${N:-120}"
dir="$(mktemp -d /tmp/staticlm-spec-bench-XXXXXX)"
trap 'rm -rf "$dir"' EXIT

copy_prompt=$'<start_of_turn>user\nRepeat the following text exactly:\n\nThe committee met on Tuesday, 14 March, to review the budget for the new library wing. Ms. Alvarez reported that construction costs had risen by 12 percent since the original estimate, mainly because of steel prices. Mr. Chen proposed delaying the reading room until the next fiscal year, while keeping the children\'s section on schedule. After a long discussion, the committee voted five to two in favour of the proposal.<end_of_turn>\n<start_of_turn>model\n'
free_prompt='Chapter 1. The old lighthouse keeper'

median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

run_task() {
    local name="$1" prompt="$2"
    shift 2
    : > "$dir/off.tps"
    : > "$dir/on.tps"
    for r in $(seq 1 "$reps"); do
        for mode in off on; do
            local extra=()
            [ "$mode" = on ] && extra=(--spec "$spec")
            "$bin" generate -m "$model" -p "$prompt" -n "$n" --ignore-eos "$@" "${extra[@]}" \
                > "$dir/$name.$mode.txt" 2> "$dir/$name.$mode.err"
            sed -n 's/.*generated [0-9]* tokens, \([0-9.]*\) tok\/s.*/\1/p' "$dir/$name.$mode.err" >> "$dir/$mode.tps"
        done
    done
    local off on
    off="$(median < "$dir/off.tps")"
    on="$(median < "$dir/on.tps")"
    echo "$name: decode tok/s median of $reps: off $off, --spec $spec $on, ratio $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a / b}')"
    echo "  off runs: $(tr '\n' ' ' < "$dir/off.tps")| on runs: $(tr '\n' ' ' < "$dir/on.tps")"
    grep '^\[staticlm\] speculation' "$dir/$name.on.err" | sed 's/^/  /'
}

run_task copy "$copy_prompt" --temp 0 "$@"
cmp -s "$dir/copy.off.txt" "$dir/copy.on.txt" && echo "  greedy outputs identical" || echo "  greedy outputs DIFFER"
run_task free "$free_prompt" --temp 1.0 "$@"
