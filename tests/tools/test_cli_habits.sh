#!/usr/bin/env bash
# The CLI habits of issues 17/18 on the real stories260K model: llama.cpp's
# short flags, usage errors for stray arguments and foreign flags, per-command
# --help, --version, defaults derived from the model, stop reasons, errors that
# name the flag, Ctrl-C in chat, prompt files (stdin, directories, devices,
# size limits), generation_config.json sampling defaults, tokenize --pieces.
# usage: test_cli_habits.sh STATICLM SOURCE_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bin=$1
src=$2
data=$src/../shared/data
M=$data/stories260K-hf
need "$M"
G=(generate -m "$M" --weights f32 -t 2)

# --- short flags (generate -m M -p ... -n 10 used to print 256 tokens from BOS) ---
run "long flags" 0 -- "$bin" generate --model "$M" --weights f32 --threads 2 --prompt "Once upon a time" \
    --n-predict 12 --temp 0
cp "$tmp/out" "$tmp/long.txt"
run "short flags -m -p -n -t -s" 0 -- "$bin" generate -m "$M" --weights f32 -t 2 -p "Once upon a time" -n 12 \
    --temp 0 -s 7
cmp -s "$tmp/out" "$tmp/long.txt" && ok || bad "short flags give other text: $(cat "$tmp/out")"
[[ "$(head -c 5 "$tmp/out")" == ", the" ]] && ok || bad "generate -p did not continue the prompt: $(cat "$tmp/out")"
has "$tmp/err" "generated 12 tokens" "-n 12"
run "-c and --ctx-size" 0 -- "$bin" "${G[@]}" -c 64 -p "Once" -n 4 --temp 0
run "--ctx-size" 0 -- "$bin" "${G[@]}" --ctx-size=64 -p "Once" -n 4 --temp 0
run "-f FILE" 0 -- "$bin" "${G[@]}" -f "$src/tests/fixtures/perplexity/story.txt" -n 4 --temp 0

# --- usage errors ---
run "stray positional" 2 -- "$bin" generate -m "$M" "Once upon a time"
has "$tmp/err" "takes no positional argument" "stray positional message"
has "$tmp/err" "-p TEXT" "stray positional hint"
run "generate --json" 2 -- "$bin" generate -m "$M" --json
has "$tmp/err" "generate does not take --json" "foreign flag message"
run "generate --pp 5" 2 -- "$bin" generate -m "$M" --pp 5
run "info --temp 3" 2 -- "$bin" info -m "$M" --temp 3
has "$tmp/err" "info does not take --temp" "info --temp message"
run "unknown short flag" 2 -- "$bin" generate -m "$M" -x 3
run "flag without its value" 2 -- "$bin" generate -m "$M" -n
run "both -p and -f" 2 -- "$bin" generate -m "$M" -p a -f "$src/README.md"

# --- help and version ---
for c in generate chat info tokenize bench verify perplexity; do
    run "$c --help" 0 -- "$bin" "$c" --help
    has "$tmp/out" "usage: staticlm $c" "$c --help usage"
done
run "generate -h" 0 -- "$bin" generate -h
has "$tmp/out" "-n, --n-predict N" "help lists short forms"
has "$tmp/out" "(default: 256)" "help shows defaults"
has "$tmp/out" "(default: min(2048, the model's trained context))" "help shows the max-seq default"
run "--version" 0 -- "$bin" --version
api=$(sed -nE 's/^#define SLM_API_VERSION ([0-9]+)$/\1/p' "$src/include/staticlm/staticlm.h")
grep -qE "^staticlm [0-9]+\.[0-9]+\.[0-9]+ \(C API $api," "$tmp/out" && ok || bad "--version (C API $api): $(cat "$tmp/out")"

# --- defaults derived from the model ---
run "info defaults" 0 -- "$bin" info -m "$M" -t 2
has "$tmp/out" "max_seq 512" "default max-seq = min(2048, max_position_embeddings 512)"
has "$tmp/out" "buckets      prefill 64,128,256,512, append 16,32,64" "default buckets"
run "--max-seq 64 alone" 0 -- "$bin" info -m "$M" -t 2 --max-seq 64
has "$tmp/out" "buckets      prefill 64, append 16,32,64" "buckets clamped to 64"
run "--max-seq 100" 0 -- "$bin" "${G[@]}" --max-seq 100 -p "Once" -n 3 --temp 0
run "-c above the trained context" 0 -- "$bin" info -m "$M" -t 2 -c 1024
has "$tmp/err" "exceeds the model's trained context (max_position_embeddings 512)" "warning past the trained context"
run "bucket above -c" 2 -- "$bin" info -m "$M" -c 32 --prefill-buckets 64
has "$tmp/err" "--prefill-buckets: block size 64 is larger than the capacity 32" "bucket error names the flag"

