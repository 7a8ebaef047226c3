#!/usr/bin/env bash
# On the device machine: each GPU suite once under compute-sanitizer's memcheck, racecheck and synccheck
# (the checklist of ../shared/reference/gpu-bringup.md, section C). Each run's report goes to
# $OUT/sanitize-<suite>-<tool>.txt; the summary lines are printed. Arguments go to every suite (doctest's
# filters: racecheck is slow, so --test-case='cuda: matmul*' narrows a run).
# compute-sanitizer needs a runtime that lets it attach: under gVisor it said "Device not supported"
# (KINDS.md, 2026-11-04), which this script reports as such rather than as a failure of tower.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/unpack.sh
out="${OUT:-.}"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
[ -n "$sanitizer" ] || { echo "sanitize: compute-sanitizer not found" >&2; exit 2; }
status=0
for t in gpu-pack/test_cuda gpu-pack/test_cuda_nn gpu-pack/test_cuda_graph gpu-pack/test_cuda_logical gpu-pack/test_towers_gpu; do
  [ -f "$t" ] || continue
  for tool in memcheck racecheck synccheck; do
    report="$out/sanitize-$(basename "$t")-$tool.txt"
    echo "== $tool $t"
    tower_run "$sanitizer" --tool "$tool" --error-exitcode 3 --print-limit 20 "$t" "$@" > "$report" 2>&1
    rc=$?
    if grep -q "Device not supported" "$report"; then
      echo "   compute-sanitizer cannot attach on this runtime (Device not supported): not checked"
      continue
    fi
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases:" "$report" | sed 's/^/   /'
    [ $rc = 0 ] || { status=1; echo "   exit $rc: see $report"; }
  done
done
exit $status
