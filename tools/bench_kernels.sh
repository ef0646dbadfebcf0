#!/usr/bin/env bash
# Sets everything up, builds, and runs the kernel benchmark lab: machine
# ceilings first, then every kernel at real model shapes with its ratio to
# them, then a headline summary. Arguments go to bench_kernels, e.g.
#   bash tools/bench_kernels.sh --threads 1 --benchmark_filter='matmul/q8'
#   bash tools/bench_kernels.sh --quick          # small subset, seconds
#   bash tools/bench_kernels.sh --ceilings-only
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
if [[ ! -f build/build.ninja ]]; then meson setup build --buildtype=release >/dev/null; fi
# A build dir configured before libbenchmark-dev was installed has no bench target.
if ! ninja -C build -t targets all 2>/dev/null | grep -q '^bench/bench_kernels:'; then
    meson setup --reconfigure build >/dev/null
fi
ninja -C build bench/bench_kernels >/dev/null
# 0.2 s per benchmark keeps the full run to a few minutes; a later
# --benchmark_min_time on the command line wins.
exec build/bench/bench_kernels --benchmark_min_time=0.2 "$@"