# --- stop reasons, -n -1, capacity errors naming the flag ---
run "-n -1 until the context is full" 0 -- "$bin" "${G[@]}" -p "Once upon a time" -n -1 -c 24 --temp 0 --ignore-eos
has "$tmp/err" "stopped: context full: 24 tokens (raise -c/--max-seq)" "context-full stop reason"
has "$tmp/err" "generated 20 tokens" "-n -1 generated up to the capacity"
run "stop reason -n" 0 -- "$bin" "${G[@]}" -p "Once" -n 3 --temp 0
has "$tmp/err" "stopped: -n 3 tokens generated" "max-tokens stop reason"
run "stop string" 0 -- "$bin" "${G[@]}" -p "Once upon a time" -n 50 --temp 0 --stop "Lily"
has "$tmp/err" "stopped: stop string" "stop-string stop reason"
run "prompt over -c" 1 -- "$bin" "${G[@]}" -p "Once upon a time there was a girl" -c 4
has "$tmp/err" "-c/--max-seq" "capacity error names the flag"
run "-n -2" 2 -- "$bin" "${G[@]}" -p "Once" -n -2
run "--threads 1000000" 2 -- "$bin" "${G[@]}" -p "Once" -t 1000000
has "$tmp/err" "is more than 4 x the" "threads cap message"
has "$tmp/err" "at most" "threads cap states the limit"
run "--threads 1000000 (bench)" 2 -- "$bin" bench --synthetic tiny-llama -t 1,1000000
run "--top-p 0" 2 -- "$bin" "${G[@]}" -p "Once" --top-p 0
has "$tmp/err" "--top-p must be in (0, 1]" "top-p names the flag"
run "--repeat-penalty 0" 2 -- "$bin" "${G[@]}" -p "Once" --repeat-penalty 0
run "--temp nan" 2 -- "$bin" "${G[@]}" -p "Once" --temp nan
# --temp 1e-40: 1/T overflowed and the sampler returned the 40th-ranked token; now greedy.
run "--temp 0" 0 -- "$bin" "${G[@]}" -p "Once upon a time" -n 20 --temp 0
cp "$tmp/out" "$tmp/greedy.txt"
run "--temp 1e-40" 0 -- "$bin" "${G[@]}" -p "Once upon a time" -n 20 --temp 1e-40
cmp -s "$tmp/out" "$tmp/greedy.txt" && ok || bad "--temp 1e-40 is not greedy: $(cat "$tmp/out")"

# --- model paths ---
run "--model a .safetensors file" 1 -- "$bin" info -m "$M/model.safetensors"
has "$tmp/err" "is a file; give the model directory that holds it ($M" "safetensors file message"
run "--model x.gguf" 1 -- "$bin" info -m "$tmp/x.gguf"
has "$tmp/err" "x.gguf: cannot open" "gguf message"

# --- prompt files ---
printf 'Once upon a time' >"$tmp/prompt.txt"
run "-f - reads stdin" 0 -- "$bin" "${G[@]}" -f - -n 12 --temp 0 <"$tmp/prompt.txt"
cmp -s "$tmp/out" "$tmp/long.txt" && ok || bad "-f - gave other text: $(cat "$tmp/out")"
run "-f DIR" 1 -- "$bin" "${G[@]}" -f "$tmp" -n 3
has "$tmp/err" "is a directory" "-f DIR message"
ln -s /dev/zero "$tmp/zero.txt"
start=$SECONDS
run "-f symlink to /dev/zero" 1 -- timeout 20 "$bin" "${G[@]}" -f "$tmp/zero.txt" -n 3
has "$tmp/err" "not a regular file" "-f /dev/zero message"
run "perplexity -f symlink to /dev/zero" 1 -- timeout 20 "$bin" perplexity -m "$M" -t 2 -f "$tmp/zero.txt"
has "$tmp/err" "not a regular file" "perplexity /dev/zero message"
truncate -s 70M "$tmp/huge.txt"
run "-f over 64 MiB" 1 -- "$bin" "${G[@]}" -f "$tmp/huge.txt" -n 3
has "$tmp/err" "more than the limit of 67108864 bytes (64 MiB)" "size limit stated"
# A 10 MB prompt: refused before tokenizing (it took 20-29 s and 809 MB).
head -c 10000000 /dev/zero | tr '\0' 'a' >"$tmp/10mb.txt"
start=$SECONDS
run "10 MB prompt" 1 -- "$bin" "${G[@]}" -f "$tmp/10mb.txt" -n 3
has "$tmp/err" "the prompt is 10000000 bytes: it cannot fit" "10 MB prompt message"
(( SECONDS - start < 10 )) && ok || bad "10 MB prompt took $((SECONDS - start)) s"
# ... and a 10 MB chat line (1.3 GB before).
start=$SECONDS
run "10 MB chat line" 1 -- "$bin" chat -m "$M" --weights f32 -t 2 <"$tmp/10mb.txt"
has "$tmp/err" "this turn is 10000000 bytes: it cannot fit" "10 MB chat line message"
(( SECONDS - start < 10 )) && ok || bad "10 MB chat line took $((SECONDS - start)) s"

