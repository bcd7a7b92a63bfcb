"""The gtid-audit configuration: YAML validated on load into frozen pydantic models.

``load_config(path)`` reads the file, validates it and resolves what depends on the file's
location (relative ``warehouse``, ``password_file``, ``option_file`` and TLS paths resolve
against the file's directory). Errors are :class:`ConfigError` naming the file, the key and the
bad value; values under a key that looks like a secret are never quoted.

Every settings model of the job lives here, the ``audit`` section's included. What Spark tasks
need is converted into the plain values of ``jobs.collector`` (:class:`ServerSpec`,
:class:`ReadSettings`), so executors never import pydantic or YAML.

Secrets are only ever referenced (``password_env``, ``password_file`` or ``option_file``). The
references travel to the executors, which resolve them (``jobs.server_spec.resolve_password``)
into a :class:`Secret` whose ``repr`` and ``str`` hide the value and which refuses to be
pickled, so that no log line, event log, error or table can carry it.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import urllib.parse
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jobs.server_spec import ReadSettings, resolve_password, Secret, SecretError, ServerSpec, TlsOptions

__all__ = [
    "ConfigError",
    "Secret",
    "SecretError",
    "AlertmanagerSettings",
    "Silence",
    "SilenceError",
    "parse_silences",
    "AuditSettings",
    "load_audit_settings",
    "MaintenanceSettings",
    "DEFAULT_RETENTION_DAYS",
    "DEFAULT_ZORDER",
    "TlsSettings",
    "ConnectionSettings",
    "ServerConfig",
    "ServerSpec",
    "RetrySettings",
    "CollectionSettings",
    "DiscoverySettings",
    "SparkSettings",
    "GtidAuditConfig",
    "load_config",
    "parse_config",
    "resolve_password",
    "parse_host_port",
    "exposed_secret_files",
]

_SECRET_KEY = re.compile(r"pass|secret|token|key_data", re.IGNORECASE)


class ConfigError(ValueError):
    """Raised for a configuration that cannot be used: unreadable file, invalid YAML, a key
    with a bad value (the message names the file, the key path and the value), or a secret
    reference that does not resolve (the message names the reference, never the secret)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def parse_host_port(text: str, default_port: int = 3306) -> tuple[str, int]:
    """``'host:port'`` or ``'host'`` (or ``'[v6]:port'``) -> (lowercased host, port)."""
    text = text.strip()
    m = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?|([^:\s]+)(?::(\d+))?", text)
    if not m:
        raise ValueError(f"invalid host:port {text!r}")
    host = m.group(1) or m.group(3)
    port = int(m.group(2) or m.group(4) or default_port)
    if not 0 < port < 65536:
        raise ValueError(f"port out of range in {text!r}")
    return host.lower(), port


class TlsSettings(_Frozen):
    """TLS towards the servers (mysql-connector ``ssl_*`` options)."""

    enabled: bool = True
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify_cert: bool = True
    verify_identity: bool = False

    @model_validator(mode="after")
    def _pairs(self) -> "TlsSettings":
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        if self.verify_identity and not self.verify_cert:
            raise ValueError("verify_identity needs verify_cert")
        return self


class ConnectionSettings(_Frozen):
    """How to connect; in ``defaults`` for every server, per server to override."""

    user: str | None = None
    password_env: str | None = None
    password_file: str | None = None
    option_file: str | None = None
    connect_timeout_s: float | None = Field(default=None, gt=0, le=600)
    read_timeout_s: float | None = Field(default=None, gt=0, le=3600)
    tls: TlsSettings | None = None

    @model_validator(mode="after")
    def _one_secret(self) -> "ConnectionSettings":
        refs = [k for k in ("password_env", "password_file", "option_file") if getattr(self, k)]
        if len(refs) > 1:
            raise ValueError(f"give at most one of password_env, password_file, option_file (got {refs})")
        return self


