#!/usr/bin/env bash
# CUDA compiler launcher for gate 5: runs the compile command it is given and keeps the compiler's resource
# report (from --resource-usage) beside the object as <object>.resources for `plumb contract --records-only`.
set -uo pipefail
object=""
previous=""
for argument in "$@"; do
  if [ "$previous" = "-o" ]; then object="$argument"; fi
  previous="$argument"
done
if [ -z "$object" ]; then exec "$@"; fi
report="$object.resources"
"$@" 2>"$report.part"
status=$?
cat "$report.part" >&2
{
  echo "compiler: $("$1" --version 2>/dev/null | tail -1)"
  grep -E '^(ptxas info|    [0-9]+ bytes stack frame)' "$report.part" || true
} >"$report"
rm -f "$report.part"
exit "$status"
