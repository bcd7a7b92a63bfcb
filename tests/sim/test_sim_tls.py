"""TLS across versions on the simulator: the versions that offer TLS out of the box are read over
TLS; the ones that do not are refused when tls.enabled is set, never read in plain text."""
from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from jobs.collector import read_server, RunContext
from jobs.server_spec import ReadSettings, TlsOptions
from jobs.config import load_config
from jobs.sandbox.sim import FleetBuilder, Simulator
from jobs.sandbox.sim.dialects import shape_for
from tests.fixtures.certs import make_ca, make_cert

VERSIONS = ["5.6.51", "5.7.27", "5.7.28", "8.0.36", "9.7.4"]
CTX = RunContext("t", dt.date(2026, 1, 1), ReadSettings(server_deadline_s=10, retry_wait_initial_s=0.05))


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """One standalone server per version plus a 5.6 whose password is wrong, served with a
    certificate of our own CA; yields (inventory by name, CA path)."""
    work = tmp_path_factory.mktemp("simtls")
    ca = make_ca(work / "pki", "sim-ca")
    cert = make_cert(ca, work / "pki", "sim-server", dns=("localhost",))
    b = FleetBuilder(seed=7)
    for v in VERSIONS:
        b.standalone("v" + v.replace(".", ""), v)
    b.collection_fault("auth5651", "5.6.51", "auth")
    fleet = b.fleet()
    fleet.save(work / "fleet.json")
    config = fleet.write_audit_config(work / "audit.yaml", warehouse=str(work / "wh"), password_file=work / "pw")
    with Simulator(work / "fleet.json", lifetime_s=120, latency="0-1", tls=(cert.cert, cert.key)):
        yield {s.name: s for s in load_config(config).inventory()}, str(ca.cert)


def _read(spec, tls):
    return read_server(dataclasses.replace(spec, tls=tls), CTX)


def test_dialects_say_which_versions_offer_tls():
    """5.7.28 (every build OpenSSL, certificates generated at start) is the first that offers TLS by default."""
    assert [shape_for(v).offers_tls for v in VERSIONS] == [False, False, True, True, True]


@pytest.mark.parametrize("verify_cert", [True, False], ids=["verify_cert", "no_verify_cert"])
@pytest.mark.parametrize("version", VERSIONS)
def test_tls_enabled_is_tls_or_nothing(sim, version, verify_cert):
    """tls.enabled reads the TLS-capable versions and refuses the others as tls_unavailable,
    whether or not the certificate is verified (mysql-connector alone would go on in plain text)."""
    inventory, ca = sim
    result = _read(inventory["v" + version.replace(".", "")],
                   TlsOptions(ca_file=ca if verify_cert else None, verify_cert=verify_cert))
    if shape_for(version).offers_tls:
        assert result.errors == [] and result.server["status"] == "ok"
    else:
        assert result.server["status"] == "failed"
        [row] = result.errors
        assert row["error_class"] == "tls_unavailable"
        assert "offers no TLS and tls.enabled is set" in row["message"]


def test_refused_before_any_credential_is_sent(sim):
    """A server without TLS whose password is wrong answers tls_unavailable, not auth_failed: the
    client stopped at the greeting, before authenticating."""
    inventory, _ = sim
    assert [e["error_class"] for e in _read(inventory["auth5651"], None).errors] == ["auth_failed"]
    [row] = _read(inventory["auth5651"], TlsOptions(verify_cert=False)).errors
    assert row["error_class"] == "tls_unavailable"


@pytest.mark.parametrize("tls", [None, TlsOptions(enabled=False)], ids=["no_tls_section", "tls_disabled"])
def test_without_tls_required_every_version_is_read(sim, tls):
    """Positive control: with no tls section (TLS if offered) or TLS off, every version is read."""
    inventory, _ = sim
    for version in VERSIONS:
        result = _read(inventory["v" + version.replace(".", "")], tls)
        assert result.errors == [] and result.server["status"] == "ok", version
