"""Advice in the words each server accepts: replication statements, status columns and setting
names as MySQL spells them in the version that will run them.

The checks write their remediations once, in today's words (``START REPLICA``, ``CHANGE
REPLICATION SOURCE TO ... SOURCE_AUTO_POSITION``, ``SET PERSIST replica_preserve_commit_order``).
A DBA pastes them into the server the finding names, and an older server rejects them: 8.0.21
has no ``START REPLICA`` (a syntax error), 5.7 no ``SET PERSIST``; 8.4 and later, for their part,
have no ``START SLAVE`` any more. :func:`in_syntax_of` rewrites a text for one server's version.

What changed, and when (MySQL 8.0 release notes and reference manual):

* 8.0.22: ``START | STOP | RESET REPLICA`` and ``SHOW REPLICA STATUS`` (before: ``SLAVE``), whose
  columns say ``Replica_IO_Running``, ``Replica_SQL_Running``, ``Replica_SQL_Running_State``,
  ``Seconds_Behind_Source`` (``SHOW SLAVE STATUS`` keeps ``Slave_...``/``..._Master``).
* 8.0.23: ``CHANGE REPLICATION SOURCE TO`` with ``SOURCE_*`` options (before: ``CHANGE MASTER
  TO`` and ``MASTER_*``: ``MASTER_AUTO_POSITION``, ``MASTER_DELAY``, ...).
* 8.0.26: the thread stages ("Replica has read all relay log; waiting for more updates", before
  "Slave has read all relay log; ...") and the system variables (``log_replica_updates``,
  ``replica_preserve_commit_order``, ``replica_parallel_workers``, ``replica_parallel_type``;
  before: ``log_slave_updates``, ``slave_...``).
* 8.0.0: ``SET PERSIST`` (5.7: ``SET GLOBAL`` plus the option file) and ``SET GLOBAL gtid_purged
  = '+set'`` (before, gtid_purged is set only while gtid_executed is empty, and emptying it takes
  RESET MASTER, which deletes the binary logs: empty transactions with those GTIDs instead);
  8.0.1: ``binlog_expire_logs_seconds`` (before: ``expire_logs_days``).
* 5.7.6: ``enforce_gtid_consistency`` becomes dynamic (before: the option file and a restart).
* 8.4: the old spellings are gone (removed, not deprecated), so a text is never rewritten towards
  them for 8.0.22 and later.

A text is rewritten only towards an older version, and only for a known one: with the version
unknown, today's words stay. The rewrite is idempotent, so advice already written in a version's
words (relay_tail's) passes through unchanged. The patterns match words, not their role: a channel
or a GTID tag spelled like a statement word (``replica_parallel_type``) would be rewritten too on a
server older than 8.0.26, which has no tags.
"""
from __future__ import annotations

import re
from gtid_core.versions import MySQLVersion

__all__ = ["in_syntax_of", "OPTION_FILE_NOTE"]

_Rule = tuple[tuple[int, int, int], "re.Pattern[str]", str]

#: Statements and status columns of the server that runs them: (first version with today's words,
#: pattern, replacement).
_STATEMENT_RULES: tuple[_Rule, ...] = (
    ((8, 0, 22), re.compile(r"\b(START|STOP|RESET|SHOW) REPLICA\b"), r"\1 SLAVE"),
    ((8, 0, 22), re.compile(r"\bReplica_(IO_Running|SQL_Running|SQL_Running_State|IO_State)\b"), r"Slave_\1"),
    ((8, 0, 22), re.compile(r"\bSeconds_Behind_Source\b"), "Seconds_Behind_Master"),
    ((8, 0, 22), re.compile(r"\bSource_UUID\b"), "Master_UUID"),
    ((8, 0, 23), re.compile(r"\bCHANGE REPLICATION SOURCE TO\b"), "CHANGE MASTER TO"),
    ((8, 0, 23), re.compile(r"\bSOURCE_(AUTO_POSITION|DELAY|HOST|PORT|USER|PASSWORD|LOG_FILE|LOG_POS|CONNECT_RETRY|"
                            r"RETRY_COUNT|HEARTBEAT_PERIOD)\b"), r"MASTER_\1"),
    ((8, 0, 26), re.compile(r"\bReplica has read all relay log\b"), "Slave has read all relay log"),
)

