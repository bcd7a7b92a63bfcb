"""End to end through the real collector and auditor (`gtid-audit run`) on simulated old versions.

One small simulated fleet holds every scenario; one `gtid-audit run` audits it and each test
compares the findings of its servers with the model's truth (check, server, source, severity).
These cover what no real server here can show (5.6, 5.7, 8.0); the real-server tests stay.
"""
from __future__ import annotations

import re

import pytest
from deltalake import DeltaTable

from jobs.config import load_config
from jobs.pipeline import run_night
from jobs.sandbox.sim import FleetBuilder, Simulator
from gtid_core import GtidSet
from jobs.sandbox.sim.score import ALERTING, UNSCORED, read_findings, read_readiness, score

pytestmark = [pytest.mark.spark, pytest.mark.slow]

GROUP_VERSIONS = ("5.7.44", "8.0.21", "8.0.36")
UPGRADES = (("8.0.36", "8.0.35"), ("5.7.44", "5.7.40"))     # (the group's version, the one member not upgraded)
PAIR_VERSIONS = ("8.0.21", "8.0.36")
COLLECTION = ["refused", "silent", "slow", "auth", "privilege", "garbage", "dropped", "gtid_off"]


@pytest.fixture(scope="module")
def night(spark, tmp_path_factory):
    """(fleet, findings, failover_readiness rows, channels rows) of one night (`gtid-audit run`) over the scenario
    fleet."""
    b = FleetBuilder(seed=12)
    b.silent_purged_gap("gap5621", "5.6.21")
    b.bug72392("bug5620", "5.6.20")
    b.bug72392("bug574", "5.7.4")
    b.relay_tail("tail5614", "5.6.14")
    b.relay_tail("tail5620", "5.6.20")
    for version in ("5.6.51", "5.7.44", "8.0.21", "8.0.22", "8.0.36", "8.4.3"):
        b.errant("er" + version.replace(".", ""), version)
        b.cluster("ok" + version.replace(".", ""), version, replicas=2, chain=version.startswith("5.7"))
    b.errant("ertag974", "9.7.4", tagged=True)
    b.multi_source("ms5744", "5.7.44")
    b.purged_required("pr5744", "5.7.44")
    b.purged_required("pr8036", "8.0.36")
    b.reset_replica("rr843", "8.4.3")
    for fault in COLLECTION:
        b.collection_fault(f"sa-{fault}", "8.0.36", fault)
    for version in GROUP_VERSIONS:       # Group Replication (issue #22): a healthy group and both faults
        tag = version.replace(".", "")
        b.group("gok" + tag, version, lags=[0, 2, 1])
        b.group_errant("gerr" + tag, version)
        b.group_unrecoverable("gunr" + tag, version)
        b.group_replica_refused("grep" + tag, version)
    b.group("gvcu8036", "8.0.36", lags=[0, 3, 0], view_change_uuid=True)   # view changes under their own UUID
    # added last, so that the scenarios above keep their random draws
    for version in GROUP_VERSIONS:       # primary elections decided by member weight
        b.group_election("gel" + version.replace(".", ""), version)
    for version, older in UPGRADES:      # ... and by version, a rolling upgrade half done
        b.group_election("gup" + version.replace(".", ""), version, older=older)
    for version in PAIR_VERSIONS:        # two groups joined by an asynchronous channel (InnoDB ClusterSet)
        tag = version.replace(".", "")
        b.group_pair("cs" + tag, version, view_change_uuid=True)
        b.group_pair("cse" + tag, version, view_change_uuid=True, errant=True)
    b.status_race("sr8036", "8.0.36")    # a healthy replica whose status row was read across a commit
    fleet = b.fleet()
    work = tmp_path_factory.mktemp("sim")
    fleet.save(work / "fleet.json")
    config = fleet.write_audit_config(work / "audit.yaml", warehouse=str(work / "warehouse"),
                                      password_file=work / "password", connect_timeout_s=3, read_timeout_s=5)
    with Simulator(work / "fleet.json", lifetime_s=500, latency="1-3"):
        # the night `gtid-audit run` runs, in the test session's Spark (a JVM of its own would
        # add half a minute): collect on the executors, audit, every table through delta-spark
        night = run_night(load_config(config), fail_on="never", spark=spark)
        assert night.exit_code == 0  # 1 would be a failed alert delivery
        findings = read_findings(work / "warehouse", night.run_id)
        readiness = read_readiness(work / "warehouse", night.run_id)
        channels = [r for r in DeltaTable(str(work / "warehouse" / "channels")).to_pyarrow_table(
            columns=["run_id", "server", "channel_name", "retrieved_gtid_set", "executed_gtid_set",
                     "gtid_executed_reread"]).to_pylist() if r["run_id"] == night.run_id]
    return fleet, findings, readiness, channels


