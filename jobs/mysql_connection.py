"""How the collector connects to MySQL and what mysql-connector-python's errors mean.

This module holds the connection side of a server's read: :func:`connect` (one connection to a
:class:`~jobs.server_spec.ServerSpec`, with the secret its executor resolved),
:func:`connect_with_retries` (transient failures only, within the server's deadline), the
connection classes that extend the connector's own, the error classes of ``collection_errors``
(:class:`ErrorClass`, :func:`classify_error`) and the small helpers the reader uses on a
connection (one cursor without a ping, inlined literals, a scrubber for messages, a quiet close).
What is read, and how the rows are made, is ``jobs.collector``'s: it imports this module, never
the other way round.

Executors import this module (through ``jobs.collector``), so it imports only the standard
library, mysql-connector-python (lazily, where a connection class is built) and
``jobs.server_spec``: no pydantic, YAML, retry or console library, and nothing else of ``jobs``.

TLS or nothing. With ``tls.enabled`` a connection is TLS or none: a server that offers no TLS
is refused right after its greeting, before any credential is sent
(:func:`_tls_only_connection_class`, :class:`TlsUnavailableError`), and a TLS file that cannot
be read where the connection is made is a :class:`TlsConfigError`. A server with no ``tls``
section gets the connector's default (TLS without verification when the server offers it).

Error classes. :func:`classify_error` turns what the connector or the socket layer raised into
a ``collection_errors.error_class``: ``unreachable``, ``timeout``, ``auth_failed``,
``privilege_missing``, the TLS refusals ``tls_verify_failed``, ``tls_identity_mismatch``,
``tls_handshake_failed``, ``tls_required_by_server``, ``tls_unavailable`` (a failed handshake
is read from the ``ssl`` error the connector's error was raised from), then ``config_error``
and ``unexpected``; ``gtid_mode_off`` and ``unparseable_value`` are the reader's, for values.
:func:`connect_hint` says in one sentence what a connection failure means for the server's
``tls`` settings. Only transient connect errors are retried (:func:`_is_transient_connect_error`):
never authentication, privilege, TLS or configuration failures.

The pure-Python protocol. Every connection speaks mysql-connector's pure-Python protocol, never
its C extension, which cannot refuse a greeting without TLS before sending the password, reports
a read timeout as a lost connection and cannot bound a statement by the server's deadline
(:func:`protocol_implementation`; docs/collection.md, "Protocol implementation"). The connection
classes extend the connector's own (issue #21): one ``ssl.SSLContext`` per TLS setting and
process, packets cut from buffered receives, column definitions parsed once, no session set-up
statements; a connector without the internals they extend keeps its own, with a warning.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import re
import socket
import ssl
import threading
import time
from typing import Any, Sequence

from jobs.server_spec import ReadSettings, Secret, ServerSpec

log = logging.getLogger("gtid_audit.collector")  # the name these warnings had before the split

__all__ = [
    "TlsUnavailableError",
    "TlsConfigError",
    "ErrorClass",
    "classify_error",
    "connect",
    "protocol_implementation",
    "PURE_PYTHON",
    "connector_version",
    # what jobs.collector uses on a connection
    "connect_with_retries",
    "connect_hint",
    "dict_cursor",
    "inline_literals",
    "scrub_secret",
    "close_quietly",
    "timeout_seconds",
    "LOST_CONNECTION",
]


# --- connection errors raised here --------------------------------------------------------------

class TlsUnavailableError(RuntimeError):
    """Raised by :func:`connect` when ``tls.enabled`` is set and the server offers no TLS in
    its greeting (or the connection came up without it): the connection is closed before any
    credential or statement is sent, never used in plain text. Class ``tls_unavailable``."""


class TlsConfigError(ValueError):
    """Raised by :func:`connect` when a ``tls.ca_file``, ``cert_file`` or ``key_file`` cannot be
    read where the connection is made (the message names the key and the path). Class
    ``config_error``."""


class ErrorClass:
    """The values of ``collection_errors.error_class``."""

    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    AUTH_FAILED = "auth_failed"
    GTID_MODE_OFF = "gtid_mode_off"
    UNPARSEABLE_VALUE = "unparseable_value"
    PRIVILEGE_MISSING = "privilege_missing"
    # TLS refusals (docs/collection.md, "Failures are data"); none is retried
    TLS_VERIFY_FAILED = "tls_verify_failed"            # certificate not trusted (other CA, expired, ...)
    TLS_IDENTITY_MISMATCH = "tls_identity_mismatch"    # verify_identity: name/IP not in the certificate
    TLS_HANDSHAKE_FAILED = "tls_handshake_failed"      # other handshake failure (client cert refused, ...)
    TLS_REQUIRED_BY_SERVER = "tls_required_by_server"  # 3159: require_secure_transport=ON, TLS disabled here
    TLS_UNAVAILABLE = "tls_unavailable"                # tls.enabled, but the server offers no TLS
    CONFIG_ERROR = "config_error"  # a secret reference or TLS file that does not resolve on the executor
    UNEXPECTED = "unexpected"

    TLS = frozenset({TLS_VERIFY_FAILED, TLS_IDENTITY_MISMATCH, TLS_HANDSHAKE_FAILED,
                     TLS_REQUIRED_BY_SERVER, TLS_UNAVAILABLE})


# MySQL error numbers (server ER_* and client CR_*) that decide the class of a failure.
_AUTH = {1045, 1044, 1698, 1251, 2059, 2061}      # access denied, auth plugin problems
_PRIVILEGE = {1227, 1142, 1143, 1370, 1141}        # ER_SPECIFIC_ACCESS_DENIED_ERROR, table/column access
_UNREACHABLE = {2002, 2003, 2005, 2006, 2013, 2055, 1040, 1129, 1130}
_TRANSIENT_CONNECT = {2002, 2003, 2006, 2013, 2055, 1040}
LOST_CONNECTION = {2006, 2013, 2055}
ER_SECURE_TRANSPORT_REQUIRED = 3159     # "Connections using insecure transport are prohibited ..."
CR_SSL_CONNECTION_ERROR = 2026          # mysql-connector: "SSL is required but the server doesn't support it"
# OpenSSL verify codes of a certificate valid for another name: X509_V_ERR_HOSTNAME_MISMATCH,
# X509_V_ERR_IP_ADDRESS_MISMATCH (a chain that does not verify has another code, e.g. 19, 20)
_IDENTITY_MISMATCH = {62, 64}


def _ssl_error_behind(exc: BaseException | None) -> ssl.SSLError | None:
    """The ``ssl.SSLError`` a driver error was raised from (mysql-connector wraps the TLS
    handshake's failure in InterfaceError 2055 ``from`` it), if any."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, ssl.SSLError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def classify_error(exc: BaseException, *, connecting: bool = False) -> str:
    """The error class of an exception raised by mysql-connector or the socket layer.
    ``connecting``: raised while connecting, where any TLS error is the handshake's (later, a
    TLS error is a dropped connection)."""
    errno = getattr(exc, "errno", None)
    text = str(exc).lower()
    if isinstance(exc, (socket.timeout, TimeoutError)) or "timed out" in text:
        return ErrorClass.TIMEOUT
    if isinstance(exc, TlsConfigError):
        return ErrorClass.CONFIG_ERROR
    if isinstance(exc, TlsUnavailableError) or errno == CR_SSL_CONNECTION_ERROR:
        return ErrorClass.TLS_UNAVAILABLE
    if errno == ER_SECURE_TRANSPORT_REQUIRED:
        return ErrorClass.TLS_REQUIRED_BY_SERVER
    cause = _ssl_error_behind(exc)
    if isinstance(cause, ssl.SSLCertVerificationError) or "certificate verify failed" in text:
        if getattr(cause, "verify_code", None) in _IDENTITY_MISMATCH or "address mismatch" in text \
                or "hostname mismatch" in text:
            return ErrorClass.TLS_IDENTITY_MISMATCH
        return ErrorClass.TLS_VERIFY_FAILED
    if connecting and cause is not None:
        return ErrorClass.TLS_HANDSHAKE_FAILED
    if errno in _AUTH:
        return ErrorClass.AUTH_FAILED
    if errno in _PRIVILEGE:
        return ErrorClass.PRIVILEGE_MISSING
    if errno in _UNREACHABLE or isinstance(exc, (ConnectionError, socket.gaierror)):
        return ErrorClass.UNREACHABLE
    return ErrorClass.UNEXPECTED


def connect_hint(error_class: str, exc: BaseException, spec: ServerSpec) -> str | None:
    """What a connection failure of ``error_class`` means for ``spec``'s TLS settings, in one
    sentence for the ``collection_errors`` message (None when the driver's text says it all)."""
    tls = spec.tls
    cause = _ssl_error_behind(exc)
    why = getattr(cause, "verify_message", None)
    if error_class == ErrorClass.TLS_VERIFY_FAILED:
        trusted = f"tls.ca_file {tls.ca_file!r}" if tls and tls.ca_file else "the system's CA certificates"
        return (f"TLS refused: the server's certificate does not verify against {trusted}"
                + (f" ({why})" if why else "") + "; nothing was sent")
    if error_class == ErrorClass.TLS_IDENTITY_MISMATCH:
        return (f"TLS refused: the server's certificate is not valid for the name {spec.host!r} "
                "(tls.verify_identity); connect by a name or address the certificate lists")
    if error_class == ErrorClass.TLS_HANDSHAKE_FAILED:
        return ("TLS handshake failed: the server may have refused the client certificate "
                "(tls.cert_file) or shares no TLS version or cipher with the client")
    if error_class == ErrorClass.TLS_REQUIRED_BY_SERVER:
        return ("the server requires TLS (require_secure_transport=ON) and TLS is disabled for this "
                "server (tls.enabled: false): enable tls")
    if error_class == ErrorClass.TLS_UNAVAILABLE:
        return ("the server offers no TLS and tls.enabled is set: refused, nothing was read in plain "
                "text; configure TLS on the server (tls.enabled: false only on a trusted network)")
    if error_class == ErrorClass.AUTH_FAILED and getattr(exc, "errno", None) == 1045:
        if tls is not None and not tls.enabled:
            return "if the account is created REQUIRE SSL or X509: tls.enabled is false for this server"
        if tls is None or not tls.cert_file:
            return "if the account is created REQUIRE X509: set tls.cert_file and tls.key_file"
    return None


def _is_transient_connect_error(exc: BaseException) -> bool:
    """Worth a retry: refused/reset connections, lost handshakes, too many connections, connect
    timeouts. Never authentication, privilege, TLS or configuration failures."""
    if classify_error(exc, connecting=True) not in (ErrorClass.UNREACHABLE, ErrorClass.TIMEOUT):
        return False
    errno = getattr(exc, "errno", None)
    return errno in _TRANSIENT_CONNECT or isinstance(exc, (socket.timeout, TimeoutError, ConnectionError))


# --- connecting ---------------------------------------------------------------------------------

def timeout_seconds(value: float) -> int:
    """mysql-connector takes whole seconds (at least 1)."""
    return max(1, math.ceil(value))


_TLS_CONTEXTS: dict[tuple, ssl.SSLContext] = {}  # one per TLS setting, per process (issue #21)
_TLS_CONTEXTS_LOCK = threading.Lock()
_TLS_CONTEXTS_MAX = 32  # distinct settings (and file versions) kept; the oldest is dropped past it


def _tls_file_key(path: str | None) -> tuple | None:
    """A TLS file as part of a context's key: its path and the version on disk now, so a CA,
    certificate or key replaced while the process runs gets a new context, as without the cache."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return (path, None)  # the build fails and raises as before; nothing is cached
    return (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def connector_version() -> str:
    """The installed mysql-connector-python's version, or ``"unknown"``."""
    from importlib import metadata

    try:
        return metadata.version("mysql-connector-python")
    except metadata.PackageNotFoundError:
        return "unknown"


#: How much one receive asks the socket for (:func:`_buffered_broker_class`).
RECEIVE_BUFFER_BYTES = 64 * 1024


@functools.lru_cache(maxsize=1)
def _buffered_broker_class():
    """mysql-connector's plain packet broker, receiving up to :data:`RECEIVE_BUFFER_BYTES` per
    socket call and cutting packets from what it holds (issue #21, stop 29).

    The connector's own ``recv`` makes one ``recv_into`` system call for each packet's 4-byte
    header and one for its payload: a read of ~180 packets (a column definition is a packet, a
    row is a packet) made ~350 calls and as many Python frames around them, ~20 % of its client
    CPU. ``recv`` here returns the same packet and raises the same errors (a timeout is
    ``ReadTimeoutError``, a broken socket ``OperationalError`` 2055, a closed one
    ``InterfaceError`` 2013); the socket timeout is still set by the connector before each
    packet, so every wait is bounded by the statement's ``read_timeout``. Packets of 16 MiB
    and more (split by the protocol) are not expected here and come back split, as they do
    from the connector's own broker. A connection that switches to TLS changes
    ``sock``; bytes received in plain text and not yet used at that moment would be served as
    if they came over TLS, so they fail the read instead (a server sends nothing between its
    greeting and the client's TLS request; a man in the middle could).

    None when this connector has not the internals it extends (another major version): the
    connections then keep the connector's own broker, which costs CPU and changes nothing else."""
    from mysql.connector.errors import InterfaceError, OperationalError, ReadTimeoutError
    try:
        from mysql.connector.network import NetworkBrokerPlain, _strioerror
    except ImportError:
        log.warning("mysql-connector-python %s has no NetworkBrokerPlain/_strioerror: its own packet broker is used",
                    connector_version())
        return None

    class BufferedBroker(NetworkBrokerPlain):
        def __init__(self) -> None:
            super().__init__()
            self._received = bytearray()
            self._used = 0          # bytes of ``_received`` already returned as packets
            self._sock = None       # the socket ``_received`` came from

        def _have(self, sock, size: int) -> None:
            """At least ``size`` unused bytes in ``_received``."""
            received = self._received
            while len(received) - self._used < size:
                data = sock.recv(max(RECEIVE_BUFFER_BYTES, size - (len(received) - self._used)))
                if not data:
                    raise InterfaceError(errno=2013)
                del received[:self._used]
                self._used = 0
                received += data

        def recv(self, sock, address: str) -> bytearray:
            """One packet, header included (what the connector's ``recv`` returns)."""
            if sock is not self._sock:
                if self._used < len(self._received):
                    raise InterfaceError(errno=2055, values=(
                        address, "bytes received in plain text before the switch to TLS"))
                self._received, self._used, self._sock = bytearray(), 0, sock
            received, at = self._received, self._used
            try:
                if len(received) - at < 4:
                    self._have(sock, 4)
                    at = self._used    # ``_have`` moves the unused bytes to the front
                size = 4 + (received[at] | received[at + 1] << 8 | received[at + 2] << 16)
                self._pktnr = received[at + 3]
                if len(received) - at < size:
                    self._have(sock, size)
                    at = self._used
                self._used = at + size
                return received[at:at + size]
            except (socket.timeout, TimeoutError) as err:
                raise ReadTimeoutError(errno=3024, msg=err.strerror) from err
            except IOError as err:
                raise OperationalError(errno=2055, values=(address, _strioerror(err))) from err

    return BufferedBroker


#: Column definitions kept by :func:`_column_cache_protocol_class` (per process, all servers).
COLUMN_CACHE_MAX = 4096


@functools.lru_cache(maxsize=1)
def _column_cache_protocol_class():
    """mysql-connector's protocol parser, keeping the description it parsed from each distinct
    column definition packet (issue #21, stop 29).

    Every result set starts with one definition packet per column, and the connector parses each
    one in Python (six length-coded strings, a struct): ~125 per read, ``SHOW REPLICA STATUS``
    alone is ~55, ~15 % of a read's client CPU. The packets of a statement are the same bytes on
    every read of every server of the same version, so the description (a tuple, never changed
    by the connector) is looked up by the packet's payload and the character set it is decoded
    with, and parsed by the connector's own ``parse_column`` when it is new. At most
    :data:`COLUMN_CACHE_MAX` are kept; past that the cache starts again empty. None when this
    connector's parser has no ``parse_column`` to extend (the connector's own is then used)."""
    from mysql.connector.protocol import MySQLProtocol

    if not callable(getattr(MySQLProtocol, "parse_column", None)):
        log.warning("mysql-connector-python %s has no MySQLProtocol.parse_column: column definitions are not cached",
                    connector_version())
        return None

    cache: dict[tuple[bytes, str], Any] = {}

    class ColumnCacheProtocol(MySQLProtocol):
        @staticmethod
        def parse_column(packet: bytes, encoding: str = "utf-8"):
            key = (bytes(packet[4:]), encoding)
            description = cache.get(key)
            if description is None:
                description = MySQLProtocol.parse_column(packet, encoding)
                if len(cache) >= COLUMN_CACHE_MAX:
                    cache.clear()
                cache[key] = description
            return description

    return ColumnCacheProtocol


@functools.lru_cache(maxsize=1)
def _shared_tls_context_socket_class():
    """mysql-connector's TCP socket, building one ``ssl.SSLContext`` per process per distinct TLS
    setting and handing the same one to every later connection with that setting (issue #21:
    building it, system CA store included, was ~46 of the ~48 ms of client CPU a TLS read costs).

    ``build_ssl_context`` is the connector's own hook (``MySQLAuthenticator.setup_ssl`` calls it
    on the connection's socket, then ``switch_to_ssl`` wraps the socket with the context); the
    context is built by the connector's code with every argument it was given, so verification
    is unchanged: ``verify_mode``, ``check_hostname``, CA file, client certificate and key,
    TLS versions and ciphers are all in the key. The host name is not: it is passed to
    ``wrap_socket`` per connection, which is where ``check_hostname`` checks it. An
    ``SSLContext`` may be shared by threads for ``wrap_socket``; building is under a lock.
    A build that fails raises, each time, and caches nothing."""
    from mysql.connector.errors import InterfaceError
    from mysql.connector.network import MySQLTCPSocket

    class SharedTlsContextTCPSocket(MySQLTCPSocket):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            broker = _buffered_broker_class()
            if broker is not None and hasattr(self, "_netbroker"):
                self._netbroker = broker()

        def build_ssl_context(self, ssl_ca=None, ssl_cert=None, ssl_key=None, ssl_verify_cert=False,
                              ssl_verify_identity=False, tls_versions=None, tls_cipher_suites=None):
            if not self.sock:
                raise InterfaceError(errno=2048)  # as the connector's own build
            key = (_tls_file_key(ssl_ca), _tls_file_key(ssl_cert), _tls_file_key(ssl_key),
                   bool(ssl_verify_cert), bool(ssl_verify_identity),
                   tuple(sorted(tls_versions or ())), tuple(tls_cipher_suites or ()))
            with _TLS_CONTEXTS_LOCK:
                context = _TLS_CONTEXTS.get(key)
                if context is None:
                    context = super().build_ssl_context(
                        ssl_ca, ssl_cert, ssl_key, ssl_verify_cert, ssl_verify_identity,
                        list(tls_versions) if tls_versions else None,
                        list(tls_cipher_suites) if tls_cipher_suites else None)
                    while len(_TLS_CONTEXTS) >= _TLS_CONTEXTS_MAX:
                        del _TLS_CONTEXTS[next(iter(_TLS_CONTEXTS))]
                    _TLS_CONTEXTS[key] = context
            return context

    return SharedTlsContextTCPSocket


@functools.lru_cache(maxsize=1)
def _shared_tls_context_connection_class():
    """mysql-connector's pure-Python connection whose TCP socket reuses TLS contexts
    (:func:`_shared_tls_context_socket_class`); every :func:`connect` uses it, also without a
    ``tls`` section (the connector's default: TLS without verification when the server offers it).
    ``_get_connection`` is where the connector makes the socket; a Unix socket (no TLS) is kept."""
    from mysql.connector.connection import MySQLConnection
    from mysql.connector.network import MySQLTCPSocket

    class SharedTlsContextConnection(MySQLConnection):
        def _post_connection(self) -> None:
            """No session set-up statements (issue #21: two round trips per server). The
            connector would send ``SET NAMES`` and ``SET @@session.autocommit``: the character
            set is already the one the handshake response announced (it sets
            character_set_client, _connection and _results; sql/sql_connect.cc,
            ``thd_init_client_charset``), and the reads are SELECTs and SHOWs of server state,
            which autocommit does not change. Time zone, SQL mode and init command are never
            set by :func:`connect`."""
            if self._time_zone or self._sql_mode or self._init_command:
                super()._post_connection()

        def _get_connection(self):
            # called by ``_open_connection`` right after it makes the connection's protocol parser
            protocol = _column_cache_protocol_class()
            if protocol is not None:
                self._protocol = protocol()
            sock = super()._get_connection()
            if type(sock) is not MySQLTCPSocket:
                return sock
            shared = _shared_tls_context_socket_class()(
                host=sock.server_host, port=sock.server_port, force_ipv6=sock.force_ipv6)
            shared.set_connection_timeout(self._connection_timeout)
            return shared

    return SharedTlsContextConnection


@functools.lru_cache(maxsize=1)
def _tls_only_connection_class():
    """mysql-connector's pure-Python connection, refusing a server greeting that offers no TLS
    before answering it (the driver itself goes on in plain text when ``verify_cert`` is off).
    ``_do_handshake`` reads the greeting and ``_do_auth`` answers it (mysql-connector 9.x).
    TLS contexts are shared as in :func:`_shared_tls_context_connection_class`."""
    from mysql.connector.constants import ClientFlag

    class TlsOnlyConnection(_shared_tls_context_connection_class()):
        def _do_handshake(self) -> None:
            super()._do_handshake()  # raises 2026 itself when verify_cert is on
            if self._ssl_disabled or not self._handshake["capabilities"] & ClientFlag.SSL:
                raise TlsUnavailableError(
                    f"{self.server_host}:{self.server_port} offers no TLS and tls.enabled is set: "
                    "refused before any credential was sent (nothing is read in plain text)")

    return TlsOnlyConnection


def dict_cursor(cnx):
    """A dictionary cursor on a connection just made or just used: ``cnx.cursor()`` would first
    ping the server (``is_connected()``, one round trip per cursor); a lost connection shows as
    an error of the next statement anyway."""
    from mysql.connector.cursor import MySQLCursorDict

    return MySQLCursorDict(cnx)


PURE_PYTHON = "pure-python"


def protocol_implementation() -> str:
    """How this Python's reads speak the MySQL protocol: always ``"pure-python"``, whether or
    not mysql-connector's C extension loads here (the collect stage logs it).

    :func:`connect` asks for the pure-Python protocol for every server. The C extension
    (``CMySQLConnection``, libmysqlclient; measured with 9.5-9.7, docs/collection.md, "Protocol
    implementation") takes 30-65 % less client CPU per read but cannot keep what the
    collector promises: with ``ssl_ca`` and ``verify_cert`` it reads a server that offers no TLS
    in plain text, password included, and it has no hook between the greeting and the
    credentials where :func:`_tls_only_connection_class` refuses; a read timeout is error 2013,
    class ``unreachable`` (retried while connecting), not ``timeout``; ``read_timeout`` cannot
    change after connecting, so the server's deadline no longer bounds a statement;
    ``is_secure`` is always False."""
    return PURE_PYTHON


def connect(spec: ServerSpec, password: Secret | None, timeout_s: float | None = None):
    """A mysql-connector connection to ``spec`` (pure-Python protocol, never the C extension:
    :func:`protocol_implementation` says why; autocommit, timeouts).

    With ``spec.tls.enabled`` the connection is TLS or none: a greeting without TLS is refused
    before the client answers it, so no credential is ever sent in plain text, and a connection
    that came up unencrypted is closed. Raises :class:`TlsUnavailableError` then, and
    :class:`TlsConfigError` for a TLS file that cannot be read here. Every connection of the
    process with the same TLS setting shares one ``ssl.SSLContext``
    (:func:`_shared_tls_context_socket_class`)."""
    kwargs: dict[str, Any] = dict(
        host=spec.host, port=spec.port, user=spec.user,
        connection_timeout=timeout_seconds(timeout_s or spec.connect_timeout_s),
        read_timeout=timeout_seconds(spec.read_timeout_s), write_timeout=timeout_seconds(spec.read_timeout_s),
        use_pure=True, autocommit=True, charset="utf8mb4", get_warnings=False,
    )
    if password is not None:
        kwargs["password"] = password.reveal()
    if spec.option_file:
        kwargs["option_files"] = spec.option_file
        kwargs["option_groups"] = ["client", "gtid-audit"]
    tls = spec.tls
    if tls is not None:
        if not tls.enabled:
            kwargs["ssl_disabled"] = True
        else:
            for key, name, value in (("ssl_ca", "ca_file", tls.ca_file), ("ssl_cert", "cert_file", tls.cert_file),
                                     ("ssl_key", "key_file", tls.key_file)):
                if value:
                    if not os.access(value, os.R_OK):
                        raise TlsConfigError(f"server {spec.name!r}: tls.{name} {value!r} cannot be read "
                                             f"on {socket.gethostname()}")
                    kwargs[key] = value
            kwargs["ssl_verify_cert"] = tls.verify_cert
            kwargs["ssl_verify_identity"] = tls.verify_identity
    if spec.option_file:  # what mysql.connector.connect does with option files
        from mysql.connector.optionfiles import read_option_files

        kwargs = read_option_files(**kwargs)
    kwargs.pop("use_pure", None)
    if tls is None or not tls.enabled:  # the pure-Python connection, as connect(use_pure=True) makes
        return _shared_tls_context_connection_class()(**kwargs)
    cnx = _tls_only_connection_class()(**kwargs)
    if not cnx.is_secure:  # belt and braces: the greeting offered TLS, so this cannot happen
        close_quietly(cnx)
        raise TlsUnavailableError(f"{spec.host}:{spec.port}: the connection is not encrypted although "
                                  "tls.enabled is set: closed before any statement")
    return cnx


def connect_with_retries(spec: ServerSpec, password: Secret | None, settings: ReadSettings,
                          deadline: float):
    """Connect, retrying only transient errors with exponential back-off, within the server's
    deadline (a bounded loop: ``retry_attempts`` tries at most)."""
    wait_s = settings.retry_wait_initial_s
    for attempt in range(1, settings.retry_attempts + 1):
        try:
            return connect(spec, password, min(spec.connect_timeout_s, max(1.0, deadline - time.monotonic())))
        except Exception as exc:
            pause = min(wait_s, settings.retry_wait_max_s)
            if (attempt == settings.retry_attempts or not _is_transient_connect_error(exc)
                    or time.monotonic() + pause >= deadline):
                raise
            time.sleep(pause)
            wait_s *= 2
    raise AssertionError("unreachable")  # the loop returns or raises


def scrub_secret(message: str, password: Secret | None) -> str:
    """Remove the secret from a message, whatever produced it (defence in depth)."""
    if password is not None and password.reveal():
        message = message.replace(password.reveal(), "***")
    return message


#: A string the connector would send as it is between quotes, whatever the SQL mode: no quote,
#: backslash or control character to escape, ASCII (the same bytes in every character set).
_PLAIN_LITERAL = re.compile(r"[A-Za-z0-9_.\-]*")


def inline_literals(sql: str, params: Sequence[Any]) -> str | None:
    """``sql`` with each ``%s`` replaced by its parameter quoted, the very text mysql-connector
    sends for it (``'binlog.000002'``), or None when a parameter is not a plain string
    (:data:`_PLAIN_LITERAL`) and the connector must escape it. Sending the text as it is spares
    what the connector does before escaping any parameter: it asks the server for the session's
    sql_mode (NO_BACKSLASH_ESCAPES), one statement and one COM_PING per connection."""
    parts = sql.split("%s")
    if len(parts) != len(params) + 1 or not all(isinstance(p, str) and _PLAIN_LITERAL.fullmatch(p)
                                                 for p in params):
        return None
    return parts[0] + "".join(f"'{p}'{part}" for p, part in zip(params, parts[1:]))


def close_quietly(resource: Any) -> None:
    """Close a cursor or connection that may be None or already broken; never raises."""
    if resource is not None:
        with contextlib.suppress(Exception):
            resource.close()
