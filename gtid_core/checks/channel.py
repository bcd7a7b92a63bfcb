"""Pair checks of the replica channel's own state: its threads and its settings.

replication_receiver_error, replication_applier_error and replication_stopped (what the replica
reports about its receiver and applier threads, with the meaning of known errors read from their
text by :func:`_error_meaning`), and config_auto_position_off, config_relay_log_recovery_off and
config_parallel_applier_without_commit_order (settings that make silent loss possible).
"""
from __future__ import annotations

import re
from dataclasses import replace

from gtid_core.checks.catalogue import _all_of
from gtid_core.checks.pair import _Pair
from gtid_core.findings import Finding
from gtid_core.reconnect import ReconnectKind

__all__ = ["check_channel_config", "check_replication_threads", "relate_to_stopped_receiver"]


_PURGED_RE = re.compile(r"purged (the )?(required )?binary logs|has purged binary logs", re.IGNORECASE)
_MORE_GTIDS_RE = re.compile(r"(slave|replica) has more GTIDs than the (master|source)", re.IGNORECASE)


def _error_meaning(errno: int | None, message: str | None) -> str | None:
    text = message or ""
    if _PURGED_RE.search(text):
        return "the source purged binary logs holding transactions this replica still needs"
    if _MORE_GTIDS_RE.search(text):
        return "the replica has GTIDs the source does not (errant transactions or a source that lost binary logs)"
    if errno in (1236, 13114):
        return "the source's dump thread reported a fatal error reading its binary log"
    return None


def check_replication_threads(pair: _Pair) -> list[Finding]:
    """replication_receiver_error, replication_applier_error / replication_stopped: the receiver or
    applier thread failed or is stopped. The two errors are two check ids, so that their finding
    keys (sha1 of check_id|server|source|channel) differ and neither hides the other.

    Reads what the replica itself reports (Last_IO_Errno/Error, Last_SQL_Errno/Error, the
    performance_schema receiver error, Replica_IO_Running / Replica_SQL_Running) and names the
    meaning of known errors on their text, old (master/slave) and new (source/replica) wording
    alike (1236 / 13114 "purged required binary logs", "more GTIDs than the source"). Nothing is
    inferred; an error cleared by a restart before the read is not seen.
    """
    ch = pair.channel
    findings: list[Finding] = []
    errors = []
    io_errno = ch.last_io_errno or ch.receiver_last_error_number
    io_error = ch.last_io_error or ch.receiver_last_error_message
    if io_errno:
        errors.append(("replication_receiver_error", "receiver (IO) thread", io_errno, io_error,
                       ch.last_io_error_timestamp))
    if ch.last_sql_errno:
        errors.append(("replication_applier_error", "applier (SQL) thread", ch.last_sql_errno, ch.last_sql_error,
                       ch.last_sql_error_timestamp))
    for check_id, thread, errno, message, when in errors:
        meaning = _error_meaning(errno, message)
        detail = (
            f"The {thread} of replica {pair.replica_name} (channel {ch.label}) reports error {errno}"
            + (f" at {when}" if when else "") + f": {message!r}."
            + (f" Meaning: {meaning}." if meaning else "")
        )
        ev = pair.base_evidence()
        ev.update(thread=thread, errno=errno, error=message, io_running=ch.io_running, sql_running=ch.sql_running)
        findings.append(pair.finding(check_id, f"{pair.replica_name}: {thread} error {errno}", detail,
                                     evidence=ev))
    stopped = []
    if ch.io_running == "NO" and not io_errno:
        stopped.append("receiver (IO) thread")
    if ch.sql_running == "NO" and not ch.last_sql_errno:
        stopped.append("applier (SQL) thread")
    if stopped:
        detail = (f"The {' and '.join(stopped)} of replica {pair.replica_name} (channel {ch.label}) "
                  f"{'is' if len(stopped) == 1 else 'are'} stopped and no error is recorded.")
        ev = pair.base_evidence()
        ev.update(io_running=ch.io_running, sql_running=ch.sql_running)
        remediation = None
        outcome = pair.outcome
        if ch.io_running == "NO" and not io_errno and outcome is not None and outcome.refused:
            refusal = _REFUSAL_CHECK[outcome.kind]
            ev["start_refused_with"] = outcome.error
            detail += (f" Started now, its receiver would be refused by {pair.source_name} with {outcome.error} "
                       f"({refusal} on this channel).")
            remediation = (f"Do not start the receiver yet: {pair.source_name} would refuse it with {outcome.error}. "
                           f"First do what {refusal} on this channel says; then START REPLICA, or remove the channel "
                           "if it is no longer wanted.")
        findings.append(pair.finding("replication_stopped", f"{pair.replica_name}: replication stopped", detail,
                                     evidence=ev, remediation=remediation))
    return findings