@pytest.fixture(scope="module")
def audited(night):
    """(fleet, findings) of the night."""
    return night[:2]


def _found(findings, *servers):
    """Open warning/critical findings on ``servers``, failover readiness left out (the model has
    no truth for it: jobs/sandbox/sim/score.py UNSCORED)."""
    return {(f["check_id"], f["server"], f.get("source"), f["severity"]) for f in findings
            if f["server"] in servers and f["severity"] in ("critical", "warning") and f["check_id"] not in UNSCORED}


def _truth(fleet, *servers):
    """The warning and critical truth of ``servers`` (what _found must equal)."""
    return {(t.check_id, t.server, t.source, t.severity) for t in fleet.truth
            if t.server in servers and t.severity in ALERTING}


def test_silent_purged_gap_on_5621(audited):
    """A 5.6.21 source restored with SET GLOBAL gtid_purged: silent_purged_gap, nothing else."""
    fleet, findings = audited
    assert _found(findings, "gap5621-s", "gap5621-r1") == _truth(fleet, "gap5621-s", "gap5621-r1")


@pytest.mark.parametrize("cluster", ["bug5620", "bug574"], ids=["5.6.20", "5.7.4"])
def test_bug_72392_reset_master_on_replica(audited, cluster):
    """RESET MASTER on a 5.6.15-5.7.5 replica: replica_gtid_history_lost, critical (Bug #72392)."""
    fleet, findings = audited
    servers = (f"{cluster}-s", f"{cluster}-r1")
    assert _found(findings, *servers) == _truth(fleet, *servers)


@pytest.mark.parametrize("cluster", ["bug5620", "bug574"], ids=["5.6.20", "5.7.4"])
def test_bug_72392_is_found(audited, cluster):
    """RESET MASTER on a 5.6.15-5.7.5 replica is reported as replica_gtid_history_lost (any severity)."""
    fleet, findings = audited
    servers = (f"{cluster}-s", f"{cluster}-r1")
    assert {k[:3] for k in _found(findings, *servers)} == {k[:3] for k in _truth(fleet, *servers)}


@pytest.mark.parametrize("cluster", ["tail5614", "tail5620"], ids=["5.6.14-critical", "5.6.20-warning"])
def test_incomplete_relay_tail_before_576(audited, cluster):
    """A relay log ending inside a transaction on <5.7.6, severity by version, plus replication_stopped."""
    fleet, findings = audited
    servers = (f"{cluster}-s", f"{cluster}-r1")
    assert _found(findings, *servers) == _truth(fleet, *servers)


@pytest.mark.parametrize("version", ["5.6.51", "5.7.44", "8.0.21", "8.0.22",
                                     "8.0.36", "8.4.3", "9.7.4"])
def test_errant_transaction_per_dialect(audited, version):
    """SHOW SLAVE STATUS (5.6, 5.7, 8.0.21) and SHOW REPLICA STATUS (8.0.22+) both yield errant_transactions
    and nothing else: no source refuses a replica for GTIDs of the replica's own uuid."""
    fleet, findings = audited
    cluster = "ertag974" if version == "9.7.4" else "er" + version.replace(".", "")
    servers = (f"{cluster}-s", f"{cluster}-r1")
    assert _truth(fleet, *servers)
    assert _found(findings, *servers) == _truth(fleet, *servers)


