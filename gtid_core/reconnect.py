"""What a source will do when a replica (re)connects with AUTO_POSITION, recomputed offline.

One simulation per pair: :func:`reconnect_outcome` computes the set the replica announces and
everything the source's dump thread decides about it, once; the checks ``replica_has_more_gtids``,
``source_purged_required_gtids``, ``silent_purged_gap`` and ``replica_near_purge_horizon`` only
read that :class:`ReconnectOutcome` (gtid_core/checks/on_reconnect.py), so they cannot drift apart.

Mirrors the source's dump thread, per release line (sources cited in gtid_core/versions.py and
docs/checks.md, "Version rules"):

1. ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER (error 1885) when the replica holds GTIDs of the source's
   own server_uuid that the source never executed (``Gtid_set::is_subset_for_sid``; on an 8.3+
   source, every tag of that uuid -- an older one is sent no tagged GTID, see below -- observed on a real 9.7.4 source, which refuses a replica holding
   ``source_uuid:tag:N`` exactly like an untagged extra GTID, while extra GTIDs of any other uuid
   are accepted, tests/core/test_checks_live.py). Only 5.6.23+ and 5.7.6+ make this check
   (``MySQLVersion.checks_replica_has_more_on_connect``); no release line ever compared the
   replica's whole set. Older sources accept the extra GTIDs silently.
2. ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (error 1789) when gtid_purged is not a subset of the
   replica's set -- only 5.6.22+ and 5.7.6+ (``checks_purged_on_connect``).
3. ``MYSQL_BIN_LOG::find_first_log_not_in_gtid_set``, on every version: binary logs newest to
   oldest by ``Previous_gtids``; streaming starts at the newest file whose Previous_gtids is a
   subset of the replica's set; if none is, the answer is ER_MASTER_HAS_PURGED_REQUIRED_GTIDS.
   This scan is what refuses a replica behind an ordinary ``PURGE BINARY LOGS`` on a source older
   than 5.6.22: the oldest remaining file's Previous_gtids holds the purged GTIDs. Only a source
   restored with ``SET GLOBAL gtid_purged`` (first binary log with an empty Previous_gtids, a
   subset of anything) streams and silently skips the purged GTIDs the replica lacks.

The server stops at the first refusal; the outcome also records what steps 2-3 alone would
answer (``purge_verdict``), so the audit reports both problems of a replica that has both.

The replica side: it announces ``Retrieved_Gtid_Set ∪ gtid_executed``; on 5.6.15 .. 5.7.5 it leaves
the last retrieved GTID out when that GTID is not in gtid_executed (the workaround Bug #72392
broke), and an 8.3+ replica leaves every tagged GTID out when its source is older than 8.3
(``request_dump``, ``MYSQL_RPL_SKIP_TAGGED_GTIDS``; cited at
``MySQLVersion.skips_tagged_gtids_towards``), see :func:`announced_gtid_set`. So step 1 never
counts a tagged GTID against a source older than 8.3: that source does not see one. A version
that is not known is handled as :func:`announced_gtid_set` and :func:`reconnect_outcome` say.

Not modelled: the source's gtid_owned (5.7.6+ compares step 1 against gtid_executed ∪ gtid_owned;
the audit does not read gtid_owned, so a GTID the source was committing while it was read can look
missing there), and a binary log without any GTID event (5.6's "Found old binary log without
GTIDs" error). Both errors reach the replica as fatal error 1236 (Last_IO_Errno 1236, or 13114 on
8.0 from 8.0.11; the 8.0 milestones recorded 1236, docs/server-tests.md).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from gtid_core.gtid_set import GtidSet
from gtid_core.snapshots import Gtid, ServerSnapshot
from gtid_core.versions import MySQLVersion

__all__ = [
    "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS",
    "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER",
    "ReconnectKind",
    "ReconnectOutcome",
    "announced_gtid_set",
    "reconnect_outcome",
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
    """What the source answers to one replica, computed once per pair.

    ``kind``: the server's answer (the first refusal in the dump thread's order).
    ``purge_verdict``: what steps 2 and 3 alone answer (SOURCE_PURGED_REQUIRED,
    STREAMS_SKIPPING_PURGED, STREAMS or UNDETERMINED), whatever step 1 says.
    ``announced``: the set the replica sends (None when not computed here).
    ``offending``: replica GTIDs of the source's own uuid the source lacks (step 1; None when the
    source's version does not make the check or an input is unknown).
    ``missing``: GTIDs the source purged that the replica lacks (refusal by step 2 or 3, or
    silently skipped). ``start_file``: the binary log streaming starts from (None when refused,
    undetermined, or the binary log list was not read). ``rule``: the rules applied, in words.
    ``version_assumed``: the source's version was unknown and the newest rules were assumed.
    """

    kind: ReconnectKind
    error: str | None = None
    offending: GtidSet | None = None
    missing: GtidSet | None = None
    start_file: str | None = None
    rule: str = ""
    reason: str | None = None
    version_assumed: bool = False
    purge_verdict: ReconnectKind = ReconnectKind.UNDETERMINED
    announced: GtidSet | None = None

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
    source_version: MySQLVersion | None = None,
) -> GtidSet:
    """The set a replica sends with COM_BINLOG_DUMP_GTID: Retrieved_Gtid_Set ∪ gtid_executed.

    On 5.6.15 .. 5.7.5 (``replica_version.leaves_out_last_retrieved_gtid``) the last retrieved GTID
    is left out when it is not in gtid_executed, so that a possibly partial last transaction is
    fetched again; after a RESET MASTER on the replica this re-fetches and re-applies a complete
    transaction (Bug #72392). ``last_retrieved_gtid`` is that GTID (the last Gtid event of the
    relay log); when it is None the workaround cannot be modelled and the plain union is returned.

    To a source older than 8.3 an 8.3+ replica sends no tagged GTID
    (``replica_version.skips_tagged_gtids_towards(source_version)``: ``request_dump``,
    ``MYSQL_RPL_SKIP_TAGGED_GTIDS``). What is assumed when a version is unknown:

    * ``source_version`` None (unknown, also the default): the tagged GTIDs are announced, i.e. the
      source is taken to be 8.3+ -- the newest rules, which :func:`simulate_auto_position_reconnect`
      assumes for a source of unknown version and reports as ``version_assumed``
      (:func:`reconnect_outcome` also says so in ``rule`` when tagged GTIDs are at stake).
    * ``replica_version`` None: nothing is assumed. A replica holding a tagged GTID is 8.3+ (no older
      server can hold one), so its tagged GTIDs are left out for a source known to be older than
      8.3; a replica holding none has nothing to leave out.
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
    if source_version is not None and not source_version.has_tagged_gtids and (
        replica_version is None or replica_version.skips_tagged_gtids_towards(source_version)
    ):
        announced = announced.untagged()
    return announced


