"""Server checks: one server's settings, and how it changed since the previous night.

check_server_config reads the server's variables (gtid_mode_off, config_enforce_gtid_consistency_off,
config_sync_binlog, config_innodb_flush_log_at_trx_commit); check_replica_writable reads them with
the server's channels and the channels around it (config_replica_writable). The night-to-night
checks compare the snapshot with the previous run's of the same server_uuid:
gtid_executed_regressed, gtid_purged_jumped, source_uuid_went_back.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from gtid_core.checks.catalogue import _finding, _short, _text
from gtid_core.findings import Finding
from gtid_core.gtid_set import GtidSet
from gtid_core.snapshots import ChannelSnapshot, ServerSnapshot

__all__ = [
    "check_gtid_executed_regressed",
    "check_gtid_purged_jumped",
    "check_replica_writable",
    "check_server_config",
    "ServerReplication",
    "replicating",
    "writes_come_back",
    "check_source_uuid_went_back",
]


def check_server_config(server: ServerSnapshot) -> list[Finding]:
    """gtid_mode_off, config_enforce_gtid_consistency_off, config_sync_binlog,
    config_innodb_flush_log_at_trx_commit: settings that make silent loss or divergence possible.
    Read from the server's variables; unknown values (None) produce nothing."""
    name = server.label
    out: list[Finding] = []
    if server.gtid_mode is not None and server.gtid_mode != "ON":
        out.append(_finding("gtid_mode_off", name, f"{name}: gtid_mode = {server.gtid_mode}",
                            f"{name} runs with gtid_mode = {server.gtid_mode}: transactions without GTIDs escape "
                            "every GTID check, and AUTO_POSITION cannot be used.",
                            evidence={"gtid_mode": server.gtid_mode}))
    if server.enforce_gtid_consistency is not None and server.enforce_gtid_consistency != "ON":
        out.append(_finding("config_enforce_gtid_consistency_off", name,
                            f"{name}: enforce_gtid_consistency = {server.enforce_gtid_consistency}",
                            f"{name} runs with enforce_gtid_consistency = {server.enforce_gtid_consistency}: "
                            "statements that cannot be logged safely with GTIDs are allowed.",
                            evidence={"enforce_gtid_consistency": server.enforce_gtid_consistency}))
    if server.log_bin is not False and server.sync_binlog is not None and server.sync_binlog != 1:
        out.append(_finding("config_sync_binlog", name, f"{name}: sync_binlog = {server.sync_binlog}",
                            f"{name} runs with sync_binlog = {server.sync_binlog}: after an OS crash or power "
                            "loss its binary log can lose transactions that replicas already received; they will "
                            "then be refused with ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER.",
                            evidence={"sync_binlog": server.sync_binlog}))
    if server.innodb_flush_log_at_trx_commit is not None and server.innodb_flush_log_at_trx_commit != 1:
        out.append(_finding("config_innodb_flush_log_at_trx_commit", name,
                            f"{name}: innodb_flush_log_at_trx_commit = {server.innodb_flush_log_at_trx_commit}",
                            f"{name} runs with innodb_flush_log_at_trx_commit = "
                            f"{server.innodb_flush_log_at_trx_commit}: a crash can lose committed transactions "
                            "whose GTIDs are already in binary logs or on replicas.",
                            evidence={"innodb_flush_log_at_trx_commit": server.innodb_flush_log_at_trx_commit}))
    return out


@dataclass(frozen=True)
class ServerReplication:
    """What a server check needs to know of the replication around one server.

    ``channels``: the server's own channels (every one it reported). ``sources_of``: for the
    servers around it that could close a ring with it, the inventory names each one's
    replicating channels (:func:`replicating`) read from (empty when not known). ``group_member``:
    the server is ONLINE or RECOVERING in a Group Replication group, which sets and lifts its
    super_read_only. ``sources_not_read``: the inventory servers that replicating channels of the
    server's replication group read from but whose own channels were not read this run
    (unreachable, refused, a partial read): what they replicate from is not known, so neither is
    whether the server's writes come back to it."""

    channels: Sequence[ChannelSnapshot] = ()
    sources_of: Mapping[str, Sequence[str]] = field(default_factory=dict)
    group_member: bool = False
    sources_not_read: Sequence[str] = ()


