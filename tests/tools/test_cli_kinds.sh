#!/usr/bin/env bash
# Every command on every model kind: a Hugging Face directory, a GGUF file and
# a llama2.c .bin file. Each run must exit 0 and print no error (a command that
# looks for a file next to the model must know whether the model is a
# directory or a single file).
# usage: test_cli_kinds.sh STATICLM SOURCE_ROOT
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bin=$1
root=$2
data="$root/../shared/data"

models=("gguf:$root/tests/fixtures/gguf/llama-tied.gguf")
if [[ -d "$data/stories260K-hf" && -f "$data/stories260K/stories260K.bin" ]]; then
    models+=("dir:$data/stories260K-hf" "bin:$data/stories260K/stories260K.bin")
else
    echo "note: $data is absent: the directory and llama2.c kinds are not run"
fi

printf '{"id": "a", "prompt": "Once upon"}\n{"id": "b", "messages": [{"role": "user", "content": "Hi"}]}\n' >"$tmp/in.jsonl"
head -c 600 "$root/tests/fixtures/perplexity/story.txt" >"$tmp/story.txt"

run_on() {  # kind, command name, then the command; stdin from /dev/null unless CHAT
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
        ok
    else
        bad "$name on the $kind model (exit $rc):"
        sed 's/^/    /' "$out.err" | head -5
    fi
}

for entry in "${models[@]}"; do
    kind=${entry%%:*}
    m=${entry#*:}
    run_on "$kind" info "$bin" info -m "$m"
    run_on "$kind" tokenize "$bin" tokenize -m "$m" "Once upon a time"
    run_on "$kind" generate "$bin" generate -m "$m" -p "Once upon a time" -n 4 --temp 0 -t 1
    run_on "$kind" chat "$bin" chat -m "$m" -n 4 --temp 0 -t 1
    run_on "$kind" bench "$bin" bench -m "$m" -t 1 --pp 8 --tg 4 --reps 1
    run_on "$kind" perplexity "$bin" perplexity -m "$m" -f "$tmp/story.txt" --ctx 64 -t 1
    rm -f "$tmp/$kind-results.jsonl"
    run_on "$kind" batch "$bin" batch -m "$m" --input "$tmp/in.jsonl" --output "$tmp/$kind-results.jsonl" -n 4 \
        --temp 0 -t 1 --quiet
    [[ $(grep -c '"finish_reason"' "$tmp/$kind-results.jsonl" 2>/dev/null) == 2 ]] ||
        bad "batch on the $kind model wrote no two results"
done
# verify needs a reference of the same weights: the GGUF twin and its source directory.
fx="$root/tests/fixtures"
run_on gguf verify "$bin" verify -m "$fx/gguf/llama-tied.gguf" --reference "$fx/llama-tied/reference.safetensors" \
    --weights f32 -t 1
run_on dir verify "$bin" verify -m "$fx/llama-tied" --reference "$fx/llama-tied/reference.safetensors" --weights f32 -t 1

finish cli-kinds
