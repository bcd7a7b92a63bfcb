"""The MySQL server's own replication tests, replayed against gtid_core and the simulator (issue 18).

gtid_core's version rules (gtid_core/versions.py) and the simulator's old-version answers
(jobs/sandbox/sim/) come from one reading of the server source, so neither can check the other.
The recorded results of the server's own tests (``mysql-test/suite/*/r/*.result``) are independent
evidence: each row below transcribes one step of one test -- the sets on source and replica, and
what the server recorded (an error number, an error text, a set it printed, an assertion that
passed) -- and checks that gtid_core answers the same, and that the simulator does for what it
models. docs/server-tests.md lists every row, what it proves, and the rules no evidence here reaches.

Where the files come from (``repo@commit`` in every row):

* ``mysql/mysql-server``, read through the stored file index (``read_file``); it holds a few
  versions of each file, not release tags.
* ``upstream`` = MySQL's own 5.6 history (Oracle's commits with their original hashes; 9709120d is
  also in mysql/mysql-server's index), read in the ``cswilliams/webscalesql-5.6`` mirror, where the
  ``VERSION`` file of each commit is readable:
  ``9709120d`` is 5.6.9-rc, ``f9725ff9c6`` the tip of mysql-5.6.22-release (5.6.22),
  ``e603acb536`` the tip of mysql-5.6.23-release (5.6.23) -- the same commits docs/checks.md cites.
* ``northhurricane/mysql-5.6.21`` = Oracle's 5.6.21 source tarball as imported (commit ``8279d576``,
  "origin 5.6.21 initialized"; ``VERSION`` 5.6.21), also cited by docs/checks.md.

How to read a row:

* ``id`` = ``<test name>@<first 8 hex of the commit>[<release line>]:<step>``. Where the version is
  not written in the tree, the release line is inferred from the content (errno 1236 vs 13114, suite
  ``rpl`` vs ``rpl_gtid``, include layout, warnings, presence in the upstream 5.6 history); ``line``
  says how.
* ``versions`` = the versions gtid_core replays the row at: the tree's own version when known, else
  one per gtid_core rule class the tree can belong to (gtid_core's rules change at 5.6.15, 5.6.22,
  5.6.23, 5.7.0, 5.7.6, 8.3).
* ``M`` stands for the master's ``@@server_uuid``, which every test masks (``--replace_result
  $master_uuid master_uuid`` / ``MASTER_UUID``): any uuid can play it. GTID numbers are literal where
  the .result prints them; where they follow from statement order, the row says so.
* Every expected value is quoted from a .result in the row's ``recorded`` field.

The simulator has no model of the dump thread's decision: its fleet is built with the verdict
already decided (``FleetBuilder.purged_required`` etc. write their ``Truth``). What it does answer
about these cases is compared here: the receiver's ``Last_IO_Errno`` per version
(``dialects.Shape.source_fatal_errno``), its ``purged_required`` replica as served by ``SimSession``
(errno, error text), the severity its ``relay_tail`` scenario gives a partial last transaction, and
the text in which it serves a GTID set.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from gtid_core.checks.channel import _error_meaning
from gtid_core.errors import GtidParseError
from gtid_core.gtid_set import GtidSet
from gtid_core.reconnect import ReconnectKind, reconnect_outcome
from gtid_core.snapshots import BinaryLog, Gtid, ServerSnapshot
from gtid_core.versions import MySQLVersion
from jobs.sandbox.sim.dialects import shape_for
from jobs.sandbox.sim.model import FleetBuilder
from jobs.sandbox.sim.model import _text as sim_text
from jobs.sandbox.sim.server import Latency, SimSession

G = GtidSet.parse
M = "3e11fa47-71ca-11e1-9e33-c80aa9429562"   # stands for MASTER_UUID (the source's @@server_uuid)

SERVER = "mysql/mysql-server"
UPSTREAM = "upstream 5.6 history (cswilliams/webscalesql-5.6 mirror)"
TARBALL = "northhurricane/mysql-5.6.21 (Oracle's 5.6.21 tarball)"

PURGED, HAS_MORE, STREAMS = "refused: purged", "refused: has more", "streams"

# The tests cited (paths are the same in every repository).
PURGED_FAIL_RPL = "mysql-test/suite/rpl/{}/rpl_gtid_purged_fail_to_connect.{}"
PURGED_FAIL_GTID = "mysql-test/suite/rpl_gtid/{}/rpl_gtid_purged_fail_to_connect.{}"
VALIDATE_RPL = "mysql-test/suite/rpl/{}/rpl_gtid_validate_slave_gtids.{}"
VALIDATE_GTID = "mysql-test/suite/rpl_gtid/{}/rpl_gtid_validate_slave_gtids.{}"
CHECK_GTID = "mysql-test/suite/rpl/{}/rpl_check_gtid.{}"
LOST_TRX = "mysql-test/suite/rpl/{}/rpl_gtids_restart_slave_io_lost_trx.{}"

# Release lines: (label, how it is known).
V569 = ("5.6.9-rc", "VERSION file of the commit in the upstream history: 5.6.9-rc")
V5621 = ("5.6.21", "VERSION file of the tarball: 5.6.21")
V5622 = ("5.6.22", "VERSION file of the mysql-5.6.22-release tip: 5.6.22")
V5623 = ("5.6.23", "VERSION file of the mysql-5.6.23-release tip: 5.6.23")
L_56_LATE = ("5.6.27+", "suite rpl, errno 1236, the 5.6 shape of the test (no mysql.gtid_executed step, as in "
             "5.6.23's copy), the error text with the sets (absent from 5.6.26's copy), and a commit absent "
             "from the upstream 5.6 history through 5.6.26: a later 5.6")
L_57_DEV = ("5.7 dev", "suite rpl, errno 1236; absent from the upstream 5.6 history through 5.6.26, and its .test "
            "uses include/gtid_utils.inc where 5.6.21 already has $rpl_gtid_utils: an early 5.7 tree "
            "(which 5.7 milestone is not told)")
L_57 = ("5.7", "suite rpl, errno 1236, DELETE FROM mysql.gtid_executed (that table exists from 5.7.5) and "
        "include/not_group_replication_plugin.inc")
DEV_80 = ("8.0 dev", "suite rpl_gtid (8.0), errno 1236 and warning 3090 \"Changing sql mode "
          "'NO_AUTO_CREATE_USER' is deprecated\" (the mode is gone from 8.0.11): an 8.0 milestone before GA")
L_80 = ("8.0", "suite rpl_gtid, errno 13114, include/master-slave.inc (the layout before include/rpl/)")
L_84_9 = ("8.4/9.x", "suite rpl_gtid, include/rpl/init_source_replica.inc, START REPLICA, errno 13114, "
          "source/replica wording: a tree after 8.0 (the include/rpl/ layout); taken as the 8.4 / 9.x lines")


@dataclass(frozen=True)
class ReconnectCase:
    """One AUTO_POSITION connect recorded by a server test."""

    step: str
    repo: str                      # where the files were read (see the module docstring)
    test: str                      # the .test path
    test_commit: str               # the commit the .test was read at
    result: str                    # the .result path
    result_commit: str             # the commit the .result was read at (expectations come from it)
    line: tuple[str, str]          # (release line, how it is known)
    versions: tuple[str, ...]      # gtid_core replays the row at each
    source_executed: str
    source_purged: str
    expect: str                    # PURGED / HAS_MORE / STREAMS
    recorded: str                  # the .result lines the expectation comes from
    replica_executed: str = ""
    replica_retrieved: str = ""
    last_retrieved: str | None = None   # the last Gtid event in the replica's relay log
    resent: str | None = None      # a GTID the replica has retrieved but must fetch again (not announced)
    binary_logs: tuple[tuple[str, str], ...] | None = None   # (Log_name, Previous_gtids); None = not recorded
    errno: int | None = None       # Last_IO_Errno recorded
    error: str | None = None       # Last_IO_Error recorded (as printed, uuid masked)
    missing: str | None = None     # missing set, where the .result (or an assertion it records) names it
    announced: str | None = None   # the set the replica sent, where the .result prints it

    @property
    def id(self) -> str:
        name = self.result.rsplit("/", 1)[-1].removesuffix(".result")
        return f"{name}@{self.result_commit[:8]}[{self.line[0]}]:{self.step}"


def _m(text: str) -> str:
    """A recorded text with MASTER_UUID / master_uuid replaced by M."""
    return text.replace("MASTER_UUID", M).replace("master_uuid", M)


# The Last_IO_Error texts as recorded (MASTER_UUID as masked there).
ERR_PURGED_5X = ("Got fatal error 1236 from master when reading data from binary log: 'The slave is connecting "
                 "using CHANGE MASTER TO MASTER_AUTO_POSITION = 1, but the master has purged binary logs containing "
                 "GTIDs that the slave requires.'")
ERR_PURGED_5X_SETS = ("Got fatal error 1236 from master when reading data from binary log: 'The slave is connecting "
                      "using CHANGE MASTER TO MASTER_AUTO_POSITION = 1, but the master has purged binary logs "
                      "containing GTIDs that the slave requires. Replicate the missing transactions from elsewhere, "
                      "or provision a new slave from backup. Consider increasing the master's binary log expiration "
                      "period. The GTID set sent by the slave is '', and the missing transactions are "
                      "'MASTER_UUID:1-2'.'")
ERR_PURGED_9X = ("Got fatal error 1236 from source when reading data from binary log: 'Cannot replicate because the "
                 "source purged required binary logs. Replicate the missing transactions from elsewhere, or provision "
                 "a new replica from backup. Consider increasing the source's binary log expiration period. The GTID "
                 "set sent by the replica is 'MASTER_UUID:1', and the missing transactions are 'MASTER_UUID:2''")
ERR_MORE_5X = ("Got fatal error 1236 from master when reading data from binary log: 'Slave has more GTIDs than the "
               "master has, using the master's SERVER_UUID. This may indicate that the end of the binary log was "
               "truncated or that the last binary log file was lost, e.g., after a power or disk failure when "
               "sync_binlog != 1. The master may or may not have rolled back transactions that were already "
               "replica'")
ERR_MORE_5X_LONG = ("Got fatal error 1236 from master when reading data from binary log: 'Slave has more GTIDs than "
                    "the master has, using the master's SERVER_UUID. This may indicate that the end of the binary log "
                    "was truncated or that the last binary log file was lost, e.g., after a power or disk failure "
                    "when sync_binlog != 1. The master may or may not have rolled back transactions that were already "
                    "replicated to the slave. Suggest to replicate any transactions that master has rolled back from "
                    "slave to master, and/or commit empty transactions on master to account for transactions that "
                    "have been'")
ERR_MORE_9X = ("Got fatal error 1236 from source when reading data from binary log: 'Replica has more GTIDs than the "
               "source has, using the source's SERVER_UUID. This may indicate that the the last binary log file was "
               "truncated or lost, e.g., after a power failure when sync_binlog != 1. The source may have rolled back "
               "transactions that were already replicated to the replica. Replicate any transactions that source has "
               "rolled back from replica to source, and/or commit empty transactions on source to account for "
               "transactions that have been committed on source but are not included in GTID_EXECU'")


# ------------------------------------------------------------------------------------------------
# rpl_gtid_purged_fail_to_connect: an ordinary PURGE BINARY LOGS; the replica lacks the purged INSERT.
# Source: CREATE TABLE t1 (replicated), INSERT (1), FLUSH LOGS, INSERT (2), PURGE BINARY LOGS TO
# 'master-bin.000002'; the replica has everything up to the CREATE. What remains is master-bin.000002,
# whose Previous_gtids are, by definition of that event, the GTIDs of the purged master-bin.000001
# (= gtid_purged after the PURGE): derived from the recorded steps, not printed by the test.
# On 5.6.9-rc and 5.6.21 no gtid_purged check exists (gtid_core's reading): this refusal can only come
# from the binary-log scan -- the rule that separates source_purged_required_gtids from
# silent_purged_gap before 5.6.22.

_PF_5X_RECORDED = ("PURGE BINARY LOGS TO 'master-bin.000002';\n"
                   "include/assert.inc [PURGE BINARY LOGS successfully removed all but the latest files]\n"
                   "INSERT INTO t1 VALUES (2);\nCHANGE MASTER TO MASTER_AUTO_POSITION = 1;\nSTART SLAVE;\n"
                   "include/wait_for_slave_io_error.inc [errno=1236 # ER_MASTER_FATAL_ERROR_READING_BINLOG]")
# In the 5.x copies the GTIDs are not printed and statements before the CREATE (mtr.add_suppression,
# gtid_utils.inc) may shift them all alike; statement order numbers them here (CREATE = M:1,
# INSERT (1) = M:2, INSERT (2) = M:3, the second INSERT (2) = M:4). The verdict depends only on the
# replica lacking the purged INSERT (1).
_PF_5X = dict(step="purge-refused", source_executed=f"{M}:1-4", source_purged=f"{M}:1-2",
              binary_logs=(("master-bin.000002", f"{M}:1-2"),), replica_executed=f"{M}:1", expect=PURGED,
              errno=1236, recorded=_PF_5X_RECORDED)

PURGED_FAIL = [
    ReconnectCase(repo=UPSTREAM, test=PURGED_FAIL_RPL.format("t", "test"),
                  test_commit="9709120db22901ad9b884a50f813430579e1ae24",
                  result=PURGED_FAIL_RPL.format("r", "result"),
                  result_commit="9709120db22901ad9b884a50f813430579e1ae24",   # also in mysql/mysql-server's index
                  line=V569, versions=("5.6.9",), **_PF_5X),
    ReconnectCase(repo=TARBALL, test=PURGED_FAIL_RPL.format("t", "test"),
                  test_commit="8279d57641e89f96839c82e4a8e592b726007ddd",
                  result=PURGED_FAIL_RPL.format("r", "result"),
                  result_commit="8279d57641e89f96839c82e4a8e592b726007ddd",
                  line=V5621, versions=("5.6.21",), **_PF_5X),
    # 5.6.22 and 5.6.23 hold the same .result (blob 6310fd7a as 5.6.21's)
    ReconnectCase(repo=UPSTREAM, test=PURGED_FAIL_RPL.format("t", "test"),
                  test_commit="f9725ff9c621c1790c3cb9c27356ec14fb82b511",
                  result=PURGED_FAIL_RPL.format("r", "result"),
                  result_commit="f9725ff9c621c1790c3cb9c27356ec14fb82b511",
                  line=V5622, versions=("5.6.22",), **_PF_5X),
    ReconnectCase(repo=UPSTREAM, test=PURGED_FAIL_RPL.format("t", "test"),
                  test_commit="e603acb536d8fa90847cb7ef1a9ca2c0ea1d1ecd",
                  result=PURGED_FAIL_RPL.format("r", "result"),
                  result_commit="e603acb536d8fa90847cb7ef1a9ca2c0ea1d1ecd",
                  line=V5623, versions=("5.6.23",), **_PF_5X),
    ReconnectCase(repo=SERVER, test=PURGED_FAIL_RPL.format("t", "test"),
                  test_commit="36b7ecc731015069808f825ce6581a08cfb504ef",
                  result=PURGED_FAIL_RPL.format("r", "result"),
                  result_commit="36b7ecc731015069808f825ce6581a08cfb504ef",
                  line=L_57_DEV, versions=("5.7.5", "5.7.44"), **_PF_5X),
    ReconnectCase(
        # This version runs CALL mtr.add_suppression on the master first (M:1), so CREATE = M:2 and
        # INSERT (1) = M:3; the .test (35d4a04a) asserts the master's error log names
        # "The missing transactions are '.*:3'" and the .result records that assertion passing.
        step="purge-refused", repo=SERVER, test=PURGED_FAIL_GTID.format("t", "test"),
        test_commit="35d4a04a297f07b48b2fd6605d249307bd51249c",
        result=PURGED_FAIL_GTID.format("r", "result"), result_commit="c958ce4a903de2880c8b56d95d13cb14e4c3401a",
        line=L_80, versions=("8.0.21", "8.0.36"),
        source_executed=f"{M}:1-5", source_purged=f"{M}:1-3", binary_logs=(("master-bin.000002", f"{M}:1-3"),),
        replica_executed=f"{M}:1-2", expect=PURGED, errno=13114, missing=f"{M}:3",
        recorded="call mtr.add_suppression(\".*Cannot replicate.*purged required binary logs.*\");\n"
                 "PURGE BINARY LOGS TO 'master-bin.000002';\n"
                 "include/wait_for_slave_io_error.inc [errno=13114 # ER_SERVER_MASTER_FATAL_ERROR_READING_BINLOG]\n"
                 "include/assert_grep.inc [Found warning containing lost GTIDs]"),
    ReconnectCase(
        # The Bug#29769293 rewrite. Its .result echoes the step comment "so that only remaining
        # binlog only contains transaction UUID:3": CREATE = M:1, INSERT (1) = M:2, INSERT (2) = M:3.
        # The rewrite's .test (the rpl copy, 13beff14; the rpl_gtid copy of this version is not
        # stored) asserts the replica's error log names "the missing transactions are '.*:2'"; the
        # .result records that assertion passing.
        step="purge-refused", repo=SERVER, test=PURGED_FAIL_RPL.format("t", "test"),
        test_commit="13beff146fc5b115f5e826e21eb4ae9ec339f9b4",
        result=PURGED_FAIL_GTID.format("r", "result"), result_commit="1e5f282a84080c781ba159600ba02eb8d3e9dc9a",
        line=L_80, versions=("8.0.21", "8.0.36"),
        source_executed=f"{M}:1-3", source_purged=f"{M}:1-2", binary_logs=(("master-bin.000002", f"{M}:1-2"),),
        replica_executed=f"{M}:1", expect=PURGED, errno=13114, missing=f"{M}:2",
        recorded="#    PURGE BINARY LOGS TO command so that only remaining binlog only contains\n"
                 "#    transaction UUID:3.\n"
                 "PURGE BINARY LOGS TO 'master-bin.000002';\n"
                 "include/wait_for_slave_io_error.inc [errno=13114 # ER_MASTER_FATAL_ERROR_READING_BINLOG]\n"
                 "include/assert_grep.inc [Found warning containing lost GTIDs in the slave error log.]"),
]


# ------------------------------------------------------------------------------------------------
# rpl_gtid_validate_slave_gtids: Bug#19012085 (SET GLOBAL gtid_purged on the source, a replica that
# lacks it; 5.6.22) and Bug#18789758 (the source lost its binary logs and gtid_executed; the replica
# has GTIDs of the source's uuid the source no longer has; 5.6.23), each followed by its fix. The
# binary logs are not recorded (None): the refusals do not need them, and gtid_core answers
# "streams" from the gtid_purged check alone when the list is unknown.
#
# Part 1 (5.x / 8.0 dev): SET GLOBAL GTID_PURGED= "master_uuid:1-2" on the source, CREATE (# GTID-3),
# DROP (# GTID-4) (the .test's comments); a new, empty replica connects. Fix: the replica sets the
# same gtid_purged, then syncs ("Slave should be able to get GTID-3 and 4 now.": gtid_executed
# = M:1-4).
# Part 2: rpl_reset, CREATE (M:1), DROP (M:2) replicated; the source loses its binary logs and index
# (and, from 5.7, mysql.gtid_executed), restarts with an empty gtid_executed; the replica (M:1-2)
# connects. Fix: the source sets gtid_purged = M:1-2; "include/start_slave.inc" then rpl_end.inc,
# which synchronises every server (a refused receiver fails it).

def _validate(repo, line, result_commit, test_path, test_commit, versions, steps):
    result = (VALIDATE_GTID if "/suite/rpl_gtid/" in test_path else VALIDATE_RPL).format("r", "result")
    return [ReconnectCase(repo=repo, test=test_path, test_commit=test_commit, result=result,
                          result_commit=result_commit, line=line, versions=versions, **s) for s in steps]


_PART1_5X = dict(step="gtid_purged-refused", source_executed=f"{M}:1-4", source_purged=f"{M}:1-2", expect=PURGED,
                 errno=1236)
_FIX1_5X = dict(step="gtid_purged-fixed", source_executed=f"{M}:1-4", source_purged=f"{M}:1-2",
                replica_executed=f"{M}:1-2", expect=STREAMS)
_PART2 = dict(step="has_more-refused", source_executed="", source_purged="", replica_executed=f"{M}:1-2",
              expect=HAS_MORE)
_FIX2 = dict(step="has_more-fixed", source_executed=f"{M}:1-2", source_purged=f"{M}:1-2",
             replica_executed=f"{M}:1-2", expect=STREAMS)
_FIX1_REC = ("include/start_slave.inc\ninclude/sync_slave_sql_with_master.inc\n"
             "include/assert.inc [Slave should be able to get GTID-3 and 4 now.]")
_FIX2_REC = "SET GLOBAL GTID_PURGED= \"master_uuid:1-2\";\ninclude/start_slave.inc\ninclude/rpl_end.inc"

VALIDATE = (
    # 5.6.22: part 1 only -- the Bug#18789758 half is not in this tree.
    _validate(UPSTREAM, V5622, "f9725ff9c621c1790c3cb9c27356ec14fb82b511", VALIDATE_RPL.format("t", "test"),
              "f9725ff9c621c1790c3cb9c27356ec14fb82b511", ("5.6.22",), [
                  dict(_PART1_5X, error=ERR_PURGED_5X,
                       recorded="SET GLOBAL GTID_PURGED =\"master_uuid:1-2\";\nCREATE TABLE t1(i INT);\n"
                                "DROP TABLE t1;\nSTART SLAVE IO_THREAD;\n"
                                "include/wait_for_slave_io_error.inc [errno=1236]\n"
                                f"Last_IO_Error = '{ERR_PURGED_5X}'"),
                  dict(_FIX1_5X, recorded="SET GLOBAL GTID_PURGED =\"master_uuid:1-2\";\n" + _FIX1_REC),
              ])
    + _validate(UPSTREAM, V5623, "e603acb536d8fa90847cb7ef1a9ca2c0ea1d1ecd", VALIDATE_RPL.format("t", "test"),
                "e603acb536d8fa90847cb7ef1a9ca2c0ea1d1ecd", ("5.6.23",), [
                    dict(_PART1_5X, error=ERR_PURGED_5X,
                         recorded="SET GLOBAL GTID_PURGED= \"master_uuid:1-2\";\nCREATE TABLE t1(i INT);\n"
                                  "DROP TABLE t1;\nSTART SLAVE IO_THREAD;\n"
                                  "include/wait_for_slave_io_error.inc [errno=1236]\n"
                                  f"Last_IO_Error = '{ERR_PURGED_5X}'"),
                    dict(_FIX1_5X, recorded="SET GLOBAL GTID_PURGED= \"master_uuid:1-2\";\n" + _FIX1_REC),
                    dict(_PART2, errno=1236, error=ERR_MORE_5X,
                         recorded="include/stop_slave.inc\ninclude/rpl_restart_server.inc [server_number=1]\n"
                                  "START SLAVE IO_THREAD;\ninclude/wait_for_slave_io_error.inc [errno=1236]\n"
                                  f"Last_IO_Error = '{ERR_MORE_5X}'"),
                    dict(_FIX2, recorded=_FIX2_REC),
                ])
    # The sets are printed here.
    + _validate(SERVER, L_56_LATE, "1a15643ffe8ea2bbde2b45b2e0e7d9b2cef03199", VALIDATE_RPL.format("t", "test"),
                "3293cbaadbc06f8edf29299e60f8464b3ae619ed", ("5.6.27", "5.6.51"), [
                    dict(_PART1_5X, error=ERR_PURGED_5X_SETS, announced="", missing=f"{M}:1-2",
                         recorded="SET GLOBAL GTID_PURGED= \"master_uuid:1-2\";\nCREATE TABLE t1(i INT);\n"
                                  "DROP TABLE t1;\nSTART SLAVE IO_THREAD;\n"
                                  "include/wait_for_slave_io_error.inc [errno=1236]\n"
                                  f"Last_IO_Error = '{ERR_PURGED_5X_SETS}'"),
                    dict(_FIX1_5X, recorded="SET GLOBAL GTID_PURGED= \"master_uuid:1-2\";\n" + _FIX1_REC),
                    dict(_PART2, errno=1236, error=ERR_MORE_5X_LONG,
                         recorded="include/stop_slave.inc\ninclude/rpl_restart_server.inc [server_number=1]\n"
                                  "START SLAVE IO_THREAD;\ninclude/wait_for_slave_io_error.inc [errno=1236]\n"
                                  f"Last_IO_Error = '{ERR_MORE_5X_LONG}'"),
                    dict(_FIX2, recorded=_FIX2_REC),
                ])
    + _validate(SERVER, L_57, "045f1ec744fc5317d93f1f3fafa0907a6e0c7819", VALIDATE_RPL.format("t", "test"),
                "3293cbaadbc06f8edf29299e60f8464b3ae619ed", ("5.7.6", "5.7.44"), [
                    dict(_PART1_5X, error=ERR_PURGED_5X,
                         recorded="SET GLOBAL GTID_PURGED= \"master_uuid:1-2\";\nCREATE TABLE t1(i INT);\n"
                                  "DROP TABLE t1;\nSTART SLAVE IO_THREAD;\n"
                                  "include/wait_for_slave_io_error.inc [errno=1236]\n"
                                  f"Last_IO_Error = '{ERR_PURGED_5X}'"),
                    dict(_FIX1_5X, recorded="SET GLOBAL GTID_PURGED= \"master_uuid:1-2\";\n" + _FIX1_REC),
                    dict(_PART2, errno=1236, error=ERR_MORE_5X,
                         recorded="FLUSH LOGS;\nDELETE FROM mysql.gtid_executed;\n"
                                  "include/rpl_restart_server.inc [server_number=1]\nSTART SLAVE IO_THREAD;\n"
                                  "include/wait_for_slave_io_error.inc [errno=1236]\n"
                                  f"Last_IO_Error = '{ERR_MORE_5X}'"),
                    dict(_FIX2, recorded=_FIX2_REC),
                ])
    + _validate(SERVER, DEV_80, "4c6353eadd47435740a4de5e54f4afd23ad96d84", VALIDATE_GTID.format("t", "test"),
                "4c6353eadd47435740a4de5e54f4afd23ad96d84", ("8.0.0", "8.0.10"), [
                    dict(_PART1_5X, error=ERR_PURGED_5X,
                         recorded="include/wait_for_slave_io_error.inc [errno=1236]\nWarnings:\nWarning\t3090\t"
                                  "Changing sql mode 'NO_AUTO_CREATE_USER' is deprecated. It will be removed in a "
                                  f"future release.\nLast_IO_Error = '{ERR_PURGED_5X}'"),
                    dict(_FIX1_5X, recorded="SET GLOBAL GTID_PURGED= \"master_uuid:1-2\";\n" + _FIX1_REC),
                    dict(_PART2, errno=1236, error=ERR_MORE_5X,
                         recorded="DELETE FROM mysql.gtid_executed;\n"
                                  "include/rpl_restart_server.inc [server_number=1]\nSTART SLAVE IO_THREAD;\n"
                                  "include/wait_for_slave_io_error.inc [errno=1236]\n"
                                  f"Last_IO_Error = '{ERR_MORE_5X}'"),
                    dict(_FIX2, recorded=_FIX2_REC),
                ])
    # 8.4/9.x: the source's gtid_purged is set in two steps (M:1, then +M:2), then CALL
    # mtr.add_suppression (# GTID-3), CREATE (# GTID-4), DROP (# GTID-5); the replica has
    # SET GLOBAL GTID_PURGED = "master_uuid:1". The sets sent and missing are printed.
    # (ef0995c6 holds the same .result, one sync line apart.)
    + _validate(SERVER, L_84_9, "312d9ed741eada25dc95432484ef492311aa5c9c", VALIDATE_GTID.format("t", "test"),
                "21084af81bf1c6b3dafcc6109477e5ff53f97fa2", ("8.4.3", "9.7.4"), [
                    dict(step="gtid_purged-refused", source_executed=f"{M}:1-5", source_purged=f"{M}:1-2",
                         replica_executed=f"{M}:1", expect=PURGED, errno=13114, error=ERR_PURGED_9X,
                         announced=f"{M}:1", missing=f"{M}:2",
                         recorded="SET GLOBAL GTID_PURGED= \"master_uuid:1\";\n"
                                  "SET GLOBAL GTID_PURGED= \"+master_uuid:2\";\n"
                                  "SET GLOBAL GTID_PURGED = \"master_uuid:1\";\nSTART REPLICA IO_THREAD;\n"
                                  "include/rpl/wait_for_receiver_error.inc [errno=13114]\n"
                                  f"Last_IO_Error = '{ERR_PURGED_9X}'"),
                    dict(step="gtid_purged-fixed", source_executed=f"{M}:1-5", source_purged=f"{M}:1-2",
                         replica_executed=f"{M}:1-2", expect=STREAMS,
                         recorded="SET GLOBAL GTID_PURGED= \"master_uuid:1-2\";\ninclude/rpl/start_replica.inc\n"
                                  "include/rpl/sync_to_replica.inc\n"
                                  "include/assert.inc [Slave should be able to get GTID-3 and 4 now.]"),
                    dict(_PART2, errno=13114, error=ERR_MORE_9X,
                         recorded="DELETE FROM mysql.gtid_executed;\n"
                                  "include/rpl/restart_server.inc [server_number=1]\nSTART REPLICA IO_THREAD;\n"
                                  "include/rpl/wait_for_receiver_error.inc [errno=13114]\n"
                                  f"Last_IO_Error = '{ERR_MORE_9X}'"),
                    dict(_FIX2, recorded="SET GLOBAL GTID_PURGED= \"master_uuid:1-2\";\n"
                                         "include/rpl/start_replica.inc\ninclude/rpl/deinit.inc"),
                ])
)


# ------------------------------------------------------------------------------------------------
# rpl_check_gtid, part 5, on 5.6.22 -- before Bug#18789758. Part 4 left the replica with M:1-4 (one
# transaction per iteration, the .test checks the replica's binary log Previous_gtids against
# "M:1-4"); part 5 runs RESET SLAVE on the replica and RESET MASTER on the source (gtid_executed
# empty), starts the replica, and the source writes two transactions (M:1-2 again). The recorded
# run connects and syncs; the replica's binary log keeps Previous_gtids M:1-4 and no new GTID (the
# source's new M:1-2 were skipped: the data loss Bug#18789758 names). The fix (upstream commit
# 6e6add6bb5, in 5.6.23, not in 5.6.22) had to add RESET MASTER on the replica at this very step,
# and its own test (rpl_gtid_validate_slave_gtids@e603acb5, has_more-refused) shows 5.6.23 refusing.

CHECK_GTID_5622 = ReconnectCase(
    step="part5-replica_has_more-accepted", repo=UPSTREAM, test=CHECK_GTID.format("t", "test"),
    test_commit="f9725ff9c621c1790c3cb9c27356ec14fb82b511", result=CHECK_GTID.format("r", "result"),
    result_commit="f9725ff9c621c1790c3cb9c27356ec14fb82b511", line=V5622, versions=("5.6.22",),
    source_executed="", source_purged="", replica_executed=f"{M}:1-4", expect=STREAMS,
    recorded="==== Part 5 ====\n---- i=1 ----\ninclude/stop_slave.inc\nRESET SLAVE;\nRESET MASTER;\n"
             "include/start_slave.inc\nBEGIN;\nINSERT INTO t1 VALUES(1);\nINSERT INTO t1 VALUES(2);\nCOMMIT;\n"
             "BEGIN;\nINSERT INTO t1 VALUES(1);\nINSERT INTO t1 VALUES(2);\nCOMMIT;\n"
             "include/sync_slave_sql_with_master.inc\nextra/rpl_tests/rpl_check_gtid.inc")


# ------------------------------------------------------------------------------------------------
# rpl_gtids_restart_slave_io_lost_trx (Bug#17280176, the 5.6.15 workaround), 5.6.21 tarball (the
# same .result, blob 6ad5c4cc, in 5.6.22 and 5.6.23): the receiver is stopped right after queuing
# the Gtid (i=1), a Query (i=2) or the User_var event (i=5) of a transaction and restarted; the
# test then asserts master and slave tables equal. Before 5.7.6 the partial GTID is already in
# Retrieved_Gtid_Set; the recorded equality means the replica did not announce it (else the source
# would skip it). Statement order numbers the GTIDs (CREATE t1 = M:1; each iteration commits its
# transaction and one more INSERT); the .result prints none. The .result starts:
#   CREATE TABLE t1(i INT) ENGINE=InnoDB;
#   FLUSH LOGS;
#   include/sync_slave_sql_with_master.inc

def _lost_trx(step, executed_to, partial, recorded):
    return ReconnectCase(
        step=step, repo=TARBALL, test="mysql-test/extra/rpl_tests/rpl_gtids_restart_slave_io_lost_trx.test",
        test_commit="8279d57641e89f96839c82e4a8e592b726007ddd", result=LOST_TRX.format("r", "result"),
        result_commit="8279d57641e89f96839c82e4a8e592b726007ddd", line=V5621, versions=("5.6.21", "5.6.23"),
        source_executed=f"{M}:1-{partial}", source_purged="", replica_executed=f"{M}:1-{executed_to}",
        replica_retrieved=f"{M}:1-{partial}", last_retrieved=f"{M}:{partial}", resent=f"{M}:{partial}",
        # derived, not printed: master-slave.inc starts from RESET MASTER (an empty first binary log);
        # the recorded FLUSH LOGS after CREATE TABLE t1 opens master-bin.000002 after M:1
        binary_logs=(("master-bin.000001", ""), ("master-bin.000002", f"{M}:1")),
        expect=STREAMS, recorded=recorded)


LOST_TRX_CASES = [
    _lost_trx("io_stopped_after_gtid_event", 1, 2,
              "SET GLOBAL DEBUG='d,stop_io_after_reading_gtid_log_event';\nBEGIN;\nINSERT INTO t1 VALUES (1);\n"
              "SET @v= 1 * 100;\nINSERT INTO t1 VALUES (@v);\nCOMMIT;\ninclude/wait_for_slave_io_to_stop.inc\n"
              "SET GLOBAL DEBUG= @save_debug;\ninclude/start_slave_io.inc\nINSERT INTO t1 VALUES (1);\n"
              "include/sync_slave_sql_with_master.inc\ninclude/diff_tables.inc [master:t1, slave:t1]"),
    _lost_trx("io_stopped_after_query_event", 3, 4,
              "SET GLOBAL DEBUG='d,stop_io_after_reading_query_log_event';\nBEGIN;\nINSERT INTO t1 VALUES (2);\n"
              "SET @v= 2 * 100;\nINSERT INTO t1 VALUES (@v);\nCOMMIT;\ninclude/wait_for_slave_io_to_stop.inc\n"
              "SET GLOBAL DEBUG= @save_debug;\ninclude/start_slave_io.inc\nINSERT INTO t1 VALUES (2);\n"
              "include/sync_slave_sql_with_master.inc\ninclude/diff_tables.inc [master:t1, slave:t1]"),
    _lost_trx("io_stopped_after_user_var_event", 9, 10,
              "SET GLOBAL DEBUG='d,stop_io_after_reading_user_var_log_event';\nBEGIN;\nINSERT INTO t1 VALUES (5);\n"
              "SET @v= 5 * 100;\nINSERT INTO t1 VALUES (@v);\nCOMMIT;\ninclude/wait_for_slave_io_to_stop.inc\n"
              "SET GLOBAL DEBUG= @save_debug;\ninclude/start_slave_io.inc\nINSERT INTO t1 VALUES (5);\n"
              "include/sync_slave_sql_with_master.inc\ninclude/diff_tables.inc [master:t1, slave:t1]"),
]

CASES = PURGED_FAIL + VALIDATE + [CHECK_GTID_5622] + LOST_TRX_CASES
REFUSED = [c for c in CASES if c.expect != STREAMS]


def _source(case: ReconnectCase, version: str) -> ServerSnapshot:
    logs = None if case.binary_logs is None else tuple(BinaryLog(n, previous_gtids=G(p)) for n, p in case.binary_logs)
    return ServerSnapshot(name="master", server_uuid=M, version=MySQLVersion.parse(version),
                          gtid_executed=G(case.source_executed), gtid_purged=G(case.source_purged), binary_logs=logs)


def _replay(case: ReconnectCase, version: str):
    last = None if case.last_retrieved is None else Gtid.parse(case.last_retrieved)
    return reconnect_outcome(_source(case, version), gtid_executed=G(case.replica_executed),
                             retrieved_gtid_set=G(case.replica_retrieved), replica_version=MySQLVersion.parse(version),
                             last_retrieved_gtid=last)


_KIND = {PURGED: ReconnectKind.SOURCE_PURGED_REQUIRED, HAS_MORE: ReconnectKind.REPLICA_HAS_MORE_GTIDS,
         STREAMS: ReconnectKind.STREAMS}


def test_cases_cite_full_commits_and_quote_their_result():
    """Every row cites 40-hex commits, a .test and a .result path, and quotes the lines it expects."""
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    for c in CASES:
        assert c.repo in (SERVER, UPSTREAM, TARBALL), c.id
        assert len(c.test_commit) == len(c.result_commit) == 40, c.id
        assert c.test.endswith(".test") and c.result.endswith(".result"), c.id
        assert c.recorded.strip() and c.versions, c.id
        if c.errno is not None:
            assert f"errno={c.errno}" in c.recorded, c.id
        if c.error is not None:
            assert c.error in c.recorded, c.id


@pytest.mark.parametrize("case,version", [(c, v) for c in CASES for v in c.versions],
                         ids=[f"{c.id}@{v}" for c in CASES for v in c.versions])
def test_gtid_core_reconnect_answers_as_recorded(case, version):
    """gtid_core's reconnect outcome at every version the recorded tree can be is the recorded one:
    the refusal and its kind, the set the replica sent and the missing set where the test prints them."""
    outcome = _replay(case, version)
    assert outcome.kind is _KIND[case.expect], (outcome.kind, outcome.rule)
    assert not outcome.version_assumed
    if case.expect == HAS_MORE:
        # the replica's GTIDs of the source's own uuid the source lacks: all of them here
        assert outcome.offending == G(case.replica_executed).for_uuid(M) - G(case.source_executed)
    if case.missing is not None:
        assert outcome.missing == G(case.missing)
    if case.announced is not None:
        assert outcome.announced == G(case.announced)
    if case.resent is not None:
        # retrieved (the plain union would announce it) but not announced: the source sends it again
        assert Gtid.parse(case.resent) in G(case.replica_retrieved)
        assert Gtid.parse(case.resent) not in outcome.announced
        assert G(case.resent) <= G(case.source_executed)


@pytest.mark.parametrize("case", [c for c in REFUSED if c.error], ids=lambda c: c.id)
def test_gtid_core_reads_the_recorded_receiver_error(case):
    """The receiver-error reading of the checks (old master/slave and new source/replica wording) names
    the meaning of every Last_IO_Error text the tests recorded."""
    meaning = _error_meaning(case.errno, _m(case.error))
    if case.expect == PURGED:
        assert meaning == "the source purged binary logs holding transactions this replica still needs"
    else:
        assert meaning.startswith("the replica has GTIDs the source does not")


@pytest.mark.parametrize("case", REFUSED, ids=lambda c: c.id)
def test_simulator_receiver_errno_as_recorded(case):
    """The simulator gives a refused receiver the errno the recorded tree reported (1236 before 8.0.11,
    the 8.0 milestones included; 13114 from 8.0.11 on), at every version the row is replayed at."""
    for version in case.versions:
        assert shape_for(version).source_fatal_errno == case.errno, version


def test_simulator_errno_of_80_milestones():
    """Some 8.0 version before 8.0.11 reports a refused dump as 1236, as the 8.0 milestone tree recorded
    (rpl_gtid_validate_slave_gtids.result@4c6353ea, <= 8.0.10 by its NO_AUTO_CREATE_USER warning); 8.0.11
    (GA) reports 13114, as the 8.0 trees c958ce4a / 1e5f282a recorded."""
    assert any(shape_for(f"8.0.{patch}").source_fatal_errno == 1236 for patch in range(0, 11))
    assert shape_for("8.0.11").source_fatal_errno == 13114


def _sim_replica_status(version: str) -> dict:
    """SHOW [SLAVE|REPLICA] STATUS of the simulator's purged_required replica at ``version``, as served."""
    builder = FleetBuilder(seed=18, base_port=30000)
    _, rep = builder.purged_required("ev", version)
    assert [t.check_id for t in builder.truth] == ["source_purged_required_gtids", "replication_receiver_error"]
    shape = shape_for(version)
    statement = "SHOW SLAVE STATUS" if "SHOW SLAVE STATUS" in shape.replica_status_statements else \
        "SHOW REPLICA STATUS"
    _, answer = SimSession(rep, shape, Latency.parse("0"), random.Random(0)).route(statement)
    rows, cols = answer()
    return dict(zip([c.name for c in cols], rows[0]))


