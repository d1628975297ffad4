"""The deployment files, checked by the tools made for them: hadolint on the Dockerfile, the compose
specification's JSON schema on compose.yaml (vendored in check-jsonschema, so offline), `helm lint` and
`helm template` on the chart with its manifests validated against the Kubernetes schemas
(kubernetes-validate, strict). Each checker is also shown a broken file, so a checker that silently passes
everything fails here. And the files must agree with the code: every GIEOK_* name they set is a setting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from gieok.core.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
HELM = ROOT / "tests" / "helm" / "bin" / "helm"
CHART = ROOT / "deploy" / "helm" / "gieok"
K8S_VERSION = "1.33.0"


def _known(name: str) -> bool:
    """A setting (or one of the few variables read outside Settings: the secrets dir; compose's own)."""
    field = name.removeprefix("GIEOK_").lower()
    return name.startswith("GIEOK_") and (field in Settings.model_fields
                                          or name in ("GIEOK_SECRETS_DIR", "GIEOK_IMAGE", "GIEOK_BIND"))


def run(*cmd: str | Path, ok: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120, **kw)
    if ok:
        assert res.returncode == 0, res.stdout + res.stderr
    return res


# --- Dockerfile ------------------------------------------------------------------------------------------
def test_dockerfile_passes_hadolint() -> None:
    run(BIN / "hadolint", ROOT / "Dockerfile")


def test_hadolint_catches_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:latest\nRUN apt-get update && apt-get install curl\nUSER root\n")
    res = run(BIN / "hadolint", bad, ok=False)
    assert res.returncode != 0 and "DL3007" in res.stdout   # `latest` tag


def test_dockerfile_runs_as_non_root_with_a_healthcheck_and_a_data_volume() -> None:
    lines = [ln.strip() for ln in (ROOT / "Dockerfile").read_text().splitlines() if ln.strip()
             and not ln.startswith("#")]
    final = lines[max(i for i, ln in enumerate(lines) if ln.startswith("FROM ")):]
    assert any(ln.startswith("FROM ") and " AS build" in ln for ln in lines), "multi-stage build"
    assert "USER 10001:10001" in final
    assert any(ln.startswith("HEALTHCHECK ") and "gieok\", \"healthcheck" in ln for ln in final)
    assert 'VOLUME ["/data"]' in final
    env = " ".join(ln for ln in final if ln.startswith(("ENV", "GIEOK_", "PATH", "OMP", "PYTHON")))
    for name in [w.split("=")[0] for w in env.replace("\\", " ").split() if w.startswith("GIEOK_")]:
        assert _known(name), name


# --- compose.yaml ----------------------------------------------------------------------------------------
def _compose() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "compose.yaml").read_text()))


def test_compose_validates_against_the_compose_specification() -> None:
    res = run(BIN / "check-jsonschema", "--builtin-schema", "vendor.compose-spec", ROOT / "compose.yaml")
    assert "ok" in res.stdout


def test_the_compose_schema_check_rejects_a_broken_file(tmp_path: Path) -> None:
    doc = _compose()
    doc["services"]["server"]["deploy"]["replicas"] = "two"
    doc["services"]["worker"]["healthcheck"]["retries"] = [3]
    bad = tmp_path / "compose.yaml"
    bad.write_text(yaml.safe_dump(doc))
    res = run(BIN / "check-jsonschema", "--builtin-schema", "vendor.compose-spec", bad, ok=False)
    assert res.returncode == 1 and "services.worker" in res.stdout


def test_compose_runs_replicas_workers_and_postgres_with_health_checks_and_secrets() -> None:
    doc = _compose()
    svc = doc["services"]
    assert svc["server"]["deploy"]["replicas"] >= 2 and svc["worker"]["deploy"]["replicas"] >= 2
    assert "pgvector" in svc["db"]["image"]
    for name in ("db", "server", "worker", "proxy"):
        assert svc[name]["healthcheck"]["test"], name
    assert "/ready" in svc["server"]["healthcheck"]["test"]
    assert svc["server"]["environment"]["GIEOK_STATELESS_HTTP"] == "true"
    assert svc["server"]["environment"]["GIEOK_LIBRARIAN"] == "false"
    assert svc["worker"]["command"] == ["worker"]
    # The password reaches gieok as a file named like its setting, never as an environment value.
    targets = {s["target"] for s in svc["server"]["secrets"]}
    assert "gieok_database_password" in targets and "GIEOK_DATABASE_PASSWORD" not in svc["server"]["environment"]
    assert set(doc["secrets"]) >= {s["source"] for s in svc["server"]["secrets"]}
    for name in ("server", "worker"):
        for var in svc[name]["environment"]:
            assert _known(var), var
        assert svc[name]["environment"]["GIEOK_AUTH"].startswith("${GIEOK_AUTH:-apikey")
    assert "upstream http://server:8765" in doc["configs"]["nginx_conf"]["content"]


