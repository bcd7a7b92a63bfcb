"""Donors against real MySQL 9.7 servers: a replica its source refuses for purged transactions
fetches them from the server gtid_core.donors names, by the advice's own statements, and goes back
to its source; a server the model refuses as a donor is refused by the real server too."""
from __future__ import annotations

import re
import time

import pytest

from gtid_core import GtidSet
from gtid_core.donors import donor_refusal, fetch_from_donor_steps
from jobs.sandbox import failover_scenarios as fs
from jobs.sandbox import scenarios
from jobs.sandbox.scenarios import channel_status
from jobs.sandbox.server import HOST

pytestmark = pytest.mark.mysql

ER_SOURCE_FATAL_ERROR_READING_BINLOG = 13114
#   s ──> r1 (refused: s purged what it lacks)
#   ├──> r2 (has it all in its binary logs: the donor)
#   └──> r3 (has it all, but log_replica_updates=OFF: in none of its binary logs)
DONORS = {"name": "donors",
          "servers": [{"name": "s"}, {"name": "r1"}, {"name": "r2"},
                      {"name": "r3", "options": ["--log-replica-updates=OFF"]}],
          "channels": [{"replica": r, "source": "s"} for r in ("r1", "r2", "r3")]}
_CHECK = re.compile(r"^check that SHOW REPLICA STATUS shows Replica_IO_Running Yes with Source_UUID '([^']+)' ")
_READ = re.compile(r"^read (SELECT @@GLOBAL\.gtid_purged) on (\S+) ")
_WAIT = re.compile(r"^wait until (SELECT GTID_SUBSET\('<that set>', @@GLOBAL\.gtid_executed\)) returns 1 ")


def _wait(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return value


def run_advice(fleet, server, advice: str) -> list[str]:
    """Run the steps the advice gives for ``server`` ("On r1: ...; ...") as written: each statement in
    turn; "check that ... shows Replica_IO_Running Yes with Source_UUID" checked once the receiver has
    connected or failed (a receiver error fails the test); "read ... on s"
    run on s, and its set put in the next step's "wait until SELECT ... returns 1", polled (bounded).
    Returns the steps."""
    steps = advice.split(f"On {server.name}: ", 1)[1].split(". The CHANGE keeps", 1)[0].split("; ")
    that = None
    for step in steps:
        if (check := _CHECK.match(step)):
            status = _wait(lambda: (st := channel_status(server))["Replica_IO_Running"] != "Connecting" and st,
                           "the receiver to connect or fail")
            assert (status["Replica_IO_Running"], status["Source_UUID"], int(status["Last_IO_Errno"] or 0)) == \
                ("Yes", check.group(1), 0), status
        elif (read := _READ.match(step)):
            that = fleet.server(read.group(2)).query_value(read.group(1))
        elif (wait := _WAIT.match(step)):
            query = wait.group(1).replace("'<that set>'", "%s")
            _wait(lambda: server.query_value(query, (that,)) == 1, query)
        else:
            server.execute(step)
    return steps


def test_the_donor_named_serves_what_the_source_purged_and_the_replica_goes_back(fleet_factory):
    f = fleet_factory(DONORS, name="donors")
    refused = scenarios.purged_binary_logs(f, "r1", start_replica=True)
    missing = GtidSet.parse(refused.gtid_sets["missing"])
    snaps = {name: snap for name, (snap, _) in fs.read_snapshots(f, ["r1", "r2", "r3", "s"]).items()}
    r1, s = snaps["r1"], snaps["s"]
    assert donor_refusal(r1, s, snaps["r2"], missing, unfiltered=True) is None
    assert "log_replica_updates" in donor_refusal(r1, s, snaps["r3"], missing, unfiltered=True)
    assert "would not stream" in donor_refusal(r1, s, s, missing, unfiltered=True)     # the source purged them

    # the server agrees about r3: repointed there, r1 is refused for the same transactions
    rep = f.server("r1")
    rep.execute("STOP REPLICA", f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '{HOST}', "
                f"SOURCE_PORT = {f.server('r3').port}", "START REPLICA")
    status = _wait(lambda: (st := channel_status(rep))["Last_IO_Errno"] and st, "r1 refused by r3")
    assert int(status["Last_IO_Errno"]) == ER_SOURCE_FATAL_ERROR_READING_BINLOG, status["Last_IO_Error"]
    assert "purged" in status["Last_IO_Error"]

    # the advice for r2, run as written: r1 fetches the missing transactions and goes back to s
    advice = fetch_from_donor_steps(replica="r1", replica_version=r1.version, channel="", source="s",
                                    source_host=HOST, source_port=f.server("s").port, source_purged=s.gtid_purged,
                                    donor=("r2", HOST, f.server("r2").port), donor_uuid=snaps["r2"].server_uuid,
                                    missing=missing)
    steps = run_advice(f, rep, advice)
    assert steps[0] == "STOP REPLICA" and len(steps) == 9
    assert rep.query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (refused.gtid_sets["missing"],)) == 1
    src = f.server("s")
    src.execute(f"CREATE TABLE {scenarios.DB}.after_donor (id INT PRIMARY KEY)")
    target = src.gtid_executed()
    _wait(lambda: rep.query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (target,)) == 1,
          "r1 to get s's new transaction from s")
    status = channel_status(rep)
    assert (int(status["Source_Port"]), int(status["Last_IO_Errno"] or 0), status["Replica_IO_Running"]) == \
        (src.port, 0, "Yes")
    assert rep.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (target,)) == ""   # nothing extra

    # the collector reads a donor's filters: r2 with one is read as filtering (so never a donor)
    f.server("r2").execute("STOP REPLICA SQL_THREAD",
                           "CHANGE REPLICATION FILTER REPLICATE_IGNORE_DB = (no_such_db), REPLICATE_WILD_DO_TABLE = "
                           "('sandbox%.%') FOR CHANNEL ''", "START REPLICA SQL_THREAD")
    server, channel = _read(f, "r2")
    assert channel["replication_filters"] == "Replicate_Ignore_DB=no_such_db; Replicate_Wild_Do_Table=sandbox%.%"
    assert server["binlog_filters"] == ""
    assert _read(f, "r3")[1]["replication_filters"] == ""


def _read(fleet, name: str) -> tuple[dict, dict]:
    """The servers-table row and the channels-table row (of its one channel) the collector reads for ``name``."""
    import datetime as dt

    from jobs.collector import RunContext, read_server
    from jobs.config import CollectionSettings
    from jobs.server_spec import ServerSpec

    server = fleet.server(name)
    spec = ServerSpec(name=name, host=server.host, port=server.port, user="audit",
                      password_file=str(fleet.audit_password_file), connect_timeout_s=5, read_timeout_s=10)
    result = read_server(spec, RunContext(run_id="donors", run_date=dt.date(2026, 12, 3),
                                          settings=CollectionSettings().read_settings()))
    (row,) = result.channels
    return result.server, row