class ServerConfig(ConnectionSettings):
    """One inventory entry."""

    name: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$")
    host: str = Field(min_length=1)
    port: int = Field(default=3306, gt=0, lt=65536)
    cluster: str | None = None
    aliases: tuple[str, ...] = ()

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for alias in value:
            parse_host_port(alias)
        return value


class RetrySettings(_Frozen):
    """Retries of transient connection errors (never of authentication failures)."""

    attempts: int = Field(default=3, ge=1, le=10)
    wait_initial_s: float = Field(default=0.5, ge=0)
    wait_max_s: float = Field(default=5.0, ge=0)


#: Threads per read task when ``collection.per_task_concurrency`` is not set (and not in local mode).
DEFAULT_PER_TASK_CONCURRENCY = 8
#: The most threads one read task runs, set or automatic.
MAX_PER_TASK_CONCURRENCY = 256


class CollectionSettings(_Frozen):
    """Concurrency, deadlines and the bounds of what is read."""

    concurrency: int = Field(default=64, ge=1, le=1024)       # servers read at once, overall
    # threads inside one Spark task; unset: 8, or in local mode as many as it takes for the tasks
    # that run at once (one per core) to read ``concurrency`` servers, at most 256
    # (jobs.collect.read_settings; docs/collection.md, "Read")
    per_task_concurrency: int | None = Field(default=None, ge=1, le=MAX_PER_TASK_CONCURRENCY)
    server_deadline_s: float = Field(default=60.0, gt=0, le=3600)
    retries: RetrySettings = RetrySettings()
    binlog_header_events: int = Field(default=3, ge=2, le=10)    # SHOW BINLOG EVENTS ... LIMIT n
    max_binary_logs: int = Field(default=500, ge=1)             # newest files whose Previous_gtids are read
    relay_tail_max_events: int = Field(default=2000, ge=1)      # cap on relay log events per channel
    relay_tail_page_events: int = Field(default=500, ge=1)      # LIMIT of one SHOW RELAYLOG EVENTS page
    relay_probe_files: int = Field(default=4, ge=0, le=100)     # next relay file numbers probed
    relay_tail_max_scan_events: int = Field(default=4_000_000, ge=1)  # events the server may decode per relay tail
    # plan the read order from the previous run's tables (no probe connection) and skip the
    # headers of binary logs read unchanged then (docs/collection.md, "Later nights")
    use_previous_run: bool = True

    def read_settings(self) -> ReadSettings:
        """The plain values a Spark task needs."""
        return ReadSettings(
            server_deadline_s=self.server_deadline_s, retry_attempts=self.retries.attempts,
            retry_wait_initial_s=self.retries.wait_initial_s, retry_wait_max_s=self.retries.wait_max_s,
            binlog_header_events=self.binlog_header_events, max_binary_logs=self.max_binary_logs,
            relay_tail_max_events=self.relay_tail_max_events,
            relay_tail_page_events=self.relay_tail_page_events, relay_probe_files=self.relay_probe_files,
            relay_tail_max_scan_events=self.relay_tail_max_scan_events,
            per_task_concurrency=self.per_task_concurrency or DEFAULT_PER_TASK_CONCURRENCY)


class DiscoverySettings(_Frozen):
    """Walk the topology from seed servers: SHOW REPLICAS on sources, Source_Host on replicas."""

    enabled: bool = False
    seeds: tuple[str, ...] = ()          # server names; empty = every configured server
    max_depth: int = Field(default=3, ge=0, le=20)
    max_servers: int = Field(default=200, ge=1, le=100_000)


class SparkSettings(_Frozen):
    """The Spark session of the job (ignored when spark-submit already made one)."""

    master: str | None = None
    app_name: str = "gtid-audit"
    conf: dict[str, str] = Field(default_factory=dict)
    #: Spark's own log level for a session the job creates (spark-submit's settings win).
    log_level: Literal["ALL", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"] = "ERROR"

    @field_validator("conf", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in value.items()}
        return value


_DEFAULT_CONNECT_TIMEOUT = 5.0
_DEFAULT_READ_TIMEOUT = 10.0


# --- the audit section --------------------------------------------------------------------------

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class AlertmanagerSettings(_Frozen):
    """``audit.alertmanager``: where and how to post the feed."""

    url: str
    timeout_s: float = Field(default=10.0, gt=0)
    attempts: int = Field(default=4, ge=1, le=20)
    ttl_hours: float = Field(default=48.0, gt=0,
                             description="endsAt of a firing alert: must exceed the time between runs")
    generator_url: str | None = None

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        parsed = urllib.parse.urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"alertmanager url must be http(s)://host[:port][/prefix], got {value!r}")
        return value.rstrip("/")


