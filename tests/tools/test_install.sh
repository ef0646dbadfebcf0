#!/usr/bin/env bash
# `meson install` into a temporary prefix (DESTDIR), then what a user does with
# it: compile examples/generate.c (and batch.c) with plain cc and pkg-config (shared library),
# again against the static archive with `pkg-config --static`, run both, run the
# installed CLI. Also checks what is installed and what libstaticlm.so exports.
# usage: test_install.sh BUILD_DIR SOURCE_DIR [DEFAULT_LIBRARY]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
build=$1
src=$2
shared=1
[[ "${3:-shared}" == static ]] && shared=0
data=$src/../shared/data
dest=$tmp

meson install -C "$build" --no-rebuild --destdir "$dest" >"$dest/install.log" 2>&1 || {
    echo "FAIL: meson install"; tail -20 "$dest/install.log"; exit 1; }
pc=$(find "$dest" -name staticlm.pc | head -1)
[[ -n "$pc" ]] || { echo "FAIL: no staticlm.pc installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
prefix_bin=$(find "$dest" -path '*/bin/staticlm' -type f | head -1)
for f in include/staticlm/staticlm.h include/staticlm/session.hpp include/staticlm/generate.hpp share/doc/staticlm/LICENSE; do
    [[ -n "$(find "$dest" -path "*/$f")" ]] || bad "$f is not installed"
done
[[ -f "$libdir/libstaticlm.a" ]] || bad "libstaticlm.a is not installed"
[[ $shared == 0 || -f "$libdir/libstaticlm.so.1" ]] || bad "libstaticlm.so.1 is not installed"
[[ -n "$prefix_bin" ]] || bad "bin/staticlm is not installed"
# Internal headers stay private.
[[ -z "$(find "$dest" -path '*/include/*' -name 'graph.hpp')" ]] || bad "internal headers are installed"

# The shared library exports the C API only, versioned.
if [[ $shared == 1 ]]; then
exported=$(nm -D --defined-only "$libdir/libstaticlm.so.1" | awk '$2 ~ /^[TDBRWVui]$/ {sub(/@.*/, "", $3); print $3}')
[[ -z "$(grep -v '^slm_' <<<"$exported")" ]] || bad "libstaticlm.so exports more than slm_*: $(grep -v '^slm_' <<<"$exported" | head -5 | tr '\n' ' ')"
grep -q '^slm_generate$' <<<"$exported" || bad "slm_generate is not exported"
objdump -T "$libdir/libstaticlm.so.1" | grep -q 'STATICLM_1' || bad "symbols are not versioned STATICLM_1"
objdump -T "$libdir/libstaticlm.so.1" | grep -q 'STATICLM_2 *slm_batch_create$' || bad "slm_batch_create is not STATICLM_2"
fi

export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$dest
cflags=$(pkg-config --cflags staticlm) && libs=$(pkg-config --libs staticlm) || bad "pkg-config staticlm"
static_libs=$(pkg-config --static --libs-only-l staticlm)
grep -q -- '-lgomp' <<<"$static_libs$(pkg-config --static --libs staticlm)" && bad "-lgomp in pkg-config (staticlm has its own threads)"
grep -q -- '-lstdc++' <<<"$static_libs" || bad "pkg-config --static lacks -lstdc++: $static_libs"
grep -q -- '-fopenmp' <<<"$cflags" && bad "-fopenmp in the consumer's cflags"
grep -qE 'staticlm/(model|cache|kernels|tokenizer)' <<<"$cflags" && bad "internal include dirs in cflags: $cflags"

if [[ $shared == 1 ]]; then
    # shellcheck disable=SC2086
    cc -std=c11 -Wall -Wextra -Werror "$src/examples/generate.c" -o "$dest/generate" $cflags $libs ||
        bad "cc generate.c (shared)"
    # shellcheck disable=SC2086
    cc -std=c11 -Wall -Wextra -Werror "$src/examples/batch.c" -o "$dest/batch" $cflags $libs ||
        bad "cc batch.c (shared)"
fi
# shellcheck disable=SC2086
cc -std=c11 "$src/examples/generate.c" -o "$dest/generate_static" $cflags "$libdir/libstaticlm.a" \
    ${static_libs//-lstaticlm/} || bad "cc generate.c (static archive)"
if ldd "$dest/generate_static" 2>/dev/null | grep -q libstaticlm; then bad "the static build links libstaticlm.so"; fi

"$prefix_bin" --version | grep -q '^staticlm 0\.' || bad "installed staticlm --version"
model=$data/stories260K-hf
if [[ -d "$model" ]]; then
    want=$("$build/tools/staticlm" generate -m "$model" --weights f32 --temp 0 -n 24 -t 2 -p "Once upon a time" 2>/dev/null)
    if [[ $shared == 1 ]]; then
        got=$(LD_LIBRARY_PATH=$libdir "$dest/generate" "$model" "Once upon a time" 24 2>"$dest/err.txt")
        [[ "$got" == "$want" ]] || bad "example (shared) printed '$got', the CLI '$want'"
        grep -q "stop reason" "$dest/err.txt" || bad "example summary missing: $(cat "$dest/err.txt")"
    fi
    got=$("$dest/generate_static" "$model" "Once upon a time" 24 2>/dev/null)
    [[ "$got" == "$want" ]] || bad "example (static) printed '$got'"
else
    echo "SKIPPED running the example: $model is absent"
fi
finish install
