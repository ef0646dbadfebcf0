#!/usr/bin/env bash
# The docs and the code agree on the lists they both state:
# - the weight formats: kernels/include/kernels/formats/list.hpp (the one list in
#   the code) against docs/FORMATS.md, docs/CLI.md's --weights row, the
#   README's --weights line and the C API's slm_weights names;
# - family names (the `.name` of each descriptor in model/families/) appear as
#   string literals in no source file outside model/families/.
# usage: test_docs.sh SOURCE_DIR
set -u
src=$(cd "$1" && pwd)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
sorted() { tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' '; }

list_line=$(grep -E '^#define STATICLM_WEIGHT_FORMATS\(X\)' "$src/kernels/include/kernels/formats/list.hpp")
[[ -n "$list_line" ]] || { echo "FAIL: no STATICLM_WEIGHT_FORMATS in list.hpp"; exit 1; }
x_list=$(grep -oE 'X\([a-z0-9_]+\)( X\([a-z0-9_]+\))*' <<<"$list_line")
code=$(grep -oE '\(([a-z0-9_]+)\)' <<<"$x_list" | tr -d '()' | tr '\n' ' ')
code_sorted=$(sorted <<<"$code")
echo "formats in the code: $code"

# docs/FORMATS.md quotes the list as it is, in number order.
grep -qF "$x_list" "$src/docs/FORMATS.md" || fail "docs/FORMATS.md does not quote the format list '$x_list'"

# docs/CLI.md: the --weights row names each format in backquotes before "or `native`".
cli_row=$(grep -E '^\| `--weights TYPE`' "$src/docs/CLI.md" | sed 's/, or `native`.*//')
cli=$(grep -oE '`[a-z0-9_]+`' <<<"$cli_row" | tr -d '`' | tr '\n' ' ')
[[ "$(sorted <<<"$cli")" == "$code_sorted" ]] || fail "docs/CLI.md --weights lists '$cli', the code '$code'"

# README.md: --weights a|b|...|native.
readme=$(grep -oE -- '--weights [a-z0-9_|]+\|native' "$src/README.md" | head -1 | sed 's/--weights //; s/|native//' | tr '|' ' ')
[[ "$(sorted <<<"$readme")" == "$code_sorted" ]] || fail "README.md --weights lists '$readme', the code '$code'"

# The C API: an SLM_WEIGHTS_<NAME> per format, and the names slm_weights_from_name takes.
capi=$(grep -oE 'SLM_WEIGHTS_[A-Z0-9_]+ *=' "$src/include/staticlm/staticlm.h" | grep -v NATIVE |
       sed 's/SLM_WEIGHTS_//; s/ *=//' | tr 'A-Z' 'a-z' | tr '\n' ' ')
[[ "$(sorted <<<"$capi")" == "$code_sorted" ]] || fail "staticlm.h has SLM_WEIGHTS_ for '$capi', the code '$code'"
names_comment=$(sed -n '/Weight formats by name/,/-1 for a name/p' "$src/include/staticlm/staticlm.h")
capi_names=$(grep -oE '"[a-z0-9_]+"' <<<"$names_comment" | tr -d '"' | grep -v '^native$' | tr '\n' ' ')
[[ "$(sorted <<<"$capi_names")" == "$code_sorted" ]] ||
    fail "staticlm.h's slm_weights_from_name comment names '$capi_names', the code '$code'"

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
