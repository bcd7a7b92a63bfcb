"""TLS towards real MySQL 9.7 servers: verified connections read, every refusal is a clear error row
and a finding, and no case falls back to plain text.

One sandbox server for the module, started with its own CA's certificate (subjectAltName
``DNS:localhost`` only, so ``127.0.0.1`` is a real name mismatch) and
``require_secure_transport=ON``; the accounts are the least-privilege ``audit`` one and a copy of
it created ``REQUIRE X509``.
"""
from __future__ import annotations

import contextlib
import datetime as dt

import pytest

from jobs.audit_tasks import collection_findings
from jobs.collector import read_server, RunContext
from jobs.mysql_connection import connect
from jobs.server_spec import ReadSettings, resolve_password, ServerSpec, TlsOptions
from jobs.sandbox.accounts import audit_grant_statements
from jobs.sandbox.server import SandboxServer, ServerTls
from tests.fixtures.certs import make_ca, make_cert

pytestmark = pytest.mark.mysql

PASSWORD = "tls-test-Pass-1"
CTX = RunContext("tls", dt.date(2026, 1, 1), ReadSettings(server_deadline_s=20, retry_wait_initial_s=0.1))


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """The CA that signed the server, another CA, the server's certificate and two client ones."""
    d = tmp_path_factory.mktemp("pki")
    ca, other_ca = make_ca(d, "fleet-ca"), make_ca(d, "other-ca")
    return {"ca": ca, "other_ca": other_ca,
            "server": make_cert(ca, d, "server", dns=("localhost",)),
            "client": make_cert(ca, d, "client", client=True),
            "foreign_client": make_cert(other_ca, d, "foreign-client", client=True)}


@pytest.fixture(scope="module")
def tls_server(mysql_dist, pki, tmp_path_factory):
    """A 9.7 server with require_secure_transport=ON and the accounts ``audit`` and ``audit_x509``."""
    tls = ServerTls(pki["ca"].cert, pki["server"].cert, pki["server"].key, require_secure_transport=True)
    server = SandboxServer(mysql_dist, "tls", tmp_path_factory.mktemp("tls-server"), server_id=301, tls=tls)
    server.start()
    try:
        server.execute("SET SESSION sql_log_bin = 0", *audit_grant_statements(PASSWORD),
                       *audit_grant_statements(PASSWORD, user="audit_x509"),
                       "ALTER USER 'audit_x509'@'%' REQUIRE X509")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def password_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("secret") / "audit.password"
    path.write_text(PASSWORD + "\n")
    path.chmod(0o600)
    return str(path)


def spec(server, password_file, *, host="127.0.0.1", user="audit", tls=None) -> ServerSpec:
    return ServerSpec(name="tls-db", host=host, port=server.port, user=user, connect_timeout_s=5,
                      read_timeout_s=10, password_file=password_file, tls=tls)


def test_sandbox_server_refuses_plain_text(tls_server):
    """The sandbox really started the server with require_secure_transport=ON and our certificate."""
    assert tls_server.query_value("SELECT @@GLOBAL.require_secure_transport") == 1
    assert tls_server.query_value("SELECT @@GLOBAL.ssl_cert") == tls_server.tls.cert_file


def test_verify_cert_with_the_right_ca_reads_over_tls(tls_server, pki, password_file):
    """verify_cert against the CA that signed the server: the whole read succeeds, over TLS."""
    s = spec(tls_server, password_file, tls=TlsOptions(ca_file=str(pki["ca"].cert)))
    result = read_server(s, CTX)
    assert result.errors == [] and result.server["status"] == "ok"
    assert result.server["server_uuid"] == tls_server.server_uuid
    with contextlib.closing(connect(s, resolve_password(s))) as cnx:
        cur = cnx.cursor()
        cur.execute("SHOW SESSION STATUS LIKE 'Ssl_version'")
        assert cnx.is_secure and cur.fetchall()[0][1].startswith("TLSv1.")


