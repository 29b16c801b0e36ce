#!/usr/bin/env bash
# `plumb tokenize` / `plumb detokenize`: JSON lines through a model directory, and exit 2 naming the bad line.
set -uo pipefail
plumb=$1
model_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $1; expected $2, got $3"; status=1; }

printf '"Hello"\n"Hello world"\n' >"$work/in.jsonl"
got=$("$plumb" tokenize "$model_dir" --lines "$work/in.jsonl" | tr '\n' ' ')
[ "$got" = "[9707] [9707,1879] " ] || fail "tokenize ids" "'[9707] [9707,1879] '" "'$got'"

printf '[9707,1879]\n[]\n' >"$work/ids.jsonl"
got=$("$plumb" detokenize "$model_dir/tokenizer.json" --lines "$work/ids.jsonl" | tr '\n' '|')
[ "$got" = '"Hello world"|""|' ] || fail "detokenize text" "'\"Hello world\"|\"\"|'" "'$got'"

printf '"ok"\n42\n' >"$work/bad.jsonl"
err=$("$plumb" tokenize "$model_dir" --lines "$work/bad.jsonl" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] || fail "tokenize bad line exit code" 2 "$rc"
[ "$err" = "plumb tokenize: line 2: expected a JSON string, got 42" ] || fail "tokenize bad line message" "line 2" "'$err'"

printf '[1]\n[1,"x"]\n' >"$work/bad_ids.jsonl"
err=$("$plumb" detokenize "$model_dir" --lines "$work/bad_ids.jsonl" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] || fail "detokenize bad line exit code" 2 "$rc"
case "$err" in "plumb detokenize: line 2: "*) ;; *) fail "detokenize bad line message" "line 2" "'$err'" ;; esac

"$plumb" tokenize "$work/missing" --lines "$work/in.jsonl" >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "missing tokenizer exit code" 2 "$rc"

[ "$status" -eq 0 ] && echo "cli lines: all checks passed"
exit "$status"
