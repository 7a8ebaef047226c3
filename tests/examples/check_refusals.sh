#!/usr/bin/env bash
# The example programs' shared options (apps/example_args.h) refuse what they cannot use, with exit code 2
# and a message naming the option, before reading any data: an unknown --dtype-policy (which every example
# applies, mnist_mlp included), an empty value, a positional argument.
# Usage: check_refusals.sh program...
set -uo pipefail
failed=0
expect() {  # expect PROGRAM MESSAGE ARGS...
  local program="$1" message="$2"; shift 2
  local output rc
  output="$("$program" "$@" 2>&1)"; rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF -- "$message" <<<"$output"; then
    echo "FAIL: $(basename "$program") $* exited $rc, expected 2 with \"$message\"; it printed:"
    echo "$output" | head -n 5
    failed=1
  fi
}
for program in "$@"; do
  expect "$program" "--dtype-policy: " --dtype-policy float17 --data /nonexistent
  expect "$program" "--data \"\": the value is empty" --data ""
  expect "$program" "unexpected argument \"extra\"" extra
done
[ "$failed" -eq 0 ] && echo "check_refusals: $# programs refuse all three"
exit "$failed"
