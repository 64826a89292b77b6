#!/usr/bin/env bash
# Installs the packages the project builds and tests with, on Debian 12 (this project's machines, CI and
# the CPU image) or Ubuntu 24.04 (NVIDIA's CUDA images): the -dev packages have the same names on both.
# Used by the README's commands, .ci/run and deploy/Dockerfile, so that all of them build the same way.
#   scripts/install-deps.sh          what building needs (the Docker image stops here)
#   scripts/install-deps.sh --test   plus the tools the tests use
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git ca-certificates
  libabsl-dev nlohmann-json3-dev libopenblas-dev libicu-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc prometheus-cpp-dev
  libpcre2-dev libcpp-httplib-dev libssl-dev libgtest-dev libgmock-dev
)
# docker-compose renders the compose file; python3-grpcio/protobuf run the Python client example;
# python3-jinja2 is the oracle of the chat-template engine; python3-numpy writes the FP8 test checkpoints;
# openssl makes the tests' certificates; ss (iproute2) reads the HTTP listener's backlog.
[ "${1:-}" = "--test" ] && packages+=(docker-compose python3-grpcio python3-protobuf python3-jinja2 python3-numpy openssl haproxy prometheus iproute2)

. /etc/os-release
case "${ID}:${VERSION_ID}" in
  debian:12|ubuntu:24.04) ;;
  *) echo "[deps] warning: ${PRETTY_NAME:-unknown system}; the package names are those of Debian 12 / Ubuntu 24.04" >&2 ;;
esac

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
