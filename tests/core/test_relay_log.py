"""The transaction boundary parser over SHOW RELAYLOG EVENTS rows (golden rows from MySQL 9.7.4)."""
import json
from pathlib import Path

import pytest

from gtid_core.errors import SnapshotError
from gtid_core.gtid_set import GtidSet
from gtid_core.relay_log import ParserState, RelayLogEvent, gtid_of_event, parse_relay_log
from gtid_core.snapshots import Gtid

DATA = Path(__file__).resolve().parents[1] / "data"
SRC = "b6e7b27c-e69b-11f1-8d81-02fc00000001"


@pytest.fixture(scope="module")
def workload():
    return json.loads((DATA / "relaylog_mysql97_workload.json").read_text())


def _upto(rows, log_name, pos, event_type):
    """Rows up to and including the one at (log_name, pos, event_type)."""
    for i, r in enumerate(rows):
        if (r["Log_name"], r["Pos"], r["Event_type"]) == (log_name, pos, event_type):
            return rows[: i + 1]
    raise AssertionError(f"row {log_name}:{pos} {event_type} not in the golden data")


def test_full_relay_log_ends_outside_transaction(workload):
    """The whole captured relay log (every event type of the workload) ends in state NONE."""
    result = parse_relay_log(workload["relaylog_events"])
    assert result.state is ParserState.NONE
    assert result.dangling_gtid is None and not result.rejected


def test_completed_gtids_match_the_servers_retrieved_set(workload):
    """The GTIDs of complete groups equal what the server put in Retrieved_Gtid_Set for these files
    (Retrieved_Gtid_Set minus the Previous_gtids of the first relay log shown)."""
    result = parse_relay_log(workload["relaylog_events"])
    completed = GtidSet.from_intervals((g.uuid, g.tag, g.gno, g.gno) for g in result.completed_gtids)
    first_previous = GtidSet.parse(workload["relaylog_events"][1]["Info"])
    retrieved = GtidSet.parse(workload["replica_Retrieved_Gtid_Set"])
    assert completed == retrieved - first_previous
    assert completed == GtidSet.parse(f"{SRC}:16-30:200:audit_tag:2:60")


def test_source_binlog_events_parse_too(workload):
    """SHOW BINLOG EVENTS rows (same columns) go through the same parser."""
    result = parse_relay_log(workload["source_binlog_events"])
    assert result.state is ParserState.NONE and not result.rejected


@pytest.mark.parametrize(
    "cut, state, gtid",
    [
        (("relay.000004", 1795, "Gtid_tagged_log_event"), ParserState.GTID, Gtid(SRC, "audit_tag", 2)),
        (("relay.000004", 1420, "Write_rows"), ParserState.DML, Gtid(SRC, None, 19)),
        (("relay.000004", 2241, "Intvar"), ParserState.DML, Gtid(SRC, None, 21)),
        (("relay.000004", 2601, "User var"), ParserState.DML, Gtid(SRC, None, 22)),
        (("relay.000004", 2979, "RAND"), ParserState.DML, Gtid(SRC, None, 23)),
        (("relay.000004", 3322, "Rows_query"), ParserState.DML, Gtid(SRC, None, 24)),
        (("relay.000004", 3821, "Query"), ParserState.DML, Gtid(SRC, None, 25)),  # XA END
        (("relay.000004", 3948, "Gtid"), ParserState.GTID, Gtid(SRC, None, 26)),  # before XA COMMIT
        (("relay.000004", 4682, "Gtid"), ParserState.GTID, Gtid(SRC, None, 29)),  # before Transaction_payload
        (("relay.000004", 5248, "Query"), ParserState.DML, Gtid(SRC, "audit_tag", 60)),  # empty trx, BEGIN
    ],
    ids=["tagged-gtid", "write-rows", "intvar", "user-var", "rand", "rows-query", "xa-end", "gtid-xa-commit",
         "gtid-payload", "empty-trx-begin"],
)
def test_cut_inside_a_group(workload, cut, state, gtid):
    """A relay log cut inside a group ends in GTID/DML with that group's GTID dangling."""
    result = parse_relay_log(_upto(workload["relaylog_events"], *cut))
    assert result.state is state
    assert result.dangling_gtid == gtid
    assert result.ends_inside_transaction