PURGED_REFUSED = [c for c in REFUSED if c.expect == PURGED]


@pytest.mark.parametrize("case", PURGED_REFUSED, ids=lambda c: c.id)
def test_simulator_purged_scenario_refused_as_recorded(case):
    """The simulator's purged_required scenario (an ordinary purge the replica is behind) is a refusal on
    every version the recorded tree can be, and its replica serves the recorded Last_IO_Errno."""
    for version in case.versions:
        status = _sim_replica_status(version)
        assert status["Slave_IO_Running" if "Slave_IO_Running" in status else "Replica_IO_Running"] == "No"
        assert status["Last_IO_Errno"] == case.errno, version


@pytest.mark.parametrize("case", [c for c in PURGED_REFUSED if c.error], ids=lambda c: c.id)
def test_simulator_purged_error_text_as_recorded(case):
    """The simulator's Last_IO_Error for a purged refusal is the recorded text -- the old master/slave
    wording on 5.6, 5.7 and the 8.0 milestone, the source/replica wording on 8.4 / 9.x -- up to the advice
    and the sets the server appends (the simulator leaves them out)."""
    for version in case.versions:
        served = _sim_replica_status(version)["Last_IO_Error"]
        assert case.error.startswith(served.rstrip("'")), (version, served)


@pytest.mark.parametrize("case", LOST_TRX_CASES, ids=lambda c: c.id)
def test_simulator_relay_tail_is_not_a_loss_where_recorded(case):
    """The simulator's relay_tail scenario (a receiver stopped inside a transaction) is a warning, not a
    critical loss, on the versions where the server test recorded the partial transaction fetched again."""
    for version in case.versions:
        builder = FleetBuilder(seed=18, base_port=30000)
        builder.relay_tail("ev", version)
        severities = {t.check_id: t.severity for t in builder.truth}
        assert severities["incomplete_relay_log_tail"] == "warning", version


