#!/usr/bin/env bash
# On the device machine: runs the GPU test suites that scripts/gpu/package.sh packed (every test_*),
# in the bring-up order of ../shared/reference/gpu-bringup.md. A suite that fails is run again with
# CUDA_LAUNCH_BLOCKING=1 and the cuDNN and cuBLASLt logs, into $OUT/<suite>-rerun.log (its tail printed),
# so the reason comes back in the same call. Extra arguments go to every suite (doctest's, e.g.
# --test-case='cuda: conv2d*').
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/unpack.sh
out="${OUT:-.}"
status=0
suites=()
for t in test_cuda test_cuda_nn test_cuda_graph test_cuda_logical test_towers_gpu; do [ -f "gpu-pack/$t" ] && suites+=("gpu-pack/$t"); done
for t in gpu-pack/test_*; do
  case " ${suites[*]} " in *" $t "*) ;; *) [ -f "$t" ] && suites+=("$t") ;; esac
done
for t in "${suites[@]}"; do
  echo "== $t"
  if ! tower_run "$t" "$@"; then
    status=1
    name=$(basename "$t")
    echo "== $t failed: again with CUDA_LAUNCH_BLOCKING=1 and the cuDNN/cuBLASLt logs ($out/$name-rerun.log)"
    CUDA_LAUNCH_BLOCKING=1 CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=stderr CUBLASLT_LOG_LEVEL=2 \
      tower_run "$t" "$@" > "$out/$name-rerun.log" 2>&1
    tail -n 60 "$out/$name-rerun.log"
  fi
done
exit $status
