#!/usr/bin/env bash
# Items/hour of `staticlm batch` with shared prompt prefixes on and off
# (docs/BATCH.md "Shared prompt prefixes"): N classification requests
# ("choices") under one instruction of about 300 tokens, run twice with the
# same flags, --prefix-pool 0 for "off". Prints both rates, their ratio, the
# prompt rows each run computed, and checks that the two results files hold
# the same lines (timing aside).
#
#   bash bench/prefix_share.sh MODEL [N=200] [extra staticlm batch flags...]
#   bash bench/prefix_share.sh ../shared/data/stories260K-hf 200 --threads 2 --slots 8
#   bash bench/prefix_share.sh "$(bash tools/get_model.sh | tail -1)" 200 --threads 2
#
# STATICLM (default build/tools/staticlm) is the binary.
set -euo pipefail

model="${1:?usage: bench/prefix_share.sh MODEL [N] [flags...]}"
n="${2:-200}"
shift $(( $# >= 2 ? 2 : 1 ))
bin="${STATICLM:-build/tools/staticlm}"
dir="$(mktemp -d /tmp/staticlm-prefix-bench-XXXXXX)"
trap 'rm -rf "$dir"' EXIT

words=(dog cat ball tree sun rain cake friend park toy)
instr="Read the little story and say how the child feels.\\n"
for i in $(seq 1 12); do
    w="${words[$(( (i - 1) % 10 ))]}"
    size=$([ $(( (i - 1) % 3 )) -eq 0 ] && echo small || echo big)
    mood=$([ $(( (i - 1) % 2 )) -eq 0 ] && echo sad || echo happy)
    instr+="Rule $i: if the $w is $size, the child is $mood.\\n"
done
for i in $(seq 0 $(( n - 1 ))); do
    a="${words[$(( i % 10 ))]}"
    b="${words[$(( (i * 7 + 3) % 10 ))]}"
    printf '{"id":"c%d","prompt":"%sStory %d: Tim saw a %s and a %s in the park.\\nThe child feels","choices":[" happy"," sad"," angry"]}\n' \
        "$i" "$instr" "$i" "$a" "$b"
done > "$dir/in.jsonl"

# run NAME FLAGS...: wall seconds (model load included) on stdout; stderr's summary
# lines (rows computed and copied) in $dir/NAME.err.
run() {
    local name="$1"
    shift
    local t0 t1
    t0=$(date +%s.%N)
    "$bin" batch -m "$model" --input "$dir/in.jsonl" --output "$dir/$name.jsonl" "$@" 2> "$dir/$name.err" > /dev/null
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

t_off=$(run off --prefix-pool 0 "$@")
t_on=$(run on "$@")
rows_off=$(grep -o 'prompt rows computed [0-9]*' "$dir/off.err" | grep -o '[0-9]*$')
rows_on=$(grep -o 'prompt rows computed [0-9]*' "$dir/on.err" | grep -o '[0-9]*$')
strip() { sed -E 's/,"timing":\{[^}]*\}//' "$1" | sort; }
if [ "$(strip "$dir/off.jsonl")" = "$(strip "$dir/on.jsonl")" ]; then same=yes; else same=NO; fi
awk -v n="$n" -v a="$t_off" -v b="$t_on" -v ra="$rows_off" -v rb="$rows_on" -v same="$same" 'BEGIN {
    printf "requests %d\n", n
    printf "sharing off: %7.2f s  %10.0f items/hour  prompt rows %d\n", a, n * 3600 / a, ra
    printf "sharing on:  %7.2f s  %10.0f items/hour  prompt rows %d\n", b, n * 3600 / b, rb
    printf "items/hour ratio on/off: %.2f   prompt rows on/off: %.3f   results identical: %s\n", a / b, rb / ra, same
}'
[ "$same" = yes ]
