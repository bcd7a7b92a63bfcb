"""The mapInArrow bodies (jobs/audit_tasks.py) on Arrow batches built by hand: what Spark runs per batch."""
from __future__ import annotations

import pyarrow as pa
import pytest

from jobs.audit_tasks import check_server_batches, failover_batches, pair_batches

A = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
B = "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
C = "cccccccc-cccc-cccc-cccc-cccccccccccc"


def snap(name, uuid, executed, purged=""):
    return {"server": name, "cluster": "c1", "status": "ok", "server_uuid": uuid, "version": "9.7.4",
            "gtid_mode": "ON", "gtid_executed": executed, "gtid_purged": purged, "binary_logs": None}


def chan(name, source_uuid, retrieved):
    return {"channel_name": name, "source_host": "h", "source_port": 1, "source_uuid": source_uuid,
            "retrieved_gtid_set": retrieved, "io_running": "Yes", "sql_running": "Yes", "auto_position": True,
            "relay_tail_events": None}


def pair(replica, channel, all_channels=None):
    return {"channel": channel, "replica": replica, "relay_tail": None, "all_channels": all_channels}


def source(src, *pairs):
    """One input row of pair_batches and failover_batches: a source and every pair resolved to it."""
    return {"source_snapshot": src, "pairs": list(pairs)}


def run(rows, body, *args):
    (out,) = list(body(iter([pa.RecordBatch.from_pylist(rows)]), *args))
    return out.to_pylist()


def outputs(rows, registry):
    """pair_batches' and failover_batches' rows, by output: {'finding': [...], 'readiness': [...],
    'horizon': [...]}; the pair pass yields no readiness row, the failover pass no horizon."""
    out = {"finding": [], "readiness": [], "horizon": []}
    passes = {"pair": pair_batches(iter([pa.RecordBatch.from_pylist(rows)]), registry=registry),
              "failover": failover_batches(iter([pa.RecordBatch.from_pylist(rows)]))}
    for name, batches in passes.items():
        for batch in batches:
            for r in batch.to_pylist():
                assert r["output"] != ("readiness" if name == "pair" else "horizon")
                out[r["output"]].append(r[r["output"]])
    return out


def check_source(rows, registry):
    return outputs(rows, registry)["finding"]


def pair_findings(rows):
    """The pair checks' findings (the failover model's, which follow from them, left out)."""
    from gtid_core.failover import FAILOVER_CHECKS

    return [r for r in rows if r["check_id"] not in FAILOVER_CHECKS]


def test_bad_value_becomes_a_finding():
    """A GTID set the parser refuses yields snapshot_invalid quoting it; the batch goes on."""
    src = snap("src", A, f"{A}:1-10")
    rows = [source(src, pair(snap("r1", B, "not-a-gtid-set"), chan("", A, f"{A}:1-10")),
                   pair(snap("r2", C, f"{A}:1-10"), chan("", A, f"{A}:1-10")))]
    out = check_source(rows, {A: "src", B: "r1", C: "r2"})
    assert [(r["check_id"], r["server"], r["source"]) for r in out] == [("snapshot_invalid", "r1", "src")]
    assert "'not-a-gtid-set'" in out[0]["detail"]


def test_other_channel_gtids_are_not_errant():
    """A multi-source replica's GTIDs from its other channel are not errant for this channel."""
    src, other = snap("src", A, f"{A}:1-10"), snap("bsrc", B, f"{B}:1-5")
    replica = snap("r", C, f"{A}:1-10,{B}:1-5")
    every = [{"channel_name": "orders", "retrieved_gtid_set": f"{A}:1-10", "source_server": "src",
              "source_gtid_executed": f"{A}:1-10"},
             {"channel_name": "billing", "retrieved_gtid_set": f"{B}:1-5", "source_server": "bsrc",
              "source_gtid_executed": f"{B}:1-5"}]
    out = check_source([source(src, pair(replica, chan("orders", A, f"{A}:1-10"), every))], {})
    assert pair_findings(out) == []
    # promoted, r would stream its billing channel's GTIDs into src: a warning on both readiness findings
    # (issue 18, defect 6), never a critical, for it loses nothing and refuses nobody
    assert sorted((r["check_id"], r["severity"], r["gtid_set"]) for r in out) == [
        ("failover_candidate_unsafe", "warning", f"{B}:1-5"), ("no_safe_failover_candidate", "warning", None)]
    out = pair_findings(check_source([source(src, pair(replica, chan("orders", A, f"{A}:1-10"), every[:1]))], {}))
    assert [(r["check_id"], r["gtid_set"], r["channel"]) for r in out] == [("errant_transactions", f"{B}:1-5", "orders")]


