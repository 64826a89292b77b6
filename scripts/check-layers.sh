#!/usr/bin/env bash
# Checks the include graph against the layers docs/ARCHITECTURE.md describes; prints every violation and exits
# 1 when there is one (ctest: layers). The rules:
#  - engine/: each folder includes only itself and the folders before it in ENGINE_LAYERS (the files at
#    engine/'s root are the top layer), and nothing of the server, client, tools, command line or proto;
#  - the serving core (server/*.h, server/*.cc) and the HTTP wing (server/http/) include no gRPC or protobuf
#    header and nothing of the gRPC wing (server/grpc/); the core includes nothing of the HTTP wing either.
#    serve.cc, which runs both wings on the core, is the exception: it includes their servers
#    (server/grpc/grpc_server.h, whose interface has no gRPC type, and server/http/http_server.h);
#  - the client uses the engine's variant vocabulary and core only, never the server.
set -uo pipefail
cd "$(dirname "$0")/.."
ENGINE_LAYERS=(core model tokenizer chat variant sampling output constraint backend kv runner bundle sched spec)
violations=0
report() { echo "[layers] $1"; violations=$((violations + 1)); }

layer_index() {  # engine folder -> its position; the root files are the top
  local folder=$1 i
  for i in "${!ENGINE_LAYERS[@]}"; do [ "${ENGINE_LAYERS[$i]}" = "$folder" ] && { echo "$i"; return; }; done
  echo "${#ENGINE_LAYERS[@]}"
}

# Every `#include "..."` and `#include <...>` of the files under $1, as FILE<TAB>INCLUDED.
includes_of() {
  find "$@" -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
    xargs -0 grep -HoE '^#include ["<][^">]+[">]' | sed -E 's/:#include ["<]([^">]+)[">]$/\t\1/'
}

# The engine.
while IFS=$'\t' read -r file included; do
  case "$included" in
    server/*|client/*|tools/*|cmdline/*|bench/*|tests/*|arach/v1/*|grpc/*|grpcpp/*|google/protobuf/*)
      report "$file includes $included: the engine depends on no layer above it"; continue ;;
    engine/*) ;;
    *) continue ;;
  esac
  rel=${file#engine/}
  [[ "$rel" == */* ]] && from=${rel%%/*} || from=""
  inc=${included#engine/}
  [[ "$inc" == */* ]] && to=${inc%%/*} || to=""
  from_index=$(layer_index "${from:-<root>}")
  to_index=$(layer_index "${to:-<root>}")
  if [ "$to_index" -gt "$from_index" ]; then
    report "$file includes $included: engine/${from:-(root)} comes before engine/${to:-(root)} in the layers"
  fi
done < <(includes_of engine)

# The serving core and the HTTP wing.
while IFS=$'\t' read -r file included; do
  case "$included" in
    grpc/*|grpcpp/*|google/protobuf/*|arach/v1/*)
      report "$file includes $included: the serving core and the HTTP wing speak no gRPC or protobuf" ;;
    server/grpc/grpc_server.h)
      [ "$file" = server/serve.cc ] || report "$file includes $included: only serve.cc runs the gRPC wing" ;;
    server/grpc/*)
      report "$file includes $included: the serving core and the HTTP wing do not use the gRPC wing" ;;
    server/http/http_server.h)
      [[ "$file" == server/http/* || "$file" == server/serve.cc ]] || report "$file includes $included: only serve.cc runs the HTTP wing" ;;
    server/http/*)
      [[ "$file" == server/http/* ]] || report "$file includes $included: the serving core does not use the HTTP wing" ;;
  esac
done < <(includes_of server -maxdepth 1; includes_of server/http)

# The client.
while IFS=$'\t' read -r file included; do
  case "$included" in
    server/*) report "$file includes $included: the client talks to the server only through its APIs" ;;
    engine/variant/*|engine/core/*) ;;
    engine/*) report "$file includes $included: the client uses the engine's variant vocabulary and core only" ;;
  esac
done < <(includes_of client)

if [ "$violations" -gt 0 ]; then
  echo "[layers] $violations violation(s)"
  exit 1
fi
echo "[layers] every include follows the layers"
