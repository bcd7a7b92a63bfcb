"""Client CPU per server read: mysql-connector's pure-Python protocol against its C extension
(issue #21, part 3).

Starts a simulated replication group (jobs/sandbox/sim: a 9.7.4 source and two replicas, no TLS
offered, 0-1 ms per answer) and a real MySQL 9.7 pair (jobs/sandbox: source and replica, TLS
offered with the server's own certificate), then, for each Python given, runs
``jobs.collector.read_server`` many times in one child process and prints the client CPU
(``time.process_time()``) and wall time per read, single-threaded and with 8 threads.

Each child reads the servers without ``tls.enabled`` (no ``tls`` section: TLS if offered, or
``tls.enabled: false``): the only transports where the C extension could be used at all, since
it cannot refuse a server that offers no TLS before sending the password (docs/collection.md,
"Protocol implementation"). ``pure`` is the collector as it is (pure-Python protocol), run with
the C extension's import blocked; ``c`` replaces :func:`jobs.mysql_connection.connect` in the
child by a ``CMySQLConnection`` with the same options (:func:`_c_connect`), in a Python whose C
extension loads. Everything else is the collector's own ``read_server``.

Usage: python benchmarks/connector_cext.py [--python PATH ...] [--reads 300] [--threads 1,8]
                                            [--only sim|real] [--tls-context shared|per-connection|both]
``--tls-context both`` adds pure-python rows with the connector's own new ``ssl.SSLContext`` per
connection (what the collector did before it shared one per TLS setting and process, issue #21).
The collector is imported from this checkout by every child (it needs only the standard library
and mysql-connector-python), so a scratch venv with another connector version is enough:
  python -m venv /tmp/v97 && /tmp/v97/bin/pip install mysql-connector-python==9.7.0
  python benchmarks/connector_cext.py --python /tmp/v97/bin/python
The figures are recorded in docs/benchmarks.md (section "Protocol implementation").
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# --- the child: many reads in one process --------------------------------------------------------

def child(args: argparse.Namespace) -> int:
    """Read the targets ``--reads`` times on ``--threads`` threads; print one JSON line."""
    if args.impl == "pure":
        sys.modules["_mysql_connector"] = None  # the C extension does not load in this process
    sys.path.insert(0, str(ROOT))
    import datetime as dt
    from concurrent.futures import ThreadPoolExecutor

    import mysql.connector

    from jobs import collector, mysql_connection
    from jobs.server_spec import ReadSettings, ServerSpec, TlsOptions

    implementation = mysql_connection.protocol_implementation()
    if args.impl == "c":
        if not mysql.connector.HAVE_CEXT:
            print(json.dumps({"error": "the C extension does not load in this Python"}))
            return 1
        mysql_connection.connect, implementation = _c_connect, "c-extension"
    elif args.tls_context == "per-connection":  # the connector's own build, as before issue #21
        from mysql.connector.network import MySQLTCPSocket

        mysql_connection._shared_tls_context_socket_class().build_ssl_context = MySQLTCPSocket.build_ssl_context
        implementation += " (TLS context per connection)"
    specs = [ServerSpec(**{**t, "tls": TlsOptions(**t["tls"]) if t.get("tls") else None})
             for t in json.loads(Path(args.targets).read_text())]
    ctx = collector.RunContext("bench", dt.date.today(), ReadSettings(server_deadline_s=60))

    def one(i: int) -> str:
        result = collector.read_server(specs[i % len(specs)], ctx)
        return "ok" if not result.errors and result.server["status"] == "ok" else repr(result.errors[:1])

    for i in range(len(specs)):  # warm up: imports, first TLS contexts
        one(i)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(args.threads) as pool:
        outcomes = list(pool.map(one, range(args.reads)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    failed = [o for o in outcomes if o != "ok"]
    print(json.dumps({"connector": mysql.connector.__version__, "implementation": implementation,
                      "threads": args.threads, "reads": args.reads, "failed": len(failed),
                      "first_failure": failed[0] if failed else None,
                      "cpu_ms_per_read": 1000 * cpu / args.reads, "wall_ms_per_read": 1000 * wall / args.reads}))
    return 0


def _c_connect(spec, password, timeout_s=None):
    """What :func:`jobs.mysql_connection.connect` would do with the C extension, for a server
    without ``tls.enabled``: the same options, ``CMySQLConnection``, with ``is_secure`` read from
    the cipher in use (the C extension's own is always False) and the per-statement
    ``read_timeout`` ignored (the C extension raises when it is set after connecting)."""
    from mysql.connector.connection_cext import CMySQLConnection

    from jobs.mysql_connection import timeout_seconds

    class CConnection(CMySQLConnection):
        is_secure = property(lambda self: bool(self._cmysql.get_ssl_cipher()))
        read_timeout = property(lambda self: self._read_timeout, lambda self, value: None)

    assert spec.tls is None or not spec.tls.enabled, "the C extension cannot keep tls.enabled"
    kwargs = dict(host=spec.host, port=spec.port, user=spec.user,
                  connection_timeout=timeout_seconds(timeout_s or spec.connect_timeout_s),
                  read_timeout=timeout_seconds(spec.read_timeout_s), write_timeout=timeout_seconds(spec.read_timeout_s),
                  autocommit=True, charset="utf8mb4", get_warnings=False,
                  password=password.reveal() if password is not None else "")
    if spec.tls is not None:
        kwargs["ssl_disabled"] = True
    return CConnection(**kwargs)


# --- the parent: servers up, one child per (python, implementation, threads, target) ------------

def _run_child(python: str, impl: str, threads: int, reads: int, targets: Path,
               tls_context: str = "shared") -> dict:
    out = subprocess.run([python, __file__, "--child", "--impl", impl, "--threads", str(threads),
                          "--reads", str(reads), "--targets", str(targets), "--tls-context", tls_context],
                         capture_output=True, text=True, cwd=str(ROOT), timeout=900)
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return {"error": (out.stdout + out.stderr)[-600:]}
    return json.loads(lines[-1])


def _can_load_cext(python: str) -> bool:
    code = "import mysql.connector, sys; sys.exit(0 if mysql.connector.HAVE_CEXT else 1)"
    return subprocess.run([python, "-c", code], capture_output=True).returncode == 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", action="append", default=None,
                   help="a Python with mysql-connector-python (repeatable; default: this one)")
    p.add_argument("--reads", type=int, default=300, help="reads per measurement")
    p.add_argument("--threads", default="1,8")
    p.add_argument("--only", choices=["sim", "real"], default=None)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--impl", choices=["pure", "c"], help=argparse.SUPPRESS)
    p.add_argument("--targets", help=argparse.SUPPRESS)
    p.add_argument("--tls-context", choices=["shared", "per-connection", "both"], default="shared",
                   help="pure-python: the collector's one TLS context per setting and process (shared), "
                        "the connector's new context per connection (per-connection, before issue #21), or both")
    args = p.parse_args(argv)
    if args.child:
        args.threads = int(args.threads)
        return child(args)

    sys.path.insert(0, str(ROOT))
    from jobs.sandbox.fleet import Fleet
    from jobs.sandbox.installer import ensure_mysql
    from jobs.sandbox.sim import FleetBuilder, Simulator

    pythons = args.python or [sys.executable]
    threads = [int(t) for t in args.threads.split(",")]
    work = Path(tempfile.mkdtemp(prefix="gtid-cext-bench-"))
    targets: dict[str, Path] = {}
    started: list = []
    try:
        if args.only in (None, "sim"):
            b = FleetBuilder(seed=21)
            b.cluster("bench", "9.7.4", replicas=2)
            fleet = b.fleet()
            fleet.save(work / "fleet.json")
            fleet.write_audit_config(work / "sim.yaml", warehouse=str(work / "wh"), password_file=work / "sim.pw")
            sim = Simulator(work / "fleet.json", lifetime_s=1800, latency="0-1", workdir=work)
            sim.start()
            started.append(sim.stop)
            targets["simulator 9.7.4 (plain)"] = _targets(work / "sim.json", [
                (s.name, s.host, s.port) for s in fleet.servers], work / "sim.pw")
        if args.only in (None, "real"):
            private = ["--innodb-use-native-aio=OFF"]
            real = Fleet.up({"name": "cext-bench",
                             "servers": [{"name": "src", "options": private}, {"name": "rep", "options": private}],
                             "channels": [{"replica": "rep", "source": "src", "channel": ""}]},
                            work / "real", dist=ensure_mysql())
            started.append(real.down)
            servers = [(n, s.host, s.port) for n, s in real.servers.items()]
            targets["MySQL 9.7 (TLS, no tls section)"] = _targets(work / "real.json", servers,
                                                                  real.audit_password_file)
            targets["MySQL 9.7 (tls.enabled: false)"] = _targets(work / "real-plain.json", servers,
                                                                 real.audit_password_file, tls={"enabled": False})
        load = os.getloadavg()[0]
        print(f"cores {os.cpu_count()}  load average before {load:.2f}  reads per row {args.reads}")
        print("| target | connector | implementation | threads | client CPU per read | wall per read | failed |")
        print("|---|---|---|---:|---:|---:|---:|")
        for label, path in targets.items():
            for python in pythons:
                contexts = ["per-connection", "shared"] if args.tls_context == "both" else [args.tls_context]
                runs = [("pure", c) for c in contexts] + ([("c", "shared")] if _can_load_cext(python) else [])
                for impl, tls_context in runs:
                    for t in threads:
                        r = _run_child(python, impl, t, args.reads, path, tls_context)
                        if "error" in r:
                            print(f"| {label} | {python} | {impl} | {t} | error: {r['error']!r} | | |")
                            continue
                        print(f"| {label} | {r['connector']} | {r['implementation']} | {t} | "
                              f"{r['cpu_ms_per_read']:.2f} ms | {r['wall_ms_per_read']:.2f} ms | {r['failed']} |",
                              flush=True)
        print(f"load average after {os.getloadavg()[0]:.2f}")
    finally:
        for stop in reversed(started):
            stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _targets(path: Path, servers: list[tuple[str, str, int]], password_file: Path, tls: dict | None = None) -> Path:
    """The servers as ``ServerSpec`` keyword arguments (``tls`` None: TLS if offered)."""
    path.write_text(json.dumps([{"name": n, "host": h, "port": p, "user": "audit", "connect_timeout_s": 5,
                                 "read_timeout_s": 10, "password_file": str(password_file), "tls": tls}
                                for n, h, p in servers]))
    return path


if __name__ == "__main__":
    sys.exit(main())
