"""The report's model from its input rows, without a browser: colours of pairs and servers
(unknown is never green), where edges come from (the report_pairs rows, the collector's
resolution; a pair known only from a finding), the purge-horizon margins the executors compute
(``jobs.audit_tasks.purge_horizon``), and a synthetic multi-run warehouse rendered end to end
(healthy clusters collapsed, trends over the runs)."""
from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path

import pytest

from jobs.report import RunTables, build_model, write_report

ROOT = Path(__file__).resolve().parents[2]
U1, U2 = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"


def _server(name, status="ok", cluster="c"):
    """A report_servers row."""
    return {"server": name, "cluster": cluster, "status": status}


def _pair(replica, source=None, channel="", servers=(), **kw):
    """A report_pairs row; the ends' statuses from ``servers`` (report_servers rows)."""
    status = {s["server"]: s["status"] for s in servers}
    return {"cluster": "c", "replica": replica, "channel": channel, "source": source, "source_cluster": "c",
            "replica_status": status.get(replica, "ok"), "source_status": status.get(source, "ok") if source else None,
            "sql_delay": None, **kw}


def _finding(check_id, severity, server, source=None, channel=None, silenced=False, status="open"):
    return {"finding_key": f"{check_id}|{server}|{source}|{channel}", "check_id": check_id, "severity": severity,
            "cluster": "c", "server": server, "source": source, "channel": channel, "title": check_id,
            "detail": "", "status": status, "silenced": silenced, "first_seen": dt.date(2026, 11, 1)}


def _tables(servers, pairs, findings, still_open=None, previous_run_id=None):
    """The rows load_run would give for one drawn cluster 'c'."""
    cluster = {"cluster": "c", "servers": len(servers), "pairs": len(pairs), "failed": 0, "risk": 0,
               "critical": 0, "warning": 0, "info": 0}
    return RunTables(run_id="r1", summary={"run_date": dt.date(2026, 11, 2), "pairs_audited": 1},
                     risky_clusters=[cluster], servers=servers, pairs=pairs, findings=findings,
                     previous_run_id=previous_run_id, still_open=still_open)


@pytest.mark.parametrize("servers, findings, expected", [
    ([_server("s"), _server("r")], [], "ok"),
    ([_server("s", "failed"), _server("r")], [], "unknown"),
    ([_server("s"), _server("r", "failed")], [], "unknown"),
    ([_server("s"), _server("r")], [_finding("errant_transactions", "critical", "r", "s", "", silenced=True)],
     "silenced"),
    ([_server("s"), _server("r")], [_finding("replication_stopped", "warning", "r", "s", ""),
                                     _finding("errant_transactions", "critical", "r", "s", "")], "critical"),
    ([_server("s"), _server("r")], [_finding("errant_transactions", "critical", "r", "s", "", status="resolved")],
     "ok"),
], ids=["healthy", "source-not-collected", "replica-not-collected", "only-silenced", "worst-wins",
        "resolved-is-not-open"])
def test_pair_colour_state(servers, findings, expected):
    """A pair is green only when both ends were collected and no open finding is on it."""
    model = build_model(_tables(servers, [_pair("r", "s", servers=servers)], findings))
    (pair,) = [p for c in model.clusters for p in c.pairs]
    assert pair.state == expected


def test_server_state_unknown_when_not_collected():
    """A server that was not collected is grey unless a finding says more; a healthy one is green."""
    model = build_model(_tables([_server("a"), _server("b", "failed"), _server("x", "failed")], [],
                                [_finding("collection_failed", "critical", "x")]))
    assert model.server_state == {"a": "ok", "b": "unknown", "x": "critical"}


