#!/bin/bash
# CLI exit codes and output of `staticlm verify` / `staticlm perplexity`
# (the numbers themselves are checked by test_measure.cpp).
# usage: test_cli_measure.sh STATICLM_BINARY SOURCE_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bin=$1
src=$2
fx=$src/tests/fixtures

# expect CODE DESCRIPTION -- COMMAND...: run, except that an exit 1 saying "is
# not supported" (the loader rejects a feature of this fixture, e.g.
# attention_k_eq_v for now) is a skip, and so are the contains checks after it.
expect() {
    local want=$1 what=$2
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    skipped=0
    if [ "$got" = 1 ] && grep -q "is not supported" "$tmp/err"; then
        echo "SKIPPED: $what: $(cat "$tmp/err")"
        skipped=1
    elif [ "$got" != "$want" ]; then
        bad "$what: exit $got, expected $want"
        echo "  command: $*"
        sed 's/^/  | /' "$tmp/out" "$tmp/err" | tail -20
    else
        ok
    fi
}

# contains TEXT: the last command's stdout has TEXT.
contains() {
    [ "$skipped" = 1 ] || has "$tmp/out" "$1" "output"
}

for d in llama-gqa-llama3 llama-tied llama-mqa-3layer gemma4-e2b-like-causal gemma4-e2b-like-cond \
         gemma4-keqv-causal gemma4-keqv-cond; do
    expect 0 "verify f32 $d" -- "$bin" verify --model "$fx/$d" --reference "$fx/$d/reference.safetensors" \
        --weights f32 --threads 2 --min-greedy 1
    contains "-> PASS"
    contains "greedy: 16/16 generated tokens match (100.00%), first mismatch: none"
    expect 0 "verify --multi-turn f32 $d" -- "$bin" verify --model "$fx/$d" \
        --reference "$fx/$d/reference.safetensors" --weights f32 --threads 2 --multi-turn \
        --turn1 9 --decode 3 --append-bucket 4 --summary
    contains "-> PASS"
done

# A chunked prefill (buckets 8 and 5 for 32 tokens) meets the same budget.
expect 0 "verify with --prefill-buckets 5,8" -- "$bin" verify --model "$fx/llama-mqa-3layer" \
    --reference "$fx/llama-mqa-3layer/reference.safetensors" --weights f32 --threads 2 \
    --prefill-buckets 5,8 --summary
contains "-> PASS"

# The f32 engine is not bit-identical to transformers: a zero budget fails.
expect 1 "verify --max-peir 0" -- "$bin" verify --model "$fx/llama-tied" \
    --reference "$fx/llama-tied/reference.safetensors" --weights f32 --threads 2 --max-peir 0 --summary
contains "EXCEEDED"
contains "-> FAIL"
# Another model's reference with the same vocab (256).
expect 1 "verify with a wrong reference" -- "$bin" verify --model "$fx/gemma4-e2b-like-causal" \
    --reference "$fx/llama-tied/reference.safetensors" --weights f32 --threads 2 --summary
contains "-> FAIL"
# A different vocab is an error (exit 1 with a message).
expect 1 "verify with a reference of another vocab" -- "$bin" verify --model "$fx/llama-tied" \
    --reference "$fx/llama-gqa-llama3/reference.safetensors" --weights f32 --threads 2
expect 2 "verify without --reference" -- "$bin" verify --model "$fx/llama-tied"
expect 2 "verify with a bad --max-peir" -- "$bin" verify --model "$fx/llama-tied" \
    --reference "$fx/llama-tied/reference.safetensors" --max-peir abc
# A dump alongside the check (tensor values: test_measure.cpp and tools/fixtures/reference.py compare).
expect 0 "verify with --dump" -- "$bin" verify --model "$fx/llama-gqa-llama3" \
    --reference "$fx/llama-gqa-llama3/reference.safetensors" --weights f32 --threads 2 --summary \
    --dump "$tmp/dump"
contains "dump: 21 tensors"
for f in index.json embed.f32 q.0.f32 h.1.f32 final_norm.f32 logits.f32; do
    [ -f "$tmp/dump/$f" ] || bad "dump lacks $f"
done

# bench: one JSON object per thread count, with the issue's keys; the work
# figures follow from the shape (tiny-llama: 16 tokens of prefill, 4 of decode).
expect 0 "bench --threads 1,2 --json" -- "$bin" bench --synthetic tiny-llama --threads 1,2 \
    --pp 16 --tg 4 --reps 1 --json
if [ "$(grep -c '^{' "$tmp/out")" != 2 ]; then
    bad "bench --threads 1,2 printed $(grep -c '^{' "$tmp/out") objects, want 2"
fi
contains '"model": "tiny-llama", "weights": "q8", "threads": 1,'
contains '"threads": 2,'
contains '"prefill": {"tokens": 16, "tok_per_s": '
contains '"decode": {"tokens": 4, "tok_per_s": '
contains '"machine": {"read_gb_per_s": '
contains '"read_median_gb_per_s": '
contains '"ratio_to_median_read": '
contains '"amx_int8_gops": '
contains '"amx_int8_k32_gops": '
expect 0 "bench text output with scaling" -- "$bin" bench --synthetic tiny-llama --weights f16 \
    --threads 1,2 --pp 8 --tg 2 --reps 1
contains "model tiny-llama, weights f16"
contains "of fp32 peak"
contains "of the median pass)"
contains "scaling 1 -> 2 threads: prefill "
# --depth: one object per depth, the passes after that many tokens in the cache.
expect 0 "bench --depth 0,48 --json" -- "$bin" bench --synthetic tiny-llama --threads 1 --depth 0,48 \
    --pp 16 --tg 4 --reps 2 --json
if [ "$(grep -c '^{' "$tmp/out")" != 2 ]; then
    bad "bench --depth 0,48 printed $(grep -c '^{' "$tmp/out") objects, want 2"
fi
contains '"depth": 0}'
contains '"depth": 48}'
expect 0 "bench --depth text" -- "$bin" bench --synthetic tiny-llama --threads 1 --depth 32 --ring --pp 8 --tg 2 \
    --reps 2
contains "pp8     @ d32"
expect 2 "bench --depth -1" -- "$bin" bench --synthetic tiny-llama --depth -1
expect 2 "bench --threads -1" -- "$bin" bench --synthetic tiny-llama --threads -1
expect 2 "bench --pp 0" -- "$bin" bench --synthetic tiny-llama --pp 0
expect 1 "bench of an unknown synthetic shape" -- "$bin" bench --synthetic llama-9000b
grep -qF "llama-9000b" "$tmp/err" || bad "error does not name the shape"

data=$src/../shared/data/stories260K-hf
if [ -d "$data" ]; then
    expect 0 "perplexity stories260K f32" -- "$bin" perplexity --model "$data" \
        --file "$fx/perplexity/story.txt" --ctx 64 --weights f32 --threads 2
    contains "tokens      266 (5 windows of up to 64, 261 scored)"
    # Expected 3.2596073551982454 (tests/fixtures/perplexity/expected_stories260K_ctx64.json).
    contains "perplexity  3.2596"
    expect 0 "perplexity stories260K q8, default window" -- "$bin" perplexity --model "$data" \
        --file "$fx/perplexity/story.txt" --threads 2
    contains "(1 windows of up to 512"
    expect 2 "perplexity without --file" -- "$bin" perplexity --model "$data"
else
    echo "SKIPPED perplexity: $data is absent (shared model files)"
fi

finish cli-measure
