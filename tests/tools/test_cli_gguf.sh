#!/usr/bin/env bash
# The CLI on GGUF files: `generate -m FILE.gguf -p ... -n N` prints text,
# `info -m FILE.gguf` prints the metadata summary and the model, `tokenize`
# reads the file's vocabulary, bad files fail with one line and exit 1. On the
# committed twin tests/fixtures/gguf/llama-tied.gguf always, on the real
# Gemma 3 270M (~/.cache/staticlm, tools/get_model.sh) when it is there.
# usage: test_cli_gguf.sh STATICLM SOURCE_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bin=$1
src=$2

twin=$src/tests/fixtures/gguf/llama-tied.gguf
"$bin" generate -m "$twin" -p "ab" -n 8 --temp 0 --weights f32 >"$tmp/gen.txt" 2>"$tmp/gen_err.txt"
check "twin: generate exit code" test $? -eq 0
check "twin: generate printed text" test -s "$tmp/gen.txt"
check "twin: timing line on stderr" grep -q "generated" "$tmp/gen_err.txt"
"$bin" info -m "$twin" >"$tmp/info.txt" 2>&1
check "twin: info exit code" test $? -eq 0
check "twin: info prints the GGUF summary" grep -q "general.architecture" "$tmp/info.txt"
check "twin: info prints the tensor types" grep -q "^tensors: 20" "$tmp/info.txt"
check "twin: info prints the model" grep -q "^model        llama (llama)" "$tmp/info.txt"
check "twin: tokenize" test -n "$("$bin" tokenize -m "$twin" "ab")"

q40=$src/tests/fixtures/gguf/llama-tied.q4_0.gguf
"$bin" info -m "$q40" --weights native >"$tmp/native.txt" 2>&1
check "q4_0 twin: --weights native exit code" test $? -eq 0
check "q4_0 twin: native weights, their types named" grep -q "^weights      native (q8, q4), " "$tmp/native.txt"
check "q4_0 twin: 14 q4 matrices at 0.5625 bytes/weight" grep -q "^  q4 *14 matrices, .* 0.5625 bytes/weight" "$tmp/native.txt"
check "q4_0 twin: the Q8_0 embedding as q8" grep -q "^  q8 *1 matrices, .* 1.0625 bytes/weight" "$tmp/native.txt"
"$bin" generate -m "$q40" -p "ab" -n 4 --temp 0 --weights native >"$tmp/native_gen.txt" 2>&1
check "q4_0 twin: generate with native weights" test $? -eq 0
"$bin" bench -m "$q40" --weights native -t 1 --pp 4 --tg 2 --reps 1 >"$tmp/bench_native.txt" 2>&1
check "q4_0 twin: bench names the native types" grep -q "^model .*, weights native (q8, q4), [0-9.]* MiB, target " "$tmp/bench_native.txt"
# A path with a quote and a backslash stays one JSON string.
odd="$tmp/a\"b\\c.gguf"
cp "$q40" "$odd"
"$bin" bench -m "$odd" -t 1 --pp 4 --tg 2 --reps 1 --json >"$tmp/bench_odd.txt" 2>&1
check "bench --json escapes the model path" grep -qF '"model": "'"$tmp"'/a\"b\\c.gguf", "weights": "native (q8, q4)"' "$tmp/bench_odd.txt"
# Prefill work: the twin's layers per position (2 × (4·64·64 + 3·160·64) =
# 94208 multiply-adds), its tied head once per pass (256·64 = 16384, the last
# position's logits): 2 × (4 × 94208 + 16384) / 4 = 196608 ops per token.
ops=$(sed -n 's/.*"tok_per_s": \([0-9.]*\), "tok_per_s_sd": [0-9.]*, "gops": \([0-9.]*\),.*/\2e9 \/ \1/p' "$tmp/bench_odd.txt" | head -1)
check "bench: prefill ops per token count the head once per pass" \
    awk "BEGIN { r = ($ops) / 196608; exit !(r > 0.999 && r < 1.001) }"
# A native mix of int8 and float formats (this Qwen2 twin keeps two F16
# matrices) is held to both peaks, each format's work at its own.
"$bin" bench -m "$src/tests/fixtures/gguf/qwen2-tied.q8_0.gguf" -t 1 --pp 4 --tg 2 --reps 1 --json >"$tmp/bench_mix.txt" 2>&1
check "bench: a q8 + f16 mix names both peaks" grep -qE '"peak": "(AMX )?int8 \+ fp32"' "$tmp/bench_mix.txt"
"$bin" bench --synthetic llama-3.2-1b --weights native >"$tmp/syn.txt" 2>&1
check "native with --synthetic: usage error (exit 2)" test $? -eq 2
check "native with --synthetic: says it needs -m" grep -q "native keeps a file's formats: it needs -m FILE" "$tmp/syn.txt"
# The fuzz seed of the four low-bit GGUF types (tools/fixtures/make_fuzz_gguf_lowbit.py):
# every matrix stays in its type, and the model runs.
lowbit=$src/fuzz/corpus/gguf/tiny_llama_lowbit.gguf
"$bin" info -m "$lowbit" >"$tmp/lowbit.txt" 2>&1
check "low-bit seed: info names the four native types" grep -q "^weights      native (iq4nl, q3k, iq4xs, q2k), " "$tmp/lowbit.txt"
"$bin" generate -m "$lowbit" -p "ab" -n 4 --temp 0 >"$tmp/lowbit_gen.txt" 2>&1
check "low-bit seed: generate exit code" test $? -eq 0
"$bin" info -m "$q40" --weights q3 >"$tmp/q3.txt" 2>&1
check "--weights q3: usage error naming the choices" grep -q "must be q8, f16, bf16, f32, q4, q5, q4k, q6k, q5k, q4a, q5a, iq4nl, q3k, iq4xs, q2k, or native, got 'q3'" "$tmp/q3.txt"