class SilenceError(ValueError):
    """Raised when the ``audit.silences`` configuration is invalid; the message names the entry
    (by position) and quotes the bad value."""


class Silence(_Frozen):
    """One configured silence. ``expires`` is inclusive: the silence applies on that date."""

    id: str | None = Field(default=None, description="stable name; derived from the selectors when omitted")
    check: str | None = None
    cluster: str | None = None
    server: str | None = None
    gtid_uuids: tuple[str, ...] = ()
    expires: dt.date
    reason: str = Field(min_length=1)

    @field_validator("gtid_uuids", mode="before")
    @classmethod
    def _uuids(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"gtid_uuids must be a list of server_uuid strings, got {value!r}")
        out = []
        for item in value:
            text = str(item).strip().lower()
            if not _UUID_RE.match(text):
                raise ValueError(f"not a server_uuid: {item!r}")
            out.append(text)
        return tuple(sorted(set(out)))

    @model_validator(mode="after")
    def _selects_something(self) -> "Silence":
        if not (self.check or self.cluster or self.server or self.gtid_uuids):
            raise ValueError("a silence must set at least one of check, cluster, server, gtid_uuids")
        if self.id is None:
            basis = "|".join([self.check or "", self.cluster or "", self.server or "",
                              ",".join(self.gtid_uuids), self.expires.isoformat()])
            object.__setattr__(self, "id", "silence-" + hashlib.sha1(basis.encode()).hexdigest()[:10])
        return self

    def is_active(self, on: dt.date) -> bool:
        """True while ``on`` is not after ``expires``."""
        return on <= self.expires


def parse_silences(raw: object) -> tuple[Silence, ...]:
    """Validate the raw ``audit.silences`` list (from YAML) into frozen ``Silence`` values."""
    if raw is None:
        return ()
    if not isinstance(raw, (list, tuple)):
        raise SilenceError(f"audit.silences must be a list, got {raw!r}")
    out = []
    for index, item in enumerate(raw):
        if isinstance(item, Silence):
            out.append(item)
            continue
        try:
            out.append(Silence.model_validate(item))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(entry)'}: {e['msg']}"
                                 for e in exc.errors())
            raise SilenceError(f"audit.silences[{index}] {item!r} is invalid: {problems}") from None
    ids = [s.id for s in out]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SilenceError(f"audit.silences: duplicate silence id(s) {duplicates!r}")
    return tuple(out)



FailOn = Literal["critical", "warning", "never"]


class AuditSettings(_Frozen):
    """The ``audit:`` section: exit threshold, alert threshold, silences, Alertmanager."""

    fail_on: FailOn = "critical"
    alert_min_severity: Literal["info", "warning", "critical"] = "warning"
    silences: tuple[Silence, ...] = ()
    alertmanager: AlertmanagerSettings | None = None

    @field_validator("silences", mode="before")
    @classmethod
    def _silences(cls, value: object) -> object:
        return parse_silences(value)

    @model_validator(mode="after")
    def _known_checks(self) -> "AuditSettings":
        """A silence naming a check id that does not exist is an error, not a silence that
        never matches."""
        from gtid_core.registry import REGISTRY

        for i, silence in enumerate(self.silences):
            if silence.check is not None and silence.check not in REGISTRY:
                raise ValueError(f"audit.silences[{i}].check: unknown check id {silence.check!r} "
                                 f"(gtid-audit explain lists them: {', '.join(sorted(REGISTRY))})")
        return self


