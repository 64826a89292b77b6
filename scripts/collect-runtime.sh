#!/usr/bin/env bash
# Gathers what the runtime image needs from a build tree: the executables in OUT/bin and every shared
# library they link into OUT/lib, except the C/C++ runtime (in every base image) and the CUDA driver
# libraries (mounted by the NVIDIA container runtime).
#   scripts/collect-runtime.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=$1
out=$2
mkdir -p "$out/bin" "$out/lib"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libstdc\+\+|libgcc_s|libcuda\.so|libnvidia)'
for exe in server/arach-server client/arach-cli tools/arach-run; do
  cp "$build/$exe" "$out/bin/"
  ldd "$build/$exe" | awk '/=>/ && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ "$name" =~ $skip ]] && continue
    cp -Ln "$path" "$out/lib/" 2>/dev/null || true
  done
done
echo "[collect] $(ls "$out/bin" | wc -l) executables, $(ls "$out/lib" | wc -l) libraries in $out"
