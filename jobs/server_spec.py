"""What the driver hands the executors about each server: plain, picklable values.

:class:`ServerSpec` carries a server's address, connection settings and its secret *reference*
(``password_env``, ``password_file`` or ``option_file``), never a secret; :func:`resolve_password`
turns the reference into a :class:`Secret` where it runs (an executor), so no password travels in
a task closure, an event log or a table. :class:`ReadSettings` are the collection settings a task
needs (``jobs.config.CollectionSettings`` validated them). Standard library only: executors import
it.
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["Secret", "SecretError", "TlsOptions", "ServerSpec", "ReadSettings", "resolve_password"]


class Secret:
    """A resolved password. ``str``/``repr`` print ``'***'``; ``reveal()`` gives the value to
    the connection code and nothing else. It exists only on the executor that resolved it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self):
        raise TypeError("a Secret is never pickled: ship the ServerSpec (its reference) instead")


class SecretError(ValueError):
    """Raised when a secret reference does not resolve where it is resolved (an environment
    variable that is not set, a password file or option file that cannot be read). The message
    names the reference and the server, never a secret."""


@dataclass(frozen=True)
class TlsOptions:
    """TLS towards one server (mysql-connector ``ssl_*`` options); paths already resolved.
    ``enabled`` means TLS or no connection (:func:`jobs.mysql_connection.connect`); ``None`` in a :class:`ServerSpec`
    (no ``tls`` section) leaves mysql-connector's default: TLS without verification when the
    server offers it, plain text when it does not."""

    enabled: bool = True
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify_cert: bool = True
    verify_identity: bool = False


@dataclass(frozen=True)
class ServerSpec:
    """One server with its defaults applied and paths resolved: what a task reads. It carries
    the secret *reference* (``password_env``, ``password_file`` or ``option_file``), resolved by
    :func:`resolve_password` on the executor."""

    name: str
    host: str
    port: int
    user: str
    connect_timeout_s: float
    read_timeout_s: float
    cluster: str | None = None
    aliases: tuple[tuple[str, int], ...] = ()
    password_env: str | None = None
    password_file: str | None = None
    option_file: str | None = None
    tls: TlsOptions | None = None
    discovered: bool = False

    def addresses(self) -> tuple[tuple[str, int], ...]:
        """Every (host, port) by which replicas may name this server."""
        return ((self.host.lower(), self.port),) + tuple(self.aliases)

    def alias_texts(self) -> tuple[str, ...]:
        """The aliases as ``host:port`` text, an IPv6 address in brackets (``[fd00::7]:3307``), as
        ``jobs.pairs`` parses them back."""
        return tuple(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.aliases)

    def secret_reference(self) -> str:
        """The reference kind and name, for messages (never the secret)."""
        return ("password_env=" + self.password_env if self.password_env else
                "password_file=" + self.password_file if self.password_file else
                "option_file=" + self.option_file if self.option_file else "no password")

    def transport(self) -> str:
        """How the connection is protected: ``tls+identity``, ``tls+ca`` (certificate verified),
        ``tls-unverified``, ``plain`` (``tls.enabled: false``) or ``tls-if-offered`` (no ``tls``
        section: mysql-connector's default, plain text when the server offers no TLS)."""
        tls = self.tls
        if tls is None:
            return "tls-if-offered"
        if not tls.enabled:
            return "plain"
        return "tls+identity" if tls.verify_identity else "tls+ca" if tls.verify_cert else "tls-unverified"

    def describe(self) -> str:
        """One line for ``config check``: no secret, only the reference kind."""
        alias = (" aliases=" + ",".join(self.alias_texts())) if self.aliases else ""
        return (f"{self.name:<20} {self.host}:{self.port:<6} cluster={self.cluster or '-'} "
                f"user={self.user} {self.secret_reference()} transport={self.transport()}{alias}")

    def discovered_as(self, name: str, host: str, port: int) -> "ServerSpec":
        """A server found by discovery, with this server's connection settings."""
        return replace(self, name=name, host=host, port=port, aliases=(), discovered=True)


@dataclass(frozen=True)
class ReadSettings:
    """The collection settings a task needs (``jobs.config.CollectionSettings`` validated them)."""

    server_deadline_s: float = 60.0
    retry_attempts: int = 3
    retry_wait_initial_s: float = 0.5
    retry_wait_max_s: float = 5.0
    binlog_header_events: int = 3
    max_binary_logs: int = 500
    relay_tail_max_events: int = 2000
    relay_tail_page_events: int = 500
    relay_probe_files: int = 4
    relay_tail_max_scan_events: int = 4_000_000
    per_task_concurrency: int = 8


def resolve_password(spec: ServerSpec) -> Secret | None:
    """The password of ``spec`` from its reference, resolved where this runs (an executor in a
    job); None when it uses an option file or no password. Raises :class:`SecretError` naming
    the reference (never the value) when it does not resolve."""
    if spec.password_env:
        value = os.environ.get(spec.password_env)
        if value is None:
            raise SecretError(f"server {spec.name!r}: environment variable {spec.password_env!r} "
                              f"is not set on {socket.gethostname()}")
        return Secret(value)
    if spec.password_file:
        try:
            return Secret(Path(spec.password_file).read_text(encoding="utf-8").rstrip("\r\n"))
        except OSError as exc:
            raise SecretError(f"server {spec.name!r}: cannot read password_file "
                              f"{spec.password_file!r} on {socket.gethostname()}: {exc.strerror}") from None
    if spec.option_file and not Path(spec.option_file).is_file():
        raise SecretError(f"server {spec.name!r}: option_file {spec.option_file!r} does not exist "
                          f"on {socket.gethostname()}")
    return None
