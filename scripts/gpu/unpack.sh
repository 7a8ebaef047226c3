# Sourced by run_tests.sh and bench.sh on the device machine: unpacks gpu-pack.tar.xz (from
# package.sh) once and sets the library path, adding cuDNN 9's and NCCL's directories when the loader
# does not know them (they may come with the Python packages, nvidia-cudnn-cu13 and nvidia-nccl-cu13,
# rather than the toolkit). NCCL is optional: tower loads it only for an all-reduce across GPUs.
if [ ! -d gpu-pack ]; then
  [ -f gpu-pack.tar.xz ] || { echo "no gpu-pack.tar.xz: run scripts/gpu/package.sh and carry it" >&2; exit 2; }
  xz -dc gpu-pack.tar.xz | tar -xf -
fi
export LD_LIBRARY_PATH="$PWD/gpu-pack/lib:${LD_LIBRARY_PATH:-}"
if ! ldconfig -p | grep -q 'libcudnn.so.9'; then
  cudnn=$(find /usr /opt / -xdev -name 'libcudnn.so.9' 2>/dev/null | head -1)
  [ -n "$cudnn" ] && export LD_LIBRARY_PATH="$(dirname "$cudnn"):$LD_LIBRARY_PATH"
fi
if ! ldconfig -p | grep -q 'libnccl.so.2'; then
  nccl=$(find /usr /opt / -xdev -name 'libnccl.so.2' 2>/dev/null | head -1)
  [ -n "$nccl" ] && export LD_LIBRARY_PATH="$(dirname "$nccl"):$LD_LIBRARY_PATH"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
