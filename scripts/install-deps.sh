#!/usr/bin/env bash
# Installs the Debian 12 packages the project builds and tests with. Used by the README's commands,
# .ci/run and deploy/Dockerfile, so that all of them build the same way.
#   scripts/install-deps.sh          build + test dependencies
#   scripts/install-deps.sh --runtime  only the shared libraries the binaries need at run time
set -euo pipefail

build_packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libabsl-dev nlohmann-json3-dev libopenblas-dev libicu-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc prometheus-cpp-dev
  libgtest-dev libgmock-dev
)
runtime_packages=(
  libabsl20220623 libopenblas0-pthread libicu72 libgomp1
  libgrpc++1.51 libprotobuf32 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0
)

packages=("${build_packages[@]}")
[ "${1:-}" = "--runtime" ] && packages=("${runtime_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "[deps] all ${#packages[@]} packages present"
  exit 0
fi
echo "[deps] installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "[deps] done"