@pytest.mark.parametrize("version", ["5.6.51", "5.7.44", "8.0.21", "8.0.22", "8.0.36", "8.4.3"])
def test_healthy_clusters_have_no_findings(audited, version):
    """Healthy clusters of every dialect (a 5.7 chain among them) give no warning or critical, while
    the same audit finds the errant cluster of that dialect (positive control)."""
    fleet, findings = audited
    cluster = "ok" + version.replace(".", "")
    names = [s.name for s in fleet.servers if s.cluster == cluster]
    assert names and _found(findings, *names) == set()
    errant = [f"er{version.replace('.', '')}-s", f"er{version.replace('.', '')}-r1"]
    assert _found(findings, *errant) and _found(findings, *errant) == _truth(fleet, *errant)


def test_multi_source_and_purged(audited):
    """A 5.7 multi-source replica is healthy; a purged source is reported on 5.7 and 8.0."""
    fleet, findings = audited
    names = [s.name for s in fleet.servers if s.cluster in ("ms5744", "pr5744", "pr8036", "rr843")]
    assert _found(findings, *names) == _truth(fleet, *names)


def test_gtid_executed_is_read_again_only_after_a_row_that_looks_lost(night):
    """The status rows of the replicas whose history was reset (8.4.3; 5.6.20 and 5.7.4, Bug #72392), and of the
    healthy replica read across a commit (sr8036), show retrieved GTIDs outside Executed_Gtid_Set with the applier
    caught up: the collector reads gtid_executed again after them. No other channel of the fleet, caught up or
    lagging, costs that statement."""
    fleet, _, _, channels = night
    lost = {t.server for t in fleet.truth if t.check_id == "replica_gtid_history_lost"}
    assert len(lost) == 3
    reread = {r["server"]: r["gtid_executed_reread"] for r in channels if r["gtid_executed_reread"] is not None}
    assert set(reread) == lost | {"sr8036-r1"}
    for server in reread:
        replica = next(s for s in fleet.servers if s.name == server)
        assert GtidSet.parse(reread[server]) == GtidSet.parse(replica.gtid_executed)


def test_a_status_row_read_across_a_commit_is_not_lost_history(night):
    """sr8036-r1's row shows its last retrieved GTID outside Executed_Gtid_Set with equal positions (what
    SHOW REPLICA STATUS gives when the applier commits between its read of the set and of the positions): the
    later read of gtid_executed holds it, nothing is reported. Without that read this was a false
    replica_gtid_history_lost warning."""
    fleet, findings, _, channels = night
    [row] = [r for r in channels if r["server"] == "sr8036-r1"]
    missing = GtidSet.parse(row["retrieved_gtid_set"]) - GtidSet.parse(row["executed_gtid_set"])
    assert missing.count() == 1                                   # the positive control: the row looks lost
    assert _found(findings, "sr8036-s", "sr8036-r1") == set() == _truth(fleet, "sr8036-s", "sr8036-r1")


@pytest.mark.parametrize("fault", [f for f in COLLECTION if f != "dropped"])
def test_collection_faults(audited, fault):
    """Each collection fault gives its finding (collection_failed / _partial, snapshot_invalid, gtid_mode_off)."""
    fleet, findings = audited
    assert _found(findings, f"sa-{fault}") == _truth(fleet, f"sa-{fault}")


def test_connection_dropped_mid_read(audited):
    """A server that drops the connection after 4 statements is reported as collection_partial."""
    fleet, findings = audited
    assert _found(findings, "sa-dropped") == _truth(fleet, "sa-dropped")


def test_whole_fleet_matches_truth(audited):
    """Over the whole fleet (keys without severity) the findings are the truth: no false positive,
    nothing missed (the 5.6 whole-set comparison and the dropped server's status, which this
    simulator found, are fixed)."""
    fleet, findings = audited
    s = score(fleet.truth, findings)
    assert s.false_positives == set()
    assert s.missed == set()