# ------------------------------------------------------------------------------------------------
# Tagged GTIDs (8.3+): rpl_com_binlog_dump_gtids_skip_tagged. The .test's REQUIREMENTS: "In case
# MYSQL_RPL_SKIP_TAGGED_GTIDS is set (for servers < 8.3), replica should send only untagged GTIDs to
# the source in COM_BINLOG_DUMP_GTID". The test forces that flag with a debug point; its .result
# (mysql-test/suite/rpl_gtid/r/rpl_com_binlog_dump_gtids_skip_tagged.result@312d9ed7) records that the
# source then sends 11111111-...:tag_1:1 although the replica had committed it:
#   SET GTID_NEXT='11111111-1111-1111-1111-111111111111:tag_1:1';   (on the replica)
#   ...
#   include/assert_grep.inc [Observe that transaction with uuid_1 and a tag_1 was received by the replica]

U1 = "11111111-1111-1111-1111-111111111111"


def test_no_tagged_gtids_announced_to_a_source_before_83():
    """An 8.3+ replica connecting to a source older than 8.3 announces only its untagged GTIDs
    (MYSQL_RPL_SKIP_TAGGED_GTIDS, set by request_dump in sql/rpl_replica.cc; the pure rule is tested in
    tests/core/test_reconnect.py)."""
    source = ServerSnapshot(name="master", server_uuid=M, version=MySQLVersion.parse("8.0.36"),
                            gtid_executed=G(f"{M}:1-3"), gtid_purged=GtidSet.EMPTY, binary_logs=None)
    outcome = reconnect_outcome(source, gtid_executed=G(f"{M}:1-3,{U1}:tag_1:1"), retrieved_gtid_set=GtidSet.EMPTY,
                                replica_version=MySQLVersion.parse("9.7.4"))
    assert outcome.announced == G(f"{M}:1-3")