def reconnect_outcome(
    source: ServerSnapshot,
    *,
    gtid_executed: GtidSet,
    retrieved_gtid_set: GtidSet | None,
    replica_version: MySQLVersion | None,
    last_retrieved_gtid: Gtid | None = None,
) -> ReconnectOutcome:
    """The one reconnect simulation of a pair: the set the replica would announce to this source
    (:func:`announced_gtid_set`, given the source's version) and the source's answer to it
    (:func:`simulate_auto_position_reconnect`), with ``announced`` filled in.

    Tagged GTIDs (8.3+): to a source older than 8.3 the replica announces none, so none is counted
    by the "replica has more" check (steps 2 and 3 are unchanged: such a source holds no tagged
    GTID in gtid_purged or in any Previous_gtids). With the source's version unknown the
    source is taken to be 8.3+ (the tagged GTIDs are announced and counted), unless its own
    gtid_executed holds a tagged GTID, which proves it 8.3+; the outcome is ``version_assumed`` and,
    when the replica's set holds tagged GTIDs, ``rule`` says what they were taken to be. A tagged
    GTID left out is named in ``rule`` too.
    """
    union = (retrieved_gtid_set or GtidSet.EMPTY) | gtid_executed
    announced = announced_gtid_set(gtid_executed, retrieved_gtid_set or GtidSet.EMPTY,
                                   replica_version=replica_version, last_retrieved_gtid=last_retrieved_gtid,
                                   source_version=source.version)
    outcome = simulate_auto_position_reconnect(source, announced)
    tagged = union.tagged()
    left_out = tagged - announced
    note = None
    if left_out:
        note = (f"the replica (8.3+) sends no tagged GTID to a MySQL {source.version} source (older than 8.3; "
                f"request_dump, MYSQL_RPL_SKIP_TAGGED_GTIDS): {left_out.count()} tagged GTID(s) not announced")
    elif tagged and source.version is None and not (source.gtid_executed and source.gtid_executed.tagged()):
        note = ("source version unknown, taken as 8.3+: the replica's tagged GTIDs are announced (to a source "
                "older than 8.3 it would send none of them)")
    if note is not None:
        outcome = replace(outcome, rule=f"{note}; {outcome.rule}" if outcome.rule else note)
    return replace(outcome, announced=announced)