@pytest.mark.parametrize(
    "cut",
    [
        ("relay.000004", 3909, "XA_prepare"),
        ("relay.000004", 4025, "Query"),       # XA COMMIT after its own Gtid
        ("relay.000004", 4589, "Query"),       # XA ROLLBACK after its own Gtid
        ("relay.000004", 4761, "Transaction_payload"),
        ("relay.000004", 849, "Query"),        # CREATE DATABASE (DDL)
        ("relay.000004", 5089, "Query"),       # COMMIT of an empty transaction
    ],
    ids=["xa-prepare", "xa-commit", "xa-rollback", "payload", "ddl", "commit"],
)
def test_cut_at_a_group_end(workload, cut):
    """A relay log cut right after a group's last event ends in NONE."""
    result = parse_relay_log(_upto(workload["relaylog_events"], *cut))
    assert result.state is ParserState.NONE
    assert result.dangling_gtid is None


def test_payload_contents_are_not_fed_to_the_parser(workload):
    """Events listed after a Transaction_payload (its decompressed contents) are skipped: the
    payload completes GTID 29 by itself and nothing is rejected."""
    rows = _upto(workload["relaylog_events"], "relay.000004", 4941, "Xid")
    result = parse_relay_log(rows)
    assert result.state is ParserState.NONE
    assert result.completed_gtids[-1] == Gtid(SRC, None, 29)
    assert not result.rejected
    assert result.last_event.event_type == "Transaction_payload"


def test_real_receiver_stopped_mid_transaction():
    """Golden rows of a receiver stopped inside a big UPDATE: state DML, the dangling GTID is the one the
    server shows as QUEUEING_TRANSACTION, and it is not in Retrieved_Gtid_Set."""
    d = json.loads((DATA / "relaylog_mysql97_receiver_stopped_mid_transaction.json").read_text())
    result = parse_relay_log(d["relay_tail"])
    queueing = d["channel"]["connection_status"]["QUEUEING_TRANSACTION"]
    assert result.state is ParserState.DML
    assert str(result.dangling_gtid) == queueing == f"{SRC}:50"
    assert result.dangling_gtid not in GtidSet.parse(d["channel"]["replica_status"]["Retrieved_Gtid_Set"])


def ev(event_type, info="", pos=100, log="relay.000002"):
    return {"Log_name": log, "Pos": pos, "Event_type": event_type, "Server_id": 1, "End_log_pos": pos + 10,
            "Info": info}


# Rows in the 5.6 format documented in the seeds (SHOW BINLOG EVENTS on 5.6.23), not captured here.
def test_56_ddl_with_use_prefix():
    """A 5.6 DDL group (Gtid, Query 'use `test`; create table ...') completes."""
    rows = [ev("Format_desc", "Server ver: 5.6.23-log, Binlog ver: 4", 4),
            ev("Previous_gtids", "381cbe4b-1e84-11e7-9f2f-e41f136aba3e:1-2", 120),
            ev("Gtid", "SET @@SESSION.GTID_NEXT= '381cbe4b-1e84-11e7-9f2f-e41f136aba3e:3'", 191),
            ev("Query", "use `test`; create table t(id int)", 239)]
    result = parse_relay_log(rows)
    assert result.state is ParserState.NONE
    assert result.completed_gtids == (Gtid("381cbe4b-1e84-11e7-9f2f-e41f136aba3e", None, 3),)


def test_ddl_pre_statement_state():
    """Gtid then User var (a DDL's pre-statement) is state DDL; the Query ends it."""
    rows = [ev("Gtid", f"SET @@SESSION.GTID_NEXT= '{SRC}:7'"), ev("User var", "@`a`=1")]
    assert parse_relay_log(rows).state is ParserState.DDL
    assert parse_relay_log(rows + [ev("Query", "CREATE TABLE t2 (a INT)")]).state is ParserState.NONE


def test_rollback_to_savepoint_is_not_an_end():
    """ROLLBACK TO a savepoint stays inside the transaction; ROLLBACK ends it."""
    rows = [ev("Gtid", f"SET @@SESSION.GTID_NEXT= '{SRC}:7'"), ev("Query", "BEGIN"),
            ev("Query", "ROLLBACK TO `sp1`")]
    assert parse_relay_log(rows).state is ParserState.DML
    assert parse_relay_log(rows + [ev("Query", "ROLLBACK")]).state is ParserState.NONE


def test_anonymous_gtid_dangles_without_gtid():
    """An anonymous group cut in the middle dangles with no GTID to report."""
    rows = [ev("Anonymous_Gtid", "SET @@SESSION.GTID_NEXT= 'ANONYMOUS'"), ev("Query", "BEGIN")]
    result = parse_relay_log(rows)
    assert result.state is ParserState.DML and result.dangling_gtid is None


