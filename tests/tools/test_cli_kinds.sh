#!/usr/bin/env bash
# Every command on every model kind: a Hugging Face directory, a GGUF file and
# a llama2.c .bin file. Each run must exit 0 and print no error (a command that
# looks for a file next to the model must know whether the model is a
# directory or a single file).
# usage: test_cli_kinds.sh STATICLM SOURCE_ROOT
set -u
bin=$1
root=$2
data="$root/../shared/data"
fails=0 passes=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

models=("gguf:$root/tests/fixtures/gguf/llama-tied.gguf")
if [[ -d "$data/stories260K-hf" && -f "$data/stories260K/stories260K.bin" ]]; then
    models+=("dir:$data/stories260K-hf" "bin:$data/stories260K/stories260K.bin")
else
    echo "note: $data is absent: the directory and llama2.c kinds are not run"
fi

printf '{"id": "a", "prompt": "Once upon"}\n{"id": "b", "messages": [{"role": "user", "content": "Hi"}]}\n' >"$tmp/in.jsonl"
head -c 600 "$root/tests/fixtures/perplexity/story.txt" >"$tmp/story.txt"

run() {  # kind, command name, then the command; stdin from /dev/null unless CHAT
    local kind=$1 name=$2
    shift 2
    local out="$tmp/$kind-$name"
    if [[ $name == chat ]]; then
        printf 'Once upon a time\n' | "$@" >"$out.out" 2>"$out.err"
    else
        "$@" </dev/null >"$out.out" 2>"$out.err"
    fi
    local rc=$?
    if [[ $rc -eq 0 ]] && ! grep -qi "error" "$out.err"; then
        passes=$((passes + 1))
    else
        echo "FAIL: $name on the $kind model (exit $rc):"
        sed 's/^/    /' "$out.err" | head -5
        fails=$((fails + 1))
    fi
}

for entry in "${models[@]}"; do
    kind=${entry%%:*}
    m=${entry#*:}
    run "$kind" info "$bin" info -m "$m"
    run "$kind" tokenize "$bin" tokenize -m "$m" "Once upon a time"
    run "$kind" generate "$bin" generate -m "$m" -p "Once upon a time" -n 4 --temp 0 -t 1
    run "$kind" chat "$bin" chat -m "$m" -n 4 --temp 0 -t 1
    run "$kind" bench "$bin" bench -m "$m" -t 1 --pp 8 --tg 4 --reps 1
    run "$kind" perplexity "$bin" perplexity -m "$m" -f "$tmp/story.txt" --ctx 64 -t 1
    rm -f "$tmp/$kind-results.jsonl"
    run "$kind" batch "$bin" batch -m "$m" --input "$tmp/in.jsonl" --output "$tmp/$kind-results.jsonl" -n 4 \
        --temp 0 -t 1 --quiet
    [[ $(grep -c '"finish_reason"' "$tmp/$kind-results.jsonl" 2>/dev/null) == 2 ]] || {
        echo "FAIL: batch on the $kind model wrote no two results"
        fails=$((fails + 1))
    }
done
# verify needs a reference of the same weights: the GGUF twin and its source directory.
fx="$root/tests/fixtures"
run gguf verify "$bin" verify -m "$fx/gguf/llama-tied.gguf" --reference "$fx/llama-tied/reference.safetensors" \
    --weights f32 -t 1
run dir verify "$bin" verify -m "$fx/llama-tied" --reference "$fx/llama-tied/reference.safetensors" --weights f32 -t 1

echo "cli-kinds: $passes passed, $fails failed"
[[ $fails -eq 0 ]]