def test_edges_come_from_report_pairs_and_findings_only():
    """An edge's source is the report_pairs row's (the collector's source_server), an unresolved
    channel stays without a source (grey), and a pair known only from an open finding (its replica
    was not collected) takes the finding's source; nothing is matched by address or UUID."""
    servers = [_server("s"), _server("r"), _server("u"), _server("f", "failed")]
    pairs = [_pair("r", "s", servers=servers), _pair("u", None, servers=servers)]
    findings = [_finding("replication_stopped", "warning", "f", "s", "")]
    model = build_model(_tables(servers, pairs, findings))
    got = {p.replica: (p.source, p.state) for c in model.clusters for p in c.pairs}
    assert got == {"r": ("s", "ok"), "u": (None, "unknown"), "f": ("s", "warning")}


def test_new_counts_findings_not_open_in_the_previous_run():
    """'new' is the open findings whose key was not open in the previous run."""
    findings = [_finding("errant_transactions", "critical", "r", "s", ""), _finding("gtid_mode_off", "warning", "r")]
    servers = [_server("s"), _server("r")]
    model = build_model(_tables(servers, [_pair("r", "s", servers=servers)], findings, still_open=1,
                                previous_run_id="r0"))
    assert (model.new, model.resolved) == (1, 0)


def test_delayed_replica_is_green_and_said_to_be_behind_on_purpose():
    """A delayed channel (SQL_Delay > 0) without a finding is healthy, noted as not at risk; with a
    finding it takes the finding's colour and the note only says it is delayed."""
    servers = [_server("s"), _server("r"), _server("d"), _server("e")]
    pairs = [_pair("r", "s"), _pair("d", "s", sql_delay=300), _pair("e", "s", sql_delay=3600)]
    model = build_model(_tables(servers, pairs, [_finding("replication_stopped", "warning", "e", "s", "")]))
    pairs = {p.replica: p for c in model.clusters for p in c.pairs}
    assert {name: (p.state, p.note) for name, p in pairs.items()} == {
        "r": ("ok", None),
        "d": ("ok", "delayed replica (SOURCE_DELAY = 300 s): behind on purpose, not at risk"),
        "e": ("warning", "delayed replica (SOURCE_DELAY = 3,600 s)"),
    }


def _failover_row(source, candidate, rank, verdict, sibling, result, **counts):
    """A failover_readiness row in the table's registered layout (schemas/failover.py)."""
    from schemas import get_table

    row = {"run_id": "r1", "run_date": dt.date(2026, 11, 2), "cluster": "c", "source": source,
           "candidate": candidate, "channel": "", "sibling": sibling,
           "sibling_role": "source" if sibling == source else "replica", "candidate_rank": rank,
           "verdict": verdict, "verdict_reasons": f"{candidate}: {verdict}", "sibling_result": result,
           "cost_lost_count": 0, "cost_refused_siblings": 0, "cost_spread_count": 0,
           "already_refused_by_source": False, "model_version": 1, **counts}
    get_table("failover_readiness").check_row(row)
    return row


def test_failover_section_ranks_candidates_and_shows_their_findings():
    """The section lists each source's candidates in the model's rank, what each sibling would get,
    the unsafe candidate's finding on its row and the source's no-safe-candidate finding by it."""
    import html
    import re

    from jobs.report import _failover_section

    rows = [
        _failover_row("s", "b", 2, "loses_transactions", "a", "streams", lost_count=3),
        _failover_row("s", "b", 2, "loses_transactions", "s", "streams", lost_count=3),
        _failover_row("s", "a", 1, "safe_after_catch_up", "b", "streams", catch_up_count=5),
        _failover_row("s", "a", 1, "safe_after_catch_up", "s", "streams"),
        _failover_row("t", "x", 1, "refuses_siblings", "t", "refused", refusal="13114 purged required binary logs"),
    ]
    findings = [_finding("failover_candidate_unsafe", "warning", "b", "s", ""),
                _finding("failover_candidate_unsafe", "warning", "x", "t", ""),
                _finding("no_safe_failover_candidate", "critical", "t")]
    page = _failover_section(rows, findings)
    assert _failover_section(None, findings) == ""
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))   # the page escapes "'" as &#x27;
    assert re.search(r"source s .*1\s+a\s+safe_after_catch_up .*2\s+b\s+loses_transactions\s+failover_candidate_unsafe",
                     text), text
    assert "b: streams (5 still in the candidate's relay log)" in text and "s (the source): streams (3 lost)" in text
    assert re.search(r"source t\s+\[c\]\s+no_safe_failover_candidate", text), text
    assert "t (the source): refused (13114 purged required binary logs)" in text
    assert text.count("no_safe_failover_candidate") == 1 and text.count("failover_candidate_unsafe") == 2