#: Days each per-run table keeps (partitions with ``run_date`` older than this many days before
#: the maintenance date are deleted); ``None`` keeps a table forever. The reasons are in
#: docs/deployment.md, "Table maintenance".
DEFAULT_RETENTION_DAYS: dict[str, int | None] = {
    "binary_logs": 30, "relay_log_tail": 14,        # bulk detail the checks read for one night only
    "servers": 400, "channels": 400, "collection_errors": 400, "failover_readiness": 400,
    "group_replication": 400, "group_members": 400,
    # the report's inputs: one row per server and per channel each night, like servers and
    # channels (the report reads the run and the one before it)
    "report_servers": 400, "report_pairs": 400, "report_clusters": 400, "report_groups": 400,
    "findings": None, "alerts": None, "run_summary": None, "runs": None,  # history: kept
}

#: Columns OPTIMIZE Z-orders each table by: what docs/dashboards.md and the audit filter on
#: inside a ``run_date`` partition (a partition column cannot be Z-ordered).
DEFAULT_ZORDER: dict[str, tuple[str, ...]] = {
    "findings": ("check_id", "cluster", "server"),
    "alerts": ("check_id", "cluster", "server"),
    "servers": ("cluster", "server"), "channels": ("cluster", "server"),
    "group_replication": ("cluster", "server"), "group_members": ("cluster", "server"),
    "binary_logs": ("server",), "relay_log_tail": ("server", "channel_name"),
    "collection_errors": ("server",), "failover_readiness": ("cluster", "source"),
}


class MaintenanceSettings(_Frozen):
    """The ``maintenance:`` section: retention per table, compaction, VACUUM, table properties
    (``gtid-audit maintain``, and the last step of ``run`` when ``after_run``)."""

    after_run: bool = False   # opt-in: see docs/deployment.md, "Table maintenance"
    retention_days: dict[str, int | None] = Field(default_factory=lambda: dict(DEFAULT_RETENTION_DAYS))
    retention_every_days: int = Field(default=7, ge=1, le=366)   # a table's old partitions go on its day of every N
    optimize: bool = True
    optimize_days: int = Field(default=3, ge=1, le=3660)   # partitions of the last N days are compacted
    zorder: dict[str, tuple[str, ...]] = Field(default_factory=lambda: dict(DEFAULT_ZORDER))
    vacuum: bool = True
    vacuum_every_days: int = Field(default=7, ge=1, le=366)   # a table is vacuumed on its day of every N
    deleted_file_retention_hours: int = Field(default=168, ge=0)   # delta.deletedFileRetentionDuration
    log_retention_days: int = Field(default=30, ge=1)             # delta.logRetentionDuration
    checkpoint_interval: int = Field(default=10, ge=1, le=1000)     # delta.checkpointInterval
    staging_max_age_hours: int = Field(default=48, ge=1)   # a killed collection's staging is removed after
    concurrent_tables: int = Field(default=4, ge=1, le=32)   # tables maintained at the same time

    @field_validator("retention_days", mode="before")
    @classmethod
    def _merge_retention(cls, value: object) -> object:
        """A table the file does not name keeps its default; ``null`` or ``keep`` keeps it forever."""
        if isinstance(value, Mapping):
            merged: dict[str, Any] = dict(DEFAULT_RETENTION_DAYS)
            for k, v in value.items():
                merged[str(k)] = None if v in (None, "keep") else v
            return merged
        return value

    @field_validator("zorder", mode="before")
    @classmethod
    def _merge_zorder(cls, value: object) -> object:
        if isinstance(value, Mapping):
            return {**DEFAULT_ZORDER, **{str(k): tuple(v or ()) for k, v in value.items()}}
        return value

    @model_validator(mode="after")
    def _positive(self) -> "MaintenanceSettings":
        for table, days in self.retention_days.items():
            if days is not None and days < 1:
                raise ValueError(f"maintenance.retention_days.{table}: {days!r} must be >= 1 (or keep)")
        return self


