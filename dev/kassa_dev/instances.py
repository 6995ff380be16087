"""Private PostgreSQL and RabbitMQ servers, each on its own port and data directory, that a
test or the chaos run starts, crashes (SIGKILL of its process group, by pid) and starts
again, without ever touching the machine's shared services.

Both run as their service account when started by root (PostgreSQL refuses root; the
directory is handed to that account), and as the current user otherwise.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _service_user(name: str) -> str | None:
    """The account to run as: ``name`` when we are root (and it exists), else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(name)
        return name
    except KeyError:
        return None


def _private_dir(prefix: str, owner: str | None) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if owner:
        shutil.chown(path, owner, owner)
    return path


class _Server:
    """A server process in its own session, so a SIGKILL of its group takes every child."""

    proc: subprocess.Popen | None = None
    port: int
    name = "server"

    def _launch(
        self, argv: list[str], *, env: dict[str, str] | None = None, user: str | None = None, log: Path
    ) -> None:
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                argv, env=env, user=user, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd="/"
            )

    def _wait_ready(self, ready, timeout: float, log: Path) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}):\n{log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} not ready after {timeout}s:\n{log.read_text()[-3000:]}")
            time.sleep(0.1)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """Crash it: SIGKILL to its whole process group, then wait until the port is free."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)
        self.proc = None
        deadline = time.monotonic() + 30
        while _answers(self.port) and time.monotonic() < deadline:
            time.sleep(0.1)


def _pg_bin(tool: str) -> str:
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{tool}"), reverse=True):
        return candidate
    found = shutil.which(tool)
    if not found:
        raise RuntimeError(f"PostgreSQL's {tool} is not installed")
    return found


class PrivatePostgres(_Server):
    """``initdb`` once, then ``postgres`` on ``port`` (trust auth, user postgres)."""

    name = "private PostgreSQL"

    def __init__(self, port: int | None = None, *, max_connections: int = 200) -> None:
        self.port = port or free_port()
        self.user = _service_user("postgres")
        self.dir = _private_dir("kassa-pg-", self.user)
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self.max_connections = max_connections

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self, timeout: float = 60) -> PrivatePostgres:
        if not self.data.exists():
            subprocess.run(
                [_pg_bin("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
                user=self.user,
                check=True,
                capture_output=True,
                cwd="/",
            )
        # fsync off: a crash of the server's processes (what this class does) loses nothing, as
        # the OS keeps what they wrote; synchronous_commit stays on, or a SIGKILL would lose commits.
        self._launch(
            [
                _pg_bin("postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-k",
                str(self.dir),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                f"max_connections={self.max_connections}",
                "-c",
                "fsync=off",
                "-c",
                "full_page_writes=off",
            ],
            user=self.user,
            log=self.log,
        )
        self._wait_ready(self._accepts, timeout, self.log)
        return self

    def _accepts(self) -> bool:
        result = subprocess.run(
            [_pg_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"], capture_output=True, check=False
        )
        return result.returncode == 0

    def remove(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivateRabbit(_Server):
    """A RabbitMQ node of its own: node name, AMQP and distribution ports, mnesia and logs."""

    name = "private RabbitMQ"

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.dist_port = free_port()
        self.user = _service_user("rabbitmq")
        self.dir = _private_dir("kassa-rabbit-", self.user)
        self.log = self.dir / "rabbitmq.log"
        self.nodename = f"kassa{self.port}@localhost"
        config = self.dir / "rabbitmq.conf"
        config.write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\n"
            "loopback_users = none\n"
            "disk_free_limit.absolute = 50MB\n"
            "vm_memory_high_watermark.relative = 0.2\n"
            "management_agent.disable_metrics_collector = true\n"
        )
        (self.dir / "enabled_plugins").write_text("[].\n")
        (self.dir / "rabbitmq-env.conf").write_text("")
        if self.user:
            for path in self.dir.iterdir():
                shutil.chown(path, self.user, self.user)

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def _env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.dir),
            "LANG": "C.UTF-8",
            "RABBITMQ_NODENAME": self.nodename,
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(self.dir / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.dir / "log"),
            "RABBITMQ_CONFIG_FILE": str(self.dir / "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.dir / "enabled_plugins"),
            "RABBITMQ_CONF_ENV_FILE": str(self.dir / "rabbitmq-env.conf"),
            "RABBITMQ_PID_FILE": str(self.dir / "rabbitmq.pid"),
            "RABBITMQ_LOGS": "-",
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "+S 1:1 +A 4",
        }

    def start(self, timeout: float = 90) -> PrivateRabbit:
        self._launch(["/usr/lib/rabbitmq/bin/rabbitmq-server"], env=self._env(), user=self.user, log=self.log)
        self._wait_ready(self._accepts, timeout, self.log)
        return self

    def _accepts(self) -> bool:
        if not _answers(self.port):
            return False
        import pika  # the broker is up once it completes an AMQP handshake

        try:
            pika.BlockingConnection(pika.URLParameters(self.url + "?connection_attempts=1&socket_timeout=2")).close()
            return True
        except Exception:  # noqa: BLE001 - not yet
            return False

    def remove(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