def test_failover_section_counts_the_siblings_a_candidate_does_not_list():
    """A rank-2 candidate whose table rows list the source only (schema v3): its 7 quiet siblings
    are one line; a v2 row (NULL) and the rank-1 candidate (0) add none."""
    import re

    from jobs.report import _failover_section

    rows = [_failover_row("s", "a", 1, "safe", "b", "streams", siblings_not_listed=0),
            _failover_row("s", "a", 1, "safe", "s", "streams", siblings_not_listed=0),
            _failover_row("s", "b", 2, "safe", "s", "streams", siblings_not_listed=7),
            _failover_row("t", "x", 1, "safe", "t", "streams", siblings_not_listed=None)]
    text = re.sub(r"<[^>]+>", " ", _failover_section(rows, []))
    assert text.count("other sibling(s) stream") == 1
    assert re.search(r"2\s+b\s+safe .*s \(the source\): streams\s+7 other sibling\(s\) stream, losing nothing", text), text


def _horizon_inputs(**channel_overrides):
    """A source s with three binary logs and a replica r that lacks s's transactions after 150,
    as the audit's rows (servers rows with binary_logs, a channels row)."""
    src = {"server": "s", "server_uuid": U1, "version": "8.4.3", "gtid_executed": f"{U1}:1-1000",
           "gtid_purged": f"{U1}:1-10",
           "binary_logs": [{"seq": i, "log_name": f"binlog.{i:06d}", "previous_gtids": prev, "previous_gtids_read": True}
                           for i, prev in enumerate((f"{U1}:1-10", f"{U1}:1-100", f"{U1}:1-900"))]}
    rep = {"server": "r", "server_uuid": U2, "version": "8.4.3", "gtid_executed": f"{U1}:1-150"}
    channel = {"channel_name": "", "retrieved_gtid_set": f"{U1}:1-150", "auto_position": True, **channel_overrides}
    return src, rep, channel


def _horizon(src, rep, channel):
    from jobs.audit_tasks import channel_snapshot, purge_horizon, server_snapshot

    return purge_horizon(server_snapshot(src), src, server_snapshot(rep), channel_snapshot(channel))


@pytest.mark.parametrize("overrides, expected", [
    ({}, {"lacking_count": 850, "purge_margin": 1, "start_file": "binlog.000001", "reconnect": "streams"}),
    ({"retrieved_gtid_set": f"{U1}:1-1000"}, None),            # caught up (received everything)
    ({"retrieved_gtid_set": None}, None),                      # unknown: left out
    ({"auto_position": False}, None),                          # file/position channel: no reconnect model
], ids=["lagging", "caught-up", "retrieved-unknown", "no-auto-position"])
def test_purge_horizon_margin(overrides, expected):
    """The margin is the start file's position in the source's binary logs; unknowns give no row."""
    row = _horizon(*_horizon_inputs(**overrides))
    if expected is None:
        assert row is None
    else:
        assert {k: row[k] for k in expected} == expected


def test_purge_horizon_refused_has_no_margin():
    """A replica that lacks what the source purged is refused now: no margin, said so."""
    src, rep, channel = _horizon_inputs()
    rep = {**rep, "gtid_executed": f"{U1}:1-5"}
    channel = {**channel, "retrieved_gtid_set": f"{U1}:1-5"}
    row = _horizon(src, rep, channel)
    assert (row["reconnect"], row["purge_margin"], row["lacking_count"]) == ("refused", None, 995)


