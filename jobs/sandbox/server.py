"""One sandbox mysqld: started in its own process group on a free loopback port, stopped by pid.

A :class:`SandboxServer` owns a directory (data, socket, logs). It starts mysqld through the
bundled loader (see :mod:`jobs.sandbox.installer`) from a copy of the cached template data
directory, waits until it answers, and stops exactly the pid it started: SIGTERM, a wait, SIGKILL
on timeout. Its state (pid, port, paths) round-trips through :meth:`to_state` /
:meth:`from_state` so another process can find and stop it. With a :class:`ServerTls` it serves
the given certificate (``--ssl-ca/--ssl-cert/--ssl-key``) and, if asked, refuses plain-text
connections (``--require-secure-transport=ON``); without one it keeps the certificates mysqld
generates in its data directory, as before.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import mysql.connector

from jobs.sandbox.errors import ServerStartError
from jobs.sandbox.installer import MySQLDist

__all__ = ["SandboxServer", "ServerTls", "free_port", "SMALL_FOOTPRINT_OPTIONS"]

HOST = "127.0.0.1"
_SOCKET_LIMIT = 100   # sun_path is 108 bytes with the NUL; keep a margin

# Options that keep a dozen servers comfortable on a small machine (the buffer pool is 32M as the
# recipe says). Durability stays as production wants it (sync_binlog=1,
# innodb_flush_log_at_trx_commit=1), so a healthy sandbox server raises no config_* finding; a
# topology may relax it per server through its options (later options win).
SMALL_FOOTPRINT_OPTIONS: tuple[str, ...] = (
    "--innodb-buffer-pool-size=32M",
    "--innodb-redo-log-capacity=16M",
    "--innodb-log-buffer-size=4M",
    "--innodb-flush-log-at-trx-commit=1",
    "--innodb-doublewrite=OFF",
    "--sync-binlog=1",
    "--max-connections=40",
    "--table-open-cache=200",
    "--table-definition-cache=400",
    "--temptable-max-ram=16M",
    "--key-buffer-size=1M",
    "--performance-schema-max-digest-length=256",
    "--performance-schema-digests-size=200",
    "--performance-schema-events-statements-history-long-size=100",
    "--performance-schema-events-transactions-history-long-size=100",
)


@dataclass(frozen=True)
class ServerTls:
    """The TLS material of one sandbox server (paths to PEM files) and whether it refuses
    plain-text connections. Paths are made absolute, so mysqld's working directory is moot."""

    ca_file: str
    cert_file: str
    key_file: str
    require_secure_transport: bool = False

    def __post_init__(self) -> None:
        for name in ("ca_file", "cert_file", "key_file"):
            object.__setattr__(self, name, str(Path(getattr(self, name)).resolve()))

    def options(self) -> tuple[str, ...]:
        """The mysqld options that serve this material."""
        return (f"--ssl-ca={self.ca_file}", f"--ssl-cert={self.cert_file}", f"--ssl-key={self.key_file}",
                "--require-secure-transport=" + ("ON" if self.require_secure_transport else "OFF"))


