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
# Then the same two tasks as batch jobs (`staticlm batch --slots S`, every
# request drafting from its own prompt): "batch-copy", greedy, S requests
# each asking to repeat a different paragraph, and "batch-free", sampled
# stories; prints the median tok/s of the job (its summary line: generated
# tokens over the job's wall time, prefill included), the ratio, the
# acceptance line, and for batch-copy whether the results are the same.
#
# STATICLM (default build/tools/staticlm) is the binary; SPEC (default ngram)
# the --spec value; N (default 120) the tokens generated per run; SLOTS
# (default 8) the batch's slots and requests.
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

# --------------------------------------------------------------- batch jobs
slots="${SLOTS:-8}"
names=(Alvarez Chen Okafor Novak Lindqvist Tanaka Moreau Singh Kowalski Haddad Ferreira Olsen Park Rossi Dubois Kim)
items=("library wing" "swimming pool" "bus depot" "town hall roof" "school kitchen" "bicycle lanes" "harbour wall" "community garden")
: > "$dir/copy.jsonl"
: > "$dir/free.jsonl"
for i in $(seq 0 $((slots - 1))); do
    who="${names[$((i % 16))]}"
    what="${items[$((i % 8))]}"
    para="The committee met on Tuesday, $((i + 3)) March, to review the budget for the new $what. Ms. $who reported that costs had risen by $((i + 7)) percent since the original estimate, mainly because of steel prices. Mr. ${names[$(((i + 5) % 16))]} proposed delaying part of the work until the next fiscal year, while keeping the rest on schedule. After a long discussion, the committee voted $((i % 4 + 4)) to $((i % 3 + 1)) in favour of the proposal."
    python3 -c 'import json, sys; print(json.dumps({"id": "c" + sys.argv[1], "prompt": "<start_of_turn>user\nRepeat the following text exactly:\n\n" + sys.argv[2] + "<end_of_turn>\n<start_of_turn>model\n"}))' "$i" "$para" >> "$dir/copy.jsonl"
    python3 -c 'import json, sys; print(json.dumps({"id": "f" + sys.argv[1], "prompt": "Chapter " + sys.argv[1] + ". The old lighthouse keeper", "seed": int(sys.argv[1])}))' "$i" >> "$dir/free.jsonl"
done

run_batch_task() {
    local name="$1" input="$2"
    shift 2
    : > "$dir/boff.tps"
    : > "$dir/bon.tps"
    for r in $(seq 1 "$reps"); do
        for mode in off on; do
            local extra=()
            [ "$mode" = on ] && extra=(--spec "$spec")
            rm -f "$dir/$name.$mode.jsonl"
            "$bin" batch -m "$model" --input "$input" --output "$dir/$name.$mode.jsonl" --slots "$slots" \
                -n "$n" --ignore-eos "$@" "${extra[@]}" 2> "$dir/$name.$mode.err"
            sed -n 's/.*tokens in [0-9.]* s (\([0-9.]*\) tok\/s.*/\1/p' "$dir/$name.$mode.err" >> "$dir/b$mode.tps"
        done
    done
    local off on
    off="$(median < "$dir/boff.tps")"
    on="$(median < "$dir/bon.tps")"
    echo "$name ($slots requests, --slots $slots): tok/s median of $reps: off $off, --spec $spec $on, ratio $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a / b}')"
    echo "  off runs: $(tr '\n' ' ' < "$dir/boff.tps")| on runs: $(tr '\n' ' ' < "$dir/bon.tps")"
    grep '^staticlm batch: speculation' "$dir/$name.on.err" | sed 's/^/  /'
}

run_batch_task batch-copy "$dir/copy.jsonl" --temp 0 "$@"
"$bin" batch --input "$dir/copy.jsonl" --output "$dir/batch-copy.on.jsonl" --verify-against "$dir/batch-copy.off.jsonl" \
    > /dev/null 2>&1 && echo "  greedy results identical" || echo "  greedy results DIFFER"
run_batch_task batch-free "$dir/free.jsonl" --temp 1.0 "$@"