def test_purge_horizon_unread_previous_gtids_is_unknown():
    """A binary log whose Previous_gtids was not read makes the margin unknown, not 0."""
    src, rep, channel = _horizon_inputs()
    src["binary_logs"][1] = {**src["binary_logs"][1], "previous_gtids": None, "previous_gtids_read": False}
    assert _horizon(src, rep, channel) is None


RUNS = 2


@pytest.mark.spark
@pytest.mark.slow
def test_synthetic_warehouse_renders_with_trends_and_collapsed_healthy_clusters(spark, tmp_path, monkeypatch):
    """Two runs of a 300-server synthetic fleet (benchmarks/report_scale.py), each on its own day, written by
    the job's writer (delta-spark), with the report tables the audit makes: the page draws only clusters with
    findings, lists the healthy ones in one collapsed group, plots the runs and ranks the purge horizon. (Two:
    a trend, a previous run and an earlier partition need no third, which cost 20 s of Delta writes.)"""
    spec = importlib.util.spec_from_file_location("report_scale", ROOT / "benchmarks" / "report_scale.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from jobs.delta_io import write_run_rows

    warehouse = tmp_path / "warehouse"
    for run_no in range(RUNS):
        rows = bench.run_rows(300, run_no)
        for table, table_rows in rows.items():
            write_run_rows(spark, table, table_rows, warehouse=str(warehouse), run_id=rows["runs"][0]["run_id"])
        bench.write_report_tables(spark, str(warehouse), rows)  # as the audit makes them, on the executors
    page = write_report(str(warehouse), out=tmp_path / "r.html", progress=False)
    text = Path(page).read_text()
    risky = {f["cluster"] for f in rows["findings"]}
    assert 0 < len(risky) < 30
    assert text.count('<div class="graph">') == len(risky)
    assert f'{30 - len(risky)} healthy clusters' in text
    assert "open findings per check" in text and "errant GTIDs per cluster" in text
    for run_no in range(RUNS):
        assert f"{(bench.DAY0 + dt.timedelta(days=run_no)):%Y%m%d}T030000Z-bench" in text
    assert "Purge horizon: replicas that lack source transactions" in text

    # the table embeds a bounded number of findings; the tiles and the drawn clusters still count them all
    import jobs.report as report

    full = report.build_model(report.load_run(str(warehouse)))
    monkeypatch.setattr(report, "TABLE_FINDINGS", 3)
    data = report.load_run(str(warehouse))
    bounded = report.build_model(data)
    # the earlier runs (each on its own day) are read in their own run_date partitions: what the
    # report took of them equals a whole-table read's
    from jobs.delta_io import read_arrow

    every = read_arrow(str(warehouse), "findings").to_pylist()
    open_in = {}
    for f in every:
        if f["status"] == "open":
            open_in.setdefault(f["run_id"], set()).add(f["finding_key"])
    errant = {(f["run_id"], f["server"]) for f in every
              if f["status"] == "open" and f["check_id"] == "errant_transactions"}
    assert {(f["run_id"], f["server"]) for f in data.errant_history} == errant
    assert len({run for run, _ in errant}) > 1        # earlier runs' rows are really there
    assert data.previous_run_id is not None
    assert data.still_open == len(open_in[data.run_id] & open_in[data.previous_run_id])
    assert len(bounded.findings) == 3 < len(full.findings) == bounded.findings_total
    assert (bounded.counts, bounded.silenced, bounded.resolved, bounded.new) == (
        full.counts, full.silenced, full.resolved, full.new)
    assert {c.name: (c.counts, [p.state for p in c.pairs]) for c in bounded.clusters} == {
        c.name: (c.counts, [p.state for p in c.pairs]) for c in full.clusters}
    text = Path(write_report(str(warehouse), out=tmp_path / "b.html", progress=False)).read_text()
    assert f"Findings (the first 3 of {full.findings_total:,}" in text
    assert text.count('<div class="graph">') == len(risky)

    # a cluster with more pairs, servers or findings than the caps is drawn in part: the pair of
    # its worst open finding first; the clusters past MAX_LISTED_CLUSTERS are counted
    monkeypatch.setattr(report, "MAX_CLUSTER_PAIRS", 2)
    monkeypatch.setattr(report, "MAX_CLUSTER_FINDINGS", 1)
    monkeypatch.setattr(report, "MAX_CLUSTER_SERVERS", 6)
    monkeypatch.setattr(report, "MAX_LISTED_CLUSTERS", 2)
    capped = report.build_model(report.load_run(str(warehouse)))
    assert (capped.counts, capped.risky_total) == (full.counts, len(full.clusters))
    assert [c.name for c in capped.clusters] == [c.name for c in full.clusters[:2]]
    rank = {"critical": 0, "warning": 1, "info": 2}
    for c, whole in zip(capped.clusters, full.clusters):
        assert (c.pair_count, c.server_count) == (whole.pair_count, whole.server_count)
        assert len(c.pairs) <= 3 and len(c.servers) <= 6 < len(whole.servers)
        worst = min((f for f in full.findings if (f.get("cluster") or report.NO_CLUSTER) == c.name
                     and f["status"] == "open"),
                    key=lambda f: (rank[f["severity"]], f["check_id"], f["server"], f["finding_key"]))
        ends = {p.replica for p in c.pairs} | {p.source for p in c.pairs if capped.server_cluster.get(p.source) == c.name}
        assert worst["server"] in c.servers and ends <= set(c.servers)
        if worst.get("source"):
            assert (worst["server"], worst.get("channel") or "") in {(p.replica, p.channel) for p in c.pairs}
    text = Path(write_report(str(warehouse), out=tmp_path / "c.html", progress=False)).read_text()
    assert text.count('<div class="graph">') == 2 and text.count("Drawn: ") == 2
    assert f"{len(full.clusters) - 2} more clusters with a warning" in text


@pytest.mark.parametrize("from_file", [True, False], ids=["own-process", "in-process"])
def test_a_failed_report_never_fails_the_night(tmp_path, from_file, caplog):
    """write_fleet_report (what `run` calls after the audit) turns a report that cannot be built
    into a warning and None, in its own process (config from a file) or in-process: the night's
    exit code is the audit's."""
    from jobs.config import load_config, parse_config
    from jobs.pipeline import write_fleet_report

    raw = {"warehouse": str(tmp_path / "empty-warehouse"), "defaults": {"user": "audit"},
           "servers": [{"name": "a", "host": "a.db", "port": 3306}]}
    if from_file:
        import json

        path = tmp_path / "c.yaml"
        path.write_text(json.dumps(raw))  # JSON is YAML
        config = load_config(path)
    else:
        config = parse_config(raw)
    with caplog.at_level("WARNING", logger="gtid_audit.pipeline"):
        assert write_fleet_report(config, "20261102T030000Z-x") is None
    assert "report not written" in caplog.text and "audited" in caplog.text


@pytest.mark.parametrize("ending", ["killed", "timed-out"])
def test_a_report_process_killed_or_out_of_time_never_fails_the_night(tmp_path, monkeypatch, caplog, ending):
    """The report process of `run` ends the way a memory-starved one does (SIGKILL, as the
    kernel's OOM killer sends it) or outlives REPORT_TIMEOUT_S: write_fleet_report logs why and
    returns None, so the night's exit code is the audit's. The child is a real process; only
    the interpreter it is started with is replaced, by a script that does just that."""
    import json
    import signal
    import sys
    import time

    import jobs.pipeline as pipeline
    from jobs.config import load_config

    script = tmp_path / "python"
    body = "kill -KILL $$" if ending == "killed" else "exec sleep 60"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps({"warehouse": str(tmp_path / "wh"), "defaults": {"user": "audit"},
                                "servers": [{"name": "a", "host": "a.db", "port": 3306}]}))
    config = load_config(path)
    monkeypatch.setattr(sys, "executable", str(script))
    monkeypatch.setattr(pipeline, "REPORT_TIMEOUT_S", 2)
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="gtid_audit.pipeline"):
        assert pipeline.write_fleet_report(config, "20261102T030000Z-x") is None
    assert time.monotonic() - started < 30  # the timed-out child was not waited for
    if ending == "killed":
        assert f"killed by {signal.SIGKILL.name} (out of memory?" in caplog.text
    else:
        assert "report not written" in caplog.text and "timed out after 2 seconds" in caplog.text


