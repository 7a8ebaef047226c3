#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) in build-asan/ with clang and runs them (docs/fuzzing.md).
#   scripts/fuzz.sh short            CI: each target from fixed seeds for a fixed number of inputs
#                                    (deterministic), starting from the committed seed corpus
#   scripts/fuzz.sh long [seconds] [targets...]
#                                    each target (default: all) for `seconds` (default 600) on
#                                    $TOWER_FUZZ_JOBS cores (default: every core); the corpus grows in
#                                    build-asan/corpus/<target> for the next run
#   scripts/fuzz.sh build            only configure and build
# A finding (crash, sanitizer report, exception other than tower::Error, hang) fails the run unless it
# lies inside libhdf5 (known, docs/fuzzing.md); its input is saved in build-asan/findings/<target>/
# (known ones in .../known/); replay it with build-asan/tests/fuzz/<target> <file>.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-short}
source scripts/asan_tree.sh
build=$asan_build
targets=(fuzz_idx fuzz_hdf5_weights fuzz_keras_model fuzz_model_config fuzz_backup_metadata)
# The short run: per target, fuzzing sessions from seeds 1..N of R inputs each (about 30 s per target
# on one core). A session that ends on a known defect of libhdf5 (docs/fuzzing.md) is logged and the
# next seed goes on; any other finding fails the run.
declare -A short_seeds=([fuzz_idx]=1 [fuzz_hdf5_weights]=6 [fuzz_keras_model]=4 [fuzz_model_config]=1
                       [fuzz_backup_metadata]=1)
declare -A short_runs=([fuzz_idx]=400000 [fuzz_hdf5_weights]=2000 [fuzz_keras_model]=1000 [fuzz_model_config]=100000
                      [fuzz_backup_metadata]=8000)

# The targets link the sanitizer tree's library (scripts/asan_tree.sh: ASan + UBSan, libFuzzer's coverage),
# the same build-asan/ that scripts/sanitize.sh runs the unit suites in.
build_targets() {
  configure_asan_tree
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
}

# Small Keras-written and tower-written golden files, seeds for the HDF5 targets besides their own.
golden_seeds=(keras_io_expected.h5 keras_io_weights.h5 cpp_mlp.h5 schedules.h5)
# Keras-written full-model files (tf.keras, Keras 3, Keras 1, a multi_gpu_model wrapper).
golden_model_seeds=(mlp_tf_keras.h5 mlp_keras3.h5 cnn_tf_keras.h5 merge_keras3.h5 keras1_mlp.h5 multi_gpu_tf_keras.h5)

# The seed corpus directories of target $1, for a run working in directory $2.
seeds() {
  case $1 in
    fuzz_idx) echo tests/fuzz/corpus/idx ;;
    fuzz_hdf5_weights)
      mkdir -p "$2/golden"
      for f in "${golden_seeds[@]}"; do cp tests/golden/files/"$f" "$2/golden/"; done
      echo "tests/fuzz/corpus/hdf5_weights $2/golden" ;;
    fuzz_keras_model)
      mkdir -p "$2/golden"
      for f in "${golden_model_seeds[@]}"; do cp tests/golden/files/models/"$f" "$2/golden/"; done
      echo "tests/fuzz/corpus/keras_model $2/golden" ;;
    # Every model_config JSON of the golden files (tf.keras, Keras 3, Keras 1 and 2.x dialects), and
    # deep ones: models nested 30 deep, an argument nested past layers::kMaxJsonDepth.
    fuzz_model_config)
      mkdir -p "$2/golden"
      cp tests/golden/files/configs/*.json "$2/golden/"
      echo "tests/fuzz/corpus/model_config $2/golden" ;;
    fuzz_backup_metadata) echo tests/fuzz/corpus/backup_metadata ;;
  esac
}

# Options every run shares: no time-based corpus reloads (-reload=0) so that a seeded run is
# reproducible; a hang is an input taking over 5 s. (Leak checks: on for fuzz_idx, off for the HDF5
# target, see its __asan_default_options.)
# A UBSan report (the tree has -fno-sanitize-recover=all) ends the session with its stack, for the triage.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
common=(-reload=0 -timeout=5 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1)

# True when the finding reported in log $1 lies inside libhdf5: the innermost stack frame outside
# the sanitizer and libFuzzer runtimes and libc's signal, allocation and string functions (also
# their CPU-specific variants, e.g. __memcpy_avx512_unaligned_erms, named when libc has symbols) is
# in libhdf5 (HDF5 1.10 is not hardened against malformed files; tower cannot prevent these).
in_libhdf5() {
  local frame
  frame=$(grep -E '^ +#[0-9]+ 0x' "$1" |
    grep -vE ' in (__sanitizer|__asan|__lsan|__interceptor|fuzzer::)| in (malloc|calloc|realloc|free|memcpy|memmove|memset|memcmp|strlen|strdup|strndup|strcpy|strncpy|strcmp|strncmp) | in __(mem|str)[a-z0-9_]* |\(/lib/[^ ]*/libc\.so' |
    head -n 1)
  [[ $frame == *libhdf5* ]] || return 1
  # A buffer that tower allocated (one HDF5 reads or writes for it) makes it tower's bug after all;
  # a wild read that lands on freed memory of some std::string is not.
  ! sed -n '/allocated by thread/,/^$/p' "$1" | grep -q ' in tower::'
}