# ------------------------------------------------------------------------------------------------
# Set algebra: binlog_gtid_utils. The functions are gtid_utils.inc's stored functions over the
# server's GTID_SUBSET / GTID_SUBTRACT (GTID_UNION(a, b) = GTID_SUBTRACT(CONCAT(a, ',', b), ''),
# GTID_INTERSECTION(a, b) = GTID_SUBTRACT(a, GTID_SUBTRACT(a, b)), ...): the outputs are the server's
# set algebra in the server's printed form. $uuida etc. are literal in include/gtid_utils.inc.

A = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
B = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
C = "cccccccc-cccc-cccc-cccc-cccccccccccc"
# 5.6.21: the tarball's copy (the same .result, blob ca966735, is in 5.6.22 and 5.6.23; mysql/mysql-server's
# index holds a pre-8.0 copy with the same values, binlog/r/binlog_gtid_utils.result@aae878ec).
UTILS_56 = ("mysql-test/suite/binlog/r/binlog_gtid_utils.result", "8279d57641e89f96839c82e4a8e592b726007ddd",
            "5.6.21", "VERSION file of the tarball: 5.6.21")
UTILS_80 = ("mysql-test/suite/binlog_gtid/r/binlog_gtid_utils.result", "03028b85147fa12917a5fd6131be8e446e6ef71b",
            "8.0+", "suite binlog_gtid (8.0 and later; which line is not told by the file)")

