#!/usr/bin/env bash
# Generates the Python gRPC stubs of arach.v1 from proto/ with protoc and grpc_python_plugin (Debian's
# protobuf-compiler-grpc) into OUT_DIR (default: client/python/generated), as the importable package
# arach.v1 (inference_pb2, inference_pb2_grpc). Running them needs python3-grpcio and python3-protobuf.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/client/python/generated}
plugin=$(command -v grpc_python_plugin) || { echo "grpc_python_plugin not found (apt-get install protobuf-compiler-grpc)" >&2; exit 1; }
mkdir -p "$out"
protoc -I "$root/proto" --python_out="$out" --grpc_python_out="$out" --plugin=protoc-gen-grpc_python="$plugin" \
  "$root/proto/arach/v1/inference.proto"
echo "Python stubs in $out/arach/v1 (add $out to PYTHONPATH)"
