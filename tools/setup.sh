#!/usr/bin/env bash
# Installs what building and testing staticlm needs, from Debian packages only.
# Idempotent and quiet when everything is already there. Run as root (or with sudo).
set -euo pipefail

packages=(g++ meson ninja-build pkg-config libxsimd-dev libsentencepiece-dev
          libbenchmark-dev doctest-dev nlohmann-json3-dev)
# Sanitizer and fuzzing builds use clang's runtime when present (optional).
if [[ "${STATICLM_WITH_CLANG:-0}" == 1 ]]; then packages+=(clang libclang-rt-14-dev); fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