#: System variables and how they are set (the option-file-only rules first, before the SET PERSIST one).
_SETTING_RULES: tuple[_Rule, ...] = (
    ((5, 7, 6), re.compile(r"\bFirst SET PERSIST enforce_gtid_consistency = WARN\b[^;]*; then "), ""),
    ((5, 7, 6), re.compile(r"\bSET PERSIST enforce_gtid_consistency = ON\b"),
     "Set enforce_gtid_consistency = ON in the server's option file and restart it (the variable is read-only "
     "before 5.7.6)"),
    ((8, 0, 0), re.compile(r"\bSET GLOBAL gtid_purged = '\+([^']*)'"),
     r"commit one empty transaction per GTID of '\1' (SET GTID_NEXT='<uuid:number>'; BEGIN; COMMIT; for each, "
     r"then SET GTID_NEXT='AUTOMATIC': before 8.0 gtid_purged can be set only while gtid_executed is empty, and "
     r"emptying it takes RESET MASTER, which deletes the binary logs)"),
    ((8, 0, 26), re.compile(r"\breplica_(preserve_commit_order|parallel_workers|parallel_type)\b"), r"slave_\1"),
    ((8, 0, 26), re.compile(r"\blog_replica_updates\b"), "log_slave_updates"),
    ((5, 7, 8), re.compile(r"\bSET PERSIST super_read_only = ON \(it sets read_only too; "),
     "SET PERSIST read_only = ON (super_read_only comes with 5.7.8: accounts with SUPER can still write; "),
    ((8, 0, 0), re.compile(r"\bSET PERSIST\b"), "SET GLOBAL"),
)

#: The settings of the server that serves the binary logs (a pair's source).
_BINLOG_RETENTION_RULES: tuple[_Rule, ...] = (
    ((8, 0, 1), re.compile(r"\bbinlog_expire_logs_seconds\b"), "expire_logs_days"),
)

OPTION_FILE_NOTE = ("MySQL {version} cannot persist a setting from SQL: put the same value in the server's option "
                    "file (my.cnf) too, or the next restart loses it.")

_NOT_READ = object()
_OPTION_FILE_ONLY = 2       # the first rules of _SETTING_RULES: settings that SQL cannot change there
_SET_PERSIST = re.compile(r"\bSET PERSIST\b")


def _apply(text: str, rules: tuple[_Rule, ...], version: MySQLVersion | None) -> str:
    if version is None:
        return text
    for since, pattern, replacement in rules:
        if version.triple < since:
            text = pattern.sub(replacement, text)
    return text


def in_syntax_of(text: str, version: MySQLVersion | None, *,
                 source_version: MySQLVersion | None | object = _NOT_READ) -> str:
    """``text`` with its replication statements, status columns and settings spelled as MySQL
    ``version`` accepts them (unchanged for 8.0.26 and later, and for an unknown version).

    ``source_version``, for a pair's remediation, spells the binary-log retention setting
    (``binlog_expire_logs_seconds``) for the source, whose binary logs it keeps; by default it is
    ``version`` (a server's own finding). Where ``SET PERSIST`` became ``SET GLOBAL``, a sentence
    says to put the value in the option file too."""
    if not text:
        return text
    out = _apply(text, _STATEMENT_RULES, version)
    persisted = version is not None and version.triple < (8, 0, 0) and _SET_PERSIST.search(
        _apply(out, _SETTING_RULES[:_OPTION_FILE_ONLY], version))
    out = _apply(out, _SETTING_RULES, version)
    out = _apply(out, _BINLOG_RETENTION_RULES, version if source_version is _NOT_READ else source_version)
    note = OPTION_FILE_NOTE.format(version=version)
    if persisted and note not in out:
        out += ("" if out.endswith("\n") else " ") + note
    return out