def _two_channels(replica, osrc, bsrc, *, billing_retrieved=f"{B}:1-5"):
    """A replica of osrc (channel 'orders') and bsrc (channel 'billing'): both pairs' input rows."""
    every = [{"channel_name": "orders", "retrieved_gtid_set": f"{A}:1-11", "source_server": "osrc",
              "source_gtid_executed": osrc["gtid_executed"]},
             {"channel_name": "billing", "retrieved_gtid_set": billing_retrieved, "source_server": "bsrc",
              "source_gtid_executed": bsrc["gtid_executed"]}]
    return [source(osrc, pair(replica, chan("orders", A, f"{A}:1-11"), every)),
            source(bsrc, pair(replica, chan("billing", B, billing_retrieved), every))]


def _errant_by_channel(rows):
    return {r["channel"]: r for r in pair_findings(check_source(rows, {A: "osrc", B: "bsrc", C: "r"}))
            if r["check_id"] == "errant_transactions"}


def test_a_multi_source_replicas_own_write_is_reported_on_one_channel():
    """A write on a two-channel replica itself is errant towards both sources alike: reported once, on
    the first channel by name ('billing'), whose remediation names the other source as the alternative
    for that write only; what a channel retrieved and its source lacks stays that channel's own (B:6 on
    'billing': its SQL is for bsrc alone; A:11 on 'orders')."""
    osrc, bsrc = snap("osrc", A, f"{A}:1-10"), snap("bsrc", B, f"{B}:1-5")
    replica = snap("r", C, f"{A}:1-11,{B}:1-6,{C}:hotfix:1")
    out = _errant_by_channel(_two_channels(replica, osrc, bsrc, billing_retrieved=f"{B}:1-6"))
    assert {ch: r["gtid_set"] for ch, r in out.items()} == {"billing": f"{B}:6,{C}:hotfix:1", "orders": f"{A}:11"}
    remediation = out["billing"]["remediation"]
    brought, own = remediation.split("came through none of")
    assert f"{B}:6" in brought and f"{C}:hotfix:1" not in brought
    assert "osrc (channel 'orders')" in own and f"{C}:hotfix:1" in own and f"{B}:6" not in own
    assert f"'billing': {C}:hotfix:1" in out["orders"]["evidence"]
    assert "reported on its channel 'billing'" in out["orders"]["detail"]
    assert "reported on this one" in out["billing"]["detail"] and "reported on this one" not in out["orders"]["detail"]


def test_a_multi_source_replicas_own_write_is_reported_on_a_channel_whose_read_order_confirms_it():
    """billing's source was read before the replica, orders' after it: the own write is reported once,
    on 'orders' (the first channel by name whose order held), confirmed (critical), where 'billing',
    first by name, could only have given an unconfirmed warning."""
    import datetime as dt

    at = dt.datetime(2026, 12, 3, 2, 0, 0)
    osrc = {**snap("osrc", A, f"{A}:1-11"), "read_started_at": at + dt.timedelta(seconds=2),
            "read_at": at + dt.timedelta(seconds=3)}
    bsrc = {**snap("bsrc", B, f"{B}:1-5"), "read_started_at": at - dt.timedelta(seconds=2),
            "read_at": at - dt.timedelta(seconds=1)}
    replica = {**snap("r", C, f"{A}:1-11,{B}:1-5,{C}:1"), "read_started_at": at, "read_at": at}
    rows = _two_channels(replica, osrc, bsrc)
    for row in rows:
        for c in row["pairs"][0]["all_channels"]:
            src = osrc if c["source_server"] == "osrc" else bsrc
            c.update(channel_read_at=at, source_read_started_at=src["read_started_at"], source_read_at=src["read_at"])
    out = _errant_by_channel(rows)
    assert {ch: (r["gtid_set"], r["severity"]) for ch, r in out.items()} == {"orders": (f"{C}:1", "critical")}
    assert "the first by name whose source was read after the replica" in out["orders"]["detail"]