# --- final newline on a terminal only ---
run "piped output has no added newline" 0 -- "$bin" "${G[@]}" -p "Once" -n 3 --temp 0
[[ "$(tail -c 1 "$tmp/out" | od -An -c | tr -d ' ')" != '\n' ]] && ok || bad "a pipe got a final newline"
if command -v script >/dev/null; then
    script -qec "$bin generate -m $M --weights f32 -t 2 -p Once -n 3 --temp 0 2>/dev/null" /dev/null >"$tmp/tty.txt"
    [[ "$(tail -c 2 "$tmp/tty.txt" | od -An -c | tr -d ' ')" == '\r\n' ]] && ok || bad "no final newline on a terminal: $(od -c "$tmp/tty.txt" | tail -3)"
fi

# --- sampling defaults from generation_config.json ---
mkdir "$tmp/gen"
cp "$M"/* "$tmp/gen/"
printf '{"bos_token_id": 1, "eos_token_id": 2, "do_sample": true, "temperature": 0.6, "top_p": 0.9, "top_k": 7}' \
    >"$tmp/gen/generation_config.json"
run "info shows generation_config sampling" 0 -- "$bin" info -m "$tmp/gen" -t 2
has "$tmp/out" "sampling     temp 0.6, top-k 7, top-p 0.9" "generation_config sampling in info"
printf '{"bos_token_id": 1, "eos_token_id": 2, "do_sample": false}' >"$tmp/gen/generation_config.json"
run "do_sample false is greedy" 0 -- "$bin" generate -m "$tmp/gen" --weights f32 -t 2 -p "Once upon a time" -n 20
cmp -s "$tmp/out" "$tmp/greedy.txt" && ok || bad "do_sample false did not sample greedily: $(cat "$tmp/out")"

# --- tokenize --pieces and stdin ---
run "tokenize --pieces" 0 -- "$bin" tokenize -m "$M" --pieces "Once upon a time"
has "$tmp/out" "407 -> '▁upon'" "tokenize --pieces"
[[ $(wc -l <"$tmp/out") == 4 ]] && ok || bad "tokenize --pieces printed $(wc -l <"$tmp/out") lines"
run "tokenize stdin" 0 -- "$bin" tokenize -m "$M" <"$tmp/prompt.txt"
has "$tmp/out" "403 407 261 378" "tokenize reads stdin"

# --- perplexity on a model whose config says max_position_embeddings 1 ---
mkdir "$tmp/pos1"
cp "$M"/* "$tmp/pos1/"
sed -i 's/"max_position_embeddings": 512/"max_position_embeddings": 1/' "$tmp/pos1/config.json"
# (config.json now refuses max_position_embeddings < 2 itself; either way the
# message is about the config, not about a --ctx the user never gave.)
run "perplexity with max_position_embeddings 1" 1 -- "$bin" perplexity -m "$tmp/pos1" -t 2 -f "$tmp/prompt.txt"
has "$tmp/err" "max_position_embeddings" "perplexity names the config key"
if grep -q "ctx must be" "$tmp/err"; then bad "perplexity complains about a --ctx never given"; else ok; fi

# --- Ctrl-C in chat stops the reply, not the process ---
mkfifo "$tmp/in"
"$bin" chat -m "$M" --weights f32 -t 1 -c 1500 -n -1 --ignore-eos --temp 0 \
    <"$tmp/in" >"$tmp/chat.txt" 2>"$tmp/chat_err.txt" &
pid=$!
exec 3>"$tmp/in"
echo "Once upon a time" >&3
for _ in $(seq 200); do [[ -s "$tmp/chat.txt" ]] && break; sleep 0.05; done
kill -STOP "$pid" 2>/dev/null
kill -INT "$pid" 2>/dev/null
kill -CONT "$pid" 2>/dev/null
sleep 0.5
if kill -0 "$pid" 2>/dev/null; then ok; else bad "chat exited on the first Ctrl-C"; fi
echo "The dog ran" >&3
exec 3>&-
wait "$pid"
rc=$?
[[ $rc == 0 ]] && ok || bad "chat exit $rc after a stopped reply"
has "$tmp/chat_err.txt" "reply stopped: interrupted (Ctrl-C)" "Ctrl-C stop reason"
[[ $(wc -l <"$tmp/chat.txt") -ge 2 ]] && ok || bad "chat did not answer the turn after Ctrl-C"
# A Ctrl-C while waiting for input ends chat.
mkfifo "$tmp/in2"
"$bin" chat -m "$M" -t 1 <"$tmp/in2" >/dev/null 2>&1 &
pid=$!
exec 4>"$tmp/in2"
sleep 1
kill -INT "$pid"
wait "$pid"
rc=$?
exec 4>&-
[[ $rc == 130 ]] && ok || bad "Ctrl-C at the chat prompt: exit $rc, want 130"

finish cli-habits
