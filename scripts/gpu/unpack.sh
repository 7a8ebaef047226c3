# Sourced by run_tests.sh, bench.sh and sanitize.sh on the device machine. Unpacks gpu-pack.tar.xz (from
# package.sh) once, finds the CUDA libraries the programs need, checks with ldd that nothing is missing,
# and defines tower_run, which runs a packed program with that library path. The path is NOT exported:
# the device's own python3 (PyTorch for the comparisons) keeps its libraries, and Debian's libstdc++
# is not packed at all (the device's is newer).
#
# Where the CUDA libraries are: the device image has the toolkit's nvcc, but cuBLAS/cuBLASLt, cuDNN 9,
# NVRTC (cuDNN's runtime-compiled engines: fewer algorithms without it) and NCCL may come only with
# the Python packages nvidia-cublas, nvidia-cudnn-cu13, nvidia-cuda-nvrtc and nvidia-nccl-cu13, in
# site-packages/nvidia/*/lib. NCCL is optional: tower dlopens it only for an all-reduce across GPUs.
if [ ! -d gpu-pack ]; then
  [ -f gpu-pack.tar.xz ] || { echo "no gpu-pack.tar.xz: run scripts/gpu/package.sh and carry it" >&2; exit 2; }
  xz -dc gpu-pack.tar.xz | tar -xf -
fi

tower_lib_path="$PWD/gpu-pack/lib"
tower_find_lib() {  # $1: a soname; prints the folder that holds it, or nothing
  local found
  found=$(ldconfig -p 2>/dev/null | awk -v lib="$1" '$1 == lib {print $NF; exit}')
  [ -z "$found" ] && for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    found=$(ls "$site"/nvidia/*/lib/"$1" 2>/dev/null | head -1)
    [ -n "$found" ] && break
  done
  [ -z "$found" ] && found=$(find /usr/local /usr/lib /opt -name "$1" 2>/dev/null | head -1)
  [ -n "$found" ] && dirname "$found"
}
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnvrtc.so.13 libnccl.so.2; do
  dir=$(tower_find_lib "$lib")
  if [ -z "$dir" ]; then
    echo "unpack: $lib not found on this machine" >&2
  else
    echo "unpack: $lib in $dir"
    case ":$tower_lib_path:" in *":$dir:"*) ;; *) tower_lib_path="$tower_lib_path:$dir" ;; esac
  fi
done
tower_run() { LD_LIBRARY_PATH="$tower_lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }

# Preflight: a program that cannot load is an error here, not a skipped suite later.
missing=0
for bin in gpu-pack/*; do
  [ -f "$bin" ] && [ -x "$bin" ] || continue
  if tower_run ldd "$bin" | grep 'not found'; then
    echo "unpack: $bin cannot load the libraries above" >&2
    missing=1
  fi
done
[ $missing = 0 ] || exit 2
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