def writes_come_back(server: str, sources_of: Mapping[str, Iterable[str]]) -> bool:
    """True when ``server``'s own transactions reach it again through replication: following
    channels from replica to source (``sources_of``), one of its sources leads back to it. That is
    a ring (two co-masters replicating from each other, or longer), where the server that takes
    the writes is a replica and writable by design: its transactions come back to it as its own
    and are skipped, never errant."""
    seen: set[str] = set()
    stack = list(sources_of.get(server, ()))
    while stack:
        node = stack.pop()
        if node == server:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(sources_of.get(node, ()))
    return False


#: A channel of Group Replication's own (applier, recovery): the group's machinery, not a replica's.
_GROUP_CHANNELS = ("group_replication_applier", "group_replication_recovery")


def replicating(io_running: str | None, sql_running: str | None) -> bool:
    """A channel that replicates today: its receiver running or connecting, or its applier
    running (``Replica_IO_Running``, ``Replica_SQL_Running``, any case). Both threads stopped,
    with an error or without, is not: a promoted server's channel to its old source stays behind
    stopped, often with the receiver's last connection error (STOP REPLICA keeps Last_IO_Errno),
    and so does a replica parked on purpose."""
    return (io_running or "").upper() in ("YES", "CONNECTING") or (sql_running or "").upper() == "YES"


def check_replica_writable(server: ServerSnapshot, replication: ServerReplication) -> list[Finding]:
    """config_replica_writable: a replica with read_only = OFF.

    Any account with write privileges can commit on it, and every such commit gets a GTID of the
    replica's own server_uuid that its source never has: an errant transaction. It is found only
    after the fact (errant_transactions), and by then it makes the source refuse the replica
    after a repointing (ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER) or is sent to every other replica
    when this one is promoted. read_only = ON refuses such writes from accounts without
    CONNECTION_ADMIN or SUPER, super_read_only = ON from every account; the replication applier
    is exempt from both (``check_readonly()`` in sql/auth/sql_authorization.cc returns early for
    ``thd->slave_thread``), so setting them stops nothing that replicates. Proven on 9.7.4 (tests/sandbox/test_replica_writable.py): a write by an account
    without those privileges on a read_only = OFF replica commits with the replica's own
    server_uuid; with read_only = ON it fails with ER_OPTION_PREVENTS_STATEMENT (1290) and the
    channel keeps applying.

    Sound: read_only and the channels are the server's own answers of one read. Not reported:
    an ONLINE or RECOVERING Group Replication member (the group sets super_read_only on its
    secondaries and lifts it on its primary); a server whose channels all have both threads
    stopped (:func:`replicating`: a promoted server's channel left behind, or a replica parked on
    purpose); a server whose writes come back to it through replicating channels
    (:func:`writes_come_back`: the writer of a ring; a stopped channel closes no ring, so a former
    primary repointed to the server promoted in its place, whose old channel is left stopped, is
    reported); a server in whose replication group a replicating channel reads from an inventory
    server whose channels were not read this run (``sources_not_read``: they could close a ring
    through it; that server's collection error is reported). Not seen: read_only = ON with
    super_read_only = OFF, where administrators and tools with SUPER or CONNECTION_ADMIN can
    still write (the usual setting before 5.7.8 and on
    many fleets: not reported, to keep this check to the plainly unsafe case); read_only not
    read; a parked replica; a group member's asynchronous channel (an InnoDB ClusterSet replica
    cluster's primary with super_read_only OFF); a writable replica on a night a source in its
    replication group is not read. Reported wrongly: the writer of a ring closed through a
    server outside the inventory, or through a Group Replication group (a member to another
    member).
    """
    if (server.read_only is not False or server.super_read_only is True or replication.group_member
            or replication.sources_not_read):
        return []
    channels = [ch for ch in replication.channels
                if ch.channel_name not in _GROUP_CHANNELS and replicating(ch.io_running, ch.sql_running)]
    name = server.label
    if not channels or writes_come_back(name, replication.sources_of):
        return []
    labels = ", ".join(ch.label for ch in sorted(channels, key=lambda c: c.channel_name))
    return [_finding(
        "config_replica_writable", name, f"{name}: read_only = OFF on a replica",
        f"{name} replicates (channel {labels}) with read_only = OFF: any account that can write commits on "
        f"it, and every such commit is an errant transaction (a GTID of {name}'s own server_uuid that its "
        "source lacks), found only after the fact, and refused by the source after a repointing or sent to "
        "every replica if this one is promoted.",
        evidence={"read_only": False, "super_read_only": server.super_read_only,
                  "channels": [ch.channel_name for ch in channels]})]


