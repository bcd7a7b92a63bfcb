"""TLS without a server: how failures are classified, what `config check` and the job warn about."""
from __future__ import annotations

import socket
import ssl

import mysql.connector.errors as myerr
import pytest

from jobs.cli import main
from jobs.collect import plain_text_warning
from jobs.mysql_connection import (ErrorClass, TlsConfigError, TlsUnavailableError, _is_transient_connect_error,
                                   classify_error)
from jobs.server_spec import ServerSpec, TlsOptions
from jobs.config import exposed_secret_files


def _from(outer: BaseException, cause: BaseException) -> BaseException:
    """``outer`` raised ``from cause``, as mysql-connector raises a TLS failure."""
    outer.__cause__ = cause
    return outer


def _verify_error(code: int, message: str) -> ssl.SSLCertVerificationError:
    err = ssl.SSLCertVerificationError(1, f"[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: {message}")
    err.verify_code, err.verify_message = code, message
    return err


def _lost(detail: str) -> myerr.InterfaceError:
    return myerr.InterfaceError(errno=2055, values=("127.0.0.1:3306", detail))


# (id, exception as mysql-connector 9.x raises it (messages taken from a real 9.7), connecting, class)
CASES = [
    ("other_ca", _from(_lost("certificate verify failed: self-signed certificate in certificate chain"),
                       _verify_error(19, "self-signed certificate in certificate chain")), True, "tls_verify_failed"),
    ("unknown_issuer", _from(_lost("certificate verify failed: unable to get local issuer certificate"),
                             _verify_error(20, "unable to get local issuer certificate")), True, "tls_verify_failed"),
    ("ip_mismatch", _from(_lost("certificate verify failed: IP address mismatch"),
                          _verify_error(64, "IP address mismatch, certificate is not valid for '127.0.0.1'.")),
     True, "tls_identity_mismatch"),
    ("hostname_mismatch", _from(_lost("certificate verify failed: Hostname mismatch"),
                                _verify_error(62, "Hostname mismatch, certificate is not valid for 'db'.")),
     True, "tls_identity_mismatch"),
    ("client_cert_refused", _from(_lost("EOF occurred in violation of protocol"), ssl.SSLEOFError(8, "EOF")),
     True, "tls_handshake_failed"),
    ("tls_eof_mid_read", _from(_lost("EOF occurred in violation of protocol"), ssl.SSLEOFError(8, "EOF")),
     False, "unreachable"),
    ("3159", myerr.DatabaseError(msg="Connections using insecure transport are prohibited while "
                                     "--require_secure_transport=ON.", errno=3159), True, "tls_required_by_server"),
    ("2026", myerr.InterfaceError(msg="SSL is required but the server doesn't support it", errno=2026),
     True, "tls_unavailable"),
    ("greeting_without_tls", TlsUnavailableError("offers no TLS"), True, "tls_unavailable"),
    ("tls_file_missing", TlsConfigError("tls.ca_file '/x' cannot be read"), True, "config_error"),
    ("x509_1045", myerr.ProgrammingError(msg="Access denied for user 'a'@'h' (using password: YES)", errno=1045),
     True, "auth_failed"),
    ("plain_lost_connection", _lost("Connection reset by peer"), True, "unreachable"),
    ("handshake_timeout", _from(_lost("timed out"), socket.timeout("timed out")), True, "timeout"),
]


