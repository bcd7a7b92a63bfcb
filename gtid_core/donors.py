"""Where a refused replica can still fetch what its source purged: donors.

A source that purged transactions a replica lacks refuses it on every connect
(``ER_MASTER_HAS_PURGED_REQUIRED_GTIDS``: ``source_purged_required_gtids``). The transactions are
gone from that source's binary logs, but often not from the fleet: a sibling replica, the source's
own source, or any server that replicated them with its binary log on may still hold them. Repointed
there with AUTO_POSITION, the replica fetches them; back on its source, it is no longer refused.
Reprovisioning is then not needed.

:func:`donor_refusal` decides, from the snapshots of the refused replica ``R``, its source ``S`` and
a candidate donor ``D``, whether that detour is sound. It is, when all of these hold:

1. **D holds every missing transaction**: ``missing ⊆ D.gtid_executed``.
2. **D serves R**: the reconnect ``D`` would make of ``R`` announcing its ``gtid_executed`` (the
   repoint purges R's relay logs) streams (:func:`gtid_core.reconnect.reconnect_outcome`, the same
   server rules as every pair: ``Binlog_sender::check_start_file`` and
   ``MYSQL_BIN_LOG::find_first_log_not_in_gtid_set``). With 1 this means D's binary logs hold
   everything D has and R lacks, the missing set included.
3. **D sends R nothing S will not have**: ``D.gtid_executed - R.gtid_executed - S.gtid_executed``
   is empty, or within ``upstream``: the ``gtid_executed`` of the servers S replicates from over a
   healthy AUTO_POSITION channel (both threads running, no error), whose transactions reach S
   anyway (S's own source, read after S, holds writes S has not received yet: a donor upstream of
   S under load). Otherwise R would take D's errant transactions or another channel's GTIDs
   with it.
4. **Back on S, R streams**: S's reconnect of R announcing ``R.gtid_executed ∪ missing`` (the
   least R holds once it has waited) streams. The steps wait on S's ``gtid_purged`` read just
   before the return, not on tonight's ``missing``: S may purge more in between.
5. **D's binary log holds what it replicated, whole**: ``log_bin`` and ``log_replica_updates`` are
   ON (with ``log_replica_updates`` OFF a replicated transaction is in D's ``gtid_executed`` but in
   none of its binary logs), and nothing on D filters: no channel (``Replicate_Do_DB`` ...
   ``Replicate_Rewrite_DB``) and not its binary log (``Binlog_Do_DB``, ``Binlog_Ignore_DB``), all
   known and empty (``unfiltered``, decided by the audit job from what it collected). A filtered
   transaction is logged by D as an empty transaction with its GTID, so R would mark it executed
   without its data. When S's own channels filter (or may), the audit job offers only S's own
   replicas as donors: others would send R the data S's filters dropped.
6. **The versions replicate**: D is not newer than R (replication to an older server is not
   supported, and a newer patch release can write what an older one cannot read, such as 8.0.20's
   compressed transactions), and not too much older: 5.6 to 5.7, 5.7 to 8.0, 8.0 to any 8.x,
   8.1 and later to their own major version or the next (MySQL manual, "Replication
   Compatibility Between MySQL Versions"). A tagged GTID (8.3+) never reaches an older replica.

Any input unknown refuses the donor: a donor is named only when every condition is known to hold.

What it cannot see: whether D accepts R's connection (the replication account, TLS, the network
between them: the steps keep R's stored user and password, so a channel started with START
REPLICA USER=... must be given them again); whether the address the audit reads D at is the one R
reaches it at (the steps check the Source_UUID R sees); D's own consistency (a transaction skipped
on D by hand as an empty one, replica_skip_errors, IDEMPOTENT mode: the same trust a promotion of D
needs; a checksum after the return shows it); what D writes or purges after the read (a purge shows
as a receiver error from D, and the steps send R back). A server that replicates from R is excluded by
the audit job (repointing R to it would close a loop); one further down R's chain lacks what R
lacks and fails 1.
"""
from __future__ import annotations

from collections.abc import Sequence

from gtid_core.gtid_set import GtidSet
from gtid_core.reconnect import ReconnectKind, reconnect_outcome
from gtid_core.snapshots import ServerSnapshot
from gtid_core.syntax import in_syntax_of
from gtid_core.versions import MySQLVersion

__all__ = ["donor_refusal", "fetch_from_donor_steps", "DONORS_NAMED"]

#: At most this many donors are named in a finding (the steps use the first).
DONORS_NAMED = 3


def _short(s: GtidSet, limit: int = 120) -> str:
    text = s.to_text(multiline=False)
    return text if len(text) <= limit else text[:limit] + "..."


def _replicates_to(donor: MySQLVersion, replica: MySQLVersion) -> bool:
    """Condition 6: a source of version ``donor`` serves a replica of version ``replica``."""
    if donor.triple > replica.triple:
        return False
    d, r = donor.triple[:2], replica.triple[:2]
    if d == r:
        return True
    if d[0] == 5 or r[0] == 5:
        return (d, r) in {((5, 6), (5, 7)), ((5, 7), (8, 0))}
    if d == (8, 0):
        return r[0] == 8                      # to 8.4 LTS and the innovation releases before it
    return r[0] - d[0] <= 1                   # 8.1+ to the next series