def test_unexpected_events_are_rejected_like_the_server():
    """Xid outside a transaction and a Gtid inside one are what the server warns about."""
    result = parse_relay_log([ev("Xid", "COMMIT /* xid=1 */")])
    assert result.state is ParserState.NONE and len(result.rejected) == 1
    rows = [ev("Gtid", f"SET @@SESSION.GTID_NEXT= '{SRC}:7'"), ev("Query", "BEGIN"),
            ev("Gtid", f"SET @@SESSION.GTID_NEXT= '{SRC}:8'")]
    result = parse_relay_log(rows)
    assert result.state is ParserState.GTID and result.dangling_gtid == Gtid(SRC, None, 8)
    assert len(result.rejected) == 1


def test_unknown_event_type_is_error_state():
    """An event type the parser does not know puts it in ERROR, like a non-ignorable unknown event."""
    result = parse_relay_log([ev("Gtid", f"SET @@SESSION.GTID_NEXT= '{SRC}:7'"), ev("Mystery_event")])
    assert result.state is ParserState.ERROR
    assert not result.ends_inside_transaction


def test_gtid_of_event_bad_info():
    """A Gtid event whose Info is not SET @@SESSION.GTID_NEXT= '...' raises SnapshotError quoting it."""
    with pytest.raises(SnapshotError, match="garbage"):
        gtid_of_event(RelayLogEvent.from_row(ev("Gtid", "garbage")))


def test_row_missing_columns():
    """A row without Log_name/Pos/Event_type is rejected naming the row."""
    with pytest.raises(SnapshotError):
        RelayLogEvent.from_row({"Info": "x"})


LIVE_WORKLOAD = [
    "CREATE DATABASE IF NOT EXISTS gtid_core_relay_live",
    "CREATE TABLE IF NOT EXISTS gtid_core_relay_live.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
    "INSERT INTO gtid_core_relay_live.t (v) VALUES (1)",
    "SET GTID_NEXT='AUTOMATIC:live_tag'",
    "INSERT INTO gtid_core_relay_live.t (v) VALUES (2)",
    "SET GTID_NEXT='AUTOMATIC'",
    "SET SESSION binlog_format=STATEMENT",
    "SET @uv = 42",
    "INSERT INTO gtid_core_relay_live.t (v) VALUES (@uv)",
    "SET SESSION binlog_format=ROW",
    "XA START 'gcl1'", "INSERT INTO gtid_core_relay_live.t (v) VALUES (3)", "XA END 'gcl1'", "XA PREPARE 'gcl1'",
    "XA COMMIT 'gcl1'",
    "SET SESSION binlog_transaction_compression=ON",
    "INSERT INTO gtid_core_relay_live.t (v) VALUES (4), (5)",
    "SET SESSION binlog_transaction_compression=OFF",
    "BEGIN", "UPDATE gtid_core_relay_live.t SET v = v + 1", "COMMIT",
]


@pytest.mark.mysql
def test_live_binlog_events_match_server_gtid_subtract(mysql_server):
    """On a real server: the GTIDs of the complete groups in SHOW BINLOG EVENTS after a workload are exactly
    GTID_SUBTRACT(gtid_executed after, before) as the server computes it, and a cut after the last Table_map
    dangles with the last GTID."""
    import contextlib

    with contextlib.closing(mysql_server.connect()) as conn:
        cur = conn.cursor(dictionary=True)
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SELECT @@GLOBAL.gtid_executed AS e")
        before = cur.fetchall()[0]["e"]
        for sql in LIVE_WORKLOAD:
            cur.execute(sql)
            if cur.with_rows:
                cur.fetchall()
        cur.execute("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s) AS d", (before,))
        added = GtidSet.parse(cur.fetchall()[0]["d"])
        cur.execute("SHOW BINARY LOG STATUS")
        current = cur.fetchall()[0]["File"]
        cur.execute(f"SHOW BINLOG EVENTS IN '{current}'")
        rows = [{k: (v.decode() if isinstance(v, (bytes, bytearray)) else v) for k, v in r.items()}
                for r in cur.fetchall()]
    result = parse_relay_log(rows)
    assert result.state is ParserState.NONE and not result.rejected
    completed = GtidSet.from_intervals((g.uuid, g.tag, g.gno, g.gno) for g in result.completed_gtids)
    assert completed == added
    assert any(g.tag == "live_tag" for g in result.completed_gtids)
    last_table_map = max(i for i, r in enumerate(rows) if r["Event_type"] == "Table_map")
    cut = parse_relay_log(rows[: last_table_map + 1])
    assert cut.state is ParserState.DML
    assert cut.dangling_gtid == result.completed_gtids[-1]
