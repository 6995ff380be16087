"""docker-compose.yml is valid and runs the same stack as `make run` (checked without an
engine: Debian's docker-compose parses and resolves it, check-jsonschema validates it).

The Procfile is the one process registry: `make run` starts it, and the compose file and
the e2e test stack must run the same processes with the same commands."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kassa_common.config import Settings
from kassa_dev import procfile
from kassa_dev.run import DEV_DEFAULTS
from tests.support import stack

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = ROOT / "docker-compose.yml"
# Compose services that are not Kassa processes of the Procfile: infrastructure, the dev
# chain, and the one-shot migration (schema, then the dev tokens) the processes wait for.
NOT_PROCESSES = {"postgres", "rabbitmq", "redis", "anvil", "migrate"}


def compose_services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def procfile_processes() -> dict[str, list[str]]:
    return {p.name: p.argv for p in procfile.read(ROOT / "Procfile")}


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="Debian's docker-compose: make test installs it")
def test_docker_compose_config_is_valid():
    result = subprocess.run(
        ["docker-compose", "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.returncode == 0, result.stderr


def test_compose_file_matches_the_compose_spec_schema():
    check = Path(sys.executable).parent / "check-jsonschema"
    result = subprocess.run(
        [str(check), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_runs_every_process_of_the_procfile_and_workers_can_scale():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    for process in procfile.read(ROOT / "Procfile"):
        name = process.name
        assert name in services, f"{name} is in the Procfile but not in docker-compose.yml"
    for worker in ("relay", "settler", "webhook-sender", "notifier", "expirer", "chain-watcher", "sweeper"):
        svc = services[worker]
        assert "container_name" not in svc and "ports" not in svc, f"{worker} must be scalable"
        assert svc["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    for infra in ("postgres", "rabbitmq", "anvil", "web"):
        assert "healthcheck" in services[infra]


def test_compose_runs_exactly_the_procfile_processes_with_the_procfile_commands():
    processes = procfile_processes()
    compose = {name: svc["command"] for name, svc in compose_services().items() if name not in NOT_PROCESSES}
    assert compose == processes


def test_the_test_stack_runs_every_procfile_process_but_those_that_need_a_chain_node():
    expected = {name: argv for name, argv in procfile_processes().items() if name not in ("chain-watcher", "sweeper")}
    assert stack.PROCESSES == expected


def test_every_python_module_the_processes_run_exists():
    commands = [" ".join(argv) for argv in procfile_processes().values()]
    commands += [
        " ".join(svc["command"]) if isinstance(svc.get("command"), list) else svc.get("command", "")
        for svc in compose_services().values()
    ]
    modules = {m for command in commands for m in re.findall(r"python -m ([\w.]+)", command)}
    assert {"kassa_relay.main", "kassa_settler.main", "kassa_dev.chain", "kassa_sweeper.main"} <= modules
    missing = sorted(m for m in modules if importlib.util.find_spec(m) is None)
    assert missing == []


def compose_environment() -> dict[str, str]:
    """The Kassa processes' environment as compose resolves it with nothing set outside."""
    env = yaml.safe_load(COMPOSE.read_text())["x-kassa"]["environment"]
    return {k: re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(v)) for k, v in env.items()}


@pytest.mark.parametrize("env", [compose_environment(), DEV_DEFAULTS], ids=["docker compose", "make run"])
def test_the_development_stacks_start_the_web_and_take_the_walk_throughs_live_payment(env):
    settings = Settings.from_env(env)
    settings.check_web()  # the built-in SECRET_KEY is fine on a development stack
    assert settings.development and settings.rates.fixed_rates_allow_live
