#!/usr/bin/env bash
# On the device machine: runs the GPU test suites that scripts/gpu/package.sh packed (every test_*).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/unpack.sh
status=0
for t in gpu-pack/test_*; do
  [ -f "$t" ] || continue
  echo "== $t"
  "$t" "$@" || status=$?
done
exit $status
