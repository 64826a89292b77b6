#!/usr/bin/env python3
"""Checks the non-Kubernetes deployment files without a Docker engine: the compose file as docker-compose
renders it (both profiles), the Prometheus config and alert rules, the Grafana provisioning and dashboard.
Usage: check_configs.py RENDERED_CPU_COMPOSE.yaml RENDERED_GPU_COMPOSE.yaml"""
import json
import pathlib
import shutil
import subprocess
import sys

import yaml

root = pathlib.Path(__file__).resolve().parents[2]
errors = []


def load_yaml(path):
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except Exception as e:  # noqa: BLE001 - report any parse failure
        errors.append(f"{path}: {e}")
        return None


cpu, gpu = load_yaml(sys.argv[1]), load_yaml(sys.argv[2])
for name, rendered, service in (("cpu", cpu, "arach-server"), ("gpu", gpu, "arach-server-gpu")):
    services = (rendered or {}).get("services", {})
    for needed in (service, "prometheus", "grafana"):
        if needed not in services:
            errors.append(f"compose ({name} profile): service {needed} missing")
    s = services.get(service, {})
    if name not in s.get("profiles", []):
        errors.append(f"compose: {service} must be in the {name} profile")
    if "healthcheck" not in s:
        errors.append(f"compose: {service} has no healthcheck")
devices = (((gpu or {}).get("services", {}).get("arach-server-gpu", {}).get("deploy", {}) or {}).get("resources", {}) or {}).get(
    "reservations", {}).get("devices", [])
if not any(d.get("driver") == "nvidia" and "gpu" in d.get("capabilities", []) for d in devices):
    errors.append("compose: arach-server-gpu lacks the NVIDIA device reservation")

prom = load_yaml(root / "deploy/prometheus/prometheus.yml") or {}
if not any(t.endswith(":8000") for job in prom.get("scrape_configs", []) for sc in job.get("static_configs", [])
           for t in sc.get("targets", [])):
    errors.append("prometheus.yml: no scrape target on the HTTP port 8000 (/metrics)")
rules = load_yaml(root / "deploy/prometheus/alerts.yml") or {}
count = 0
for group in rules.get("groups", []):
    for rule in group.get("rules", []):
        count += 1
        for field in ("alert", "expr", "labels", "annotations"):
            if field not in rule:
                errors.append(f"alerts.yml: rule {rule.get('alert', '?')} has no {field}")
if count == 0:
    errors.append("alerts.yml: no rules")
recording = load_yaml(root / "deploy/prometheus/recording-rules.yml") or {}
recorded = {rule["record"] for group in recording.get("groups", []) for rule in group.get("rules", []) if "record" in rule}
if not recorded:
    errors.append("recording-rules.yml: no recording rules")
if "/etc/prometheus/recording-rules.yml" not in prom.get("rule_files", []):
    errors.append("prometheus.yml: the recording rules are not loaded")
# Prometheus's own checker parses every expression, where it is installed.
if shutil.which("promtool"):
    checked = subprocess.run(["promtool", "check", "rules", str(root / "deploy/prometheus/alerts.yml"),
                              str(root / "deploy/prometheus/recording-rules.yml")], capture_output=True, text=True)
    if checked.returncode != 0:
        errors.append(f"promtool check rules: {checked.stdout}{checked.stderr}")
else:
    print("promtool not found: rule expressions not parsed (apt-get install prometheus)")

for path in (root / "deploy/grafana/provisioning").rglob("*.yml"):
    if load_yaml(path) is None:
        errors.append(f"{path}: empty")
for path in (root / "deploy/grafana/dashboards").glob("*.json"):
    try:
        dashboard = json.loads(path.read_text())
        if not dashboard.get("panels"):
            errors.append(f"{path}: no panels")
        # Every panel reads a recorded series (the fleet-wide aggregation lives in one place).
        for panel in dashboard.get("panels", []):
            for target in panel.get("targets", []):
                series = target.get("expr", "").split("{")[0]
                if series not in recorded:
                    errors.append(f"{path}: panel {panel.get('title')!r} reads {series!r}, which no recording rule defines")
    except json.JSONDecodeError as e:
        errors.append(f"{path}: {e}")

if errors:
    for e in errors:
        print(f"FAIL {e}", file=sys.stderr)
    sys.exit(1)
print(f"compose (cpu, gpu), prometheus.yml, alerts.yml ({count} rules), recording-rules.yml ({len(recorded)} rules), "
      "grafana provisioning and dashboards valid")