def _same_server(server: ServerSnapshot, previous: ServerSnapshot) -> bool:
    return (server.server_uuid is not None and previous.server_uuid is not None
            and server.server_uuid == previous.server_uuid)


def check_gtid_executed_regressed(server: ServerSnapshot, previous: ServerSnapshot) -> list[Finding]:
    """gtid_executed_regressed: GTIDs in this server's gtid_executed at the previous run are gone.

    gtid_executed only grows on a running server; only RESET MASTER / RESET BINARY LOGS AND GTIDS,
    a restore from an older backup or a lost binary log (with the mysql.gtid_executed table behind)
    shrink it. Sound: both values are the server's own, read a run apart. Compared only when the
    server_uuid is unchanged (a new uuid is a different server). Blind spot: a RESET followed by
    SET GLOBAL gtid_purged to a superset between two runs does not regress (see gtid_purged_jumped).
    """
    if previous.gtid_executed is None or server.gtid_executed is None or not _same_server(server, previous):
        return []
    lost = previous.gtid_executed - server.gtid_executed
    if not lost:
        return []
    name = server.label
    return [_finding(
        "gtid_executed_regressed", name, f"{name}: gtid_executed lost {lost.count()} GTID(s)",
        f"{name}'s gtid_executed no longer contains {lost.count()} GTID(s) it had at the previous run "
        f"({_short(lost)}): its GTID history was reset or restored from an older point. Its replicas now look "
        "as if they had errant transactions, and new transactions may reuse GTIDs replicas already have.",
        gtid_set=lost,
        evidence={"previous_gtid_executed": _text(previous.gtid_executed),
                  "gtid_executed": _text(server.gtid_executed)})]


def _binlog_seq(name: str) -> int | None:
    match = re.search(r"\.(\d+)\Z", name)
    return int(match.group(1)) if match else None


def check_gtid_purged_jumped(server: ServerSnapshot, previous: ServerSnapshot) -> list[Finding]:
    """gtid_purged_jumped: gtid_purged gained GTIDs this server had not executed at the previous
    run, and purging binary logs cannot explain it.

    Normal purging removes the oldest binary logs; a GTID executed after the previous run can only
    become purged if every binary log of the previous run was purged too. So the jump is reported
    when ``gtid_purged - previous.gtid_executed`` is non-empty AND either the previous run's newest
    binary log still exists, the binary-log numbering went back (RESET), or the previous
    gtid_executed is not entirely purged. That is the signature of SET GLOBAL gtid_purged (after
    a RESET or a restore).

    Which GTIDs can be judged depends on where the server writes what it applies:

    * ``log_bin`` ON and ``log_replica_updates`` ON: every GTID it executes goes to its binary
      log first, so the whole jump is judged.
    * ``log_bin`` ON and ``log_replica_updates`` OFF or unknown: the transactions it *applies* as a
      replica are never written to its binary log and go straight into gtid_purged (observed on
      9.7.4: gtid_purged equals gtid_executed, and Previous_gtids stay empty even after FLUSH
      BINARY LOGS). Only the GTIDs of its own server_uuid (its own writes, which are logged) can
      still be judged; every other uuid's growth is ordinary replication.
    * ``log_bin`` OFF or unknown: nothing is logged, gtid_purged follows gtid_executed; nothing is
      judged.

    Blind spots: when binary logs are unknown and the whole previous history was purged, a very
    short retention looks the same and nothing is reported; on a replica without
    log_replica_updates, a SET gtid_purged of other servers' GTIDs is invisible; a replica without
    log_replica_updates whose channel assigns its OWN uuid to anonymous transactions
    (ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS = LOCAL, read per channel, not here) applies unlogged
    transactions under its own uuid -- a false positive this server check cannot rule out.
    """
    if (previous.gtid_executed is None or server.gtid_purged is None or previous.gtid_purged is None
            or not _same_server(server, previous) or server.log_bin is not True):
        return []
    jumped = (server.gtid_purged - previous.gtid_purged) - previous.gtid_executed
    scope = "every uuid"
    if server.log_replica_updates is not True:
        jumped = jumped.for_uuid(server.server_uuid)
        scope = f"own server_uuid {server.server_uuid} only (log_replica_updates is not ON)"
    if not jumped:
        return []
    own_previous = (previous.gtid_executed if server.log_replica_updates is True
                    else previous.gtid_executed.for_uuid(server.server_uuid))
    explained_by_purge = own_previous.is_subset(server.gtid_purged)
    reason = "the previous run's gtid_executed is not all purged"
    if explained_by_purge and previous.binary_logs and server.binary_logs:
        prev_newest = previous.binary_logs[-1].log_name
        names = {b.log_name for b in server.binary_logs}
        prev_seq = _binlog_seq(prev_newest)
        cur_seq = _binlog_seq(server.binary_logs[-1].log_name)
        if prev_newest in names:
            explained_by_purge, reason = False, f"binary log {prev_newest} of the previous run still exists"
        elif prev_seq is not None and cur_seq is not None and cur_seq < prev_seq:
            explained_by_purge, reason = False, "the binary-log numbering went back (RESET)"
    if explained_by_purge:
        return []
    name = server.label
    return [_finding(
        "gtid_purged_jumped", name, f"{name}: gtid_purged jumped by {jumped.count()} GTID(s)",
        f"{name}'s gtid_purged now includes {jumped.count()} GTID(s) that it had not executed at the previous run "
        f"({_short(jumped)}), and purging binary logs cannot explain it ({reason}): gtid_purged was set by hand "
        "(SET GLOBAL gtid_purged after a RESET or a restore). Replicas lacking these transactions cannot get them "
        "from this server (refused since 5.6.22, silently skipped before).",
        gtid_set=jumped,
        evidence={"previous_gtid_executed": _text(previous.gtid_executed),
                  "previous_gtid_purged": _text(previous.gtid_purged),
                  "gtid_purged": _text(server.gtid_purged),
                  "log_bin": server.log_bin, "log_replica_updates": server.log_replica_updates,
                  "judged": scope, "reason": reason})]