# The check that reports each refusal of the pair's reconnect simulation (on_reconnect.py).
_REFUSAL_CHECK = {ReconnectKind.SOURCE_PURGED_REQUIRED: "source_purged_required_gtids",
                  ReconnectKind.REPLICA_HAS_MORE_GTIDS: "replica_has_more_gtids"}


def relate_to_stopped_receiver(findings: list[Finding]) -> list[Finding]:
    """One channel's findings, with those that a stopped receiver causes pointing at each other.

    A receiver stopped without an error is reported by replication_stopped; the same stop is why
    replica_near_purge_horizon (the channel falls behind the source's purge) and a stopped
    incomplete_relay_log_tail fire on that channel, and each said START REPLICA on its own. They
    stay three findings (three risks: a stopped thread, a purge that would refuse it, a
    transaction cut in two), and each now names the others, so that one action is taken once.
    """
    stopped = next((f for f in findings if f.check_id == "replication_stopped"
                    and f.evidence.get("io_running") == "NO"), None)
    related = [f for f in findings if f.check_id in _CAUSED_BY_STOPPED_RECEIVER]
    if stopped is None or not related:
        return findings
    names = _all_of([f.check_id for f in related])
    refused = stopped.evidence.get("start_refused_with")
    out = []
    for f in findings:
        if f is stopped:
            f = replace(f, remediation=f"{f.remediation}\nThe same stopped receiver causes {names} on this channel: "
                                       "starting it serves them too (their own steps first, if they give any).")
        elif f.check_id in _CAUSED_BY_STOPPED_RECEIVER:
            tail = (f" But the source would refuse that receiver now ({refused}): resolve what replication_stopped "
                    "names first." if refused else "")
            f = replace(f, remediation=f"{f.remediation}\n{_CAUSED_BY_STOPPED_RECEIVER[f.check_id]} "
                                       f"(replication_stopped on this channel): starting it once serves that finding and this one.{tail}")
        out.append(f)
    return out


_CAUSED_BY_STOPPED_RECEIVER = {
    "replica_near_purge_horizon": "The receiver to start is the one stopped without an error",
    "incomplete_relay_log_tail": "The receiver these steps start is the one stopped without an error",
}


def check_channel_config(pair: _Pair) -> list[Finding]:
    """config_auto_position_off, config_relay_log_recovery_off, config_parallel_applier_without_commit_order:
    settings of this replica channel that make silent loss possible. Read from the replica's own
    variables; they say what the server would do after a crash or a repointing, not that it happened.
    """
    r, ch = pair.replica, pair.channel
    out: list[Finding] = []
    if ch.auto_position is False:
        out.append(pair.finding(
            "config_auto_position_off", f"{pair.replica_name}: channel {ch.label} does not use AUTO_POSITION",
            f"Channel {ch.label} of {pair.replica_name} replicates by file and position (Auto_Position = 0): the "
            "source's GTID checks on connect do not run, and a repointing after failover relies on hand-picked "
            "coordinates that can skip or repeat transactions.",
            evidence={"auto_position": False}))
    file_repos = "FILE" in (r.relay_log_info_repository, r.master_info_repository)
    if r.relay_log_recovery is False and file_repos:
        out.append(pair.finding(
            "config_relay_log_recovery_off", f"{pair.replica_name}: relay_log_recovery OFF with FILE repositories",
            f"{pair.replica_name} has relay_log_recovery = OFF and relay_log_info_repository = "
            f"{r.relay_log_info_repository}, master_info_repository = {r.master_info_repository}: after a crash "
            "it trusts relay logs and position files that may be behind or ahead of the data.",
            evidence={"relay_log_recovery": False, "relay_log_info_repository": r.relay_log_info_repository,
                      "master_info_repository": r.master_info_repository}))
    if (r.replica_parallel_workers or 0) > 1 and r.replica_preserve_commit_order is False \
            and r.replica_parallel_type != "DATABASE":
        out.append(pair.finding(
            "config_parallel_applier_without_commit_order",
            f"{pair.replica_name}: parallel applier without commit order",
            f"{pair.replica_name} applies with {r.replica_parallel_workers} workers and "
            "replica_preserve_commit_order = OFF: it commits out of the source's order, so gtid_executed has "
            "gaps while it runs and a crash or STOP can leave holes.",
            evidence={"replica_parallel_workers": r.replica_parallel_workers,
                      "replica_preserve_commit_order": False}))
    elif (r.replica_parallel_workers or 0) > 1 and r.replica_preserve_commit_order is False:
        out.append(pair.finding(
            "config_parallel_applier_without_commit_order",
            f"{pair.replica_name}: parallel applier without commit order",
            f"{pair.replica_name} applies with {r.replica_parallel_workers} workers per database "
            "(replica_parallel_type = DATABASE) without replica_preserve_commit_order: transactions of "
            "different databases commit out of order.",
            evidence={"replica_parallel_workers": r.replica_parallel_workers,
                      "replica_parallel_type": r.replica_parallel_type, "replica_preserve_commit_order": False}))
    return out