_OPS = {
    "GTID_IS_EQUAL": lambda a, b: int(G(a) == G(b)),
    "GTID_IS_DISJOINT": lambda a, b: int(not G(a).is_intersection_nonempty(G(b))),
    "GTID_IS_DISJOINT_UNION": lambda a, b, s: int(G(s) - G(a) == G(b) and G(s) - G(b) == G(a)),
    "GTID_INTERSECTION": lambda a, b: G(a) & G(b),
    "GTID_UNION": lambda a, b: G(a) | G(b),
    "GTID_SYMMETRIC_DIFFERENCE": lambda a, b: (G(a) | G(b)) - (G(a) & G(b)),
    "GTID_SUBTRACT_UUID": lambda g, u: G(g) - G(g).for_uuid(u),
    "GTID_INTERSECTION_WITH_UUID": lambda g, u: G(g).for_uuid(u),
    "GTID_SUBSET": lambda a, b: int(G(a).is_subset(G(b))),
    "GTID_SUBTRACT": lambda a, b: G(a) - G(b),
}

# (source, function, arguments, recorded output: an int, the printed set, or "ERROR")
_ALGEBRA_COMMON = [
    ("GTID_IS_EQUAL", (f"{A}:1,{B}:3:2:1", f"{B}:1-3,{A}:1"), 1),
    ("GTID_IS_EQUAL", (f"{A}:1,{B}:3:2:1", f"{B}:1:3,{A}:1"), 0),
    ("GTID_IS_DISJOINT", (f"{A}:2", f"{B}:2,{A}:1:3"), 1),
    ("GTID_IS_DISJOINT", (f"{A}:2", f"{B}:2,{A}:1-3"), 0),
    ("GTID_IS_DISJOINT_UNION", (f"{A}:2,{B}:1", f"{A}:1:3", f"{A}:1-3,{B}:1"), 1),
    ("GTID_IS_DISJOINT_UNION", (f"{A}:2,{B}:1", f"{A}:1-3", f"{A}:1-3,{B}:1"), 0),
    ("GTID_IS_DISJOINT_UNION", (f"{A}:2,{B}:1", f"{A}:1", f"{A}:1-3,{B}:1"), 0),
    ("GTID_INTERSECTION", (f"{A}:1-3", f"{A}:5-7"), ""),
    ("GTID_INTERSECTION", (f"{A}:1-3:5-7", f"{A}:3-5"), f"{A}:3:5"),
    ("GTID_INTERSECTION", (f"{A}:1-3", f"{A}:1:2:3"), f"{A}:1-3"),
    ("GTID_INTERSECTION", (f"{B}:1-3", f"{A}:1-3"), ""),
    ("GTID_UNION", (f"{A}:1:3", f"{A}:1:3"), f"{A}:1:3"),
    ("GTID_UNION", (f"{A}:1-3", f"{A}:1:3"), f"{A}:1-3"),
    ("GTID_UNION", (f"{A}:1:3", f"{A}:2:4"), f"{A}:1-4"),
    ("GTID_SYMMETRIC_DIFFERENCE", (f"{A}:1-3", f"{A}:3-5"), f"{A}:1-2:4-5"),
    ("GTID_SYMMETRIC_DIFFERENCE", (f"{A}:1-3", f"{A}:4-5"), f"{A}:1-5"),
    ("GTID_SYMMETRIC_DIFFERENCE", (f"{A}:1-3", f"{B}:1-3"), f"{A}:1-3,\n{B}:1-3"),
    ("GTID_SUBTRACT_UUID", (f"{A}:1-3,{B}:1-3,{C}:1-3", B), f"{A}:1-3,\n{C}:1-3"),
    ("GTID_SUBTRACT_UUID", (f"{A}:1-3,{C}:1-3", B), f"{A}:1-3,\n{C}:1-3"),
    ("GTID_SUBTRACT_UUID", (f"{B}:1-3", B), ""),
    ("GTID_INTERSECTION_WITH_UUID", (f"{A}:1-3,{B}:1-3,{C}:1-3", B), f"{B}:1-3"),
    ("GTID_INTERSECTION_WITH_UUID", (f"{A}:1-3,{C}:1-3", B), ""),
    ("GTID_INTERSECTION_WITH_UUID", (f"{B}:1-3", B), f"{B}:1-3"),
]
_MAX, _TOO_BIG = (1 << 63) - 2, (1 << 63) - 1
ALGEBRA = (
    [(UTILS_56, *row) for row in _ALGEBRA_COMMON]
    # SELECT GTID_SUBTRACT_UUID(CONCAT('a:1-', 1 << 63 - 1), 'a') -> '' (1 << 62 by precedence)
    + [(UTILS_56, "GTID_SUBTRACT_UUID", (f"{A}:1-{1 << 62}", A), "")]
    + [(UTILS_80, *row) for row in _ALGEBRA_COMMON]
    + [(UTILS_80, *row) for row in [
        # "#### Max values for built-in functions ####" / "#### Min values for built-in functions ####"
        ("GTID_SUBSET", (f"{A}:1-{_MAX}", ""), 0),
        ("GTID_SUBSET", ("", f"{A}:1-{_MAX}"), 1),
        ("GTID_SUBSET", (f"{A}:1-{_TOO_BIG}", ""), "ERROR"),
        ("GTID_SUBSET", ("", f"{A}:1-{_TOO_BIG}"), "ERROR"),
        ("GTID_SUBTRACT", (f"{A}:1-{_MAX}", ""), f"{A}:1-9223372036854775806"),
        ("GTID_SUBTRACT", ("", f"{A}:1-{_MAX}"), ""),
        ("GTID_SUBTRACT", (f"{A}:1-{_TOO_BIG}", ""), "ERROR"),
        ("GTID_SUBTRACT", (f"{A}:0-1", ""), "ERROR"),
        ("GTID_SUBTRACT", (f"{A}:0", ""), "ERROR"),
        ("GTID_SUBSET", (f"{A}:0-1", ""), "ERROR"),
        ("GTID_SUBSET", ("", f"{A}:0"), "ERROR"),
        ("GTID_SUBTRACT_UUID", (f"{A}:1-{_MAX}", A), ""),
        ("GTID_SUBTRACT_UUID", (f"{A}:1-{_TOO_BIG}", A), "ERROR"),
        ("GTID_INTERSECTION_WITH_UUID", (f"{A}:1-{_MAX}", A), f"{A}:1-9223372036854775806"),
        ("GTID_INTERSECTION_WITH_UUID", (f"{A}:1-{_TOO_BIG}", A), "ERROR"),
    ]]
)
# "ERROR" stands for the recorded "ERROR HY000: Malformed GTID set specification '...'." (1772).


