"""A real Spark standalone cluster on loopback, from pyspark's own classes.

One master and two workers, each its own JVM started with pyspark's ``bin/spark-class`` (the pip
package ships no ``sbin/start-master.sh``), 1 core and 1g per worker, free ports, logs under the
given directory. :meth:`StandaloneCluster.stop` stops exactly the pids it started, with bounded
waits; a worker takes its executors down with it.
"""
from __future__ import annotations

import dataclasses
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pyspark

SPARK_CLASS = Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"
LOOPBACK = "127.0.0.1"


EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def processes() -> dict[int, tuple[int, int, list[str]]]:
    """pid -> (parent pid, start time in clock ticks since boot, argv) of the live processes,
    from /proc (zombies left out)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:   # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()   # after "pid (comm) "
        if fields[0] == "Z":
            continue
        table[int(entry.name)] = (int(fields[1]), int(fields[19]), argv)
    return table


def descendants(pid: int) -> set[int]:
    """The live processes below ``pid``."""
    table = processes()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, (ppid, _, _) in table.items() if ppid in frontier} - found
        found |= frontier
    return found


class ClusterError(RuntimeError):
    """Raised when a daemon of the test cluster does not come up; the message carries its log."""


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


@dataclasses.dataclass
class Daemon:
    name: str
    process: subprocess.Popen
    log: Path
    web_port: int

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclasses.dataclass
class StandaloneCluster:
    """``master_url``, the daemons, and where each writes."""

    root: Path
    workers_count: int = 2
    worker_cores: int = 1
    worker_memory: str = "1g"
    daemon_memory: str = "256m"
    start_timeout_s: float = 180.0
    stop_timeout_s: float = 30.0
    master: Daemon | None = None
    workers: list[Daemon] = dataclasses.field(default_factory=list)
    master_port: int = 0

    @property
    def master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    def _env(self) -> dict[str, str]:
        conf_dir = self.root / "conf"  # empty: nothing of the host's Spark configuration leaks in
        conf_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update({"SPARK_LOCAL_IP": LOOPBACK, "SPARK_DAEMON_MEMORY": self.daemon_memory,
                    "SPARK_CONF_DIR": str(conf_dir), "SPARK_NO_DAEMONIZE": "1"})
        return env

    def _spawn(self, name: str, args: list[str], web_port: int) -> Daemon:
        log = self.root / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as out:
            # spark-class execs java: the pid is the JVM's
            process = subprocess.Popen([str(SPARK_CLASS), *args], stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=self._env(), cwd=self.root,
                                       start_new_session=True)
        return Daemon(name=name, process=process, log=log, web_port=web_port)

    def _wait_for(self, daemon: Daemon, pattern: str, deadline: float) -> None:
        regex = re.compile(pattern)
        while time.monotonic() < deadline:
            if regex.search(daemon.log_text()):
                return
            if daemon.process.poll() is not None:
                raise ClusterError(f"{daemon.name} exited with {daemon.process.returncode}:\n{daemon.log_text()[-3000:]}")
            time.sleep(0.5)
        raise ClusterError(f"{daemon.name} did not log {pattern!r} in time:\n{daemon.log_text()[-3000:]}")

    def start(self) -> "StandaloneCluster":
        """Start the master, then the workers; return once every worker registered."""
        deadline = time.monotonic() + self.start_timeout_s
        self.master_port = free_port()
        web = free_port()
        try:
            self.master = self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
                                                 "--port", str(self.master_port), "--webui-port", str(web)], web)
            self._wait_for(self.master, r"I have been elected leader", deadline)
            for i in range(self.workers_count):
                web = free_port()
                work_dir = self.root / f"worker-{i}"
                work_dir.mkdir(parents=True, exist_ok=True)
                self.workers.append(self._spawn(
                    f"worker-{i}",
                    ["org.apache.spark.deploy.worker.Worker", "--host", LOOPBACK, "--port", str(free_port()),
                     "--webui-port", str(web), "--cores", str(self.worker_cores), "--memory", self.worker_memory,
                     "--work-dir", str(work_dir), self.master_url], web))
            for worker in self.workers:
                self._wait_for(worker, r"Successfully registered with master", deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def work_dir(self, index: int) -> Path:
        return self.root / f"worker-{index}"

    def executors(self, since: int | None = None) -> dict[int, str]:
        """pid -> executor id of the executor JVMs this cluster's workers launched and that are
        alive (``since``: only those started after process ``since``, e.g. one spark-submit)."""
        table = processes()
        workers = {w.process.pid for w in self.workers}
        after = table[since][1] if since is not None and since in table else -1
        found = {}
        for pid, (ppid, started, argv) in table.items():
            if ppid in workers and started >= after and EXECUTOR_CLASS in argv:
                found[pid] = argv[argv.index("--executor-id") + 1]
        return found

    def stop(self) -> None:
        """SIGTERM each daemon it started (workers first), SIGKILL after the bounded wait."""
        for daemon in [*reversed(self.workers), *([self.master] if self.master else [])]:
            process = daemon.process
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=self.stop_timeout_s)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=self.stop_timeout_s)
        self.workers.clear()
        self.master = None