@pytest.mark.parametrize("exc, connecting, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_tls_failures_get_their_own_class(exc, connecting, expected):
    """Each TLS failure has its class; a TLS EOF after connecting is a lost connection, not a handshake."""
    assert classify_error(exc, connecting=connecting) == expected


@pytest.mark.parametrize("exc", [c[1] for c in CASES if c[3] in ErrorClass.TLS | {"config_error"}],
                         ids=[c[0] for c in CASES if c[3] in ErrorClass.TLS | {"config_error"}])
def test_no_tls_refusal_is_retried(exc):
    """TLS and configuration failures are final: retrying cannot change a certificate."""
    assert not _is_transient_connect_error(exc)


def test_a_plain_lost_connection_is_still_retried():
    """Positive control: 2055 without a TLS cause stays transient."""
    assert _is_transient_connect_error(_lost("Connection reset by peer"))


def spec(name: str, tls: TlsOptions | None, **kw) -> ServerSpec:
    return ServerSpec(name=name, host="db", port=3306, user="audit", connect_timeout_s=1, read_timeout_s=1,
                      tls=tls, **kw)


@pytest.mark.parametrize("tls, transport", [
    (None, "tls-if-offered"),
    (TlsOptions(enabled=False), "plain"),
    (TlsOptions(verify_cert=False), "tls-unverified"),
    (TlsOptions(ca_file="/ca.pem"), "tls+ca"),
    (TlsOptions(ca_file="/ca.pem", verify_identity=True), "tls+identity"),
], ids=["no-section", "disabled", "unverified", "verify-ca", "verify-identity"])
def test_transport_says_what_protects_the_connection(tls, transport):
    """ServerSpec.transport names each TLS setting the way `config check` prints it."""
    assert spec("a", tls).transport() == transport


def test_plain_text_warning_names_only_plain_servers():
    """One line naming the servers whose read was not over TLS (the read stage passes their names)."""
    line = plain_text_warning(["d", "a"])
    assert line.startswith("2 server(s) audited over plain text, without TLS: a, d ")
    assert plain_text_warning([]) is None


def test_plain_text_warning_is_bounded():
    """A fleet of plain-text servers gives one line of bounded length (the driver takes the first
    names and the count, never every name)."""
    line = plain_text_warning([f"s{i:04d}" for i in range(20)], 5000)
    assert "5000 server(s)" in line and "and 4980 more" in line and len(line) < 400


@pytest.mark.parametrize("mode, who", [(0o600, None), (0o400, None), (0o640, "its group"),
                                       (0o644, "anyone"), (0o606, "anyone")])
def test_secret_files_others_can_read_are_warned_about(tmp_path, mode, who):
    """password_file, option_file and tls.key_file readable beyond their owner get one warning each."""
    files = {}
    for key in ("password", "option", "key"):
        files[key] = tmp_path / key
        files[key].write_text("x\n")
        files[key].chmod(mode)
    specs = [spec("a", TlsOptions(cert_file="/c.pem", key_file=str(files["key"])), password_file=str(files["password"])),
             spec("b", None, option_file=str(files["option"])),
             spec("c", None, password_file=str(files["password"]))]  # the same file: one warning
    warnings = exposed_secret_files(specs)
    if who is None:
        assert warnings == []
    else:
        assert [w.split(" ", 1)[0] for w in warnings] == ["password_file", "tls.key_file", "option_file"]
        assert all(who in w and f"mode {mode:04o}" in w and "chmod 600" in w for w in warnings)


def test_config_check_says_which_servers_would_be_plain_text(tmp_path, capsys):
    """`config check` prints each server's transport and warns about plain text and an exposed password file."""
    secret = tmp_path / "pw"
    secret.write_text("not-printed-Pass\n")
    secret.chmod(0o644)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"warehouse: ./wh\ndefaults: {{user: audit, password_file: {secret}}}\nservers:\n"
                   "  - {name: open-db, host: 10.0.0.1, tls: {enabled: false}}\n"
                   "  - {name: maybe-db, host: 10.0.0.2}\n"
                   "  - {name: safe-db, host: 10.0.0.3, tls: {ca_file: /ca.pem, verify_identity: true}}\n")
    assert main(["config", "check", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "transport=plain" in out and "transport=tls-if-offered" in out and "transport=tls+identity" in out
    assert "warning: 1 server(s) would be audited over plain text (tls.enabled: false): open-db\n" in out
    assert "no tls section and would be audited over plain text if they offer no TLS" in out
    assert "maybe-db" in out.split("no tls section", 1)[1] and "safe-db" not in out.split("warning:", 1)[1]
    assert f"password_file {str(secret)!r} can be read or written by anyone (mode 0644)" in out
    assert "not-printed-Pass" not in out


def test_production_example_verifies_every_server():
    """conf/example-production.yaml audits every server over TLS with certificate and name checked."""
    from pathlib import Path

    from jobs.config import load_config

    config = load_config(Path(__file__).resolve().parents[2] / "conf" / "example-production.yaml")
    assert {s.transport() for s in config.inventory()} == {"tls+identity"}
