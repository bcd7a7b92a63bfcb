"""The one registry of every check the audit knows: what ``gtid-audit explain`` prints, what a
silence may name, what the README's generated table lists.

``CHECKS`` (gtid_core.checks) are the pure checks over snapshots; ``JOB_CHECKS`` are the checks
the job makes from what collection and source resolution recorded (a server that could not be
read, a value that does not parse, a channel whose source is not in the inventory). Both are
:class:`~gtid_core.checks.CheckInfo`; :data:`REGISTRY` is their union.
"""
from __future__ import annotations

from gtid_core.checks import CHECKS, CheckInfo
from gtid_core.findings import Severity

__all__ = ["JOB_CHECKS", "REGISTRY", "check_info"]


def _job_check(check_id: str, severity: str, title: str, meaning: str, server_error: str | None,
               remediation: str):
    return CheckInfo(check_id=check_id, version=1, default_severity=Severity(severity), scope="job",
                     title=title, meaning=meaning, server_error=server_error, remediation=remediation)


#: The checks the audit job makes from collection and resolution results (scope ``job``).
JOB_CHECKS = {c.check_id: c for c in (
    _job_check("collection_failed", "critical", "Server could not be collected",
               "Nothing could be read from this server in this run, so none of its checks ran: the "
               "audit is blind there. The finding carries the error class of collection_errors "
               "(unreachable, timeout, auth_failed, privilege_missing, gtid_mode_off, ...). Findings "
               "about it from the previous run are carried over as open, never resolved.",
               None,
               "Look at collection_errors for the run (message, errno); fix reachability, grants "
               "(REPLICATION CLIENT, REPLICATION SLAVE, SELECT on performance_schema.replication_*) "
               "or the server, then wait for the next run."),
    _job_check("collection_partial", "warning", "Server was only partly collected",
               "Some statements failed on this server (see collection_errors); the checks that need "
               "the missing data could not see everything.",
               None,
               "Read collection_errors for the run and fix the failing statement (often a missing grant)."),
    _job_check("snapshot_invalid", "critical", "Server reported a value the audit cannot parse",
               "A value read from the server (a GTID set, a version, a state) could not be parsed, so "
               "the checks of this server or pair could not run. The detail quotes the value.",
               "ER_MALFORMED_GTID_SET_SPECIFICATION (1772) if the server itself were given that text",
               "Compare the quoted value with what the server prints now; report a parser bug if the "
               "server accepts it."),
    _job_check("source_unresolved", "warning", "Replica's source is not in the inventory",
               "The channel's Source_Host:Source_Port matches no inventory server by name, alias or "
               "address, and its Source_UUID belongs to no server of this run (or several servers "
               "match): the pair checks of this channel could not run.",
               None,
               "Add the source to the inventory (or its address to a server's aliases), or fix the "
               "channel (CHANGE REPLICATION SOURCE TO ...). If the source is gone, the UUID registry "
               "named in the detail says which server last had its UUID."),
    _job_check("source_uuid_mismatch", "warning", "Source address now leads to another server",
               "The server now at the channel's Source_Host:Source_Port has a different server_uuid "
               "than the channel's Source_UUID (from the last connection): the source was rebuilt, a "
               "virtual IP moved, or a failover happened that this replica has not reconnected "
               "through yet. The next reconnect goes to a different server than the one it "
               "replicated from; the pair checks are computed against the server at the address.",
               "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER or ER_MASTER_HAS_PURGED_REQUIRED_GTIDS may follow "
               "at the reconnect",
               "Confirm the intended source; read this pair's other findings (errant transactions, "
               "purged required GTIDs) before the replica reconnects."),
)}



#: Every check, by id.
REGISTRY: dict[str, CheckInfo] = {**CHECKS, **JOB_CHECKS}


def check_info(check_id: str) -> CheckInfo:
    """The registered check ``check_id``; KeyError naming the known ids otherwise."""
    try:
        return REGISTRY[check_id]
    except KeyError:
        raise KeyError(f"unknown check id {check_id!r}; known: {', '.join(sorted(REGISTRY))}") from None
