"""Private PostgreSQL and RabbitMQ servers, each on its own port and data directory, that a
test or the chaos run starts, crashes (SIGKILL of its process group, by pid) and starts
again, without ever touching the machine's shared services.

For ``make chaos --ha``: a PostgreSQL standby streaming from a private primary
(``PrivatePostgres.standby_of``, promoted with ``promote``), and a RabbitMQ cluster of
private nodes (``RabbitCluster``) sharing an Erlang cookie of their own.

Both run as their service account when started by root (PostgreSQL refuses root; the
directory is handed to that account), and as the current user otherwise.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
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

    def __init__(
        self, port: int | None = None, *, max_connections: int = 200, settings: dict[str, str] | None = None
    ) -> None:
        self.port = port or free_port()
        self.user = _service_user("postgres")
        self.dir = _private_dir("kassa-pg-", self.user)
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self.max_connections = max_connections
        self.settings = dict(settings or {})  # more ``-c name=value``, for this server alone
        self.primary: PrivatePostgres | None = None  # a standby's: what it copies and follows

    @classmethod
    def standby_of(cls, primary: PrivatePostgres, *, max_connections: int = 200) -> PrivatePostgres:
        """A standby of ``primary`` (running): ``pg_basebackup -R`` of it on ``start``, then
        streaming replication (hot standby: it answers reads). Its application name is
        ``standby``; ``promote`` makes it a primary."""
        standby = cls(max_connections=max_connections)
        standby.primary = primary
        return standby

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self, timeout: float = 60) -> PrivatePostgres:
        if not self.data.exists() and self.primary is not None:
            subprocess.run(
                [
                    _pg_bin("pg_basebackup"),
                    "-D",
                    str(self.data),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.primary.port),
                    "-U",
                    "postgres",
                    "-X",
                    "stream",
                    "-R",
                    "-c",
                    "fast",
                    "--no-sync",
                    "-d",
                    f"host=127.0.0.1 port={self.primary.port} user=postgres application_name=standby",
                ],
                user=self.user,
                check=True,
                capture_output=True,
                cwd="/",
            )
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
                *(arg for name, value in self.settings.items() for arg in ("-c", f"{name}={value}")),
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

    def promote(self, timeout: float = 60) -> None:
        """Make this standby a primary (``pg_promote``) and return once it takes writes."""
        import psycopg2

        conn = psycopg2.connect(self.admin_url, connect_timeout=5)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SELECT pg_promote(true, %s)", (int(timeout),))
                row = cur.fetchone()
                if not row or not row[0]:
                    raise RuntimeError(f"{self.name} on port {self.port} was not promoted in {timeout}s")
        finally:
            conn.close()
        self.primary = None

    def remove(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivateRabbit(_Server):
    """A RabbitMQ node of its own: node name, AMQP and distribution ports, mnesia and logs."""

    name = "private RabbitMQ"

    def __init__(self, port: int | None = None, *, cookie: str | None = None) -> None:
        self.port = port or free_port()
        self.dist_port = free_port()
        self.user = _service_user("rabbitmq")
        self.dir = _private_dir("kassa-rabbit-", self.user)
        # the node's HOME is its directory: its Erlang cookie is there, never the machine's
        cookie_file = self.dir / ".erlang.cookie"
        cookie_file.write_text(cookie or secrets.token_hex(20).upper())
        cookie_file.chmod(0o400)
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

    def ctl(self, *args: str, timeout: float = 60) -> str:
        """``rabbitmqctl -n NODE ARGS`` with the node's own environment (and so its cookie: the
        packaged wrapper would switch to the service account's home and the machine's cookie)."""
        result = subprocess.run(
            ["/usr/lib/rabbitmq/bin/rabbitmqctl", "-n", self.nodename, *args],
            env=self._env(),
            user=self.user,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd="/",
        )
        if result.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)} on {self.nodename}: {result.stderr or result.stdout}")
        return result.stdout

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


class RabbitCluster:
    """``size`` private RabbitMQ nodes sharing an Erlang cookie of their own, clustered with
    ``rabbitmqctl join_cluster`` onto the first. ``url`` lists every node, comma-separated
    (``RABBITMQ_URL``'s form for a cluster)."""

    def __init__(self, size: int = 3) -> None:
        cookie = secrets.token_hex(20).upper()
        self.nodes = [PrivateRabbit(cookie=cookie) for _ in range(size)]

    @property
    def url(self) -> str:
        return ",".join(node.url for node in self.nodes)

    @property
    def live(self) -> list[PrivateRabbit]:
        return [node for node in self.nodes if node.running]

    def start(self, timeout: float = 120) -> RabbitCluster:
        import threading

        failures: list[BaseException] = []

        def start(node: PrivateRabbit) -> None:
            try:
                node.start(timeout)
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

        threads = [threading.Thread(target=start, args=(node,)) for node in self.nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failures:
            raise failures[0]
        first = self.nodes[0]
        for node in self.nodes[1:]:
            node.ctl("stop_app")
            node.ctl("join_cluster", first.nodename)
            node.ctl("start_app")
            node._wait_ready(node._accepts, timeout, node.log)
        running = first.ctl("eval", "length(rabbit_nodes:all_running()).").strip()
        if running != str(len(self.nodes)):
            raise RuntimeError(f"the cluster runs {running} nodes of {len(self.nodes)}")
        return self

    def leaders(self, names: list[str]) -> dict[str, str]:
        """Queue name → the node name of its leader, for those of ``names`` that exist."""
        for node in self.live:
            try:
                out = node.ctl("list_queues", "--quiet", "--no-table-headers", "name", "leader", timeout=30)
            except RuntimeError:
                continue
            found = {}
            for line in out.splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] in names:
                    found[parts[0]] = parts[1]
            return found
        raise RuntimeError("no node of the cluster answers")

    def node(self, nodename: str) -> PrivateRabbit:
        return next(node for node in self.nodes if node.nodename == nodename)

    def remove(self) -> None:
        for node in self.nodes:
            node.remove()
