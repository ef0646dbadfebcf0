#!/usr/bin/env bash
# The docs and the code agree on the lists they both state:
# - the weight formats: include/staticlm/weight_formats.h (the one list in the
#   code: numbers in order, a folder kernels/formats/<name>/ each, and no
#   folder without a line) against docs/FORMATS.md's format table, docs/CLI.md's
#   --weights row, the README's --weights line and the C API's slm_weights;
# - family names (the `.name` of each descriptor in model/families/) appear as
#   string literals in no source file outside model/families/;
# - every file path written in backquotes in docs/ARCHITECTURE.md and
#   docs/FAMILIES.md, and every docs/*.md they cite, exists;
# - docs/FAMILIES.md names every file of model/families/, every family and
#   chat-template name, every config.json architecture, every synthetic shape
#   (ARCHITECTURE.md too), and the GGUF architectures of the code (that list
#   also in docs/CLI.md and README.md);
# - docs/ARCHITECTURE.md names every fuzz target (and no other), every test of
#   meson.build in "The tests" (and no other), the tests of the suite
#   'sanitize', every test executable, public header and source file of the
#   folders it describes (kernels/ apart: docs/FORMATS.md covers its formats);
# - docs/CLI.md has a synopsis line and a section for every staticlm command
#   (tools/cli/commands.cpp, command_names()) and no other command.
# usage: test_docs.sh SOURCE_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
src=$(cd "$1" && pwd)
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
    [[ "$num" == "$n" ]] || bad "$list: $name has number $num, expected $n (append only, in order)"
    [[ "$suffix" == "$(tr 'a-z' 'A-Z' <<<"$name")" ]] || bad "$list: $name's C suffix is $suffix"
    [[ -f "$src/kernels/formats/$name/format.cpp" ]] || bad "$list: $name has no kernels/formats/$name/format.cpp"
    n=$((n + 1))
done <<<"$entries"

# docs/FORMATS.md's format table: rows "| N | `name` | ..." in the list's order.
docs=$(grep -oE '^\| [0-9]+ \| `[a-z0-9_]+` \|' "$src/docs/FORMATS.md" | sed -E 's/^\| ([0-9]+) \| `([a-z0-9_]+)` \|/\1 \2/')
[[ "$docs" == "$(awk '{print $1, $2}' <<<"$entries")" ]] ||
    bad "docs/FORMATS.md's format table lists '$(tr '\n' ' ' <<<"$docs")', the code '$(awk '{print $1, $2}' <<<"$entries" | tr '\n' ' ')'"

# A folder under kernels/formats/ is a listed format.
for dir in "$src"/kernels/formats/*/; do
    name=$(basename "$dir")
    grep -qw "$name" <<<"$code" || bad "kernels/formats/$name/ is not in $list"
done

# docs/CLI.md: the --weights row names each format in backquotes before "or `native`".
cli_row=$(grep -E '^\| `--weights TYPE`' "$src/docs/CLI.md" | sed 's/, or `native`.*//')
cli=$(grep -oE '`[a-z0-9_]+`' <<<"$cli_row" | tr -d '`' | tr '\n' ' ')
[[ "$(sorted <<<"$cli")" == "$code_sorted" ]] || bad "docs/CLI.md --weights lists '$cli', the code '$code'"

# README.md: --weights a|b|...|native.
readme=$(grep -oE -- '--weights [a-z0-9_|]+\|native' "$src/README.md" | head -1 | sed 's/--weights //; s/|native//' | tr '|' ' ')
[[ "$(sorted <<<"$readme")" == "$code_sorted" ]] || bad "README.md --weights lists '$readme', the code '$code'"

# The C API: slm_weights is generated from the list (SLM_WEIGHTS_<SUFFIX>).
grep -q 'STATICLM_WEIGHT_FORMAT_LIST(SLM_WEIGHTS_VALUE_)' "$src/include/staticlm/staticlm.h" ||
    bad "staticlm.h does not build slm_weights from $list"

