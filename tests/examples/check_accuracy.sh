#!/usr/bin/env bash
# Runs an example program and checks the "Test accuracy: X" it prints is at least MIN.
# Usage: check_accuracy.sh MIN program [args...]
set -euo pipefail
min="$1"; shift
output="$("$@")"
echo "$output" | tail -n 3
accuracy="$(echo "$output" | sed -n 's/^Test accuracy: //p' | tail -n 1)"
if [ -z "$accuracy" ]; then echo "check_accuracy: no 'Test accuracy:' line in the output"; exit 1; fi
if awk -v a="$accuracy" -v m="$min" 'BEGIN { exit !(a >= m) }'; then
  echo "check_accuracy: $accuracy >= $min"
else
  echo "check_accuracy: $accuracy < $min"; exit 1
fi
