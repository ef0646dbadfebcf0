#!/usr/bin/env bash
# Sets everything up and runs every test: installs Debian packages, builds the
# release configuration and runs `meson test`. Ends with meson's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
if [[ ! -f build/build.ninja ]]; then meson setup build --buildtype=release >/dev/null; fi
ninja -C build >/dev/null
set +e
meson test -C build --print-errorlogs --num-processes 2 2>&1 | grep -v '^Full log written'
rc=${PIPESTATUS[0]}
exit "$rc"