# Family names stay in model/families/. Not checked: tokenizer/ (GGUF's
# tokenizer.ggml.model and .pre values such as "llama", "gemma4", "qwen2" name
# tokenizer kinds of the file format, not families) and bench/ (benchmarks
# named after the shared tokenizer files).
families=$(grep -ohE '^ *\.name = "[a-z0-9_]+"' "$src"/model/families/*.cpp | grep -oE '"[a-z0-9_]+"' |
           tr -d '"' | grep -v '^plain$' | sort -u | tr '\n' ' ')
echo "families: $families"
[[ -n "$families" ]] || bad "no family names found in model/families/*.cpp"
for name in $families; do
    # String literals in code (comment lines skipped) outside the family files.
    hits=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.c' "\"$name\"" \
               "$src"/base "$src"/kernels "$src"/cache "$src"/model "$src"/runtime \
               "$src"/tools "$src"/include 2>/dev/null |
           grep -v "^$src/model/families/" | sed -E 's#(//|/\*).*##' | grep -E "\"$name\"")
    [[ -z "$hits" ]] || bad "family name \"$name\" outside model/families/: $(head -3 <<<"$hits")"
done


# ---------------------------------------------------------------------------
# What the docs name, against the files and lists of the code.
arch="$src/docs/ARCHITECTURE.md"
fam="$src/docs/FAMILIES.md"
cli_doc="$src/docs/CLI.md"

# The repository's files, relative to its root (git's list when there is one,
# with new files not yet added; else every file outside build directories).
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    repo_files=$(git -C "$src" ls-files --cached --others --exclude-standard)
else
    repo_files=$(cd "$src" && find . -path './build*' -prune -o -path './.git' -prune -o \
                     -path './subprojects' -prune -o -type f -print | sed 's#^\./##')
fi

# The backquoted spans of a markdown file, one per line, fenced code blocks
# left out (a span may wrap across lines).
spans() { awk '/^```/ { fence = !fence; next } !fence' "$1" | tr '\n' ' ' | grep -oE '`[^`]+`' | tr -d '`'; }
arch_spans=$(spans "$arch")
fam_spans=$(spans "$fam")
# The backquoted names of lines that start a list item ("- `a`, `b`: ...").
item_names() { grep -E '^- `' | sed -E 's/^- ((`[^`]+`(, | and )?)+):.*/\1/' | grep -oE '`[^`]+`' | tr -d '`'; }
# Lines of a markdown file between "## TITLE" and the next "## ".
section() { awk -v t="## $2" '$0 == t { on = 1; next } /^## / { on = 0 } on' "$1"; }
# Is $1 (a path relative to the root) named by one of the names on stdin: the
# path itself, a tail of it ("simd/table.cpp", "session.cpp"), or a pattern
# with * ("tokenizer_json*.cpp")?
named_in() {
    local file=$1 base=${1##*/} name
    while IFS= read -r name; do
        [[ -z $name ]] && continue
        if [[ $name == *'*'* ]]; then
            # shellcheck disable=SC2053
            [[ $file == $name || $base == $name || $file == */$name ]] && return 0
        elif [[ $file == "$name" || $file == */"$name" ]]; then
            return 0
        fi
    done
    return 1
}
# Does a repository file or folder exist for the path $1 (whole, or a tail)?
exists_in_repo() {
    local p=$1
    if [[ $p == */ ]]; then
        grep -qE "(^|/)$(sed 's/[.[\*^$+?(){}|]/\\&/g' <<<"$p")" <<<"$repo_files"
    elif [[ $p == *'*'* ]]; then
        local f
        while IFS= read -r f; do
            # shellcheck disable=SC2053
            [[ $f == $p || $f == */$p ]] && return 0
        done <<<"$repo_files"
        return 1
    else
        grep -qE "(^|/)$(sed 's/[.[\*^$+?(){}|]/\\&/g' <<<"$p")\$" <<<"$repo_files"
    fi
}

# 1. Paths in backquotes exist. A span is a path when it has only path
# characters and a slash or a known extension; placeholders (<name>), paths
# outside the repository (../shared), build directories (build-asan/) and the
# files a model directory holds (config.json, tokenizer.model, ...: not
# repository files) are not checked.
checkpoint_names=' config.json generation_config.json tokenizer_config.json tokenizer.json tokenizer.model model.safetensors model.safetensors.index.json chat_template.jinja '
n_paths=0
for doc in "$arch" "$fam"; do
    while IFS= read -r p; do
        [[ $p =~ ^[A-Za-z0-9_.*/-]+$ ]] || continue
        [[ $p == */* || $p =~ \.(cpp|hpp|h|c|sh|py|md|json|build|map|jinja|safetensors|toml|txt)$ ]] || continue
        [[ $p == ../* || $p == -* || $p == .* || $p == /* || $p == build* ]] && continue
        [[ $checkpoint_names == *" $p "* ]] && continue
        n_paths=$((n_paths + 1))
        exists_in_repo "$p" || bad "${doc#"$src"/} names \`$p\`, which is no file or folder of the repository"
    done < <(spans "$doc" | sort -u)
    for d in $(grep -oE 'docs/[A-Za-z_]+\.md' "$doc" | sort -u); do
        [[ -f "$src/$d" ]] || bad "${doc#"$src"/} cites $d, which does not exist"
    done
done
echo "paths checked in ARCHITECTURE.md and FAMILIES.md: $n_paths"

# 2. Families. Every file of model/families/, every descriptor and template
# name, every config.json architecture, in docs/FAMILIES.md.
for f in "$src"/model/families/*.cpp "$src"/model/families/*.hpp; do
    b=${f##*/}
    grep -qxF "$b" <<<"$fam_spans" || bad "docs/FAMILIES.md does not name model/families/$b"
done
for name in $(grep -ohE '^ *\.name = "[a-z0-9_]+"' "$src"/model/families/*.cpp | grep -oE '"[a-z0-9_]+"' | tr -d '"' | sort -u); do
    grep -qxF "$name" <<<"$fam_spans" || bad "docs/FAMILIES.md does not name the family or chat template \`$name\`"
done
for a in $(grep -ohE '\.architecture = "[A-Za-z0-9_]+"' "$src"/model/families/*.cpp | grep -oE '"[A-Za-z0-9_]+"' | tr -d '"' | sort -u); do
    grep -qxF "$a" <<<"$fam_spans" || bad "docs/FAMILIES.md does not name the config.json architecture \`$a\`"
done
# The GGUF architectures: the families' k...Gguf[] arrays, against the list
# after `find_gguf_family` in FAMILIES.md and the .gguf sentence of CLI.md.
gguf_code=$(grep -ohE 'constexpr std::string_view k[A-Za-z0-9]*Gguf\[\] = \{[^}]*\}' "$src"/model/families/*.cpp |
            grep -oE '"[a-z0-9_]+"' | tr -d '"' | sorted)
echo "GGUF architectures in the code: $gguf_code"
[[ -n "$gguf_code" ]] || bad "no GGUF architectures found in model/families/*.cpp"
gguf_fam=$(tr '\n' ' ' <"$fam" | grep -oE '`find_gguf_family` \([^)]*\)' | grep -oE '`[a-z0-9_]+`' | tr -d '`' |
           grep -v '^find_gguf_family$' | sorted)
[[ "$gguf_fam" == "$gguf_code" ]] ||
    bad "docs/FAMILIES.md lists the GGUF architectures '$gguf_fam' after find_gguf_family, the code '$gguf_code'"
gguf_cli=$(tr '\n' ' ' <"$cli_doc" | grep -oE '\(`\.gguf`: the [^)]* architectures' | grep -oE '`[a-z0-9_]+`' | tr -d '`' | sorted)
[[ "$gguf_cli" == "$gguf_code" ]] ||
    bad "docs/CLI.md lists the GGUF architectures '$gguf_cli', the code '$gguf_code'"
gguf_readme=$(tr '\n' ' ' <"$src/README.md" | grep -oE '\*\*GGUF files\*\*[^:]* architectures' | grep -oE '`[a-z0-9_]+`' |
              tr -d '`' | sorted)
[[ "$gguf_readme" == "$gguf_code" ]] ||
    bad "README.md lists the GGUF architectures '$gguf_readme', the code '$gguf_code'"

# The built-in synthetic shapes (FamilyDescriptor::synthetic) in both pages.
synthetic=$(cat "$src"/model/families/*.cpp | tr '\n' ' ' | grep -oE 'SyntheticShape k[A-Za-z0-9]*\[\] = \{[^;]*\};' |
            grep -oE '\{"[a-z0-9.-]+"' | tr -d '{"' | sorted)
echo "synthetic shapes: $synthetic"
[[ -n "$synthetic" ]] || bad "no synthetic shapes found in model/families/*.cpp"
for n in $synthetic; do
    grep -qxF "$n" <<<"$fam_spans" || bad "docs/FAMILIES.md does not name the synthetic shape \`$n\`"
    grep -qxF "$n" <<<"$arch_spans" || bad "docs/ARCHITECTURE.md does not name the synthetic shape \`$n\`"
done

# 3. Fuzz targets: fuzz/meson.build's names in ARCHITECTURE.md, and back; and
# a target for every fuzz/fuzz_*.cpp.
fuzz_code=$(grep -oE "'fuzz_[a-z0-9_]+'" "$src/fuzz/meson.build" | tr -d "'" | sorted)
fuzz_doc=$(grep -E '^fuzz_[a-z0-9_]+$' <<<"$arch_spans" | sorted)
[[ -n "$fuzz_code" ]] || bad "no fuzz targets found in fuzz/meson.build"
[[ "$fuzz_doc" == "$fuzz_code" ]] || bad "docs/ARCHITECTURE.md names the fuzz targets '$fuzz_doc', fuzz/meson.build '$fuzz_code'"
for f in "$src"/fuzz/fuzz_*.cpp; do
    t=${f##*/}; t=${t%.cpp}
    [[ " $fuzz_code" == *" $t "* ]] || bad "fuzz/$t.cpp is built by no target of fuzz/meson.build"
done

# 4. Tests: every test() of tests/ and bench/ in "The tests", the list's items
# only tests, and the suite 'sanitize' as stated.
test_blocks=$(awk '/^[[:space:]]*test\(/ { on = 1; buf = ""; depth = 0 }
                   on { buf = buf $0 " "; depth += gsub(/\(/, "(") - gsub(/\)/, ")")
                        if (depth <= 0) { print buf; on = 0 } }' "$src/tests/meson.build" "$src/bench/meson.build")
tests_code=$(grep -oE "^[[:space:]]*test\('[^']+'" <<<"$test_blocks" | sed -E "s/.*'(.*)'/\1/" | sorted)
sanitize_code=$(grep -E "suite: *(\[[^]]*)?'sanitize'" <<<"$test_blocks" | grep -oE "^[[:space:]]*test\('[^']+'" |
                sed -E "s/.*'(.*)'/\1/" | sorted)
echo "tests: $tests_code"
[[ -n "$tests_code" ]] || bad "no test() found in tests/meson.build"
tests_section=$(section "$arch" "The tests")
tests_spans=$(awk '/^```/ { fence = !fence; next } !fence' <<<"$tests_section" | tr '\n' ' ' | grep -oE '`[^`]+`' | tr -d '`')
for t in $tests_code; do
    grep -qxF "$t" <<<"$tests_spans" || bad "docs/ARCHITECTURE.md, \"The tests\", does not name the test '$t'"
done
for t in $(item_names <<<"$tests_section"); do
    [[ " $tests_code" == *" $t "* ]] || bad "docs/ARCHITECTURE.md, \"The tests\", lists '$t', which is no test of meson.build"
done
sanitize_doc=$(awk 'BEGIN { RS = "" } /The suite `sanitize` is/' <<<"$tests_section" | tr '\n' ' ' |
               sed -E 's/.*The suite `sanitize` is ([^;.]*).*/\1/' | grep -oE '`[^`]+`' | tr -d '`' | sorted)
[[ "$sanitize_doc" == "$sanitize_code" ]] ||
    bad "docs/ARCHITECTURE.md says the suite sanitize is '$sanitize_doc', meson.build '$sanitize_code'"
for e in $(grep -ohE "executable\('test_[a-z0-9_]+'" "$src/tests/meson.build" | sed -E "s/.*'(.*)'/\1/"); do
    grep -qxF "$e" <<<"$arch_spans" || bad "docs/ARCHITECTURE.md does not name the test executable $e"
done

# 5. The files of the folders ARCHITECTURE.md describes, each named there (by
# path, a tail of it, or a pattern); model/families/ is FAMILIES.md's (2.).
n_files=0
while IFS= read -r f; do
    [[ -n $f ]] || continue
    n_files=$((n_files + 1))
    named_in "$f" <<<"$arch_spans" || bad "docs/ARCHITECTURE.md does not name $f (say in its folder's paragraph what it is)"
done < <(grep -E '^(include/staticlm/[^/]+|base/[^/]+\.cpp|cache/[^/]+\.cpp|tokenizer/[^/]+\.cpp|model/[^/]+\.cpp|runtime/[^/]+\.(cpp|hpp|map)|tools/cli/[^/]+\.cpp|tools/[^/]+\.(sh|py)|tools/quality/[^/]+\.py|bench/[^/]+\.(cpp|hpp|py|sh)|examples/[^/]+\.c)$' <<<"$repo_files")
echo "source files checked against ARCHITECTURE.md: $n_files"

# 6. Commands: each of command_names() has a synopsis line and a section in
# docs/CLI.md, and the synopsis names no other command.
commands=$(sed -n '/command_names() {/,/^}/p' "$src/tools/cli/commands.cpp" | grep -oE '"[a-z]+"' | tr -d '"' | sorted)
echo "commands: $commands"
[[ -n "$commands" ]] || bad "no command names found in tools/cli/commands.cpp (command_names)"
synopsis=$(awk '/^```/ { n++; next } n == 1' "$cli_doc" | grep -oE '^staticlm [a-z]+' | sed 's/^staticlm //' | sorted)
[[ "$synopsis" == "$commands" ]] || bad "docs/CLI.md's synopsis shows the commands '$synopsis', the code has '$commands'"
for c in $commands; do
    grep -qE "^## (.*[ ,])?$c(,.*)?\$" "$cli_doc" || bad "docs/CLI.md has no section (## ...) for the command '$c'"
done

finish docs
