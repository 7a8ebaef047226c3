#!/usr/bin/env bash
# On the device machine: runs the GPU test programs that scripts/gpu/package.sh gathered in gpu-pack/.
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH="$PWD/gpu-pack/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
status=0
for t in gpu-pack/*; do
  [ -f "$t" ] || continue
  echo "== $t"
  "$t" || status=$?
done
exit $status