def test_group_members_are_drawn_in_one_box_with_role_and_state():
    """A replication group's members are one dashed box (subgraph cluster) of the cluster's
    graph, each labelled with its role (ONLINE) or its state (otherwise); servers outside the
    group stay outside the box."""
    from jobs.report import cluster_graph

    servers = [_server("a"), _server("b"), _server("c"), _server("r")]
    group = "5a8b0122-79c3-4c76-8838-788fb83ad572"
    members = [{"cluster": "c", "group_name": group, "server": n, "member_state": st, "member_role": role,
                "member_version": "9.7.4", "member_weight": 50, "single_primary_mode": True}
               for n, st, role in (("a", "ONLINE", "PRIMARY"), ("b", "ONLINE", "SECONDARY"), ("c", "OFFLINE", None))]
    data = _tables(servers, [_pair("r", "a", servers=servers)],
                   [_finding("group_member_errant", "critical", "c")])
    data = RunTables(**{**data.__dict__, "groups": members})
    model = build_model(data)
    [cluster] = model.clusters
    assert [m["server"] for m in cluster.groups[group]] == ["a", "b", "c"]   # the primary first
    src = cluster_graph(cluster, model).source
    start = src.index("subgraph cluster_group_0")
    box = src[start:src.index("\n\t}", start)]
    assert "group 5a8b0122… (single-primary)" in box
    assert 'a [label="a\nPRIMARY"' in box and 'b [label="b\nSECONDARY"' in box and 'c [label="c\nOFFLINE"' in box
    assert "\tr [" not in box and "\tr [" in src