def donor_refusal(replica: ServerSnapshot, source: ServerSnapshot, donor: ServerSnapshot,
                  missing: GtidSet, *, upstream: GtidSet | None = None,
                  unfiltered: bool | None = None) -> str | None:
    """None when ``donor`` can serve ``replica`` what ``source`` purged (``missing``) and let it go
    back to ``source`` (the module's six conditions); otherwise the first condition that fails, in
    words. ``upstream``: the union of the gtid_executed of the servers ``source`` replicates from
    over a healthy AUTO_POSITION channel (None: none, or not read). ``unfiltered``: True when the
    binary log and every channel of ``donor`` are known to filter nothing (or it has no channel),
    False when one filters, None when unknown."""
    if replica.gtid_executed is None or source.gtid_executed is None or donor.gtid_executed is None:
        return "a gtid_executed is unknown"
    if donor.log_bin is not True:
        return "its binary log is off or unknown"
    if donor.log_replica_updates is not True:
        return "log_replica_updates is off or unknown: its binary logs may lack what it replicated"
    if unfiltered is not True:
        return ("it has replication filters (a channel's or its binary log's): its binary logs hold empty "
                "transactions for what they filtered" if unfiltered is False
                else "its channels' or its binary log's replication filters are unknown")
    if replica.version is None or donor.version is None:
        return "a version is unknown"
    if not _replicates_to(donor.version, replica.version):
        return f"MySQL {donor.version} does not replicate to the replica's MySQL {replica.version}"
    lacking = missing - donor.gtid_executed
    if lacking:
        return f"it lacks {lacking.count()} of the missing transactions ({_short(lacking)})"
    extra = donor.gtid_executed - replica.gtid_executed - source.gtid_executed
    if extra and upstream is not None:
        extra = extra - upstream
    if extra:
        return (f"it would also send {extra.count()} transaction(s) the source does not have and does not "
                f"replicate ({_short(extra)})")
    there = reconnect_outcome(donor, gtid_executed=replica.gtid_executed, retrieved_gtid_set=None,
                              replica_version=replica.version)
    if there.kind is not ReconnectKind.STREAMS:
        return f"it would not stream to the replica ({there.error or there.kind.value}: {there.reason or there.rule})"
    back = reconnect_outcome(source, gtid_executed=replica.gtid_executed | missing,
                             retrieved_gtid_set=None, replica_version=replica.version)
    if back.kind is not ReconnectKind.STREAMS:
        return (f"back on its source the replica would still not stream ({back.error or back.kind.value}: "
                f"{back.reason or back.rule})")
    return None


def _address(host: str | None, port: int | None, name: str) -> str:
    if host is None or port is None:
        return f"SOURCE_HOST = '<address of {name}>', SOURCE_PORT = <port of {name}>"
    return f"SOURCE_HOST = '{host}', SOURCE_PORT = {int(port)}"


def fetch_from_donor_steps(*, replica: str, replica_version: MySQLVersion | None, channel: str | None,
                           source: str, source_host: str | None, source_port: int | None,
                           source_purged: GtidSet | None = None,
                           donor: tuple[str, str | None, int | None], donor_uuid: str | None = None,
                           others: Sequence[str] = (), missing: GtidSet, multi_source: bool = False) -> str:
    """The remediation that has ``replica`` fetch ``missing`` from ``donor`` ((name, host, port),
    sound by :func:`donor_refusal`) and go back to ``source`` at the address its channel used,
    in the words of the replica's version (:func:`gtid_core.syntax.in_syntax_of`). ``others``
    names other sound donors (at most ``DONORS_NAMED - 1`` are listed).

    Before it waits, the replica is checked to have connected (Replica_IO_Running Yes, not a receiver
    error: refused as the donor purged them too since the read, 1236 before 8.0.11, 13114 after) to
    ``donor_uuid`` (the address is the audit's, not necessarily the replica's); otherwise it goes
    back. The wait is on the server: GTID_SUBSET (5.6.5+)
    of the source's gtid_purged read just then (``source_purged``, tonight's value, is shown) against
    the replica's gtid_executed, so a purge on the source after tonight's read does not refuse the
    return. The statements name the channel when it has a name, or when the replica has other
    channels (``multi_source``: without FOR CHANNEL, STOP REPLICA stops them all and CHANGE
    REPLICATION SOURCE TO is refused with error 1964); a single default channel is left unnamed,
    the only form before 5.7.6."""
    ch = f" FOR CHANNEL '{channel or ''}'" if channel or multi_source else ""
    name, host, port = donor
    also = list(others)[:DONORS_NAMED - 1]
    back = f"STOP REPLICA{ch}; CHANGE REPLICATION SOURCE TO {_address(source_host, source_port, source)}{ch}; START REPLICA{ch}"
    reached = f" with Source_UUID '{donor_uuid}'" if donor_uuid else ""
    tonight = f" (the audit read '{source_purged.to_text(multiline=False)}')" if source_purged is not None else ""
    text = (
        f"{name} still has every missing transaction in its binary logs and would send {replica} nothing "
        f"{source} lacks" + (f" (so would {', '.join(also)})" if also else "") + ": "
        f"{replica} can fetch them from {name} and go back to {source}, without reprovisioning. On {replica}: "
        f"STOP REPLICA{ch}; CHANGE REPLICATION SOURCE TO {_address(host, port, name)}{ch}; START REPLICA{ch}; "
        f"check that SHOW REPLICA STATUS{ch} shows Replica_IO_Running Yes{reached} (if it shows a Last_IO_Errno "
        f"instead, or another Source_UUID, go back to {source} the same way: another server answers there, or "
        f"{name} purged them too); read SELECT @@GLOBAL.gtid_purged on {source}{tonight}; wait until SELECT "
        f"GTID_SUBSET('<that set>', @@GLOBAL.gtid_executed) returns 1 (that set includes the {missing.count()} {replica} lacks, '{missing.to_text(multiline=False)}', and "
        f"if it never does, {name} lacks what {source} purged since: go back and reprovision); {back}. "
        f"The CHANGE keeps SOURCE_AUTO_POSITION and the replication account, which must exist on {name} too; "
        f"{name} must accept {replica}'s connection (network, TLS)."
    )
    return in_syntax_of(text, replica_version)