@pytest.mark.parametrize("version", GROUP_VERSIONS)
def test_group_checks_on_old_dialects(audited, version):
    """A healthy group with lagging secondaries, an OFFLINE member with a local write, an
    OFFLINE member every donor purged past, and a stopped asynchronous replica of the primary
    that another member purged past, on 5.7 and 8.0 dialects: exactly the truth
    (group_member_errant, group_member_unrecoverable, group_member_purged_replica_gtids and the
    replica's replication_stopped), nothing on the healthy group."""
    fleet, findings = audited
    tag = version.replace(".", "")
    servers = [s.name for s in fleet.servers if s.cluster in ("gok" + tag, "gerr" + tag, "gunr" + tag, "grep" + tag)]
    assert len(servers) == 13
    truth = _truth(fleet, *servers)
    assert {t[0] for t in truth} == {"group_member_errant", "group_member_unrecoverable",
                                     "group_member_purged_replica_gtids", "replication_stopped"}
    assert _found(findings, *servers) == truth


def test_group_with_a_view_change_uuid_is_silent(audited):
    """8.0.26+ view changes logged under group_replication_view_change_uuid are the group's, not
    errant: no finding on a healthy group that sets it."""
    fleet, findings = audited
    servers = [s.name for s in fleet.servers if s.cluster == "gvcu8036"]
    assert len(servers) == 3 and _truth(fleet, *servers) == set()
    assert _found(findings, *servers) == set()


def _readiness(rows, source):
    """(source, candidate, verdict) of the group model's readiness rows of ``source``."""
    return {(r["source"], r["candidate"], r["verdict"]) for r in rows
            if r["source"] == source and r["channel"] == "group_replication_applier"}


@pytest.mark.parametrize("cluster", [pytest.param("gel5744", id="weight-5.7.44"),
                                     pytest.param("gel8021", id="weight-8.0.21"),
                                     pytest.param("gel8036", id="weight-8.0.36"),
                                     pytest.param("gup8036", id="version-8.0.36"),
                                     pytest.param("gup5744", id="major-only-5.7.44")])
def test_group_readiness_names_the_member_the_group_would_elect(night, cluster):
    """Single-primary groups on 5.7 and 8.0 dialects: the readiness rows of the primary name the
    member the server's rule elects -- by member weight over server_uuid order; with one member
    not yet upgraded, by lowest whole version on 8.0.17+ (the light, older member) and by major
    version only on 5.7 (the heavy member still) -- with safe, or safe_after_catch_up when the
    elected member has certified transactions to apply; and no warning or critical on the group."""
    fleet, findings, rows = night[:3]
    [truth] = [t for t in fleet.readiness if t.source == f"{cluster}-g1"]
    assert _readiness(rows, truth.source) == {(truth.source, truth.candidate, truth.verdict)}
    servers = [s.name for s in fleet.servers if s.cluster == cluster]
    assert len(servers) == 3 and _found(findings, *servers) == set()


def test_every_group_readiness_truth_holds(night):
    """Over the whole fleet, each readiness truth of a group is the only group-model answer for
    its primary: on 8.0 from MEMBER_ROLE, on 5.7 (no such column) from the status variable
    group_replication_primary_member."""
    fleet, _, rows = night[:3]
    truths = list(fleet.readiness)
    assert {fleet.server(t.source).version[:3] for t in truths} == {"5.7", "8.0"}
    assert {t.source: _readiness(rows, t.source) for t in truths} == {
        t.source: {(t.source, t.candidate, t.verdict)} for t in truths}


def _info(findings, server):
    return {(f["check_id"], f["source"]): GtidSet.parse(f["gtid_set"] or "") for f in findings
            if f["server"] == server and f["severity"] == "info" and f["check_id"] == "errant_transactions"}