def load_audit_settings(raw: Mapping[str, Any] | AuditSettings | None, source: str = "<config>") -> AuditSettings:
    """Validate a raw ``audit`` mapping (an :class:`AuditSettings` is returned as is); errors
    are ConfigError naming the file and the key."""
    if isinstance(raw, AuditSettings):
        return raw
    try:
        return AuditSettings.model_validate(dict(raw or {}))
    except ValidationError as exc:
        problems = "; ".join(f"audit.{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}"
                             + (f" (value {e.get('input')!r})" if e['loc'] else "")
                             for e in exc.errors())
        raise ConfigError(f"{source}: invalid audit section: {problems}") from None
    except ValueError as exc:  # SilenceError from the silences validator
        raise ConfigError(f"{source}: {exc}") from None


class GtidAuditConfig(_Frozen):
    """The whole file. ``source_path`` is set by :func:`load_config`."""

    warehouse: str = Field(min_length=1)
    storage_options: dict[str, str] = Field(default_factory=dict)
    defaults: ConnectionSettings = ConnectionSettings()
    servers: tuple[ServerConfig, ...] = ()
    collection: CollectionSettings = CollectionSettings()
    discovery: DiscoverySettings = DiscoverySettings()
    spark: SparkSettings = SparkSettings()
    audit: AuditSettings = AuditSettings()
    maintenance: MaintenanceSettings = MaintenanceSettings()
    source_path: str | None = None

    @field_validator("audit", mode="before")
    @classmethod
    def _audit(cls, value: object) -> object:
        return {} if value is None else value

    @model_validator(mode="after")
    def _inventory(self) -> "GtidAuditConfig":
        if not self.servers:
            raise ValueError("servers: list at least one server (discovery starts from them)")
        seen: dict[str, int] = {}
        addresses: dict[tuple[str, int], str] = {}
        for i, s in enumerate(self.servers):
            if s.name in seen:
                raise ValueError(f"servers[{i}].name: duplicate server name {s.name!r} (also servers[{seen[s.name]}])")
            seen[s.name] = i
            for addr in ((s.host.lower(), s.port),) + tuple(parse_host_port(a) for a in s.aliases):
                other = addresses.get(addr)
                if other is not None and other != s.name:
                    raise ValueError(f"servers[{i}]: address {addr[0]}:{addr[1]} also belongs to {other!r}")
                addresses[addr] = s.name
            if not (s.user or self.defaults.user):
                raise ValueError(f"servers[{i}] ({s.name!r}): no user (set defaults.user or user)")
        for seed in self.discovery.seeds:
            if seed not in seen:
                raise ValueError(f"discovery.seeds: {seed!r} is not a configured server name")
        return self

    def base_dir(self) -> Path:
        return Path(self.source_path).parent if self.source_path else Path.cwd()

    def resolved_warehouse(self) -> str:
        """The warehouse root: URIs as written, relative paths against the file's directory."""
        if "://" in self.warehouse:
            return self.warehouse
        p = Path(self.warehouse).expanduser()
        return str(p if p.is_absolute() else (self.base_dir() / p).resolve())

    def _path(self, value: str | None) -> str | None:
        if value is None:
            return None
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else (self.base_dir() / p).resolve())

    def connection_for(self, override: ConnectionSettings | None) -> dict[str, Any]:
        """Defaults merged with ``override``; exactly one secret reference kind survives."""
        d, o = self.defaults, override or ConnectionSettings()
        has_own_secret = any(getattr(o, k) for k in ("password_env", "password_file", "option_file"))
        src = o if has_own_secret else d
        tls = o.tls if o.tls is not None else d.tls
        if tls is not None:
            tls = TlsOptions(enabled=tls.enabled, ca_file=self._path(tls.ca_file),
                             cert_file=self._path(tls.cert_file), key_file=self._path(tls.key_file),
                             verify_cert=tls.verify_cert, verify_identity=tls.verify_identity)
        return {
            "user": o.user or d.user,
            "password_env": src.password_env,
            "password_file": self._path(src.password_file),
            "option_file": self._path(src.option_file),
            "connect_timeout_s": o.connect_timeout_s or d.connect_timeout_s or _DEFAULT_CONNECT_TIMEOUT,
            "read_timeout_s": o.read_timeout_s or d.read_timeout_s or _DEFAULT_READ_TIMEOUT,
            "tls": tls,
        }

    def inventory(self) -> tuple[ServerSpec, ...]:
        """Every configured server with defaults applied and paths resolved."""
        out = []
        for s in self.servers:
            out.append(ServerSpec(
                name=s.name, host=s.host, port=s.port, cluster=s.cluster,
                aliases=tuple(parse_host_port(a) for a in s.aliases),
                **self.connection_for(s),
            ))
        return tuple(out)

    def discovered_spec(self, name: str, host: str, port: int, like: ServerSpec) -> ServerSpec:
        """A server found by discovery: the connection settings of the server that led to it."""
        return like.discovered_as(name, host, port)