def _batches(rows, chunk=2):
    """``rows`` as Arrow record batches of ``chunk`` rows (the way a scan hands them over)."""
    import pyarrow as pa

    table = pa.Table.from_pylist(rows)
    return table.to_batches(max_chunksize=chunk)


def test_top_per_keeps_the_first_rows_of_each_cluster_across_batches():
    """Each cluster (NULL included) keeps its first n rows in the sort order, however the rows are
    split into batches."""
    from jobs.report import _top_per

    rows = [{"cluster": c, "replica": f"r{i}"} for i in (5, 3, 9, 1, 7) for c in ("a", None, "b")]
    for chunk in (1, 2, 4, 100):
        kept = _top_per(_batches(rows, chunk), "cluster", (("replica", "ascending"),), 2)
        assert sorted((r["cluster"] or "", r["replica"]) for r in kept) == [
            ("", "r1"), ("", "r3"), ("a", "r1"), ("a", "r3"), ("b", "r1"), ("b", "r3")]
    assert _top_per(None, "cluster", (("replica", "ascending"),), 2) == []


def test_pairs_named_by_a_finding_are_drawn_before_healthy_ones():
    """A cluster with more pairs than the cap draws first the pairs whose replica or source an open
    finding names, then those with an end not collected whole, then the others by name."""
    from jobs.report import _pair_keys, _top_per

    def row(replica, source, replica_status="ok", source_status="ok"):
        return {"cluster": None, "replica": replica, "channel": "", "source": source,
                "replica_status": replica_status, "source_status": source_status}

    rows = [row(f"r{i:02d}", "s") for i in range(20)] + [
        row("r15", "t"), row("x1", "s", replica_status="failed"), row("y", None, source_status=None),
        row("z", "errant-source")]
    order = (("_named", "ascending"), ("_whole", "ascending"), ("replica", "ascending"), ("channel", "ascending"))
    kept = _top_per(_batches(rows, 3), "cluster", order, 5, _pair_keys({"r15", "errant-source"}))
    assert [(r["replica"], r["source"]) for r in kept] == [
        ("r15", "s"), ("r15", "t"), ("z", "errant-source"), ("x1", "s"), ("y", None)]