@pytest.mark.parametrize("version", PAIR_VERSIONS)
def test_replica_group_joined_by_a_channel(night, version):
    """Two groups joined by an asynchronous channel (InnoDB ClusterSet's shape). Healthy, the
    replica group's own view changes are no errant transaction: nothing on any member of either
    group. A write on the replica group's primary: 8.0.36 (view changes under
    group_replication_view_change_uuid) gives errant_transactions, critical, with exactly the
    written set; 8.0.21 (view changes under the group name, like the writes) cannot tell them
    apart and notes the group name's GTIDs, view changes and writes, at info severity only."""
    fleet, findings = night[:2]
    tag = version.replace(".", "")
    healthy = [s.name for s in fleet.servers if s.cluster == "cs" + tag]
    errant = [s.name for s in fleet.servers if s.cluster == "cse" + tag]
    assert len(healthy) == len(errant) == 5
    assert _found(findings, *healthy) == set() == _truth(fleet, *healthy)
    assert _found(findings, *errant) == _truth(fleet, *errant)
    for cluster in ("cs" + tag, "cse" + tag):
        truths = [t for t in fleet.truth if t.server == f"{cluster}-r-g1"]
        loud = [t for t in truths if t.severity in ALERTING]
        found = {(f["check_id"], f["source"]): GtidSet.parse(f["gtid_set"]) for f in findings
                 if f["server"] == f"{cluster}-r-g1" and f["severity"] in ALERTING}
        assert found == {(t.check_id, t.source): GtidSet.parse(t.gtid_set) for t in loud}
        assert _info(findings, f"{cluster}-r-g1") == {(t.check_id, t.source): GtidSet.parse(t.gtid_set)
                                                      for t in truths if t.severity == "info"}
    if version == "8.0.36":     # the positive control: the write is found, critical
        assert [t.severity for t in fleet.truth if t.server == f"cse{tag}-r-g1"] == ["critical"]
    else:
        assert not _truth(fleet, *errant) and [t.severity for t in fleet.truth if t.server == f"cse{tag}-r-g1"] == ["info"]


_NEW_WORDS = re.compile(r"\b(START|STOP|RESET|SHOW) REPLICA\b|\bCHANGE REPLICATION SOURCE\b|\bSOURCE_AUTO_POSITION\b")
_OLD_WORDS = re.compile(r"\b(START|STOP|RESET|SHOW) SLAVE\b|\bCHANGE MASTER\b|\bMASTER_AUTO_POSITION\b")


def test_each_remediation_is_in_the_words_its_server_accepts(audited):
    """The night's pair and server findings, on every dialect of the fleet, advise only statements the finding's
    server accepts (gtid_core.syntax): no START REPLICA or CHANGE REPLICATION SOURCE before 8.0.22 / 8.0.23, and
    from 8.0.23 no START SLAVE or CHANGE MASTER (8.4 removed them). Failover findings mix servers (each step in its
    own server's words) and job findings name both spellings, so they are left out here."""
    from gtid_core.registry import REGISTRY

    fleet, findings = audited
    versions = {s.name: s.mysql_version for s in fleet.servers}
    rewritten = {cid for cid, entry in REGISTRY.items() if entry.scope in ("pair", "server")
                 and not cid.startswith(("failover_", "no_safe_failover"))}
    old = new = 0
    for f in findings:
        version = versions.get(f["server"])
        if f["check_id"] not in rewritten or version is None or not f["remediation"]:
            continue
        if version.triple < (8, 0, 22):
            assert not _NEW_WORDS.search(f["remediation"]), (f["check_id"], f["server"], str(version), f["remediation"])
            old += bool(_OLD_WORDS.search(f["remediation"]))
        elif version.triple >= (8, 0, 23):    # today's words; from 8.4 the only ones accepted
            assert not _OLD_WORDS.search(f["remediation"]), (f["check_id"], f["server"], str(version), f["remediation"])
            new += bool(_NEW_WORDS.search(f["remediation"]))
    assert old and new, (old, new)     # both kinds of servers had a statement to advise
