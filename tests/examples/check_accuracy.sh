#!/usr/bin/env bash
# Runs an example program and checks the "Test accuracy: X" it prints is at least MIN, or with --loss,
# the "Test loss: X" it prints is at most MAX.
# Usage: check_accuracy.sh MIN program [args...]
#        check_accuracy.sh --loss MAX program [args...]
set -euo pipefail
label="Test accuracy"; keep=">="
if [ "$1" = "--loss" ]; then label="Test loss"; keep="<="; shift; fi
bound="$1"; shift
output="$("$@")"
echo "$output" | tail -n 3
value="$(echo "$output" | sed -n "s/^$label: //p" | tail -n 1)"
if [ -z "$value" ]; then echo "check_accuracy: no '$label:' line in the output"; exit 1; fi
if awk -v v="$value" -v b="$bound" -v k="$keep" 'BEGIN { exit !(k == ">=" ? v >= b : v <= b) }'; then
  echo "check_accuracy: $label $value $keep $bound"
else
  echo "check_accuracy: $label $value is not $keep $bound"; exit 1
fi
