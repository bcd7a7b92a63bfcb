"""The pair checks' and the failover model's inputs in the Spark plan (jobs/audit.py
``pair_frame``, ``failover_frame``) over in-memory snapshot tables: a source with many replicas
is cut into rows of a bounded number of pairs, each with the source's binary-log headers; the
failover model gets one row per source, without relay tails or headers; the findings and
readiness rows equal those of one pass over the whole source (issue #19)."""
from __future__ import annotations

import datetime as dt

import pytest

pytestmark = pytest.mark.spark

A = "aaaaaaaa-0000-4000-8000-000000000001"
B = "bbbbbbbb-0000-4000-8000-000000000002"
D = "dddddddd-0000-4000-8000-000000000004"
DAY = dt.date(2026, 11, 28)
AT = dt.datetime(2026, 11, 28, 3, 0, tzinfo=dt.timezone.utc)
REPLICAS = 7


def uuid(n: int) -> str:
    return f"eeeeeeee-0000-4000-8000-{n:012d}"


def server(name, server_uuid, executed, seconds=0, purged=""):
    at = AT + dt.timedelta(seconds=seconds)
    return {"run_id": "r", "run_date": DAY, "server": name, "cluster": "c", "host": "h", "port": 3306,
            "discovered": False, "status": "ok", "server_uuid": server_uuid, "server_id": seconds + 1,
            "version": "9.7.4", "gtid_mode": "ON", "gtid_executed": executed, "gtid_purged": purged,
            "read_started_at": at, "read_at": at}


def channel(replica, retrieved, *, running=True, source="src", source_uuid=A):
    state = "Yes" if running else "No"
    return {"run_id": "r", "run_date": DAY, "server": replica, "cluster": "c", "channel_name": "",
            "status_statement": "SHOW REPLICA STATUS", "source_server": source, "source_host": "h",
            "source_port": 3306, "source_uuid": source_uuid, "retrieved_gtid_set": retrieved,
            "auto_position": True, "io_running": state, "sql_running": state, "relay_tail_events": 1}


def binlog(seq, name, previous, source="src"):
    return {"run_id": "r", "run_date": DAY, "server": source, "seq": seq, "log_name": name, "file_size": 100,
            "encrypted": False, "previous_gtids": previous, "previous_gtids_read": True, "read_at": AT}


def relay(replica, gtid):
    return {"run_id": "r", "run_date": DAY, "server": replica, "channel_name": "", "seq": 1,
            "log_name": "relay.000002", "pos": 4, "event_type": "Gtid", "event_server_id": 1,
            "end_log_pos": 100, "gtid": gtid, "query_kind": None}


# src: r1 is stopped 3 transactions behind and read last: it lacks what its siblings have
SERVERS = [server("src", A, f"{A}:1-10")] + [
    server(f"r{i}", uuid(i), f"{A}:1-{7 if i == 1 else 10}", seconds=i if i > 1 else REPLICAS + 1)
    for i in range(1, REPLICAS + 1)]
CHANNELS = [channel(f"r{i}", f"{A}:1-{7 if i == 1 else 10}", running=i != 1) for i in range(1, REPLICAS + 1)]
BINLOGS = [binlog(1, "b.000001", ""), binlog(2, "b.000002", f"{A}:1-5")]
RELAY = [relay(f"r{i}", f"{A}:{7 if i == 1 else 10}") for i in range(1, REPLICAS + 1)]
# src2: a purge ran between the read of gtid_purged (1-5) and SHOW BINARY LOGS (the first file
# left starts after 9): only its headers say that it already refuses q1, which received up to 8
# and applied up to 3. Promoted, q2 (purged 1-5) refuses q1 too, over what src2 purged: the
# failover model must see the headers to know that this refusal is not q2's doing
SERVERS += [server("src2", B, f"{B}:1-10", purged=f"{B}:1-5"),
            server("q1", uuid(101), f"{B}:1-3", seconds=20),
            server("q2", uuid(102), f"{B}:1-10", seconds=10, purged=f"{B}:1-5")]
CHANNELS += [channel("q1", f"{B}:1-8", running=False, source="src2", source_uuid=B),
             channel("q2", f"{B}:1-10", source="src2", source_uuid=B)]
BINLOGS += [binlog(1, "c.000003", f"{B}:1-9", source="src2")]
RELAY += [relay("q1", f"{B}:8"), relay("q2", f"{B}:10")]
# src3: a Previous_gtids that does not parse: snapshot_invalid for its pair, and no failover row
SERVERS += [server("src3", D, f"{D}:1-10"), server("p1", uuid(201), f"{D}:1-10", seconds=5)]
CHANNELS += [channel("p1", f"{D}:1-10", source="src3", source_uuid=D)]
BINLOGS += [binlog(1, "d.000001", "garbage", source="src3")]
RELAY += [relay("p1", f"{D}:10")]


@pytest.fixture(scope="module")
def frames(spark):
    from jobs.audit import snapshot_frame
    from schemas import get_table

    def df(name, rows):
        schema = get_table(name)
        return spark.createDataFrame([{c.name: r.get(c.name) for c in schema.columns} for r in rows],
                                     schema=schema.to_spark())

    snaps = snapshot_frame(df("servers", SERVERS), df("binary_logs", BINLOGS))
    return snaps, df("channels", CHANNELS), df("relay_log_tail", RELAY)


