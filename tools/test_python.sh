#!/usr/bin/env bash
# Tests the Python package (python/): a venv with pinned numpy/pytest
# (python/requirements-test.txt), `pip install ./python` with the library
# copied from the meson build directory (STATICLM_BUILD_DIR), then pytest.
#
#   bash tools/test_python.sh [BUILD_DIR]      # default: build
#
# The venv is kept in BUILD_DIR/python-venv (STATICLM_PY_VENV to choose) and
# reused while the pinned requirements are unchanged. When python3 -m venv is
# unavailable or pip cannot install the pinned packages (no network), it prints
# "test_python: SKIPPED: <why>" and exits 0 (exit 1 instead with
# STATICLM_PYTHON_REQUIRED=1). Otherwise its exit status is pytest's.
# The Gemma 3 270M tests use STATICLM_GEMMA3_GGUF or tools/get_model.sh's cache
# path, and skip with a message when the file is absent.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
VENV="${STATICLM_PY_VENV:-$BUILD/python-venv}"
PYTHON="${PYTHON:-python3}"
REQS=python/requirements-test.txt

skip() {
    echo "test_python: SKIPPED: $*" >&2
    [[ "${STATICLM_PYTHON_REQUIRED:-0}" == 1 ]] && exit 1
    exit 0
}
die() { echo "test_python: error: $*" >&2; exit 1; }

start=$SECONDS
command -v "$PYTHON" >/dev/null || skip "$PYTHON is not installed"
[[ -f "$BUILD/build.ninja" ]] || die "$BUILD is not a meson build directory (meson setup $BUILD --buildtype=release)"
ninja -C "$BUILD" libstaticlm.so.1.0.0 tools/staticlm >/dev/null ||
    die "ninja -C $BUILD libstaticlm.so.1.0.0 tools/staticlm failed"

stamp="$VENV/.staticlm-requirements"
want="$(sha256sum "$REQS" | cut -d' ' -f1) $("$PYTHON" -c 'import sys; print(sys.version.split()[0])')"
if [[ ! -x "$VENV/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" >/dev/null 2>&1 || { rm -rf "$VENV"; skip "'$PYTHON -m venv' is unavailable (Debian: apt-get install python3-venv)"; }
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQS" >&2 ||
        { rm -rf "$VENV"; skip "pip cannot install $REQS (no network or PyPI unreachable?)"; }
    echo "$want" >"$stamp"
fi
echo "test_python: venv $VENV ready ($((SECONDS - start)) s)" >&2

# The package as a user installs it, the library copied from $BUILD.
STATICLM_BUILD_DIR="$(cd "$BUILD" && pwd)" "$VENV/bin/python" -m pip install --disable-pip-version-check -q \
    --no-deps --force-reinstall ./python >&2 || die "pip install ./python failed"
echo "test_python: installed ($((SECONDS - start)) s)" >&2

# Run from the repository root with the venv's pytest: the installed package
# is imported, not python/staticlm (which has no library).
unset PYTHONPATH STATICLM_LIBRARY
STATICLM_CLI="$(cd "$BUILD" && pwd)/tools/staticlm" "$VENV/bin/pytest" -q python/tests
rc=$?
echo "test_python: pytest rc=$rc ($((SECONDS - start)) s)" >&2
exit "$rc"