# --- Helm chart -------------------------------------------------------------------------------------------
needs_helm = pytest.mark.skipif(not HELM.exists(), reason="helm not unpacked: `make helm`")
BASE = ("--set", "secrets.databasePassword=pw")


def render(*args: str, ok: bool = True) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    res = run(HELM, "template", "team", CHART, *args, ok=ok, env={**os.environ, "HELM_CACHE_HOME": "/tmp/helm",
                                                                 "HELM_CONFIG_HOME": "/tmp/helm"})
    docs = [d for d in yaml.safe_load_all(res.stdout) if d] if res.returncode == 0 else []
    return docs, res


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


@needs_helm
def test_helm_lint() -> None:
    res = run(HELM, "lint", CHART, *BASE)
    assert "0 chart(s) failed" in res.stdout


@needs_helm
@pytest.mark.parametrize("variant", [(), ("--set", "metrics.serviceMonitor.enabled=true"),
                                     ("--set", "auth.mode=jwt", "--set", "secrets.jwtSecret=" + "s" * 40,
                                      "--set", "server.replicas=4", "--set", "env.GIEOK_LLM=openai")])
def test_rendered_manifests_validate_against_kubernetes_schemas(variant: tuple[str, ...]) -> None:
    docs, _ = render(*BASE, *variant)
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "Service", "ConfigMap", "Secret", "PodDisruptionBudget"} <= kinds
    for d in docs:
        if d["apiVersion"].startswith("monitoring.coreos.com"):
            continue   # a CRD: no upstream schema; its wiring is checked below
        kubernetes_validate.validate(d, K8S_VERSION, strict=True)


def test_kubernetes_validate_rejects_a_broken_manifest() -> None:
    bad = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"replicas": "two", "selector": {}, "template": {"spec": {"containers": [{"name": "c"}]}}}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


@needs_helm
def test_chart_wiring_probes_security_and_settings() -> None:
    docs, _ = render(*BASE, "--set", "metrics.serviceMonitor.enabled=true")
    deployments = {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in by_kind(docs, "Deployment")}
    services = {d["metadata"]["labels"]["app.kubernetes.io/component"]: d for d in by_kind(docs, "Service")}
    assert set(deployments) == {"server", "worker"}
    for comp, dep in deployments.items():
        pod = dep["spec"]["template"]
        labels = pod["metadata"]["labels"]
        assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert services[comp]["spec"]["selector"].items() <= labels.items()
        c = pod["spec"]["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert c["livenessProbe"]["httpGet"]["path"] == "/health"
        assert c["readinessProbe"]["httpGet"]["path"] == "/ready"
        assert c["readinessProbe"]["httpGet"]["port"] in ports
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        assert {"/run/secrets", "/data", "/tmp"} <= mounts
        for svc_port in services[comp]["spec"]["ports"]:
            assert svc_port["targetPort"] in ports
    pdbs = {d["metadata"]["name"]: d for d in by_kind(docs, "PodDisruptionBudget")}
    assert len(pdbs) == 2 and all(p["spec"]["maxUnavailable"] == 1 for p in pdbs.values())
    for monitor in by_kind(docs, "ServiceMonitor"):
        sel = monitor["spec"]["selector"]["matchLabels"]
        target = [s for s in services.values() if sel.items() <= s["metadata"]["labels"].items()]
        assert len(target) == 1, monitor["metadata"]["name"]
        assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in target[0]["spec"]["ports"]}
    config = by_kind(docs, "ConfigMap")[0]["data"]
    env_names = [*config, *(e["name"] for d in deployments.values()
                            for e in d["spec"]["template"]["spec"]["containers"][0]["env"])]
    for name in env_names:
        assert _known(name), name
    secret = by_kind(docs, "Secret")[0]["stringData"]
    assert secret == {"gieok_database_password": "pw"}   # unset secrets are left out, not empty files


@needs_helm
def test_chart_refuses_to_render_without_a_database_password_or_an_existing_secret() -> None:
    _, res = render(ok=False)
    assert res.returncode != 0 and "secrets.databasePassword is required" in res.stderr
    docs, _ = render("--set", "secrets.create=false", "--set", "secrets.existingSecret=mine")
    assert not by_kind(docs, "Secret")
    volumes = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "secrets", "secret": {"secretName": "mine"}} in volumes


@pytest.mark.skipif(not os.environ.get("CI"), reason="CI only: locally `make helm` may not have run")
def test_ci_has_helm() -> None:
    # CI runs `make test`, which unpacks helm first; were it missing, the chart tests above would only skip.
    assert HELM.exists()