def free_port() -> int:
    """A loopback TCP port nobody listens on at the time of the call."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


class SandboxServer:
    """One mysqld of the sandbox.

    ``gtid_mode`` ``"ON"`` (default) also sets ``enforce_gtid_consistency=ON``; ``"OFF"`` turns
    both off. ``tls`` serves that certificate (see :class:`ServerTls`). ``options`` are extra
    mysqld options appended last (so they win).
    """

    def __init__(self, dist: MySQLDist, name: str, basedir: str | os.PathLike, server_id: int, *,
                 gtid_mode: str = "ON", options: Sequence[str] = (), port: int | None = None,
                 tls: ServerTls | None = None):
        if gtid_mode not in ("ON", "OFF", "ON_PERMISSIVE", "OFF_PERMISSIVE"):
            raise ValueError(f"gtid_mode must be ON, OFF, ON_PERMISSIVE or OFF_PERMISSIVE, got {gtid_mode!r}")
        self.dist = dist
        self.name = name
        self.dir = Path(basedir).resolve()
        self.server_id = int(server_id)
        self.gtid_mode = gtid_mode
        self.options = tuple(options)
        self.tls = tls
        self.host = HOST
        self.port = port
        self.pid: int | None = None
        self._proc: subprocess.Popen | None = None
        self._server_uuid: str | None = None
        self.socket = self._socket_path()

    # -- paths -----------------------------------------------------------------------------
    @property
    def datadir(self) -> Path:
        return self.dir / "data"

    @property
    def log_error(self) -> Path:
        return self.dir / "mysqld.err"

    @property
    def pid_file(self) -> Path:
        return self.dir / "mysqld.pid"

    def _socket_path(self) -> str:
        candidate = self.dir / "mysqld.sock"
        if len(str(candidate)) <= _SOCKET_LIMIT:
            return str(candidate)
        # Too long for sun_path: a short, stable directory derived from ours (made at start).
        digest = hashlib.sha1(str(self.dir).encode()).hexdigest()[:16]
        return str(Path(tempfile.gettempdir()) / f"gta-{digest}" / "mysqld.sock")

    def argv(self) -> list[str]:
        """The exact mysqld command line of this server."""
        gtid = ["--gtid-mode=" + self.gtid_mode,
                "--enforce-gtid-consistency=" + ("ON" if self.gtid_mode in ("ON", "ON_PERMISSIVE") else "OFF")]
        return self.dist.mysqld_argv(
            f"--datadir={self.datadir}", f"--tmpdir={self.dir / 'tmp'}",
            f"--port={self.port}", f"--bind-address={HOST}", f"--socket={self.socket}",
            f"--pid-file={self.pid_file}", f"--log-error={self.log_error}",
            f"--server-id={self.server_id}", "--user=root", "--mysqlx=OFF", "--secure-file-priv=",
            f"--report-host={HOST}", f"--report-port={self.port}",
            "--log-bin=binlog", "--relay-log=relay", "--log-replica-updates=ON",
            *gtid, *SMALL_FOOTPRINT_OPTIONS, *(self.tls.options() if self.tls else ()), *self.options)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, timeout: float = 90.0) -> "SandboxServer":
        """Create the data directory from the template if needed, start mysqld, wait until ready."""
        if self.pid is not None and _pid_alive(self.pid):
            return self
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "tmp").mkdir(exist_ok=True)
        Path(self.socket).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self.datadir.exists():
            shutil.copytree(self.dist.template_datadir, self.datadir, symlinks=True)
            (self.datadir / "auto.cnf").unlink(missing_ok=True)
        fixed_port = self.port is not None
        for _attempt in range(3):
            if not fixed_port:
                self.port = free_port()
            try:
                self._spawn_and_wait(timeout)
                return self
            except ServerStartError:
                if fixed_port or "Address already in use" not in self._log_tail():
                    raise
        raise ServerStartError(f"server {self.name!r}: no free port after 3 attempts: {self._log_tail()!r}")

    def _spawn_and_wait(self, timeout: float) -> None:
        log_offset = self.log_error.stat().st_size if self.log_error.exists() else 0
        self._log_offset = log_offset
        with open(self.dir / "mysqld.stdout", "ab") as out:
            self._proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self._proc.pid
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self.pid = None
                raise ServerStartError(
                    f"server {self.name!r} (port {self.port}) exited with {self._proc.returncode} "
                    f"while starting: {self._log_tail()!r}")
            if "ready for connections" in self._log_tail(4000):
                try:
                    with contextlib.closing(self.connect(connection_timeout=2)) as conn:
                        cur = conn.cursor()
                        cur.execute("SELECT @@GLOBAL.server_uuid")
                        self._server_uuid = cur.fetchone()[0]
                    return
                except mysql.connector.Error:
                    pass
            time.sleep(0.1)
        self.stop()
        raise ServerStartError(f"server {self.name!r} (port {self.port}) not ready after {timeout} s: "
                               f"{self._log_tail()!r}")

    def _log_tail(self, size: int = 1500) -> str:
        try:
            with open(self.log_error, "rb") as log:
                log.seek(getattr(self, "_log_offset", 0))
                return log.read().decode(errors="replace")[-size:]
        except FileNotFoundError:
            return ""

    def _owns_pid(self, pid: int) -> bool:
        """True when ``pid`` is a live mysqld using this server's data directory."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):
            return False
        return f"--datadir={self.datadir}".encode() in cmdline and _pid_alive(pid)

    def is_running(self) -> bool:
        return self.pid is not None and self._owns_pid(self.pid)

    def stop(self, timeout: float = 60.0, *, graceful: bool = True) -> None:
        """SIGTERM exactly our pid, wait for it to exit, SIGKILL it on timeout.

        ``graceful=False`` sends SIGKILL at once: for a server whose data directory is thrown
        away (a test's), where a clean shutdown only costs time."""
        pid = self.pid
        if pid is None:
            return
        if self._owns_pid(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM if graceful else signal.SIGKILL)
            if not self._wait_exit(pid, timeout if graceful else 10):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._wait_exit(pid, 10)
        elif self._proc is not None:
            self._proc.poll()
        self.pid = None
        self._proc = None
        if not graceful:   # what a clean shutdown removes itself (the X plugin is off: no X socket)
            for left in (self.socket, f"{self.socket}.lock", self.pid_file):
                with contextlib.suppress(OSError):
                    os.unlink(left)
        socket_dir = Path(self.socket).parent
        if socket_dir != self.dir:           # the short directory made for a long path
            with contextlib.suppress(OSError):
                socket_dir.rmdir()

    def kill(self) -> None:
        """SIGKILL exactly our pid (a crash, for scenarios)."""
        if self.pid is not None and self._owns_pid(self.pid):
            os.kill(self.pid, signal.SIGKILL)
            self._wait_exit(self.pid, 10)
        self.pid = None
        self._proc = None

    def restart(self, timeout: float = 90.0) -> "SandboxServer":
        self.stop()
        return self.start(timeout)

    def _wait_exit(self, pid: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.pid == pid:
                if self._proc.poll() is not None:
                    return True
            elif not _pid_alive(pid):
                return True
            time.sleep(0.05)
        return False

    # -- SQL -------------------------------------------------------------------------------
    @property
    def server_uuid(self) -> str:
        if self._server_uuid is None:
            self._server_uuid = self.query_value("SELECT @@GLOBAL.server_uuid")
        return self._server_uuid

    def connect(self, user: str = "root", password: str = "", database: str | None = None,
                **kwargs: Any) -> mysql.connector.MySQLConnection:
        """A new mysql.connector connection over TCP (autocommit on unless told otherwise)."""
        params: dict[str, Any] = dict(host=self.host, port=self.port, user=user, password=password,
                                      autocommit=True, use_pure=True, connection_timeout=10)
        if database:
            params["database"] = database
        params.update(kwargs)
        return mysql.connector.connect(**params)

    def execute(self, *statements: str, user: str = "root", password: str = "") -> None:
        """Run statements in order on one root connection."""
        with contextlib.closing(self.connect(user=user, password=password)) as conn:
            cur = conn.cursor()
            for sql in statements:
                cur.execute(sql)
                if cur.with_rows:
                    cur.fetchall()

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """Rows of one statement as dicts (column name -> value)."""
        with contextlib.closing(self.connect()) as conn:
            cur = conn.cursor(dictionary=True)
            cur.execute(sql, params)
            return list(cur.fetchall()) if cur.with_rows else []

    def query_value(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """The first column of the first row of one statement (None without rows)."""
        with contextlib.closing(self.connect()) as conn:
            cur = conn.cursor()
            cur.execute(sql, params)
            row = cur.fetchone()
            if cur.with_rows:
                cur.fetchall()
            return row[0] if row else None

    def gtid_executed(self) -> str:
        """``@@GLOBAL.gtid_executed`` as the server prints it."""
        return self.query_value("SELECT @@GLOBAL.gtid_executed")

    # -- state -----------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        return {"name": self.name, "dir": str(self.dir), "server_id": self.server_id,
                "gtid_mode": self.gtid_mode, "options": list(self.options), "host": self.host,
                "port": self.port, "pid": self.pid, "socket": self.socket,
                "server_uuid": self._server_uuid, "tls": asdict(self.tls) if self.tls else None}

    @classmethod
    def from_state(cls, dist: MySQLDist, state: dict[str, Any]) -> "SandboxServer":
        server = cls(dist, state["name"], state["dir"], state["server_id"],
                     gtid_mode=state.get("gtid_mode", "ON"), options=state.get("options", ()),
                     port=state.get("port"), tls=ServerTls(**state["tls"]) if state.get("tls") else None)
        server.pid = state.get("pid")
        server.socket = state.get("socket") or server.socket
        server._server_uuid = state.get("server_uuid")
        return server

    def __repr__(self) -> str:
        return f"SandboxServer(name={self.name!r}, port={self.port}, pid={self.pid})"
