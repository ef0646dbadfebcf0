#!/usr/bin/env bash
# ABI check: programs built for C API 1 run against this library. Takes the
# v1 header, examples/generate.c and the v1 C API test from git (commit
# 90ba0a6, the last C API 1) and builds them as they were built then: compiled
# against that header and linked against a C API 1 libstaticlm.so.1 (a stub
# with the v1 header's names at version STATICLM_1, standing in for the old
# library); then runs them against the new libstaticlm.so.1 (LD_LIBRARY_PATH).
# Also checks the symbol versions: every v1 function is exported at
# STATICLM_1, the new ones at STATICLM_2, and the soname is unchanged.
# usage: test_c_api_v1.sh BUILD_DIR SOURCE_DIR [DEFAULT_LIBRARY]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
build=$1
src=$2
v1=90ba0a6
if [[ "${3:-shared}" == static ]]; then
    echo "SKIPPED: no shared library in a -Ddefault_library=static build"
    exit 77
fi
if ! git -C "$src" cat-file -e "$v1^{commit}" 2>/dev/null; then
    echo "SKIPPED: $src is not a git checkout holding commit $v1 (the C API 1 sources)"
    exit 77
fi
lib=$build/libstaticlm.so.1
[[ -f "$lib" ]] || { echo "FAIL: $lib is missing"; exit 1; }

mkdir -p "$tmp/include/staticlm"
git -C "$src" show "$v1:include/staticlm/staticlm.h" >"$tmp/include/staticlm/staticlm.h"
git -C "$src" show "$v1:examples/generate.c" >"$tmp/generate.c"
git -C "$src" show "$v1:tests/c_api/test_c_api.c" >"$tmp/test_c_api.c"
grep -q '^#define SLM_API_VERSION 1$' "$tmp/include/staticlm/staticlm.h" || bad "the $v1 header is not C API 1"

# Every function of the v1 header is exported at version STATICLM_1.
v1_names=$(grep -o '^SLM_API [^(]*(' "$tmp/include/staticlm/staticlm.h" | sed 's/.*[ *]\([a-z_0-9]*\)($/\1/' | sort)
[[ $(wc -l <<<"$v1_names") -ge 40 ]] || bad "found only $(wc -l <<<"$v1_names") functions in the v1 header"
exported=$(objdump -T "$lib" | awk '$NF ~ /^slm_/ && $4 != "*UND*" {v = $(NF-1); gsub(/[()]/, "", v); print v, $NF}')
for name in $v1_names; do
    grep -qx "STATICLM_1 $name" <<<"$exported" || bad "$name is not exported as STATICLM_1: $(grep " $name\$" <<<"$exported")"
done
grep -qx "STATICLM_2 slm_batch_create" <<<"$exported" || bad "slm_batch_create is not exported as STATICLM_2"
grep -qx "STATICLM_2 slm_score" <<<"$exported" || bad "slm_score is not exported as STATICLM_2"
grep -qx "STATICLM_3 slm_constraint_json_schema" <<<"$exported" || bad "slm_constraint_json_schema is not exported as STATICLM_3"
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
[[ "$soname" == libstaticlm.so.1 ]] || bad "soname is '$soname', not libstaticlm.so.1"

# The C API 1 library as a linker sees it: the v1 names, version STATICLM_1.
mkdir -p "$tmp/v1lib"
{ for name in $v1_names; do echo "void $name(void) {}"; done; } >"$tmp/v1lib/stub.c"
{ echo "STATICLM_1 { global:"; for name in $v1_names; do echo "  $name;"; done; echo "local: *; };"; } >"$tmp/v1lib/v1.map"
cc -shared -fPIC "$tmp/v1lib/stub.c" -o "$tmp/v1lib/libstaticlm.so.1" -Wl,-soname,libstaticlm.so.1 \
    -Wl,--version-script="$tmp/v1lib/v1.map" || bad "building the C API 1 stub library"
ln -s libstaticlm.so.1 "$tmp/v1lib/libstaticlm.so"

for prog in generate test_c_api; do
    cc -std=c11 -Wall -Wextra -I"$tmp/include" "$tmp/$prog.c" -o "$tmp/$prog" -L"$tmp/v1lib" -lstaticlm -lpthread \
        2>"$tmp/$prog.cc.txt" || { bad "cc $prog.c (v1 header)"; cat "$tmp/$prog.cc.txt"; continue; }
    # A v1 program needs STATICLM_1 symbols only.
    need=$(objdump -T "$tmp/$prog" | grep -o 'STATICLM_[0-9]*' | sort -u | tr '\n' ' ')
    [[ "$need" == "STATICLM_1 " ]] || bad "$prog needs symbol versions '$need', not only STATICLM_1"
done

export LD_LIBRARY_PATH=$build
# The v1 test suite, unchanged: every check passes but the one that compares
# the library's API version with the header's (2 vs 1, as intended).
if [[ -x "$tmp/test_c_api" ]]; then
    "$tmp/test_c_api" "$src" >"$tmp/out.txt" 2>"$tmp/err.txt"
    fails_v1=$(grep '^FAIL' "$tmp/err.txt")
    if [[ "$fails_v1" != *"slm_api_version() == SLM_API_VERSION"* || $(grep -c '^FAIL' "$tmp/err.txt") -ne 1 ]]; then
        bad "the v1 C API test against the new library:"
        cat "$tmp/err.txt"
    fi
    grep -q 'checks, 1 failed' "$tmp/out.txt" || bad "v1 test summary: $(tail -1 "$tmp/out.txt")"
    echo "v1 test_c_api: $(tail -1 "$tmp/out.txt") (the one expected: the API version is 2)"
fi

model=$src/../shared/data/stories260K-hf
if [[ ! -d "$model" ]]; then
    echo "SKIPPED running the v1 example: $model is absent"
elif [[ -x "$tmp/generate" ]]; then
    want=$("$build/tools/staticlm" generate -m "$model" --weights f32 --temp 0 -n 24 -t 2 -p "Once upon a time" 2>/dev/null)
    got=$("$tmp/generate" "$model" "Once upon a time" 24 2>"$tmp/gen.err")
    [[ -n "$want" && "$got" == "$want" ]] || bad "v1 example printed '$got', the CLI '$want' ($(cat "$tmp/gen.err"))"
    echo "v1 example: '$got'"
fi
finish c-api-v1
