"""What a source will do when a replica (re)connects with AUTO_POSITION, recomputed offline.

Mirrors the source's dump thread (``com_binlog_dump_gtid`` -> ``Binlog_sender::check_start_file``
-> ``MYSQL_BIN_LOG::find_first_log_not_in_gtid_set``), version by version:

1. ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER (error 1885): on 5.6 when the replica's whole set is not a
   subset of the source's gtid_executed; from 5.7 on only the GTIDs of the source's own server_uuid
   are compared -- with 8.3+ tags, every tag of that uuid, not only the untagged GTIDs. Observed on
   a real 9.7.4 source: a replica holding ``source_uuid:tag:N`` that the source never had (a tag the
   source never used, or a higher number of a tag it uses) is refused exactly like an untagged
   extra GTID ("Replica has more GTIDs than the source has, using the source's SERVER_UUID"), while
   extra GTIDs of any other uuid, tagged or not, are accepted (tests/core/test_checks_live.py).
2. ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (error 1789) when gtid_purged is not a subset of the
   replica's set -- only from 5.6.22 on. Before that the check did not exist.
3. The scan of binary logs from newest to oldest by ``Previous_gtids``: streaming starts at the
   newest file whose Previous_gtids is a subset of the replica's set; if none is, the source
   answers ER_MASTER_HAS_PURGED_REQUIRED_GTIDS. A source older than 5.6.22 restored with
   ``SET GLOBAL gtid_purged`` has a first binary log whose Previous_gtids is empty (a subset of
   anything): it streams from there and the replica silently never gets the purged GTIDs it lacks.

The replica side: it announces ``Retrieved_Gtid_Set ∪ gtid_executed``; on 5.6.15 .. 5.7.5 it leaves
the last retrieved GTID out when that GTID is not in gtid_executed (the workaround Bug #72392
broke), see :func:`announced_gtid_set`.

Both errors reach the replica as fatal error 1236 (Last_IO_Errno 1236, or 13114 on 8.0+).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from gtid_core.gtid_set import GtidSet
from gtid_core.snapshots import Gtid, ServerSnapshot
from gtid_core.versions import MySQLVersion

__all__ = [
    "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS",
    "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER",
    "ReconnectKind",
    "ReconnectOutcome",
    "announced_gtid_set",
    "simulate_auto_position_reconnect",
]

ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER = "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER"
ER_MASTER_HAS_PURGED_REQUIRED_GTIDS = "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS"

ERROR_CODES = {ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER: 1885, ER_MASTER_HAS_PURGED_REQUIRED_GTIDS: 1789}


class ReconnectKind(str, enum.Enum):
    """The four outcomes of an AUTO_POSITION connect, plus "cannot tell"."""

    REPLICA_HAS_MORE_GTIDS = "replica_has_more_gtids"      # refused, ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER
    SOURCE_PURGED_REQUIRED = "source_purged_required"      # refused, ER_MASTER_HAS_PURGED_REQUIRED_GTIDS
    STREAMS = "streams"                                    # streams from start_file
    STREAMS_SKIPPING_PURGED = "streams_skipping_purged"    # pre-5.6.22: streams, silently skips `missing`
    UNDETERMINED = "undetermined"                          # an input needed is unknown

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ReconnectOutcome:
    """The result of :func:`simulate_auto_position_reconnect`.

    ``offending``: replica GTIDs the source's rule finds missing on the source (refusal 1).
    ``missing``: GTIDs the source purged that the replica lacks (refusal 2, or silently skipped).
    ``start_file``: the binary log streaming starts from (None when refused, undetermined, or the
    binary log list was not read). ``rule``: the rule applied, in words. ``version_assumed``:
    the source's version was unknown and the newest rules were assumed.
    """

    kind: ReconnectKind
    error: str | None = None
    offending: GtidSet | None = None
    missing: GtidSet | None = None
    start_file: str | None = None
    rule: str = ""
    reason: str | None = None
    version_assumed: bool = False

    @property
    def refused(self) -> bool:
        """True when the source would refuse the connection."""
        return self.kind in (ReconnectKind.REPLICA_HAS_MORE_GTIDS, ReconnectKind.SOURCE_PURGED_REQUIRED)


def announced_gtid_set(
    gtid_executed: GtidSet,
    retrieved_gtid_set: GtidSet,
    *,
    replica_version: MySQLVersion | None,
    last_retrieved_gtid: Gtid | None = None,
) -> GtidSet:
    """The set a replica sends with COM_BINLOG_DUMP_GTID: Retrieved_Gtid_Set ∪ gtid_executed.

    On 5.6.15 .. 5.7.5 (``replica_version.leaves_out_last_retrieved_gtid``) the last retrieved GTID
    is left out when it is not in gtid_executed, so that a possibly partial last transaction is
    fetched again; after a RESET MASTER on the replica this re-fetches and re-applies a complete
    transaction (Bug #72392). ``last_retrieved_gtid`` is that GTID (the last Gtid event of the
    relay log); when it is None the workaround cannot be modelled and the plain union is returned.
    """
    announced = retrieved_gtid_set | gtid_executed
    if (
        replica_version is not None
        and replica_version.leaves_out_last_retrieved_gtid
        and last_retrieved_gtid is not None
        and last_retrieved_gtid in retrieved_gtid_set
        and last_retrieved_gtid not in gtid_executed
    ):
        announced = announced - last_retrieved_gtid.as_set()
    return announced


def simulate_auto_position_reconnect(source: ServerSnapshot, replica_set: GtidSet) -> ReconnectOutcome:
    """What ``source`` answers to a replica announcing ``replica_set`` (see the module docstring).

    Needs the source's gtid_executed (and server_uuid for 5.7+ rules); gtid_purged and the binary
    log list are used when known. Unknown inputs give ``UNDETERMINED`` rather than a guess.
    The source's ``gtid_owned`` (transactions in flight when it was read) is not modelled.
    """
    version = source.version
    version_assumed = version is None
    if version is None:
        version = MySQLVersion(99, 0, 0, "(assumed)")
    executed = source.gtid_executed
    if executed is None:
        return ReconnectOutcome(ReconnectKind.UNDETERMINED, reason="source gtid_executed unknown",
                                version_assumed=version_assumed)

    # 1. ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER
    if version.slave_has_more_checks_own_uuid_only:
        if source.server_uuid is None:
            return ReconnectOutcome(ReconnectKind.UNDETERMINED, reason="source server_uuid unknown",
                                    version_assumed=version_assumed)
        rule = (f"replica's GTIDs of the source's own server_uuid {source.server_uuid} (every tag) must be a "
                f"subset of the source's gtid_executed (MySQL {version.major}.{version.minor} rule)")
        offending = replica_set.for_uuid(source.server_uuid) - executed
    else:
        rule = "the replica's whole set must be a subset of the source's gtid_executed (MySQL 5.6 rule)"
        offending = replica_set - executed
    if offending:
        return ReconnectOutcome(ReconnectKind.REPLICA_HAS_MORE_GTIDS, error=ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER,
                                offending=offending, rule=rule, version_assumed=version_assumed)

    purged = source.gtid_purged
    # 2. ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (5.6.22+)
    if version.checks_purged_on_connect:
        if purged is None:
            return ReconnectOutcome(ReconnectKind.UNDETERMINED, reason="source gtid_purged unknown", rule=rule,
                                    version_assumed=version_assumed)
        missing = purged - replica_set
        if missing:
            return ReconnectOutcome(
                ReconnectKind.SOURCE_PURGED_REQUIRED, error=ER_MASTER_HAS_PURGED_REQUIRED_GTIDS, missing=missing,
                rule="the source's gtid_purged must be a subset of the replica's set (checked since 5.6.22)",
                version_assumed=version_assumed)

    # 3. find_first_log_not_in_gtid_set: newest to oldest by Previous_gtids
    logs = source.binary_logs
    if logs is None:
        return _without_scan(purged, replica_set, version, version_assumed,
                             "source binary log list unknown")
    if not logs:
        return ReconnectOutcome(ReconnectKind.UNDETERMINED, reason="source has no binary logs (log_bin off?)",
                                version_assumed=version_assumed)
    for log in reversed(logs):
        if log.previous_gtids is None:
            return _without_scan(purged, replica_set, version, version_assumed,
                                 f"Previous_gtids of {log.log_name} unknown")
        if log.previous_gtids.is_subset(replica_set):
            skipped = (purged - replica_set) if purged is not None else None
            if skipped:
                return ReconnectOutcome(
                    ReconnectKind.STREAMS_SKIPPING_PURGED, missing=skipped, start_file=log.log_name,
                    rule=(f"MySQL {version} does not check gtid_purged on connect (before 5.6.22): streaming "
                          f"starts at {log.log_name}, whose Previous_gtids is a subset of the replica's set"),
                    version_assumed=version_assumed)
            return ReconnectOutcome(ReconnectKind.STREAMS, start_file=log.log_name,
                                    rule=f"streams from {log.log_name}", version_assumed=version_assumed)
    missing = logs[0].previous_gtids - replica_set if logs[0].previous_gtids is not None else None
    return ReconnectOutcome(
        ReconnectKind.SOURCE_PURGED_REQUIRED, error=ER_MASTER_HAS_PURGED_REQUIRED_GTIDS, missing=missing,
        rule="no binary log's Previous_gtids is a subset of the replica's set", version_assumed=version_assumed)


def _without_scan(purged: GtidSet | None, replica_set: GtidSet, version: MySQLVersion, version_assumed: bool,
                  reason: str) -> ReconnectOutcome:
    """Checks 1 and 2 passed but the binary logs are unknown. For a 5.6.22+ source that is a
    stream (start file unknown); for an older one, lacking purged GTIDs is already enough to
    know they will never arrive (they are in no binary log)."""
    if version.checks_purged_on_connect:
        return ReconnectOutcome(ReconnectKind.STREAMS, rule=f"streams ({reason})", reason=reason,
                                version_assumed=version_assumed)
    if purged is None:
        return ReconnectOutcome(ReconnectKind.UNDETERMINED, reason=f"source gtid_purged unknown; {reason}",
                                version_assumed=version_assumed)
    skipped = purged - replica_set
    if skipped:
        return ReconnectOutcome(
            ReconnectKind.STREAMS_SKIPPING_PURGED, missing=skipped, reason=reason,
            rule=(f"MySQL {version} does not check gtid_purged on connect (before 5.6.22); purged GTIDs are "
                  "in no binary log, so the replica never receives the ones it lacks"),
            version_assumed=version_assumed)
    return ReconnectOutcome(ReconnectKind.STREAMS, rule=f"streams ({reason})", reason=reason,
                            version_assumed=version_assumed)
