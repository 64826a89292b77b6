#!/usr/bin/env bash
# Validates the deployment without a cluster or a Docker engine:
#  - kubectl kustomize renders both overlays; every object is checked against the Kubernetes schema of its
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
for overlay in cpu gpu; do
  kubectl kustomize "deploy/k8s/overlays/$overlay" > "$out/k8s-$overlay.yaml" 2>"$out/kustomize-$overlay.log"
  flag=""
  [ "$overlay" = gpu ] && flag="--gpu"
  node deploy/tools/validate-k8s.mjs $flag "$out/k8s-$overlay.yaml"
done
COMPOSE_PROFILES=cpu docker-compose -f docker-compose.yml config > "$out/compose-cpu.yaml"
COMPOSE_PROFILES=gpu docker-compose -f docker-compose.yml config > "$out/compose-gpu.yaml"
python3 deploy/tools/check_configs.py "$out/compose-cpu.yaml" "$out/compose-gpu.yaml"
echo "[deploy] all deployment checks passed"