def test_smallest_keeps_n_distinct_names():
    from jobs.report import _smallest

    assert _smallest(([f"s{i:03d}", None, "s001"] for i in range(500, 0, -1)), 3) == ["s001", "s002", "s003"]


def test_long_finding_texts_are_clipped_in_the_page_and_the_page_is_written_in_pieces(tmp_path):
    """A remediation that lists 200 replicas (86 KB at 100,000 servers) is clipped in the page,
    saying how much is left out and where it is whole; the page written piece by piece is the
    page rendered as one string, and the template's pieces are what ``Template.substitute`` gives."""
    from string import Template

    import jobs.report as report

    servers = [_server("s"), _server("r")]
    finding = _finding("errant_transactions", "critical", "r", "s", "")
    finding.update(remediation="SET GTID_NEXT='x'; BEGIN; COMMIT; " * 3000, detail="d" * 10,
                   gtid_set=f"{U1}:1-3", gtid_count=3, evidence='{"replica_gtid_executed": "' + "y" * 9000 + '"}')
    model = build_model(_tables(servers, [_pair("r", "s", servers=servers)], [finding]))
    args = dict(failover=None, horizon="")
    page = report.render_html(model, {"c": "<svg></svg>"}, {}, **args)
    cut = len(finding["remediation"]) - report.MAX_EVIDENCE_CHARS
    note = f"... ({cut:,} more characters: the findings table keeps it whole"
    assert note in page and page.count("more characters") == 2      # the remediation and the evidence value
    assert finding["remediation"][:report.MAX_EVIDENCE_CHARS + 1] not in page
    assert "y" * 9000 not in page and "y" * 4000 in page
    # load_run clips what it reads; the page does not clip it again (the count stays right)
    assert report._clip(report._clip(finding["remediation"])) == report._clip(finding["remediation"])

    where, size = report._write(str(tmp_path / "p.html"),
                                report.render_parts(model, {"c": "<svg></svg>"}, {}, **args))
    assert Path(where).read_bytes() == page.encode("utf-8") and size == len(page.encode("utf-8"))

    uri = (tmp_path / "store" / "q.html").as_uri()     # the object-store path, through pyarrow's file system
    assert report._write(uri, iter(page.partition("<body")))[0] == uri
    assert (tmp_path / "store" / "q.html").read_bytes() == page.encode("utf-8")

    def failing():
        yield "<html>"
        raise KeyError("a placeholder")

    with pytest.raises(KeyError):
        report._write(str(tmp_path / "p.html"), failing())
    assert Path(where).read_bytes() == page.encode("utf-8")     # the page before stays whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.html", "store"]    # no temporary file left

    template = Template("a $x b ${y} $$ c $z")
    values = {"x": "1", "y": iter(["2", "3"]), "z": ""}
    assert "".join(report._substituted(template, values)) == template.substitute(x="1", y="23", z="")
    with pytest.raises(KeyError, match="'z'"):     # raised before a first piece
        next(report._substituted(template, {"x": "1", "y": "2"}))

    # errors of the file system are ReportErrors; a page written is readable as files here are
    (tmp_path / "file").write_text("")
    with pytest.raises(report.ReportError, match="cannot write the report"):
        report._write(str(tmp_path / "file" / "p.html"), iter(["x"]))
    import os
    umask = os.umask(0)
    os.umask(umask)
    assert Path(where).stat().st_mode & 0o777 == 0o666 & ~umask