def test_a_multi_source_candidates_own_write_is_left_to_its_errant_finding():
    """Promoting the two-channel replica in either topology would spread its own write; the failover
    advice gives SQL only for what that channel brought, and sends the own write to errant_transactions
    (committed on one source only), never to each topology's siblings."""
    osrc, bsrc = snap("osrc", A, f"{A}:1-10"), snap("bsrc", B, f"{B}:1-5")
    replica = snap("r", C, f"{A}:1-11,{B}:1-6,{C}:hotfix:1")
    rows = check_source(_two_channels(replica, osrc, bsrc, billing_retrieved=f"{B}:1-6"), {A: "osrc", B: "bsrc", C: "r"})
    advice = [r["remediation"] for r in rows if r["check_id"] in ("failover_candidate_unsafe", "no_safe_failover_candidate")]
    assert len(advice) == 4
    for text in advice:
        sql = [line for line in text.splitlines() if line.startswith("SET GTID_NEXT='")]
        assert sql and not any("hotfix" in line for line in sql)
        assert "Its errant_transactions finding gives their SQL" in text


def test_a_source_without_writes_still_counts_for_which_channel_reports():
    """A source whose gtid_executed is empty ('') was read: the replica's own write is still reported
    on one channel only."""
    osrc, bsrc = snap("osrc", A, f"{A}:1-11"), snap("bsrc", B, "")
    replica = snap("r", C, f"{A}:1-11,{C}:1")
    out = _errant_by_channel(_two_channels(replica, osrc, bsrc, billing_retrieved=""))
    assert {ch: r["gtid_set"] for ch, r in out.items()} == {"billing": f"{C}:1"}


def test_a_reporting_channel_that_cannot_be_checked_says_what_goes_unchecked():
    """The channel that reports the replica's own writes has a source whose gtid_purged does not
    parse: its snapshot_invalid says the own writes go unchecked; the other channel leaves them out."""
    osrc, bsrc = snap("osrc", A, f"{A}:1-11"), snap("bsrc", B, f"{B}:1-5", purged="garbage")
    replica = snap("r", C, f"{A}:1-11,{B}:1-5,{C}:1")
    rows = pair_findings(check_source(_two_channels(replica, osrc, bsrc), {A: "osrc", B: "bsrc", C: "r"}))
    assert [(r["check_id"], r["channel"]) for r in rows] == [("snapshot_invalid", "billing")]
    assert "go unchecked until this value is fixed" in rows[0]["detail"]


def test_server_history_check_runs_with_previous():
    """run_server_checks sees the previous snapshot: gtid_executed going back is reported."""
    rows = [{"snapshot": snap("s", A, f"{A}:1-5"), "previous": snap("s", A, f"{A}:1-9")}]
    out = run(rows, check_server_batches)
    assert ("gtid_executed_regressed", f"{A}:6-9") in [(r["check_id"], r["gtid_set"]) for r in out]


def test_an_unparseable_source_fails_each_of_its_pairs_not_the_batch():
    """A source whose gtid_executed does not parse gives snapshot_invalid for each replica pair;
    the next source in the batch is still checked."""
    bad, good = snap("src", A, "garbage"), snap("src2", B, f"{B}:1-5")
    rows = [source(bad, pair(snap("r1", C, f"{A}:1-10"), chan("", A, f"{A}:1-10"))),
            source(good, pair(snap("r2", C, f"{B}:1-5,{C}:1"), chan("", B, f"{B}:1-5")))]
    out = check_source(rows, {})
    assert sorted((r["check_id"], r["server"], r["source"]) for r in pair_findings(out)) == [
        ("errant_transactions", "r2", "src2"), ("snapshot_invalid", "r1", "src")]
    # the good source's failover model ran (its only replica has errant GTIDs); the bad one's did not
    assert {r["check_id"] for r in out} - {"errant_transactions", "snapshot_invalid"} == {
        "failover_candidate_unsafe", "no_safe_failover_candidate"}
    assert all(r["source"] != "src" for r in out if r["check_id"].startswith(("failover", "no_safe")))