# IQ4_NL: every matrix (the tied embedding too) kept at the file's 4.5 bits.
iq4=$src/tests/fixtures/gguf/llama-tied.iq4_nl.gguf
"$bin" info -m "$iq4" >"$tmp/iq4.txt" 2>&1
check "iq4_nl twin: info exit code" test $? -eq 0
check "iq4_nl twin: 15 iq4nl matrices at 0.5625 bytes/weight" grep -q "^  iq4nl *15 matrices, .* 0.5625 bytes/weight" "$tmp/iq4.txt"
"$bin" generate -m "$iq4" -p "ab" -n 4 --temp 0 >"$tmp/iq4_gen.txt" 2>&1
check "iq4_nl twin: generate with native weights" test $? -eq 0

# Without --weights a GGUF file keeps its own formats (native).
q50=$src/tests/fixtures/gguf/llama-tied.q5_0.gguf
"$bin" info -m "$q50" >"$tmp/q50.txt" 2>&1
check "q5_0 twin: native by default" grep -q "^weights      native" "$tmp/q50.txt"
check "q5_0 twin: 14 q5 matrices at 0.6875 bytes/weight" grep -q "^  q5 *14 matrices, .* 0.6875 bytes/weight" "$tmp/q50.txt"
"$bin" info -m "$q50" --weights q8 >"$tmp/q50_q8.txt" 2>&1
check "q5_0 twin: --weights q8 still converts" grep -q "^weights      q8," "$tmp/q50_q8.txt"
for w in native q5 q8; do
    "$bin" generate -m "$q50" -p "ab" -n 8 --temp 0 --weights $w >"$tmp/q50_$w.txt" 2>/dev/null
    check "q5_0 twin: generate --weights $w exit code" test $? -eq 0
    check "q5_0 twin: generate --weights $w printed text" test -s "$tmp/q50_$w.txt"
done
check "q5_0 twin: native, q5 and q8 generate the same text" \
    bash -c "cmp -s '$tmp/q50_native.txt' '$tmp/q50_q5.txt' && cmp -s '$tmp/q50_native.txt' '$tmp/q50_q8.txt'"
"$bin" info -m "$q50" --act-bits 16 >"$tmp/q50_a16.txt" 2>&1
check "q5_0 twin: --act-bits 16 shown by info" grep -q "^weights      native (.*), .* 16-bit activations" "$tmp/q50_a16.txt"
"$bin" generate -m "$q50" -p "ab" -n 8 --temp 0 --act-bits 16 >"$tmp/q50_gen16.txt" 2>/dev/null
check "q5_0 twin: generate --act-bits 16 printed text" test -s "$tmp/q50_gen16.txt"
"$bin" info -m "$q50" --act-bits 12 >"$tmp/q50_a12.txt" 2>&1
check "--act-bits 12: usage error (exit 2)" test $? -eq 2
check "--act-bits 12: says 8 or 16" grep -q -- "--act-bits must be 8 or 16, got 12" "$tmp/q50_a12.txt"

printf 'GGUF\003\000\000\000garbage' >"$tmp/bad.gguf"
"$bin" generate -m "$tmp/bad.gguf" -p x >"$tmp/bad_out.txt" 2>"$tmp/bad_err.txt"
check "bad file: exit 1" test $? -eq 1
check "bad file: one error line naming the file" grep -q "^staticlm: error: .*bad.gguf" "$tmp/bad_err.txt"

real=${STATICLM_GEMMA3_GGUF:-$HOME/.cache/staticlm/gemma-3-270m-q4_k_m.gguf}
if [[ -f "$real" ]]; then
    "$bin" generate -m "$real" -p "The capital of France is" -n 32 --temp 0 >"$tmp/g3.txt" 2>"$tmp/g3_err.txt"
    check "gemma3-270m: generate exit code" test $? -eq 0
    check "gemma3-270m: generate names the city" grep -q "France" "$tmp/g3.txt"
    "$bin" info -m "$real" --max-seq 1024 >"$tmp/g3_info.txt" 2>&1
    check "gemma3-270m: info summary" grep -q '"gemma3.block_count" *UINT32 *18' "$tmp/g3_info.txt"
    check "gemma3-270m: info histogram" grep -q "^  Q4_K *27" "$tmp/g3_info.txt"
    check "gemma3-270m: info model" grep -q "^sliding      15 layers" "$tmp/g3_info.txt"
    check "gemma3-270m: tokenize" test "$("$bin" tokenize -m "$real" --add-special "Hello world")" = "2 9259 1902"
else
    echo "SKIPPED (gemma3-270m part): $real is absent; run tools/get_model.sh"
fi

finish cli-gguf
