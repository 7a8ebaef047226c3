#!/usr/bin/env bash
# On the device machine: runs the GPU test programs that scripts/gpu/package.sh gathered in gpu-pack/.
set -uo pipefail
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH="$PWD/gpu-pack/lib:${LD_LIBRARY_PATH:-}"
# tower links cuDNN 9 since the CUDA backend issue; on the device it may come with the Python
# packages rather than the toolkit (not yet checked on a device): add the first one found.
if ! ldconfig -p | grep -q 'libcudnn.so.9'; then
  cudnn=$(find /usr /opt -name 'libcudnn.so.9' 2>/dev/null | head -1)
  [ -n "$cudnn" ] && export LD_LIBRARY_PATH="$(dirname "$cudnn"):$LD_LIBRARY_PATH"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
status=0
for t in gpu-pack/*; do
  [ -f "$t" ] || continue
  echo "== $t"
  "$t" || status=$?
done
exit $status