def _algebra_id(row) -> str:
    (path, commit, line, _), func, args, _out = row
    name = path.rsplit("/", 1)[-1].removesuffix(".result")
    short = ",".join(a.replace(A, "a").replace(B, "b").replace(C, "c") for a in args)
    return f"{name}@{commit[:8]}[{line}]:{func}({short})"


@pytest.mark.parametrize("row", ALGEBRA, ids=[_algebra_id(r) for r in ALGEBRA])
def test_gtid_core_set_algebra_as_recorded(row):
    """gtid_core's set algebra and canonical text give what the server printed for the same function,
    and it rejects what the server called a malformed GTID set."""
    _, func, args, recorded = row
    if recorded == "ERROR":
        with pytest.raises(GtidParseError):
            _OPS[func](*args)
        return
    answer = _OPS[func](*args)
    if isinstance(recorded, int):
        assert answer == recorded
    else:
        assert str(answer) == recorded


@pytest.mark.parametrize("row", [r for r in ALGEBRA if isinstance(r[3], str) and r[3] != "ERROR"],
                         ids=[_algebra_id(r) for r in ALGEBRA if isinstance(r[3], str) and r[3] != "ERROR"])
def test_simulator_serves_sets_as_the_server_prints_them(row):
    """A simulated server whose gtid_executed is the function's result serves, through SimSession, the
    text the real server printed (canonical order, ',\\n' between uuids, '' when empty)."""
    _, func, args, recorded = row
    builder = FleetBuilder(seed=18, base_port=30000)
    server = builder.standalone("alg", "9.7.4")
    server.gtid_executed = sim_text(_OPS[func](*args))
    _, answer = SimSession(server, shape_for(server.version), Latency.parse("0"),
                           random.Random(0)).route("SELECT @@GLOBAL.gtid_executed")
    rows, _ = answer()
    assert rows == [(recorded,)]