def check_source_uuid_went_back(server: ServerSnapshot, previous: ServerSnapshot) -> list[Finding]:
    """source_uuid_went_back: the highest gno of the server's own server_uuid -- untagged, or of
    any tag it used (8.3+) -- fell below the previous run's.

    The server numbers a new transaction after the highest gno of its own uuid in gtid_executed,
    per tag for ``SET gtid_next = 'AUTOMATIC:tag'``; if that fell back, new transactions reuse
    GTIDs that replicas (and the previous history) already have, and replicas silently skip them
    as already executed. Sound: both numbers are the server's own. Compared only with an unchanged
    server_uuid. Blind spot: a tag first used and lost between two runs.
    """
    if (previous.gtid_executed is None or server.gtid_executed is None or not _same_server(server, previous)):
        return []
    uuid = server.server_uuid
    tags = sorted({tag for u, tag, _, _ in previous.gtid_executed if u == uuid}, key=lambda t: (t is not None, t or ""))
    regressions = []
    for tag in tags:
        before = previous.gtid_executed.max_gno(uuid, tag)
        now = server.gtid_executed.max_gno(uuid, tag)
        if before is not None and (now is None or now < before):
            regressions.append((tag, before, now))
    if not regressions:
        return []
    name = server.label
    reused = GtidSet.from_intervals([(uuid, tag, (now or 0) + 1, before) for tag, before, now in regressions])
    reused = reused & previous.gtid_executed
    parts = [f"{uuid}{':' + tag if tag else ''}: {before} -> {now if now is not None else 'none'}"
             for tag, before, now in regressions]
    tag, before, now = regressions[0]
    title = (f"{name}: own GTID numbers went back from {before} to {now or 0}" if len(regressions) == 1
             else f"{name}: own GTID numbers went back for {len(regressions)} tag(s)")
    return [_finding(
        "source_uuid_went_back", name, title,
        f"{name}'s highest transaction number for its own server_uuid went back since the previous run "
        f"({'; '.join(parts)}). New transactions will get numbers that were already used ({_short(reused)}); "
        "replicas that already have those GTIDs will silently skip them.",
        gtid_set=reused,
        evidence={"server_uuid": uuid, "previous_max_gno": before, "max_gno": now,
                  "went_back": "; ".join(parts),
                  "previous_gtid_executed": _text(previous.gtid_executed),
                  "gtid_executed": _text(server.gtid_executed)})]
