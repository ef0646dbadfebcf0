#!/usr/bin/env bash
# Sets everything up, builds, and runs the main job: `staticlm bench`, which
# builds a synthetic Llama-3.2-1B (q8, deterministic random weights of the real
# shapes), measures prefill (pp512) and decode (tg128), and prints tok/s with
# the ratio to this machine's ceilings measured in the same run.
# Arguments go to `staticlm bench`, e.g.
#   bash tools/bench.sh --synthetic gemma-4-e2b --threads 1 --json
#   bash tools/bench.sh --model DIR --weights f16
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
if [[ ! -f build/build.ninja ]]; then meson setup build --buildtype=release >/dev/null; fi
ninja -C build tools/staticlm >/dev/null
exec build/tools/staticlm bench "$@"