def test_a_source_is_cut_into_rows_of_at_most_pairs_per_row(frames):
    """Seven pairs, three per row: rows of 3, 3 and 1 pairs in (replica, channel) order, each
    with the source's binary-log headers and every pair's relay tail."""
    from jobs.audit import pair_frame, resolved_pairs

    snaps, channels, relay = frames
    rows = [r.asDict(recursive=True)
            for r in pair_frame(resolved_pairs(snaps, channels), snaps, relay, pairs_per_row=3).collect()
            if r["source_snapshot"]["server"] == "src"]
    assert sorted(len(r["pairs"]) for r in rows) == [1, 3, 3]
    assert sorted(sorted(p["replica"]["server"] for p in r["pairs"]) for r in rows) == [
        ["r1", "r2", "r3"], ["r4", "r5", "r6"], ["r7"]]
    for r in rows:
        assert [b["log_name"] for b in sorted(r["source_snapshot"]["binary_logs"], key=lambda b: b["seq"])] == [
            "b.000001", "b.000002"]
        assert all(len(p["relay_tail"]) == 1 and "binary_logs" not in p["replica"] for p in r["pairs"])


def test_the_failover_model_gets_one_row_per_source_without_relay_tails(frames):
    from jobs.audit import failover_frame, resolved_pairs

    snaps, channels, _ = frames
    rows = {r["source_snapshot"]["server"]: r.asDict(recursive=True)
            for r in failover_frame(resolved_pairs(snaps, channels), snaps).collect()}
    assert sorted(rows) == ["src", "src2", "src3"]
    row = rows["src"]
    # the source's headers come along: the model asks whether the old source refuses a sibling
    assert [b["log_name"] for b in sorted(row["source_snapshot"]["binary_logs"], key=lambda b: b["seq"])] == [
        "b.000001", "b.000002"]
    assert sorted(p["replica"]["server"] for p in row["pairs"]) == [f"r{i}" for i in range(1, REPLICAS + 1)]
    assert all(set(p) == {"channel", "replica", "all_channels"} for p in row["pairs"])


def test_the_two_passes_give_what_one_pass_over_the_whole_source_gives(frames):
    """The Spark passes' findings, readiness rows and horizons, whole rows, equal what the task
    bodies give on each source as one row with everything the old single pass had (the
    source's headers, every pair's relay tail): cutting the pairs and leaving the tails out of
    the failover rows change nothing."""
    from jobs.audit import (failover_frame, failover_output_frame, output_of, pair_frame,
                            pair_output_frame, resolved_pairs)
    from jobs.audit_tasks import failover_batches, pair_batches

    snaps, channels, relay = frames
    resolved = resolved_pairs(snaps, channels)
    pair_out = pair_output_frame(pair_frame(resolved, snaps, relay, pairs_per_row=2))
    failover_out = failover_output_frame(failover_frame(resolved, snaps), run_id="r", run_date=DAY)

    def rows(*frames_of):
        return sorted((r.asDict(recursive=True) for df, name in frames_of for r in output_of(df, name).collect()),
                      key=repr)

    spark_out = {"finding": rows((pair_out, "finding"), (failover_out, "finding")),
                 "readiness": rows((failover_out, "readiness")), "horizon": rows((pair_out, "horizon"))}

    # each source whole, as Arrow (as a task gets it: timestamps in UTC)
    whole = pair_frame(resolved, snaps, relay, pairs_per_row=100).toArrow()
    assert whole.num_rows == 3
    direct = {"finding": [], "readiness": [], "horizon": []}
    for make in (lambda t: pair_batches(iter(t.to_batches())),
                 lambda t: failover_batches(iter(t.to_batches()), run_id="r", run_date=DAY)):
        for out in make(whole):
            for r in out.to_pylist():
                direct[r["output"]].append(r[r["output"]])
    want = {k: sorted(v, key=repr) for k, v in direct.items()}
    assert spark_out == want

    # and they say something. src: r1 lacks 8-10, which the source still has in b.000002
    assert [(h["replica"], h["start_file"], h["purge_margin"], h["lacking_count"]) for h in spark_out["horizon"]
            if h["source"] == "src"] == [("r1", "b.000002", 1, 3)]
    readiness = {(r["source"], r["candidate"], r["sibling"]): r for r in spark_out["readiness"]}
    assert readiness["src", "r1", "src"]["verdict"] == "loses_transactions"
    assert any(f["check_id"] == "failover_candidate_unsafe" and f["server"] == "r1" for f in spark_out["finding"])
    # src2: its headers say it already refuses q1, so promoting q2 is not blamed for refusing it
    refused = readiness["src2", "q2", "q1"]
    assert (refused["sibling_result"], refused["already_refused_by_source"]) == ("refused", True)
    assert refused["cost_refused_siblings"] == 0 and refused["verdict"] != "refuses_siblings"
    # src3: its pair is snapshot_invalid, and its unparseable source gets no failover row
    assert [(f["check_id"], f["server"]) for f in spark_out["finding"] if f["source"] == "src3"] == [
        ("snapshot_invalid", "p1")]
    assert not [r for r in spark_out["readiness"] if r["source"] == "src3"]


def test_every_channel_of_a_pair_carries_its_own_and_its_sources_read_instants(frames):
    """all_channels carries each channel's read instant and its source's (start and end): what
    _confirmed_channels orders a multi-source replica's channels by. A column misnamed on the Spark
    side would arrive as NULL and silently fall back to "first by name"; here each is the row's own."""
    from jobs.audit import resolved_pairs

    snaps, channels, _ = frames
    rows = {r["server"]: r.asDict(recursive=True) for r in resolved_pairs(snaps, channels).collect()}
    at = AT.astimezone().replace(tzinfo=None)      # collect() hands timestamps back naive, in local time
    [entry] = rows["q1"]["all_channels"]
    assert entry["source_server"] == "src2" and entry["channel_read_at"] is None   # the channel row has none
    assert entry["source_read_started_at"] == entry["source_read_at"] == at            # src2 was read at AT
    [entry] = rows["r2"]["all_channels"]
    assert (entry["source_server"], entry["source_read_started_at"]) == ("src", at)
