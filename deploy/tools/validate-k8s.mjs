// Checks rendered Kubernetes manifests: every object against the Kubernetes (and Prometheus Operator)
// schema of its kind, then the rules this deployment relies on (probes, drain timing, security context,
// GPU requests). Usage: node validate-k8s.mjs [--gpu] rendered.yaml
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { Namespace, Service, ConfigMap } from "kubernetes-models/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";

const kinds = {
  "v1/Namespace": Namespace,
  "v1/Service": Service,
  "v1/ConfigMap": ConfigMap,
  "apps/v1/Deployment": Deployment,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
};

const args = process.argv.slice(2);
const gpu = args.includes("--gpu");
const file = args.filter((a) => !a.startsWith("--"))[0];
const errors = [];
const objects = [];
for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
  if (doc.errors.length > 0) errors.push(`${file}: YAML: ${doc.errors[0].message}`);
  const obj = doc.toJS();
  if (obj == null) continue;
  objects.push(obj);
  const key = `${obj.apiVersion}/${obj.kind}`;
  const Model = kinds[key];
  if (!Model) {
    errors.push(`${obj.kind} ${obj.metadata?.name}: no schema known for ${key}`);
    continue;
  }
  try {
    new Model(obj).validate();
  } catch (e) {
    errors.push(`${obj.kind} ${obj.metadata?.name}: ${e.message}`);
  }
}

const byKind = (kind) => objects.filter((o) => o.kind === kind);
for (const kind of ["Namespace", "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "ServiceMonitor", "ConfigMap"]) {
  if (byKind(kind).length === 0) errors.push(`no ${kind} rendered`);
}
if (!byKind("Service").some((s) => s.spec.clusterIP === "None")) errors.push("no headless Service for client-side balancing");
if (!byKind("Service").some((s) => s.spec.type === "ClusterIP" && s.spec.clusterIP !== "None")) errors.push("no ClusterIP Service");

for (const d of byKind("Deployment")) {
  const pod = d.spec.template.spec;
  const labels = d.spec.template.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(d.spec.selector.matchLabels)) {
    if (labels[k] !== v) errors.push(`Deployment ${d.metadata.name}: selector ${k}=${v} does not match the pod labels`);
  }
  if (!pod.securityContext?.runAsNonRoot) errors.push(`Deployment ${d.metadata.name}: pods must run as non-root`);
  for (const c of pod.containers) {
    const where = `Deployment ${d.metadata.name} container ${c.name}`;
    for (const probe of ["readinessProbe", "livenessProbe", "startupProbe"]) {
      if (!c[probe]) errors.push(`${where}: no ${probe}`);
    }
    for (const probe of [c.readinessProbe, c.startupProbe]) {
      if (probe?.httpGet?.path !== "/ready" || probe?.httpGet?.scheme !== "HTTPS") {
        errors.push(`${where}: readiness and startup must ask HTTPS /ready (open; works whatever gRPC asks of clients)`);
      }
    }
    const args = c.args ?? [];
    for (const needed of ["--api_key_file=", "--http_tls_cert=", "--http_tls_key=", "--tls_cert=", "--tls_key=", "--grpc_reflection=false"]) {
      if (!args.some((a) => a.startsWith(needed))) errors.push(`${where}: the deployment must be closed (${needed}...)`);
    }
    for (const file of args.filter((a) => /^--(api_key_file|http_tls_cert|http_tls_key|tls_cert|tls_key)=/.test(a)).map((a) => a.split("=")[1])) {
      const mounted = (c.volumeMounts ?? []).some((m) => file.startsWith(m.mountPath + "/"));
      if (!mounted) errors.push(`${where}: ${file} is on no mounted volume`);
    }
    if (!c.securityContext?.readOnlyRootFilesystem) errors.push(`${where}: the root filesystem must be read-only`);
    if (c.securityContext?.allowPrivilegeEscalation !== false) errors.push(`${where}: allowPrivilegeEscalation must be false`);
    if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory) errors.push(`${where}: cpu and memory requests are needed`);
    const drainArg = (c.args ?? []).find((a) => a.startsWith("--drain_grace_seconds="));
    const drain = drainArg ? Number(drainArg.split("=")[1]) : 30;
    const preStop = c.lifecycle?.preStop?.exec?.command?.[0] === "sleep" ? Number(c.lifecycle.preStop.exec.command[1]) : 0;
    if (!(pod.terminationGracePeriodSeconds > drain + preStop)) {
      errors.push(`${where}: terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} must exceed preStop ${preStop} s + drain ${drain} s`);
    }
    const ports = new Set((c.ports ?? []).map((p) => p.containerPort));
    if (!ports.has(50051) || !ports.has(8000)) errors.push(`${where}: the gRPC (50051) and HTTP (8000) ports must be declared`);
    if ((c.args ?? []).some((a) => a.startsWith("--metrics_listen=0.0.0.0:9090"))) {
      errors.push(`${where}: 9090 is Prometheus's own port`);
    }
    const metricsArg = (c.args ?? []).find((a) => a.startsWith("--metrics_listen="));
    if (!metricsArg || !ports.has(Number(metricsArg.split(":").pop()))) {
      errors.push(`${where}: /metrics needs its own declared port (--metrics_listen), the API port being HTTPS`);
    }
    const httpArg = (c.args ?? []).find((a) => a.startsWith("--http_listen="));
    if (httpArg && !httpArg.endsWith(":8000")) errors.push(`${where}: --http_listen must match the declared HTTP port 8000`);
    const wantsGpu = (c.args ?? []).includes("--device=cuda");
    const gpuLimit = c.resources?.limits?.["nvidia.com/gpu"];
    if (gpu && (!wantsGpu || !gpuLimit)) errors.push(`${where}: the GPU overlay needs --device=cuda and an nvidia.com/gpu limit`);
    if (!gpu && (wantsGpu || gpuLimit)) errors.push(`${where}: the CPU deployment must not ask for a GPU`);
  }
}
for (const h of byKind("HorizontalPodAutoscaler")) {
  const target = h.spec.scaleTargetRef;
  if (!byKind(target.kind).some((o) => o.metadata.name === target.name)) errors.push(`HPA ${h.metadata.name}: target ${target.kind}/${target.name} not rendered`);
}

if (errors.length > 0) {
  for (const e of errors) console.error(`FAIL ${e}`);
  process.exit(1);
}
console.log(`${file}: ${objects.length} objects valid (${[...new Set(objects.map((o) => o.kind))].join(", ")})`);