def test_verify_identity_by_a_name_the_certificate_lists(tls_server, pki, password_file):
    """verify_identity connecting as 'localhost', the certificate's subjectAltName: read."""
    s = spec(tls_server, password_file, host="localhost",
             tls=TlsOptions(ca_file=str(pki["ca"].cert), verify_identity=True))
    result = read_server(s, CTX)
    assert result.errors == [] and result.server["status"] == "ok"


def test_client_certificate_for_an_account_created_require_x509(tls_server, pki, password_file):
    """cert_file/key_file signed by the server's CA let the REQUIRE X509 account read."""
    tls = TlsOptions(ca_file=str(pki["ca"].cert), cert_file=str(pki["client"].cert), key_file=str(pki["client"].key))
    result = read_server(spec(tls_server, password_file, user="audit_x509", tls=tls), CTX)
    assert result.errors == [] and result.server["status"] == "ok"
    assert tls_server.query_value(
        "SELECT ssl_type FROM mysql.user WHERE user = 'audit_x509'") == "X509"


# (id, spec arguments, error class, errno, words the message must contain)
REFUSALS = [
    ("other_ca", dict(tls="other_ca"), "tls_verify_failed", 2055,
     ("does not verify against tls.ca_file", "certificate verify failed")),
    ("identity_mismatch", dict(tls="identity"), "tls_identity_mismatch", 2055,
     ("not valid for the name '127.0.0.1'", "IP address mismatch")),
    ("tls_disabled", dict(tls="disabled"), "tls_required_by_server", 3159,
     ("require_secure_transport=ON", "tls.enabled: false", "insecure transport are prohibited")),
    ("x509_without_client_cert", dict(tls="ca", user="audit_x509"), "auth_failed", 1045,
     ("Access denied", "REQUIRE X509: set tls.cert_file and tls.key_file")),
    ("client_cert_of_another_ca", dict(tls="foreign_client"), "tls_handshake_failed", 2055,
     ("refused the client certificate",)),
]


def _tls(kind: str, pki) -> TlsOptions:
    ca = str(pki["ca"].cert)
    return {
        "ca": TlsOptions(ca_file=ca),
        "other_ca": TlsOptions(ca_file=str(pki["other_ca"].cert)),
        "identity": TlsOptions(ca_file=ca, verify_identity=True),
        "disabled": TlsOptions(enabled=False),
        "foreign_client": TlsOptions(ca_file=ca, cert_file=str(pki["foreign_client"].cert),
                                     key_file=str(pki["foreign_client"].key)),
    }[kind]


