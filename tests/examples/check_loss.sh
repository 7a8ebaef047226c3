#!/usr/bin/env bash
# Runs an example program and checks the "Test loss: X" it prints is at most MAX.
# Usage: check_loss.sh MAX program [args...]
set -euo pipefail
max="$1"; shift
output="$("$@")"
echo "$output" | tail -n 3
loss="$(echo "$output" | sed -n 's/^Test loss: //p' | tail -n 1)"
if [ -z "$loss" ]; then echo "check_loss: no 'Test loss:' line in the output"; exit 1; fi
if awk -v l="$loss" -v m="$max" 'BEGIN { exit !(l <= m) }'; then
  echo "check_loss: $loss <= $max"
else
  echo "check_loss: $loss > $max"; exit 1
fi