run_short() {
  for t in "${targets[@]}"; do
    local work=$build/fuzz-short/$t findings=$build/findings/$t start=$SECONDS known=0
    rm -rf "$work"
    mkdir -p "$work/new" "$findings/known"
    local seed_dirs
    seed_dirs=$(seeds "$t" "$work")
    echo "fuzz.sh short: $t, seeds 1..${short_seeds[$t]}, ${short_runs[$t]} inputs each"
    for seed in $(seq 1 "${short_seeds[$t]}"); do
      local log=$work/seed$seed.log
      # shellcheck disable=SC2086  # seed_dirs is a list of directories
      if "$build/tests/fuzz/$t" "${common[@]}" -seed="$seed" -runs="${short_runs[$t]}" \
          -artifact_prefix="$work/seed$seed-" "$work/new" $seed_dirs >"$log" 2>&1; then
        continue
      fi
      local artifact
      artifact=$(ls "$work"/seed"$seed"-* 2>/dev/null | head -n 1 || true)
      # An RSS-limit report shows no culprit's stack: replay the input with a 1 s timeout to get one.
      if [ -n "$artifact" ] && ! in_libhdf5 "$log" && [[ $(basename "$artifact") == *oom-* ]]; then
        timeout 120 "$build/tests/fuzz/$t" -timeout=1 -rss_limit_mb=8192 "$artifact" >"$log.replay" 2>&1 || true
        cat "$log.replay" >>"$log"
        log=$log.replay
      fi
      if [ -n "$artifact" ] && in_libhdf5 "$log"; then
        known=$((known + 1))
        cp "$artifact" "$findings/known/"
        echo "  seed $seed: $(grep -m1 -oE '(ERROR: [A-Za-z]+: [a-z-]+|SUMMARY: [^(]*)' "$log" | head -n 1) inside" \
             "libhdf5 (known, docs/fuzzing.md): $findings/known/$(basename "$artifact")"
        continue
      fi
      tail -n 80 "$log"
      [ -n "$artifact" ] && cp "$artifact" "$findings/"
      echo "fuzz.sh short: $t FAILED with seed $seed (input: $findings/$(basename "${artifact:-none}"); log: $log)"
      return 1
    done
    echo "fuzz.sh short: $t passed in $((SECONDS - start)) s ($(ls "$work/new" | wc -l) new inputs," \
         "$known sessions ended inside libhdf5)"
  done
}

# The long run: -fork=<cores> (libFuzzer's successor of -jobs: worker processes that share one corpus
# and go on after a crash or hang), then every finding is replayed and sorted: inside libhdf5 (known)
# or a tower bug.
run_long() {
  local seconds=${1:-600} jobs bugs=0
  shift || true
  [ $# -gt 0 ] && targets=("$@")
  jobs=${TOWER_FUZZ_JOBS:-$(nproc)}
  for t in "${targets[@]}"; do
    local corpus=$build/corpus/$t findings=$build/findings/$t seed_dirs=""
    mkdir -p "$corpus" "$findings/known" "$build/fuzz-long/$t"
    for s in $(seeds "$t" "$build/fuzz-long/$t"); do seed_dirs+=" $(realpath "$s")"; done
    echo "fuzz.sh long: $t for $seconds s on $jobs cores (corpus $corpus, findings $findings)"
    # shellcheck disable=SC2086  # seed_dirs is a list of directories
    "$build/tests/fuzz/$t" "${common[@]}" -max_total_time="$seconds" -fork="$jobs" -ignore_crashes=1 \
      -ignore_timeouts=1 -ignore_ooms=1 -artifact_prefix="$findings/" "$corpus" $seed_dirs \
      >"$build/fuzz-long/$t.log" 2>&1 || true
    for artifact in "$findings"/crash-* "$findings"/timeout-* "$findings"/oom-* "$findings"/leak-*; do
      [ -f "$artifact" ] || continue
      local log=$build/fuzz-long/$t-$(basename "$artifact").log
      "$build/tests/fuzz/$t" "${common[@]}" "$artifact" >"$log" 2>&1 || true
      if in_libhdf5 "$log"; then
        mv "$artifact" "$findings/known/"
      else
        bugs=$((bugs + 1))
        echo "  tower bug? $artifact (replay log: $log)"
      fi
    done
    echo "fuzz.sh long: $t: $(ls "$corpus" | wc -l) corpus inputs; $(ls "$findings/known" | wc -l) findings" \
         "inside libhdf5 in $findings/known"
  done
  [ "$bugs" -eq 0 ]
}

# The targets' scratch files (tests/fuzz/fuzz_scratch.h): a crashing target leaves its file behind.
scratch_parent=/dev/shm
[ -d "$scratch_parent" ] && [ -w "$scratch_parent" ] || scratch_parent=${TMPDIR:-/tmp}
TOWER_FUZZ_SCRATCH=$(mktemp -d "$scratch_parent/tower-fuzz.XXXXXX")
export TOWER_FUZZ_SCRATCH
trap 'rm -rf "$TOWER_FUZZ_SCRATCH"' EXIT

case $mode in
  build) build_targets ;;
  short) build_targets; run_short ;;
  long) build_targets; shift; run_long "$@" ;;
  *) echo "usage: scripts/fuzz.sh short | long [seconds] [targets...] | build" >&2; exit 2 ;;
esac
