#!/usr/bin/env bash
# `plumb template` prints exactly the rendered prompt; bad input exits 2 with one line on stderr.
# usage: cli_template_test.sh PLUMB REPO_ROOT
set -uo pipefail
plumb=$1
root=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

echo '[{"role": "user", "content": "hi"}]' >"$scratch/messages.json"
"$plumb" template "$root/tests/fixtures/templates/qwen35" --messages "$scratch/messages.json" \
  --add-generation-prompt --var enable_thinking=false >"$scratch/out.txt"
status=$?
printf '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n' >"$scratch/expected.txt"
if [ "$status" -ne 0 ] || ! cmp -s "$scratch/out.txt" "$scratch/expected.txt"; then
  echo "FAIL good input: exit $status, output $(od -c "$scratch/out.txt" | head -5)"
  failures=$((failures + 1))
fi

# expect_bad NAME ARGS...: exit code 2 and exactly one stderr line starting "plumb template: ".
expect_bad() {
  local name=$1
  shift
  "$plumb" template "$@" >"$scratch/out.txt" 2>"$scratch/err.txt"
  local status=$?
  local lines
  lines=$(wc -l <"$scratch/err.txt")
  if [ "$status" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -q '^plumb template: ' "$scratch/err.txt"; then
    echo "FAIL $name: expected exit 2 and one line 'plumb template: ...', got exit $status, $lines line(s):"
    sed 's/^/  /' "$scratch/err.txt"
    failures=$((failures + 1))
  fi
}

gemma4="$root/tests/fixtures/templates/gemma4"
echo '{not json' >"$scratch/bad.json"
echo '{"role": "user"}' >"$scratch/object.json"
echo '[{"content": "no role"}]' >"$scratch/norole.json"
echo '[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]' >"$scratch/twice.json"
echo '"tools"' >"$scratch/tools.json"
mkdir -p "$scratch/broken" "$scratch/raising"
printf 'ok\n{%% if %%}\n' >"$scratch/broken/chat_template.jinja"
printf 'line one\n{{ raise_exception("bad\\nturn") }}\n' >"$scratch/raising/chat_template.jinja"

expect_bad "missing model" "$scratch/no_model" --messages "$scratch/messages.json"
expect_bad "missing messages file" "$gemma4" --messages "$scratch/none.json"
expect_bad "messages not JSON" "$gemma4" --messages "$scratch/bad.json"
expect_bad "messages not a list" "$gemma4" --messages "$scratch/object.json"
expect_bad "message without role" "$gemma4" --messages "$scratch/norole.json"
expect_bad "tools not a list" "$gemma4" --messages "$scratch/messages.json" --tools "$scratch/tools.json"
expect_bad "var without =" "$gemma4" --messages "$scratch/messages.json" --var enable_thinking
expect_bad "unknown named template" "$gemma4" --messages "$scratch/messages.json" --template nope
expect_bad "template syntax error" "$scratch/broken" --messages "$scratch/messages.json"
expect_bad "template raises (multi-line message)" "$scratch/raising" --messages "$scratch/messages.json"

if [ "$failures" -ne 0 ]; then
  echo "cli_template_test: $failures failure(s)"
  exit 1
fi
echo "cli_template_test: all cases pass"