def exposed_secret_files(specs: "Iterable[ServerSpec]") -> list[str]:
    """One warning per ``password_file``, ``option_file`` or ``tls.key_file`` that users other
    than its owner may read or write here (group/other bits of its mode), as MySQL's own clients
    warn about option files (they even ignore a world-writable one). Files that do not exist here
    are left to ``config check``'s resolution line and to the executors."""
    out: list[str] = []
    seen: set[str] = set()
    for spec in specs:
        for key, path in (("password_file", spec.password_file), ("option_file", spec.option_file),
                          ("tls.key_file", spec.tls.key_file if spec.tls else None)):
            if not path or path in seen:
                continue
            seen.add(path)
            try:
                mode = os.stat(path).st_mode & 0o777
            except OSError:
                continue
            if mode & 0o066:
                who = "anyone" if mode & 0o006 else "its group"
                out.append(f"{key} {path!r} can be read or written by {who} (mode {mode:04o}): "
                           f"chmod 600 it (or 400) so that only the job's user can")
    return out


def _format_errors(path: str, exc: ValidationError) -> str:
    lines = [f"{path}: invalid configuration ({exc.error_count()} error(s))"]
    for err in exc.errors():
        loc = ""
        for part in err["loc"]:
            loc += f"[{part}]" if isinstance(part, int) else (("." if loc else "") + str(part))
        secret = any(isinstance(p, str) and _SECRET_KEY.search(p) for p in err["loc"])
        raw = err.get("input")
        # a whole mapping (a model-level rule) is not "the bad value": the message names it
        value = "<hidden>" if secret else (None if isinstance(raw, dict) else repr(raw))
        msg = err["msg"].removeprefix("Value error, ")
        shown = "" if err["type"] == "missing" or value is None else f" (value {value})"
        # a rule across several keys names them in its message; a field error gets its path
        lines.append(f"  {loc}: {msg}{shown}" if loc else f"  {msg}{shown}")
    return "\n".join(lines)


def parse_config(data: Any, source: str = "<config>") -> GtidAuditConfig:
    """Validate an already-parsed mapping (``source`` names it in errors)."""
    if data is None:
        raise ConfigError(f"{source}: the configuration is empty (it needs at least 'warehouse' and 'servers')")
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping, got {type(data).__name__}")
    data = dict(data)
    data.pop("source_path", None)
    try:
        return GtidAuditConfig.model_validate({**data, "source_path": source if source != "<config>" else None})
    except ValidationError as exc:
        raise ConfigError(_format_errors(source, exc)) from None


def load_config(path: str | os.PathLike) -> GtidAuditConfig:
    """Read, parse and validate the YAML file at ``path``."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{str(p)!r}: cannot read configuration: {exc.strerror}") from None
    try:
        # libyaml's C parser when PyYAML has it: a 10,000-server inventory parses in a tenth of
        # the time and with two thirds of the memory of the pure-Python one (same documents)
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{str(p)!r}: invalid YAML{at}: {problem}") from None
    return parse_config(data, str(p.resolve()))
