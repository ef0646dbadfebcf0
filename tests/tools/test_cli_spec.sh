#!/usr/bin/env bash
# `--spec ngram[:N]` (prompt-lookup speculation) on the real stories260K model:
# greedy generate and chat print the same text with and without it, the
# acceptance line appears, bad values are usage errors (exit 2) naming the
# value, and batch gives the same results with it as without.
# usage: test_cli_spec.sh STATICLM SOURCE_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bin=$1
src=$2
data=$src/../shared/data
M=$data/stories260K-hf
need "$M"
G=(generate -m "$M" -t 2 --temp 0 -n 120)
P="Lily saw a big dog. Lily saw a big cat. Lily saw a big"

run "generate" 0 -- "$bin" "${G[@]}" -p "$P"
cp "$tmp/out" "$tmp/plain.txt"
for spec in ngram ngram:1 ngram:16 ngram:64; do
    run "generate --spec $spec" 0 -- "$bin" "${G[@]}" -p "$P" --spec "$spec"
    cmp -s "$tmp/out" "$tmp/plain.txt" && ok || bad "--spec $spec changed the greedy text: $(head -c 200 "$tmp/out")"
    has "$tmp/err" "[staticlm] speculation ${spec/ngram/ngram}" "--spec $spec stats"
done
has "$tmp/err" "drafted tokens accepted" "acceptance figure"
run "generate --spec=ngram:4 --stop" 0 -- "$bin" "${G[@]}" -p "$P" --spec=ngram:4 --stop "please"
cp "$tmp/out" "$tmp/stop_spec.txt"
run "generate --stop" 0 -- "$bin" "${G[@]}" -p "$P" --stop "please"
cmp -s "$tmp/out" "$tmp/stop_spec.txt" && ok || bad "--stop with --spec differs"
has "$tmp/err" "stopped: stop string" "--stop reason"

# chat: the same replies, turn after turn
printf 'Lily saw a dog.\nTell me about Lily and the dog.\n' >"$tmp/turns"
run "chat" 0 -- "$bin" chat -m "$M" -t 2 --temp 0 -n 40 <"$tmp/turns"
cp "$tmp/out" "$tmp/chat.txt"
run "chat --spec" 0 -- "$bin" chat -m "$M" -t 2 --temp 0 -n 40 --spec ngram <"$tmp/turns"
cmp -s "$tmp/out" "$tmp/chat.txt" && ok || bad "chat --spec changed the replies"

# bad values: usage errors naming the value
for v in ngram:0 ngram:65 ngram:x ngram: ngram:-3 ngram:8x lookup ""; do
    run "--spec '$v'" 2 -- "$bin" "${G[@]}" -p "$P" --spec "$v"
    has "$tmp/err" "--spec takes ngram or ngram:N with N in 1..64 (the most tokens drafted per step), got '$v'" \
        "--spec '$v' message"
done
run "chat --spec bad" 2 -- "$bin" chat -m "$M" --spec ngram:999 </dev/null
has "$tmp/err" "got 'ngram:999'" "chat --spec message"

# batch: the same results (texts, tokens, log-probabilities) with and without
# --spec, at 1 and 4 slots, every request drafting from its own prompt
for i in 1 2 3 4 5 6; do
    printf '{"id": "r%d", "prompt": "Lily saw a big dog. Lily saw a big cat %d. Lily saw a big", "max_tokens": 60, "logprobs": 2}\n' "$i" "$i"
done >"$tmp/in.jsonl"
printf '{"id": "s", "prompt": "Once upon a time", "max_tokens": 60, "stop": ["the"]}\n' >>"$tmp/in.jsonl"
B=(batch -m "$M" -t 2 --temp 0 --input "$tmp/in.jsonl" --quiet)
run "batch" 0 -- "$bin" "${B[@]}" --output "$tmp/plain.jsonl" --slots 4
for slots in 1 4; do
    run "batch --spec --slots $slots" 0 -- "$bin" "${B[@]}" --output "$tmp/spec$slots.jsonl" --slots "$slots" --spec ngram:6
    run "batch --spec --slots $slots verify" 0 -- "$bin" batch --input "$tmp/in.jsonl" --output "$tmp/spec$slots.jsonl" \
        --verify-against "$tmp/plain.jsonl"
done
run "batch --spec bad" 2 -- "$bin" "${B[@]}" --output "$tmp/o.jsonl" --spec ngram:0
has "$tmp/err" "got 'ngram:0'" "batch --spec message"

finish cli-spec
