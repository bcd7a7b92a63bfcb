"""The entry points the audit job (jobs/audit_tasks.py) calls: once per server, once per channel.

``run_server_checks`` runs server.py's checks; ``run_pair_checks`` builds the pair model once
(pair.py, with its one reconnect simulation) and runs the checks of on_reconnect.py,
divergence.py, relay_tail.py and channel.py on it. Each returns the findings in the fixed order
it calls the checks. A new family's entry point goes here too.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from gtid_core.checks.channel import check_channel_config, check_replication_threads, relate_to_stopped_receiver
from gtid_core.checks.divergence import (
    check_errant_transactions,
    check_replica_gtid_history_lost,
    check_replica_gtid_holes,
)
from gtid_core.checks.on_reconnect import (
    check_replica_has_more_gtids,
    check_replica_near_purge_horizon,
    check_source_purged_required_gtids,
)
from gtid_core.checks.pair import FleetContext, _Pair, pair_reconnect_outcome
from gtid_core.checks.relay_tail import check_incomplete_relay_log_tail
from gtid_core.checks.server import (
    ServerReplication,
    check_gtid_executed_regressed,
    check_gtid_purged_jumped,
    check_replica_writable,
    check_server_config,
    check_source_uuid_went_back,
)
from gtid_core.findings import Finding
from gtid_core.relay_log import RelayLogEvent
from gtid_core.snapshots import ChannelSnapshot, ServerSnapshot
from gtid_core.syntax import in_syntax_of
from gtid_core.versions import MySQLVersion

__all__ = ["run_pair_checks", "run_server_checks"]


def run_server_checks(server: ServerSnapshot, previous: ServerSnapshot | None,
                      replication: ServerReplication | None = None) -> list[Finding]:
    """Every check of one server, and, with its previous snapshot, the checks of how it changed;
    with ``replication`` (its channels and those around it), the checks that need them."""
    findings = check_server_config(server)
    if replication is not None:
        findings += check_replica_writable(server, replication)
    if previous is not None:
        findings += check_gtid_executed_regressed(server, previous)
        findings += check_gtid_purged_jumped(server, previous)
        findings += check_source_uuid_went_back(server, previous)
    return _in_syntax_of(findings, server.version, server.version)


def run_pair_checks(
    replica: ServerSnapshot,
    channel: ChannelSnapshot,
    source: ServerSnapshot | None,
    relay_tail: Sequence[RelayLogEvent] | None,
    fleet: FleetContext,
) -> list[Finding]:
    """Every check of one replication channel. ``source`` None (unresolved) skips the checks
    that compare with it; the audit job reports the unresolved source itself. The reconnect
    simulation is computed once here (:func:`pair_reconnect_outcome`) and every reconnect check
    reads it. ``relay_tail``: rows of the newest relay log (see check_incomplete_relay_log_tail),
    None when not read."""
    tail = list(relay_tail) if relay_tail is not None else None
    pair = _Pair(
        replica=replica,
        channel=channel,
        source=source,
        fleet=fleet,
        replica_name=fleet.replica_name or replica.label,
        source_name=(fleet.source_name or source.label) if source is not None else fleet.source_name,
        tail=tail,
        outcome=pair_reconnect_outcome(replica, channel, source, tail),
    )
    findings: list[Finding] = []
    findings += check_replica_has_more_gtids(pair)
    findings += check_source_purged_required_gtids(pair)
    findings += check_replica_near_purge_horizon(pair)
    findings += check_errant_transactions(pair)
    findings += check_replica_gtid_holes(pair)
    findings += check_incomplete_relay_log_tail(pair)
    findings += check_replica_gtid_history_lost(pair)
    findings += check_replication_threads(pair)
    findings += check_channel_config(pair)
    return _in_syntax_of(relate_to_stopped_receiver(findings), replica.version,
                         source.version if source is not None else None)


def _in_syntax_of(findings: list[Finding], version: MySQLVersion | None,
                  source_version: MySQLVersion | None) -> list[Finding]:
    """The findings with their remediations in the words of the server that runs them (the
    finding's server: the replica, for a pair), the binary-log retention in its source's
    (gtid_core.syntax). The checks write them once, in today's words."""
    out = []
    for f in findings:
        text = in_syntax_of(f.remediation, version, source_version=source_version)
        out.append(f if text == f.remediation else replace(f, remediation=text))
    return out
