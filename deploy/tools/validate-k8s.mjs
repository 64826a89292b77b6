// Checks rendered Kubernetes manifests: every object against the Kubernetes (Prometheus Operator, Gateway API)
// schema of its kind, InferencePool against the Inference Extension's CRD, then the rules this deployment
// relies on (probes, drain timing, security context, GPU requests; with --gateway the pool, the endpoint
// picker's metric mapping, the route and the network policy).
// Usage: node validate-k8s.mjs [--gpu] [--gateway] [--crd inferencepools.yaml] rendered.yaml
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import Ajv from "ajv";
import { Namespace, Service, ConfigMap, ServiceAccount } from "kubernetes-models/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { HTTPRoute } from "@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1";
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
  "v1/ServiceAccount": ServiceAccount,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
  "gateway.networking.k8s.io/v1/HTTPRoute": HTTPRoute,
};

const args = process.argv.slice(2);
const gpu = args.includes("--gpu");
const gateway = args.includes("--gateway");
const crdIndex = args.indexOf("--crd");
const crdFile = crdIndex >= 0 ? args[crdIndex + 1] : null;
const file = args.filter((a, i) => !a.startsWith("--") && args[i - 1] !== "--crd")[0];
const errors = [];
// Custom resources: validated against the openAPIV3Schema of their CRD (ajv; the Kubernetes extensions
// x-kubernetes-* are annotations to it).
const crdValidators = {};
if (crdFile) {
  for (const doc of parseAllDocuments(readFileSync(crdFile, "utf8"))) {
    const crd = doc.toJS();
    for (const version of crd.spec.versions) {
      const ajv = new Ajv({ strict: false, allErrors: true });
      for (const format of ["int32", "int64", "date-time"]) ajv.addFormat(format, true);  // Kubernetes checks these itself
      crdValidators[`${crd.spec.group}/${version.name}/${crd.spec.names.kind}`] = ajv.compile(version.schema.openAPIV3Schema);
    }
  }
}
const objects = [];
for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
  if (doc.errors.length > 0) errors.push(`${file}: YAML: ${doc.errors[0].message}`);
  const obj = doc.toJS();
  if (obj == null) continue;
  objects.push(obj);
  const key = `${obj.apiVersion}/${obj.kind}`;
  const Model = kinds[key];
  if (crdValidators[key]) {
    if (!crdValidators[key](obj)) {
      errors.push(`${obj.kind} ${obj.metadata?.name}: ${crdValidators[key].errors.map((e) => `${e.instancePath} ${e.message}`).join("; ")}`);
    }
    continue;
  }
  if (key === "inference.networking.k8s.io/v1/InferencePool" && !crdFile) {
    console.log(`InferencePool ${obj.metadata?.name}: not checked against its CRD (--crd not given: ../shared/third_party absent)`);
    continue;
  }
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
    if (!c.securityContext?.readOnlyRootFilesystem) errors.push(`${where}: the root filesystem must be read-only`);
    if (c.securityContext?.allowPrivilegeEscalation !== false) errors.push(`${where}: allowPrivilegeEscalation must be false`);
    if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory) errors.push(`${where}: cpu and memory requests are needed`);
    if (!c.readinessProbe || !c.livenessProbe) errors.push(`${where}: readiness and liveness probes are needed`);
    if (c.name !== "arach-server") continue;
    // The model server's own rules.
    if (!c.startupProbe) errors.push(`${where}: no startupProbe`);
    // Probes go to the internal --metrics_listen port (plain HTTP, threads of its own): on the API's port a
    // probe would share the connections that streams hold, and a busy pod would fail readiness under load.
    const metricsPortName = (c.ports ?? []).find((p) => p.name === "metrics")?.containerPort;
    for (const probe of [c.readinessProbe, c.startupProbe]) {
      const port = probe?.httpGet?.port;
      if (probe?.httpGet?.path !== "/ready" || (probe?.httpGet?.scheme ?? "HTTP") !== "HTTP" ||
          !(port === "metrics" || (metricsPortName !== undefined && port === metricsPortName))) {
        errors.push(`${where}: readiness and startup must ask HTTP /ready on the metrics port (--metrics_listen: its own threads; open)`);
      }
    }
    const live = c.livenessProbe?.httpGet;
    if (live?.path !== "/live" || (live?.scheme ?? "HTTP") !== "HTTP" ||
        !(live?.port === "metrics" || (metricsPortName !== undefined && live?.port === metricsPortName))) {
      errors.push(`${where}: liveness must ask HTTP /live on the metrics port (a wedged or failing engine is restarted; a draining one is alive)`);
    }
    const args = c.args ?? [];
    const closedBy = ["--api_key_file=", "--tls_cert=", "--tls_key=", "--grpc_reflection=false"].concat(gateway ? [] : ["--http_tls_cert=", "--http_tls_key="]);
    for (const needed of closedBy) {
      if (!args.some((a) => a.startsWith(needed))) errors.push(`${where}: the deployment must be closed (${needed}...)`);
    }
    if (gateway && args.some((a) => a.startsWith("--http_tls_"))) errors.push(`${where}: the pool speaks cleartext HTTP to the pods: no --http_tls_*`);
    for (const file of args.filter((a) => /^--(api_key_file|http_tls_cert|http_tls_key|tls_cert|tls_key)=/.test(a)).map((a) => a.split("=")[1])) {
      const mounted = (c.volumeMounts ?? []).some((m) => file.startsWith(m.mountPath + "/"));
      if (!mounted) errors.push(`${where}: ${file} is on no mounted volume`);
    }
    // The drain: readiness turns false first (lame duck) for long enough that the kubelet reports the pod not
    // ready before anything is refused, then calls in flight finish; the pod's grace period covers both.
    const argValue = (name, fallback) => {
      const arg = (c.args ?? []).find((a) => a.startsWith(`--${name}=`));
      return arg ? Number(arg.split("=")[1].split(" ")[0]) : fallback;
    };
    const drain = argValue("drain_grace_seconds", 30);
    const announce = argValue("drain_announce_ms", 0) / 1000;
    const preStop = c.lifecycle?.preStop?.exec?.command?.[0] === "sleep" ? Number(c.lifecycle.preStop.exec.command[1]) : 0;
    if (!(pod.terminationGracePeriodSeconds > drain + announce + preStop)) {
      errors.push(`${where}: terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} must exceed preStop ${preStop} s + announce ${announce} s + drain ${drain} s`);
    }
    const readiness = c.readinessProbe ?? {};
    const notReadyAfter = (readiness.periodSeconds ?? 10) * (readiness.failureThreshold ?? 3);
    if (!(announce > notReadyAfter)) {
      errors.push(`${where}: --drain_announce_ms (${announce} s) must exceed the readiness probe's periodSeconds x failureThreshold (${notReadyAfter} s), so that readiness is false before calls are refused`);
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
if (gateway) checkGateway();
for (const h of byKind("HorizontalPodAutoscaler")) {
  const target = h.spec.scaleTargetRef;
  if (!byKind(target.kind).some((o) => o.metadata.name === target.name)) errors.push(`HPA ${h.metadata.name}: target ${target.kind}/${target.name} not rendered`);
}

// The Inference Extension's pieces fit together: the pool selects the server pods and their API port, the
// picker it names is rendered with our gauges as its metric mapping, the route reaches the pool, the network
// policy covers the pods, and replicas spread across nodes.
function checkGateway() {
  const server = byKind("Deployment").find((d) => d.spec.template.spec.containers.some((c) => c.name === "arach-server"));
  const serverPod = server?.spec.template;
  const serverContainer = serverPod?.spec.containers.find((c) => c.name === "arach-server");
  const pools = byKind("InferencePool");
  if (pools.length !== 1) errors.push(`gateway: one InferencePool expected, ${pools.length} rendered`);
  for (const pool of pools) {
    const where = `InferencePool ${pool.metadata.name}`;
    for (const [k, v] of Object.entries(pool.spec.selector.matchLabels ?? {})) {
      if (serverPod?.metadata.labels?.[k] !== v) errors.push(`${where}: selects ${k}=${v}, which the server pods do not carry`);
    }
    const ports = new Set((serverContainer?.ports ?? []).map((p) => p.containerPort));
    for (const p of pool.spec.targetPorts) {
      if (!ports.has(p.number)) errors.push(`${where}: target port ${p.number} is not a port of the server container`);
    }
    const picker = byKind("Service").find((s) => s.metadata.name === pool.spec.endpointPickerRef?.name);
    if (!picker) errors.push(`${where}: endpoint picker Service ${pool.spec.endpointPickerRef?.name} not rendered`);
    else if (!picker.spec.ports.some((p) => p.port === pool.spec.endpointPickerRef.port?.number)) {
      errors.push(`${where}: the endpoint picker Service has no port ${pool.spec.endpointPickerRef.port?.number}`);
    }
  }
  const epp = byKind("Deployment").flatMap((d) => d.spec.template.spec.containers).find((c) => c.name === "epp");
  if (!epp) {
    errors.push("gateway: no endpoint picker Deployment (container epp) rendered");
  } else {
    const flag = (name) => (epp.args ?? []).find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
    const expected = {
      "total-queued-requests-metric": "arach_num_requests_waiting",
      "total-running-requests-metric": "arach_num_requests_running",
      "kv-cache-usage-percentage-metric": "arach_kv_cache_usage_ratio",
      "cache-info-metric": "arach_cache_config_info",
      "lora-info-metric": "arach_lora_requests_info",
    };
    for (const [name, metric] of Object.entries(expected)) {
      if (flag(name) !== metric) errors.push(`endpoint picker: --${name} must be ${metric} (the model server protocol under our name), not ${flag(name)}`);
    }
    const metricsArg = (serverContainer?.args ?? []).find((a) => a.startsWith("--metrics_listen="));
    if (!metricsArg || flag("model-server-metrics-port") !== metricsArg.split(":").pop()) {
      errors.push("endpoint picker: --model-server-metrics-port must be the server's --metrics_listen port");
    }
    if (pools[0] && (flag("pool-name") !== pools[0].metadata.name || flag("pool-namespace") !== pools[0].metadata.namespace)) {
      errors.push("endpoint picker: --pool-name / --pool-namespace must name the rendered InferencePool");
    }
  }
  const routes = byKind("HTTPRoute");
  if (!routes.some((r) => r.spec.rules.some((rule) => (rule.backendRefs ?? []).some((b) => b.kind === "InferencePool" && pools.some((p) => p.metadata.name === b.name))))) {
    errors.push("gateway: no HTTPRoute sends traffic to the InferencePool");
  }
  const policies = byKind("NetworkPolicy");
  const coversServer = policies.some((p) => Object.entries(p.spec.podSelector.matchLabels ?? {}).every(([k, v]) => serverPod?.metadata.labels?.[k] === v) &&
                                            (p.spec.policyTypes ?? []).includes("Ingress"));
  if (!coversServer) errors.push("gateway: no NetworkPolicy restricts ingress to the server pods");
  if (!(serverPod?.spec.topologySpreadConstraints ?? []).some((t) => t.topologyKey === "kubernetes.io/hostname")) {
    errors.push("gateway: the server pods must spread across nodes (topologySpreadConstraints on kubernetes.io/hostname)");
  }
}

if (errors.length > 0) {
  for (const e of errors) console.error(`FAIL ${e}`);
  process.exit(1);
}
console.log(`${file}: ${objects.length} objects valid (${[...new Set(objects.map((o) => o.kind))].join(", ")})`);