def test_one_pass_gives_findings_readiness_and_horizons_from_one_model():
    """failover_batches yields, from the same failover model, a source's findings and its
    failover_readiness rows; pair_batches the purge horizon of the replica that lacks
    transactions; a source with many replicas comes out in batches of at most _FLUSH_ROWS rows."""
    import jobs.audit_tasks as tasks

    logs = [{"seq": 1, "log_name": "b.000001", "file_size": 100, "encrypted": False,
             "previous_gtids": "", "previous_gtids_read": True},
            {"seq": 2, "log_name": "b.000002", "file_size": 100, "encrypted": False,
             "previous_gtids": f"{A}:1-5", "previous_gtids_read": True}]
    import datetime as dt

    at = dt.datetime(2026, 11, 25, 3, 0, tzinfo=dt.timezone.utc)
    src = {**snap("src", A, f"{A}:1-10"), "binary_logs": logs, "read_started_at": at, "read_at": at}
    # r1 stopped, read after r2: it really lacks what r2 has
    behind = {**snap("r1", B, f"{A}:1-7"), "read_started_at": at + dt.timedelta(seconds=2),
              "read_at": at + dt.timedelta(seconds=2)}
    synced = {**snap("r2", C, f"{A}:1-10"), "read_started_at": at + dt.timedelta(seconds=1),
              "read_at": at + dt.timedelta(seconds=1)}
    rows = [source(src, pair(behind, {**chan("", A, f"{A}:1-7"), "io_running": "No", "sql_running": "No"}),
                   pair(synced, chan("", A, f"{A}:1-10")))]
    out = outputs(rows, {})
    assert [(h["replica"], h["source"], h["start_file"], h["purge_margin"], h["lacking_count"])
            for h in out["horizon"]] == [("r1", "src", "b.000002", 1, 3)]
    assert {(r["candidate"], r["sibling"]) for r in out["readiness"]} == {
        ("r1", "src"), ("r1", "r2"), ("r2", "src"), ("r2", "r1")}
    # r1 lacks what r2 has: promoting r1 is unsafe, and the finding says so for the same candidate
    verdicts = {(r["candidate"], r["verdict"]) for r in out["readiness"]}
    assert ("r1", "loses_transactions") in verdicts
    unsafe = {c for c, v in verdicts if v not in ("safe", "safe_after_catch_up", "undetermined")}
    assert unsafe == {f["server"] for f in out["finding"] if f["check_id"] == "failover_candidate_unsafe"} == {"r1"}

    many = [source(src, *[pair(snap(f"r{i}", f"{i:08x}-0000-4000-8000-{i:012x}", f"{A}:1-10"), chan("", A, f"{A}:1-10"))
                          for i in range(1, 12)])]
    old = tasks._FLUSH_ROWS
    tasks._FLUSH_ROWS = 5
    try:
        sizes = [b.num_rows for b in failover_batches(iter([pa.RecordBatch.from_pylist(many)]))]
    finally:
        tasks._FLUSH_ROWS = old
    # 11 healthy replicas: the rank-1 candidate's 11 siblings, then the source alone for each of
    # the 10 others (2R - 1 readiness rows, not R squared; no finding)
    assert sum(sizes) == 2 * 11 - 1 and max(sizes) <= 5


def test_outputs_do_not_depend_on_the_order_spark_collected_the_pairs_in():
    """collect_list's order follows the shuffle; the texts that list siblings must not."""
    import random

    import datetime as dt

    at = dt.datetime(2026, 11, 25, 3, 0, tzinfo=dt.timezone.utc)
    src = {**snap("src", A, f"{A}:1-10"), "read_started_at": at, "read_at": at}
    stopped = {"io_running": "No", "sql_running": "No"}
    pairs = [pair({**snap(f"r{i}", f"{i:08x}-0000-4000-8000-{i:012x}", f"{A}:1-{i}"),
                   "read_started_at": at + dt.timedelta(seconds=i), "read_at": at + dt.timedelta(seconds=i)},
                  {**chan("", A, f"{A}:1-{i}"), **stopped})
             for i in range(3, 9)]
    first = outputs([source(src, *pairs)], {})
    random.Random(7).shuffle(pairs)
    assert outputs([source(src, *pairs)], {}) == first
    assert first["finding"] and first["readiness"]


def test_a_bad_variable_is_named_before_a_bad_binary_log_header():
    """The audit's conversion of a servers row with its binary_logs rows reports what
    ServerSnapshot.from_rows checks first (the variables), whichever way the logs are built."""
    from gtid_core.errors import SnapshotError
    from jobs.audit_tasks import server_snapshot

    row = {"server": "s", "server_uuid": "nope", "binary_logs": [
        {"seq": 1, "log_name": "b.000001", "file_size": "big", "encrypted": False,
         "previous_gtids": None, "previous_gtids_read": False}]}
    with pytest.raises(SnapshotError, match="server_uuid"):
        server_snapshot(row)
    with pytest.raises(SnapshotError, match="File_size"):
        server_snapshot({**row, "server_uuid": "b6e7b27c-e69b-11f1-8d81-02fc00000001"})
