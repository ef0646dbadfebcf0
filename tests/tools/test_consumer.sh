#!/usr/bin/env bash
# A meson project using staticlm as a subproject through dependency('staticlm')
# (tests/consumer/): staticlm built with -Dsentencepiece=disabled;
# a C program (no -fopenmp in its compile, only include/ visible) and a C++
# program (the C++ API from the archive) build and run.
# usage: test_consumer.sh SOURCE_DIR WORK_DIR
# WORK_DIR persists between runs (the first builds staticlm again; later runs
# only rebuild what changed).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
src=$(cd "$1" && pwd)
work=$2
data=$src/../shared/data
fx=$src/tests/fixtures/llama-tied

mkdir -p "$work/src/subprojects"
cp "$src"/tests/consumer/meson.build "$src"/tests/consumer/consumer.c "$src"/tests/consumer/consumer.cpp "$work/src/"
mkdir -p "$work/src/model"
cp "$src/tests/consumer/model/model.hpp" "$work/src/model/"
ln -sfn "$src" "$work/src/subprojects/staticlm"

if [[ ! -f "$work/build/build.ninja" ]]; then
    cc=cc cxx=c++
    if command -v ccache >/dev/null; then cc="ccache cc" cxx="ccache c++"; fi
    CC=$cc CXX=$cxx meson setup "$work/build" "$work/src" --buildtype=plain --force-fallback-for=staticlm \
        -Dstaticlm:sentencepiece=disabled -Dstaticlm:native=true \
        -Dstaticlm:tests=false -Dstaticlm:benchmarks=disabled >"$work/setup.log" 2>&1 || {
        echo "FAIL: meson setup of the consumer"; tail -30 "$work/setup.log"; exit 1; }
fi
ninja -C "$work/build" consumer_c consumer_cpp >"$work/build.log" 2>&1 || {
    echo "FAIL: building the consumer"; grep -E "error|Error" -A3 "$work/build.log" | head -40; exit 1; }

tok=$tmp
cp "$fx/config.json" "$fx/model.safetensors" "$tok/"
cp "$src/fuzz/corpus/tokenizer_json/bytelevel_bpe.json" "$tok/tokenizer.json"
sp_model=()
[[ -d "$data/stories260K-hf" ]] && sp_model=("$data/stories260K-hf")
"$work/build/consumer_c" "$fx" "$tok" "${sp_model[@]}" && ok || bad "consumer_c"
"$work/build/consumer_cpp" "$fx" && ok || bad "consumer_cpp"
# Only staticlm's include/ reaches the consumer's compiles.
if grep -E '"command".*consumer\.c' "$work/build/compile_commands.json" | grep -qE 'staticlm/(model|cache|kernels|tokenizer|runtime)/include|-fopenmp'; then
    bad "the consumer's C compile sees staticlm internals or -fopenmp"
fi
# As a subproject staticlm builds neither tests nor benchmarks (nor needs doctest).
if ninja -C "$work/build" -t targets all | grep -qE '(test_|bench_)[a-z_]+: '; then
    bad "the subproject defines test or benchmark targets"
fi
finish consumer