@pytest.mark.parametrize("case, kwargs, error_class, errno, words", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusal_is_one_error_row_and_a_finding(tls_server, pki, password_file, case, kwargs, error_class,
                                                errno, words):
    """Each refusal: nothing read, one collection_errors row of its own class saying why, and a
    critical collection_failed finding carrying that class."""
    s = spec(tls_server, password_file, user=kwargs.get("user", "audit"), tls=_tls(kwargs["tls"], pki))
    result = read_server(s, CTX)
    assert result.server["status"] == "failed" and result.server.get("server_uuid") is None
    assert result.channels == [] and result.binary_logs == []
    [row] = result.errors
    assert (row["error_class"], row["errno"], row["statement"]) == (error_class, errno, None)
    for word in words:
        assert word in row["message"]
    assert PASSWORD not in row["message"]
    [finding] = collection_findings([result.server], result.errors)
    assert (finding["check_id"], finding["severity"]) == ("collection_failed", "critical")
    assert error_class in finding["detail"] and words[0] in finding["detail"]


def test_no_refusal_is_retried(tls_server, pki, password_file, monkeypatch):
    """A certificate failure is not 'unreachable': one connection attempt, not retries."""
    import jobs.mysql_connection as mysql_connection

    attempts = []
    real = mysql_connection.connect
    monkeypatch.setattr(mysql_connection, "connect", lambda *a, **k: attempts.append(1) or real(*a, **k))
    result = read_server(spec(tls_server, password_file, tls=_tls("other_ca", pki)), CTX)
    assert result.errors[0]["error_class"] == "tls_verify_failed"
    assert len(attempts) == 1 and CTX.settings.retry_attempts == 3


def _context(cnx):
    """The ``ssl.SSLContext`` a live mysql-connector connection was wrapped with."""
    return cnx._socket.sock.context


def test_one_tls_context_per_setting_is_reused_and_verification_is_unchanged(tls_server, pki, password_file,
                                                                              tmp_path, monkeypatch):
    """Connections with one TLS setting share one SSLContext built once (also from threads), and a
    cached context changes no verdict: another CA, a host name the certificate does not list and a
    replaced CA file are still refused after a successful connection cached its context."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from mysql.connector.network import MySQLTCPSocket

    import jobs.mysql_connection as mysql_connection

    monkeypatch.setattr(mysql_connection, "_TLS_CONTEXTS", {})
    built = []
    real_build = MySQLTCPSocket.build_ssl_context
    monkeypatch.setattr(MySQLTCPSocket, "build_ssl_context",
                        lambda self, *a, **k: built.append(a) or real_build(self, *a, **k))
    ca = str(pki["ca"].cert)

    def open_(s):
        return contextlib.closing(connect(s, resolve_password(s)))

    def refused(s):
        result = read_server(s, CTX)
        assert result.server["status"] == "failed" and result.server.get("server_uuid") is None
        return result.errors[0]["error_class"]

    identity = TlsOptions(ca_file=ca, verify_identity=True)
    with open_(spec(tls_server, password_file, host="localhost", tls=identity)) as a, \
            open_(spec(tls_server, password_file, host="localhost", tls=identity)) as b:
        assert a.is_secure and b.is_secure and _context(a) is _context(b)
        cached = _context(a)
    assert len(built) == 1
    # the same setting, the cached context, a name the certificate does not list: still refused
    assert refused(spec(tls_server, password_file, tls=identity)) == "tls_identity_mismatch"
    assert len(built) == 1
    # without verify_identity that name is accepted: its own context, not the one above
    with open_(spec(tls_server, password_file, tls=TlsOptions(ca_file=ca))) as c:
        assert c.is_secure and _context(c) is not cached
    assert len(built) == 2
    # another CA, after the right one was cached: refused, by a fresh context, then by its cached one
    for _ in range(2):
        assert refused(spec(tls_server, password_file, host="localhost",
                            tls=TlsOptions(ca_file=str(pki["other_ca"].cert), verify_identity=True))) \
            == "tls_verify_failed"
    assert len(built) == 3
    # a CA file replaced on disk while the process runs is read again, as without the cache
    moving = tmp_path / "rotating-ca.pem"
    shutil.copyfile(ca, moving)
    rotating = spec(tls_server, password_file, tls=TlsOptions(ca_file=str(moving)))
    with open_(rotating) as d:
        assert d.is_secure
    shutil.copyfile(pki["other_ca"].cert, moving)
    assert refused(rotating) == "tls_verify_failed"
    # four threads opening their first connection with a new setting: one context between them
    x509 = spec(tls_server, password_file, user="audit_x509",
                tls=TlsOptions(ca_file=ca, cert_file=str(pki["client"].cert), key_file=str(pki["client"].key)))
    before = len(built)

    def context_of_one(_):
        with open_(x509) as cnx:
            return _context(cnx)

    with ThreadPoolExecutor(4) as pool:
        contexts = list(pool.map(context_of_one, range(4)))
    assert len(built) == before + 1 and all(c is contexts[0] for c in contexts)
    # no tls section (TLS without verification when offered) takes the same path
    with open_(spec(tls_server, password_file)) as e, open_(spec(tls_server, password_file)) as f:
        assert e.is_secure and _context(e) is _context(f)
    assert len(built) == before + 2
