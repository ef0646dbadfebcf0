#!/usr/bin/env bash
# The docs and the code agree on the lists they both state:
# - the weight formats: include/staticlm/weight_formats.h (the one list in the
#   code: numbers in order, a folder kernels/formats/<name>/ each, and no
#   folder without a line) against docs/FORMATS.md's format table, docs/CLI.md's
#   --weights row, the README's --weights line and the C API's slm_weights;
# - family names (the `.name` of each descriptor in model/families/) appear as
#   string literals in no source file outside model/families/.
# usage: test_docs.sh SOURCE_DIR
set -u
src=$(cd "$1" && pwd)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
sorted() { tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' '; }

list="$src/include/staticlm/weight_formats.h"
# "N name SUFFIX" per X(number, name, suffix, "description") line, in file order.
entries=$(grep -oE '^ *X\([0-9]+, *[a-z0-9_]+, *[A-Z0-9_]+' "$list" | sed -E 's/^ *X\(//; s/, */ /g')
[[ -n "$entries" ]] || { echo "FAIL: no X(number, name, suffix, ...) lines in $list"; exit 1; }
code=$(awk '{print $2}' <<<"$entries" | tr '\n' ' ')
code_sorted=$(sorted <<<"$code")
echo "formats in the code: $code"

# The list is in number order from 0, and each C enum suffix is the name in capitals.
n=0
while read -r num name suffix; do
    [[ "$num" == "$n" ]] || fail "$list: $name has number $num, expected $n (append only, in order)"
    [[ "$suffix" == "$(tr 'a-z' 'A-Z' <<<"$name")" ]] || fail "$list: $name's C suffix is $suffix"
    [[ -f "$src/kernels/formats/$name/format.cpp" ]] || fail "$list: $name has no kernels/formats/$name/format.cpp"
    n=$((n + 1))
done <<<"$entries"

# docs/FORMATS.md's format table: rows "| N | `name` | ..." in the list's order.
docs=$(grep -oE '^\| [0-9]+ \| `[a-z0-9_]+` \|' "$src/docs/FORMATS.md" | sed -E 's/^\| ([0-9]+) \| `([a-z0-9_]+)` \|/\1 \2/')
[[ "$docs" == "$(awk '{print $1, $2}' <<<"$entries")" ]] ||
    fail "docs/FORMATS.md's format table lists '$(tr '\n' ' ' <<<"$docs")', the code '$(awk '{print $1, $2}' <<<"$entries" | tr '\n' ' ')'"

# A folder under kernels/formats/ is a listed format.
for dir in "$src"/kernels/formats/*/; do
    name=$(basename "$dir")
    grep -qw "$name" <<<"$code" || fail "kernels/formats/$name/ is not in $list"
done

# docs/CLI.md: the --weights row names each format in backquotes before "or `native`".
cli_row=$(grep -E '^\| `--weights TYPE`' "$src/docs/CLI.md" | sed 's/, or `native`.*//')
cli=$(grep -oE '`[a-z0-9_]+`' <<<"$cli_row" | tr -d '`' | tr '\n' ' ')
[[ "$(sorted <<<"$cli")" == "$code_sorted" ]] || fail "docs/CLI.md --weights lists '$cli', the code '$code'"

# README.md: --weights a|b|...|native.
readme=$(grep -oE -- '--weights [a-z0-9_|]+\|native' "$src/README.md" | head -1 | sed 's/--weights //; s/|native//' | tr '|' ' ')
[[ "$(sorted <<<"$readme")" == "$code_sorted" ]] || fail "README.md --weights lists '$readme', the code '$code'"

# The C API: slm_weights is generated from the list (SLM_WEIGHTS_<SUFFIX>).
grep -q 'STATICLM_WEIGHT_FORMAT_LIST(SLM_WEIGHTS_VALUE_)' "$src/include/staticlm/staticlm.h" ||
    fail "staticlm.h does not build slm_weights from $list"

# Family names stay in model/families/. Not checked: tokenizer/ (GGUF's
# tokenizer.ggml.model and .pre values such as "llama", "gemma4", "qwen2" name
# tokenizer kinds of the file format, not families) and bench/ (benchmarks
# named after the shared tokenizer files).
families=$(grep -ohE '^ *\.name = "[a-z0-9_]+"' "$src"/model/families/*.cpp | grep -oE '"[a-z0-9_]+"' |
           tr -d '"' | grep -v '^plain$' | sort -u | tr '\n' ' ')
echo "families: $families"
[[ -n "$families" ]] || fail "no family names found in model/families/*.cpp"
for name in $families; do
    # String literals in code (comment lines skipped) outside the family files.
    hits=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.c' "\"$name\"" \
               "$src"/base "$src"/kernels "$src"/cache "$src"/model "$src"/runtime \
               "$src"/tools "$src"/include 2>/dev/null |
           grep -v "^$src/model/families/" | sed -E 's#(//|/\*).*##' | grep -E "\"$name\"")
    [[ -z "$hits" ]] || fail "family name \"$name\" outside model/families/: $(head -3 <<<"$hits")"
done

echo "docs: $fails failures"
[[ $fails -eq 0 ]]
