#!/usr/bin/env bash
# The thread-safety contract of the C API (include/staticlm/staticlm.h) under
# ThreadSanitizer: configures build-tsan (-Db_sanitize=thread, kernels for
# this machine only, no benchmarks), builds libstaticlm.so and
# tests/test_c_threads, and runs it: threads sharing one model, each with its
# own session and batch; a second thread refused by a busy session and batch.
# Any TSan report fails the run (halt_on_error). Not part of tools/test.sh or
# CI: the build takes long (every source compiled again with TSan).
# usage: tools/tsan.sh [BUILD_DIR]   (default build-tsan; run from the source root)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-tsan}
if [[ ! -f "$dir/build.ninja" ]]; then
    meson setup "$dir" --buildtype=plain -Doptimization=1 -Dcpp_args=-g1 -Db_sanitize=thread -Db_lundef=false \
        -Dnative=true -Dbenchmarks=disabled >/dev/null
fi
start=$SECONDS
ninja -C "$dir" tests/test_c_threads
echo "tsan: built in $((SECONDS - start)) s"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" "$dir/tests/test_c_threads" "$PWD"
echo "tsan: test_c_threads passed without reports"
