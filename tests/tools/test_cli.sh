#!/usr/bin/env bash
# End-to-end checks of the staticlm CLI on the real stories260K model:
# exact greedy text, bucket settings, scripted chat, tokenize, exit codes.
# usage: test_cli.sh STATICLM SHARED_DATA_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bin=$1
data=$2
model="$data/stories260K-hf"
need "$model"
expected="$data/stories260K/expected_greedy_200.txt"

for buckets in "" "--prefill-buckets 1" "--append-buckets 3,5" "--prefill-buckets 2,7 --kv f32"; do
    # shellcheck disable=SC2086
    "$bin" generate --model "$model" --weights f32 --temp 0 --n-predict 200 --prompt "" $buckets \
        >"$tmp/out.txt" 2>"$tmp/err.txt"
    check "generate exact text [$buckets]" cmp -s "$tmp/out.txt" "$expected"
done
# The q8 KV cache generates; an unknown cache type is a usage error naming the choices.
"$bin" generate --model "$model" --weights f32 --temp 0 --n-predict 20 --prompt "Once" --kv q8 \
    >"$tmp/out.txt" 2>"$tmp/err.txt"
check "generate --kv q8 exit code" test $? -eq 0
check "generate --kv q8 prints text" test -s "$tmp/out.txt"
"$bin" generate --model "$model" --weights f32 --n-predict 1 --prompt "Once" --kv q4 >/dev/null 2>"$tmp/err.txt"
check "--kv q4 refused" grep -q "kv must be f16, f32 or q8, got 'q4'" "$tmp/err.txt"

# Scripted chat: one user turn per line, one reply per turn. The first reply to
# "Once upon a time" is the greedy continuation in reference.json.
printf 'Once upon a time\nThe dog ran\n' |
    "$bin" chat --model "$model" --weights f32 --temp 0 --n-predict 40 >"$tmp/chat.txt" 2>"$tmp/chat_err.txt"
check "chat exit code" test $? -eq 0
check "chat prints two replies" test "$(wc -l <"$tmp/chat.txt")" -eq 2
first=$(head -n 1 "$tmp/chat.txt")
check "chat first reply is the greedy continuation" \
    test "$first" = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball."
check "chat second reply is not empty" test -n "$(sed -n 2p "$tmp/chat.txt")"

check "tokenize" test "$("$bin" tokenize --model "$model" "Once upon a time")" = "403 407 261 378"
check "tokenize --add-special" \
    test "$("$bin" tokenize --model "$model" --add-special "Once upon a time")" = "1 403 407 261 378"

# tokenize reads only the tokenizer files: tokenizer.json (byte-level BPE,
# metaspace BPE) and tokenizer.model directories work; ids as the HF
# tokenizers / sentencepiece libraries give them.
check "tokenize llama3 tokenizer.json" \
    test "$("$bin" tokenize --model "$data/llama3-tokenizer" "Hello world")" = "9906 1917"
check "tokenize gemma3 tokenizer.json with BOS" \
    test "$("$bin" tokenize --model "$data/gemma3-tokenizer" --add-special "Hello world")" = "2 9259 1902"
check "tokenize llama2 tokenizer.model" \
    test "$("$bin" tokenize --model "$data/llama2-tokenizer" "Hello world")" = "15043 3186"

# --logprobs: one JSON line per token; the texts joined are the plain output,
# the greedy token is the top alternative, and the logprob is its top one's.
"$bin" generate --model "$model" --weights f32 --temp 0 --n-predict 12 --prompt "Once upon a time" \
    >"$tmp/plain.txt" 2>/dev/null
"$bin" generate --model "$model" --weights f32 --temp 0 --n-predict 12 --prompt "Once upon a time" --logprobs 3 \
    >"$tmp/lp.jsonl" 2>/dev/null
check "generate --logprobs exit code" test $? -eq 0
check "generate --logprobs: one line per token" test "$(wc -l <"$tmp/lp.jsonl")" -eq 12
check "generate --logprobs: texts join to the plain output" python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert "".join(r["text"] for r in rows) == open(sys.argv[2]).read()
for r in rows:
    assert len(r["top"]) == 3 and r["top"][0]["token"] == r["token"] and r["top"][0]["logprob"] == r["logprob"]
    assert r["logprob"] <= 0 and r["top"][0]["logprob"] >= r["top"][1]["logprob"] >= r["top"][2]["logprob"]
' "$tmp/lp.jsonl" "$tmp/plain.txt"
"$bin" generate --model "$model" --prompt x --logprobs 21 >/dev/null 2>"$tmp/lp_err.txt"
check "generate --logprobs 21 exits 2" test $? -eq 2
check "generate --logprobs 21 names the limit" grep -q "0..20" "$tmp/lp_err.txt"

"$bin" generate --model "$model" --bogus 1 >/dev/null 2>"$tmp/usage.txt"
check "unknown flag exits 2" test $? -eq 2
"$bin" generate --model "$tmp/no-such-dir" --prompt hi >/dev/null 2>"$tmp/err1.txt"
check "missing model exits 1" test $? -eq 1
check "missing model message names the directory" grep -q "no-such-dir" "$tmp/err1.txt"
check "runtime error is one line" test "$(wc -l <"$tmp/err1.txt")" -eq 1
"$bin" generate --model "$model" --prompt "Once upon a time there was" --max-seq 4 --prefill-buckets 2 --append-buckets 2 >/dev/null 2>"$tmp/err2.txt"
check "capacity error exits 1" test $? -eq 1
check "capacity message names the flag" grep -q -- "-c/--max-seq" "$tmp/err2.txt"
"$bin" info --model "$model" >"$tmp/info.txt" 2>&1
check "info prints the target" grep -q "^target" "$tmp/info.txt"

finish cli
