# shellcheck shell=bash
# Sourced by the GPU-machine scripts. step NAME LIMIT_SECONDS COMMAND...: runs COMMAND with its output in
# $out/NAME.log and records rc and seconds in $out/steps.txt (PACK=file.tgz also packs $out after each step).
step() {
  local name=$1 limit=$2 start=$SECONDS rc
  : "${out:?step: set out, the folder for the logs}"
  shift 2
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  rc=$?
  echo "$name rc=$rc $((SECONDS - start))s" | tee -a "$out/steps.txt"
  [ -n "${PACK:-}" ] && tar czf "$PACK" -C "$out" .
  return $rc
}
