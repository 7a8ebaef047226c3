# Sourced by run_tests.sh and bench.sh on the device machine: unpacks gpu-pack.tar.xz (from
# package.sh) once and sets the library path, adding cuDNN 9's directory when the loader does not
# know it (it may come with the Python packages rather than the toolkit).
if [ ! -d gpu-pack ]; then
  [ -f gpu-pack.tar.xz ] || { echo "no gpu-pack.tar.xz: run scripts/gpu/package.sh and carry it" >&2; exit 2; }
  xz -dc gpu-pack.tar.xz | tar -xf -
fi
export LD_LIBRARY_PATH="$PWD/gpu-pack/lib:${LD_LIBRARY_PATH:-}"
if ! ldconfig -p | grep -q 'libcudnn.so.9'; then
  cudnn=$(find /usr /opt / -xdev -name 'libcudnn.so.9' 2>/dev/null | head -1)
  [ -n "$cudnn" ] && export LD_LIBRARY_PATH="$(dirname "$cudnn"):$LD_LIBRARY_PATH"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
