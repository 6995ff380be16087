"""docker-compose.yml is valid and runs the same stack as `make run` (checked without an
engine: Debian's docker-compose parses and resolves it, check-jsonschema validates it)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kassa_dev import procfile

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="Debian's docker-compose is installed by .ci/run")
def test_docker_compose_config_is_valid():
    result = subprocess.run(["docker-compose", "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True,
                            cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_compose_file_matches_the_compose_spec_schema():
    check = Path(sys.executable).parent / "check-jsonschema"
    result = subprocess.run([str(check), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_runs_every_process_of_the_procfile_and_workers_can_scale():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    for process in procfile.read(ROOT / "Procfile"):
        name = process.name
        assert name in services, f"{name} is in the Procfile but not in docker-compose.yml"
    for worker in ("relay", "settler", "webhook-sender", "expirer", "chain-watcher"):
        svc = services[worker]
        assert "container_name" not in svc and "ports" not in svc, f"{worker} must be scalable"
        assert svc["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    for infra in ("postgres", "rabbitmq", "anvil", "web"):
        assert "healthcheck" in services[infra]
