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
   is empty, or within ``upstream``: the ``gtid_executed`` of the servers S replicates from, whose
   transactions reach S anyway (S's own source, read after S, holds writes S has not received yet:
   a donor upstream of S under load). Otherwise R would take D's errant transactions or another
   channel's GTIDs with it.
4. **Back on S, R streams**: S's reconnect of R announcing ``R.gtid_executed ∪ D.gtid_executed``
   streams. Both sets only grow after the reads, and every rule of that reconnect is monotone in
   the announced set, so what R has once it caught up from D passes too.
5. **D's binary log holds what it replicated**: ``log_bin`` and ``log_replica_updates`` are ON.
   With ``log_replica_updates`` OFF a replicated transaction is in D's ``gtid_executed`` but in
   none of its binary logs (gtid_purged counts it on 8.0, but not on every version).
6. **D is not a newer release series than R**: replication from a newer series to an older one
   is not supported (MySQL manual, "Replication Compatibility Between MySQL Versions"); a tagged
   GTID (8.3+) cannot reach an older replica at all.

Any input unknown refuses the donor: a donor is named only when every condition is known to hold.

What it cannot see: whether D accepts R's connection (the replication account, TLS, the network
between them), and what D purges between the read and the repoint (the steps wait on the server,
so a purge there shows as the same 13114 error from D, and R is repointed back). A server that
replicates from R is excluded by the audit job (repointing R to it would close a loop); one further
down R's chain lacks what R lacks and fails 1.
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


def donor_refusal(replica: ServerSnapshot, source: ServerSnapshot, donor: ServerSnapshot,
                  missing: GtidSet, *, upstream: GtidSet | None = None) -> str | None:
    """None when ``donor`` can serve ``replica`` what ``source`` purged (``missing``) and let it go
    back to ``source`` (the module's six conditions); otherwise the first condition that fails, in
    words. ``upstream``: the union of the gtid_executed of the servers ``source`` replicates from
    (None: none, or not read)."""
    if replica.gtid_executed is None or source.gtid_executed is None or donor.gtid_executed is None:
        return "a gtid_executed is unknown"
    if donor.log_bin is not True:
        return "its binary log is off or unknown"
    if donor.log_replica_updates is not True:
        return "log_replica_updates is off or unknown: its binary logs may lack what it replicated"
    if replica.version is None or donor.version is None:
        return "a version is unknown"
    if donor.version.triple[:2] > replica.version.triple[:2]:
        return f"it runs MySQL {donor.version}, a newer series than the replica's {replica.version}"
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
    back = reconnect_outcome(source, gtid_executed=replica.gtid_executed | donor.gtid_executed,
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
                           donor: tuple[str, str | None, int | None], others: Sequence[str] = (),
                           missing: GtidSet, multi_source: bool = False) -> str:
    """The remediation that has ``replica`` fetch ``missing`` from ``donor`` ((name, host, port),
    sound by :func:`donor_refusal`) and go back to ``source`` at the address its channel used,
    in the words of the replica's version (:func:`gtid_core.syntax.in_syntax_of`). ``others``
    names other sound donors (at most ``DONORS_NAMED - 1`` are listed). The wait is on the
    server: GTID_SUBSET against gtid_executed (5.6.5+). The statements name the channel when it
    has a name, or when the replica has other channels (``multi_source``: without FOR CHANNEL,
    STOP REPLICA stops them all and CHANGE REPLICATION SOURCE TO is refused with error 1964);
    a single default channel is left unnamed, the only form before 5.7.6."""
    ch = f" FOR CHANNEL '{channel or ''}'" if channel or multi_source else ""
    name, host, port = donor
    also = list(others)[:DONORS_NAMED - 1]
    text = (
        f"{name} still has every missing transaction in its binary logs and would send {replica} nothing "
        f"{source} lacks" + (f" (so would {', '.join(also)})" if also else "") + ": "
        f"{replica} can fetch them from {name} and go back to {source}, without reprovisioning. On {replica}: "
        f"STOP REPLICA{ch}; CHANGE REPLICATION SOURCE TO {_address(host, port, name)}{ch}; START REPLICA{ch}; "
        f"wait until SELECT GTID_SUBSET('{missing.to_text(multiline=False)}', @@GLOBAL.gtid_executed) returns 1; "
        f"STOP REPLICA{ch}; CHANGE REPLICATION SOURCE TO {_address(source_host, source_port, source)}{ch}; "
        f"START REPLICA{ch}. The CHANGE keeps SOURCE_AUTO_POSITION and the replication account, which must exist "
        f"on {name} too; {name} must accept {replica}'s connection (network, TLS)."
    )
    return in_syntax_of(text, replica_version)
