"""Which MySQL protocol implementation the reads use (issue #21, part 3): always mysql-connector's
pure-Python protocol, in a Python where its C extension loads or not, and why (docs/collection.md,
"Protocol implementation").

On the simulator: a 9.7.4 server offering TLS (our own CA's certificate), a 5.6.51 offering none,
a 5.6.51 whose password is wrong and a 9.7.4 that takes 30 s per statement. What the C extension
does instead was measured in a Python where it loads (mysql-connector 9.2-9.7 here; 26.x needs
OpenSSL 3.2), with benchmarks/connector_cext.py and by hand: docs/collection.md, "Protocol
implementation". Those runs are not repeated here: the suite's Python has no C extension.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest
from mysql.connector.connection import MySQLConnection

from jobs.collector import RunContext
from jobs.config import load_config
from jobs.mysql_connection import connect, protocol_implementation
from jobs.sandbox.sim import FleetBuilder, Simulator
from jobs.server_spec import ReadSettings, TlsOptions, resolve_password
from tests.fixtures.certs import make_ca, make_cert

ROOT = Path(__file__).resolve().parents[2]
CTX = RunContext("t", dt.date(2026, 1, 1), ReadSettings(server_deadline_s=10, retry_wait_initial_s=0.05))


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """The four servers, served with a certificate of our own CA; yields (inventory by name, CA path)."""
    work = tmp_path_factory.mktemp("simproto")
    ca = make_ca(work / "pki", "sim-ca")
    cert = make_cert(ca, work / "pki", "sim-server", dns=("localhost",))
    b = FleetBuilder(seed=21)
    b.standalone("v974", "9.7.4")
    b.standalone("v5651", "5.6.51")
    b.collection_fault("auth5651", "5.6.51", "auth")
    b.collection_fault("slow974", "9.7.4", "slow")
    fleet = b.fleet()
    fleet.save(work / "fleet.json")
    config = fleet.write_audit_config(work / "audit.yaml", warehouse=str(work / "wh"), password_file=work / "pw")
    with Simulator(work / "fleet.json", lifetime_s=180, latency="0-1", tls=(cert.cert, cert.key)):
        yield {s.name: s for s in load_config(config).inventory()}, str(ca.cert)


TRANSPORTS = [None, TlsOptions(enabled=False), TlsOptions(verify_cert=False), "ca"]


@pytest.mark.parametrize("tls", TRANSPORTS, ids=["no_tls_section", "tls_disabled", "tls_unverified", "tls_ca"])
def test_every_transport_connects_with_the_pure_protocol(sim, tls):
    """connect() returns mysql-connector's pure-Python connection whatever the server's tls
    settings, and protocol_implementation() says so, also in a Python where the C extension loads."""
    inventory, ca = sim
    spec = dataclasses.replace(inventory["v974"], tls=TlsOptions(ca_file=ca) if tls == "ca" else tls)
    cnx = connect(spec, resolve_password(spec))
    try:
        assert isinstance(cnx, MySQLConnection)  # CMySQLConnection is not one
        assert cnx.is_secure == (spec.tls is None or spec.tls.enabled)
    finally:
        cnx.close()
    assert protocol_implementation() == "pure-python"


READ_WITHOUT_CEXT = """
import dataclasses, datetime as dt, json, sys
sys.modules["_mysql_connector"] = None          # the C extension cannot load in this Python
import mysql.connector
sys.path.insert(0, {root!r})
from jobs.collector import read_server, RunContext
from jobs.mysql_connection import protocol_implementation
from jobs.server_spec import ReadSettings, ServerSpec, TlsOptions
ctx = RunContext("t", dt.date(2026, 1, 1), ReadSettings(server_deadline_s=10))
out = {{"have_cext": mysql.connector.HAVE_CEXT, "implementation": protocol_implementation()}}
for name, spec in json.loads(sys.argv[1]).items():
    spec = ServerSpec(**{{**spec, "tls": TlsOptions(**spec["tls"]) if spec["tls"] else None}})
    r = read_server(spec, ctx)
    out[name] = [r.server["status"], r.server.get("server_uuid"), [e["error_class"] for e in r.errors]]
print(json.dumps(out))
"""


def test_a_python_without_the_c_extension_reads_a_server(sim):
    """In a Python where the C extension does not load, a server is read in full and
    protocol_implementation() says pure-python; tls.enabled still refuses a server without TLS
    (positive control: the guarantee did not go with the C extension)."""
    inventory, ca = sim
    specs = {"v974": dataclasses.replace(inventory["v974"], tls=TlsOptions(ca_file=ca)),
             "v974-no-tls-section": inventory["v974"],
             "v5651-tls-enabled": dataclasses.replace(inventory["v5651"], tls=TlsOptions(verify_cert=False))}
    argv = json.dumps({name: dataclasses.asdict(s) for name, s in specs.items()})
    out = subprocess.run([sys.executable, "-c", READ_WITHOUT_CEXT.format(root=str(ROOT)), argv],
                         capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert (got["have_cext"], got["implementation"]) == (False, "pure-python")
    uuid = got["v974"][1]
    assert uuid and got["v974"] == ["ok", uuid, []] and got["v974-no-tls-section"] == ["ok", uuid, []]
    assert got["v5651-tls-enabled"] == ["failed", None, ["tls_unavailable"]]
