"""Sandbox servers with TLS material: the options it adds, and that nothing changes without it."""
from __future__ import annotations

import types
from pathlib import Path

from jobs.sandbox.fleet import Topology
from jobs.sandbox.server import SandboxServer, ServerTls

DIST = types.SimpleNamespace(mysqld_argv=lambda *args: list(args))  # argv() only asks the dist for this


def test_without_tls_the_command_line_is_unchanged(tmp_path):
    """A server made without tls gets no --ssl-* or --require-secure-transport option."""
    argv = SandboxServer(DIST, "a", tmp_path, 1, options=["--binlog-format=ROW"]).argv()
    assert not [a for a in argv if a.startswith(("--ssl", "--require-secure-transport"))]
    assert argv[-1] == "--binlog-format=ROW"


def test_tls_material_and_require_secure_transport_reach_mysqld(tmp_path):
    """ServerTls adds absolute --ssl-ca/--ssl-cert/--ssl-key and the transport rule; extra options still win."""
    tls = ServerTls("ca.pem", tmp_path / "server.pem", tmp_path / "server-key.pem", require_secure_transport=True)
    argv = SandboxServer(DIST, "a", tmp_path, 1, tls=tls, options=["--require-secure-transport=OFF"]).argv()
    i = argv.index(f"--ssl-ca={Path.cwd() / 'ca.pem'}")
    assert argv[i:i + 4] == [f"--ssl-ca={Path.cwd() / 'ca.pem'}", f"--ssl-cert={tmp_path / 'server.pem'}",
                             f"--ssl-key={tmp_path / 'server-key.pem'}", "--require-secure-transport=ON"]
    assert argv[-1] == "--require-secure-transport=OFF"


def test_tls_survives_the_state_file_and_the_topology(tmp_path):
    """A topology's tls reaches the server and round-trips through to_state/from_state and model_dump."""
    topology = Topology.load({"servers": [{"name": "secure", "tls": {
        "ca_file": str(tmp_path / "ca.pem"), "cert_file": str(tmp_path / "s.pem"),
        "key_file": str(tmp_path / "s-key.pem"), "require_secure_transport": True}}]})
    tls = topology.server("secure").tls
    assert tls == ServerTls(tmp_path / "ca.pem", tmp_path / "s.pem", tmp_path / "s-key.pem", True)
    assert Topology.load(topology.model_dump(by_alias=True, mode="json")) == topology
    server = SandboxServer(DIST, "secure", tmp_path, 1, tls=tls)
    assert SandboxServer.from_state(DIST, server.to_state()).tls == tls
    assert SandboxServer.from_state(DIST, SandboxServer(DIST, "b", tmp_path, 2).to_state()).tls is None