def simulate_auto_position_reconnect(source: ServerSnapshot, replica_set: GtidSet) -> ReconnectOutcome:
    """What ``source`` answers to a replica announcing ``replica_set`` (see the module docstring).

    Needs the source's gtid_executed (and server_uuid where step 1 applies); gtid_purged and the
    binary log list are used when known. Unknown inputs give ``UNDETERMINED`` rather than a guess.
    """
    version = source.version
    version_assumed = version is None
    if version is None:
        version = MySQLVersion(99, 0, 0, "(assumed)")
    if source.gtid_executed is None:
        return ReconnectOutcome(ReconnectKind.UNDETERMINED, reason="source gtid_executed unknown",
                                version_assumed=version_assumed)
    purge = _purge_verdict(source, replica_set, version)
    if version.checks_replica_has_more_on_connect:
        if source.server_uuid is None:
            return replace(purge, kind=ReconnectKind.UNDETERMINED, error=None, reason="source server_uuid unknown",
                           version_assumed=version_assumed, purge_verdict=purge.kind)
        owned = " ∪ gtid_owned (not read)" if version.replica_has_more_counts_owned else ""
        rule = (f"replica's GTIDs of the source's own server_uuid {source.server_uuid} (every tag) must be a "
                f"subset of the source's gtid_executed{owned} (MySQL {version} rule, is_subset_for_sid)")
        offending = replica_set.for_uuid(source.server_uuid) - source.gtid_executed
        if offending:
            return replace(purge, kind=ReconnectKind.REPLICA_HAS_MORE_GTIDS, error=ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER,
                           offending=offending, rule=rule, version_assumed=version_assumed,
                           purge_verdict=purge.kind)
        return replace(purge, offending=offending, rule=f"{rule}; {purge.rule}", version_assumed=version_assumed,
                       purge_verdict=purge.kind)
    return replace(purge, rule=(f"MySQL {version} does not check for extra replica GTIDs on connect (before 5.6.23 "
                                f"and 5.7.6); {purge.rule}"),
                   version_assumed=version_assumed, purge_verdict=purge.kind)


def _purge_verdict(source: ServerSnapshot, replica_set: GtidSet, version: MySQLVersion) -> ReconnectOutcome:
    """Steps 2 and 3: the gtid_purged check (5.6.22+, 5.7.6+) and the binary-log scan."""
    purged = source.gtid_purged
    if version.checks_purged_on_connect:
        if purged is None:
            return ReconnectOutcome(ReconnectKind.UNDETERMINED, reason="source gtid_purged unknown",
                                    rule="gtid_purged check (5.6.22+) cannot be evaluated")
        missing = purged - replica_set
        if missing:
            return ReconnectOutcome(
                ReconnectKind.SOURCE_PURGED_REQUIRED, error=ER_MASTER_HAS_PURGED_REQUIRED_GTIDS, missing=missing,
                rule="the source's gtid_purged must be a subset of the replica's set (checked since 5.6.22 / 5.7.6)")
    scan = _scan(source, replica_set)
    if scan.kind is ReconnectKind.STREAMS and not version.checks_purged_on_connect:
        if purged is None:
            return replace(scan, kind=ReconnectKind.UNDETERMINED, reason="source gtid_purged unknown",
                           rule=f"{scan.rule}; whether purged GTIDs are skipped is unknown")
        skipped = purged - replica_set
        if skipped:
            return replace(scan, kind=ReconnectKind.STREAMS_SKIPPING_PURGED, missing=skipped, rule=(
                f"MySQL {version} does not check gtid_purged on connect (before 5.6.22): {scan.rule}, so the "
                "purged GTIDs the replica lacks are never sent"))
    if scan.kind is ReconnectKind.UNDETERMINED and version.checks_purged_on_connect and purged is not None:
        # gtid_purged passed; only a binary log deleted by hand (not PURGE BINARY LOGS) could still
        # make the scan refuse. The source streams; the start file is unknown.
        return ReconnectOutcome(ReconnectKind.STREAMS, reason=scan.reason, rule=f"streams ({scan.reason})")
    return scan


def _scan(source: ServerSnapshot, replica_set: GtidSet) -> ReconnectOutcome:
    """``find_first_log_not_in_gtid_set``: newest to oldest, the first Previous_gtids ⊆ replica set."""
    logs = source.binary_logs
    if logs is None:
        return ReconnectOutcome(ReconnectKind.UNDETERMINED, reason="source binary log list unknown",
                                rule="binary-log scan not possible")
    if not logs:
        return ReconnectOutcome(ReconnectKind.UNDETERMINED, reason="source has no binary logs (log_bin off?)",
                                rule="binary-log scan not possible")
    for log in reversed(logs):
        if log.previous_gtids is None:
            return ReconnectOutcome(ReconnectKind.UNDETERMINED, reason=f"Previous_gtids of {log.log_name} unknown",
                                    rule="binary-log scan not possible")
        if log.previous_gtids.is_subset(replica_set):
            return ReconnectOutcome(ReconnectKind.STREAMS, start_file=log.log_name,
                                    rule=f"streams from {log.log_name}, whose Previous_gtids is a subset of the "
                                         "replica's set")
    return ReconnectOutcome(
        ReconnectKind.SOURCE_PURGED_REQUIRED, error=ER_MASTER_HAS_PURGED_REQUIRED_GTIDS,
        missing=logs[0].previous_gtids - replica_set,
        rule="no binary log's Previous_gtids is a subset of the replica's set (find_first_log_not_in_gtid_set)")
