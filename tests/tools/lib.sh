# The common start of the test scripts in tests/tools/, which source it from
# their own directory (meson runs them by path, from any working directory):
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# It gives a scratch folder $tmp (removed on exit), the counters passes and
# fails, and the checks:
#   ok                        a pass
#   bad TEXT...               a failure: prints "FAIL: TEXT"
#   check NAME CMD...         CMD must succeed (else "FAIL: NAME")
#   run NAME WANT -- CMD...   CMD must exit with WANT; its stdout and stderr
#                             are left in $tmp/out and $tmp/err (returns 1 on a
#                             wrong exit, after printing the end of stderr)
#   has FILE TEXT NAME        FILE holds TEXT (a fixed string)
#   finish LABEL              prints the counts; its status is the script's
#                             (nonzero after any failure): the last line.
# and need PATH: the script is skipped (exit 77, meson's skip) when PATH is
# absent.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passes=0 fails=0

need() {
    [[ -e $1 ]] && return
    echo "SKIPPED: $1 is absent"
    exit 77
}

ok() { passes=$((passes + 1)); }
bad() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
check() {
    local name=$1
    shift
    if "$@"; then ok; else bad "$name"; fi
}
run() {
    local name=$1 want=$2
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    if [[ $got != "$want" ]]; then
        bad "$name: exit $got, want $want"
        sed 's/^/  | /' "$tmp/err" | tail -5
        return 1
    fi
    ok
}
has() {
    if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in $(basename "$1"): $(head -c 300 "$1")"; fi
}
finish() {
    if ((passes > 0)); then echo "$1: $passes passed, $fails failed"; else echo "$1: $fails failures"; fi
    [[ $fails -eq 0 ]]
}
