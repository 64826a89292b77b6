#!/usr/bin/env bash
# Validates the deployment without a cluster or a Docker engine:
#  - kubectl kustomize renders the overlays (cpu, gpu, inference-gateway); every object is checked against the Kubernetes schema of its
#    kind (deploy/tools/validate-k8s.mjs, kubernetes-models) plus the deployment's own rules;
#  - docker-compose renders the compose file for both profiles; Prometheus, alert rules, Grafana files parse
#    and hold what they must (deploy/tools/check_configs.py).
# (That every metric the dashboard, the alerts and the HPA use is exported is checked against a live
# server by tests/e2e/experiment_e2e_test.) Exits 77 (skipped) when kubectl, node or docker-compose is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BUILD_DIR:-build}/deploy-check
mkdir -p "$out"
for tool in kubectl node npm docker-compose python3; do
  command -v "$tool" >/dev/null || { echo "[deploy] $tool not found: deployment checks skipped"; exit 77; }
done
if [ ! -d deploy/tools/node_modules ]; then
  (cd deploy/tools && npm ci --no-audit --no-fund --silent)
fi
# The InferencePool CRD of the pinned Inference Extension release, where ../shared has it.
crd=../shared/third_party/gateway-api-inference-extension-1.6.0/config/crd/bases/inference.networking.k8s.io_inferencepools.yaml
crd_flag=()
if [ -f "$crd" ]; then crd_flag=(--crd "$crd"); else echo "[deploy] $crd not found: InferencePool not checked against its CRD"; fi
for overlay in cpu gpu inference-gateway; do
  kubectl kustomize "deploy/k8s/overlays/$overlay" > "$out/k8s-$overlay.yaml" 2>"$out/kustomize-$overlay.log"
  flags=()
  [ "$overlay" = gpu ] && flags=(--gpu)
  [ "$overlay" = inference-gateway ] && flags=(--gateway "${crd_flag[@]}")
  node deploy/tools/validate-k8s.mjs "${flags[@]}" "$out/k8s-$overlay.yaml"
done
COMPOSE_PROFILES=cpu docker-compose -f docker-compose.yml config > "$out/compose-cpu.yaml"
COMPOSE_PROFILES=gpu docker-compose -f docker-compose.yml config > "$out/compose-gpu.yaml"
python3 deploy/tools/check_configs.py "$out/compose-cpu.yaml" "$out/compose-gpu.yaml"
echo "[deploy] all deployment checks passed"
