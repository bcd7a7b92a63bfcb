"""The live sandbox's tools on real servers: the bounded LoadWriter, the lock that makes a replica lag,
the delayed replica, and `gtid-audit sandbox load`."""
from __future__ import annotations

import threading

import pytest

from gtid_core import GtidSet
from jobs.sandbox import cli as sandbox_cli
from jobs.sandbox import scenarios
from jobs.sandbox.errors import ScenarioError
from jobs.sandbox.fleet import Fleet
from jobs.sandbox.load import (EVENTS_PER_TRANSACTION, HeldTableLock, LoadWriter, applier_waiting, load_table,
                               top_sources)

pytestmark = [pytest.mark.mysql]

TOPOLOGY = {"name": "load", "servers": [{"name": "src"}, {"name": "lag"}, {"name": "late"}],
            "channels": [{"replica": "lag", "source": "src"}, {"replica": "late", "source": "src"}]}


@pytest.fixture(scope="module")
def fleet(mysql_dist, tmp_path_factory):
    """src feeding two replicas: 'lag' (for the lock) and 'late' (made a delayed replica by a test)."""
    running = Fleet.up(TOPOLOGY, tmp_path_factory.mktemp("load"), dist=mysql_dist)
    try:
        yield running
    finally:
        running.down(graceful=False)


def _load_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(("load-", "lock-"))]


def test_top_sources_are_the_servers_that_feed_and_replicate_from_nobody(fleet):
    """The default sources are the fleet's top sources."""
    assert top_sources(fleet) == ["src"]


def test_writer_stops_at_max_transactions_and_leaves_no_thread(fleet):
    """max_transactions bounds the writer; the source itself counts exactly that many new GTIDs."""
    with LoadWriter(fleet, rate_per_s=200, seconds=60, max_transactions=25) as writer:
        (result,) = writer.wait()
    assert (result.source, result.transactions, result.error) == ("src", 25, None)
    assert GtidSet.parse(result.written).count() == 25
    assert not writer.running and _load_threads() == []


def test_writer_stops_at_its_time_bound(fleet):
    """seconds bounds the writer long before max_transactions."""
    with LoadWriter(fleet, rate_per_s=20, seconds=0.5, max_transactions=100_000) as writer:
        (result,) = writer.wait()
    assert 0 < result.transactions < 100
    assert not writer.running and _load_threads() == []


def test_each_transaction_is_one_multi_event_group(fleet):
    """A writer transaction is Gtid, BEGIN, two row statements, Xid in the source's binary log."""
    src = fleet.server("src")
    src.execute("FLUSH BINARY LOGS")
    binlog = src.query("SHOW BINARY LOG STATUS")[0]["File"]
    with LoadWriter(fleet, rate_per_s=100, seconds=30, max_transactions=3) as writer:
        writer.wait()
    types = [e["Event_type"] for e in src.query(f"SHOW BINLOG EVENTS IN '{binlog}'")]
    groups = types[-3 * EVENTS_PER_TRANSACTION:]   # after the writer's CREATE ... IF NOT EXISTS (logged)
    assert groups == ["Gtid", "Query", "Table_map", "Write_rows", "Table_map", "Update_rows", "Xid"] * 3


def test_writer_failure_is_raised_naming_the_source(fleet):
    """A source that refuses writes makes the writer stop and raise, naming the source and the error."""
    src = fleet.server("src")
    writer = LoadWriter(fleet, rate_per_s=50, seconds=30, max_transactions=1000).prepare()
    src.execute("SET GLOBAL super_read_only = ON")
    try:
        with pytest.raises(ScenarioError, match=r"src: .*1290"):
            with writer:
                writer.wait()
    finally:
        src.execute("SET GLOBAL super_read_only = OFF", "SET GLOBAL read_only = OFF")
    assert _load_threads() == []


def test_bad_bounds_are_refused():
    """Rates, durations and counts that could never stop, or never start, are refused by name."""
    for kwargs, word in (({"rate_per_s": 0}, "rate_per_s"), ({"seconds": -1}, "seconds"),
                         ({"max_transactions": 0}, "max_transactions")):
        with pytest.raises(ValueError, match=word):
            LoadWriter(None, **kwargs)


def test_held_lock_makes_a_lagging_replica_with_both_threads_running(fleet):
    """While a reader holds the table lock, the applier waits and the receiver keeps receiving."""
    LoadWriter(fleet, rate_per_s=100, seconds=30, max_transactions=1).prepare()
    fleet.wait_caught_up()
    with HeldTableLock(fleet.server("lag"), load_table("src"), seconds=60):
        with LoadWriter(fleet, rate_per_s=100, seconds=30, max_transactions=20) as writer:
            (result,) = writer.wait()
        backlog = scenarios.replica_backlog(fleet, "lag")
        scenarios._wait(lambda: applier_waiting(fleet.server("lag")), "the applier to wait for the lock", 30)
        assert (backlog.details["io_running"], backlog.details["sql_running"]) == ("Yes", "Yes")
        received = scenarios.channel_status(fleet.server("lag"))["RECEIVED_TRANSACTION_SET"]
        assert fleet.server("lag").query_value("SELECT GTID_SUBSET(%s, %s)", (result.written, received))
        assert fleet.server("lag").query_value(
            "SELECT GTID_SUBTRACT(%s, @@GLOBAL.gtid_executed)", (result.written,)) == result.written
    fleet.wait_caught_up(channels=[c for c in fleet.topology.channels if c.replica == "lag"])
    assert _load_threads() == []


def test_delayed_replica_receives_everything_and_applies_nothing_yet(fleet):
    """SOURCE_DELAY: the relay log fills, gtid_executed does not move, both threads run; undelay catches up."""
    delayed = scenarios.delayed_replica(fleet, "late", delay_s=300)
    assert delayed.details["sql_delay"] == 300
    with LoadWriter(fleet, rate_per_s=100, seconds=30, max_transactions=10) as writer:
        (result,) = writer.wait()
    late = fleet.server("late")
    scenarios._wait(lambda: late.query_value(
        "SELECT GTID_SUBSET(%s, %s)", (result.written, scenarios.channel_status(late)["RECEIVED_TRANSACTION_SET"])),
        "late to receive the writes")
    backlog = scenarios.replica_backlog(fleet, "late")
    assert backlog.details["sql_delay"] == 300
    assert (backlog.details["io_running"], backlog.details["sql_running"]) == ("Yes", "Yes")
    assert late.query_value("SELECT GTID_SUBTRACT(%s, @@GLOBAL.gtid_executed)", (result.written,)) == result.written
    assert backlog.details["relay_events_after_applier"] >= 10 * EVENTS_PER_TRANSACTION
    scenarios.undelay_replica(fleet, delayed)
    assert late.query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (result.written,)) == 1


def test_sandbox_load_command_writes_and_reports(fleet, capsys):
    """`gtid-audit sandbox load` writes the bounded number of transactions and says so."""
    code = sandbox_cli.main(["sandbox", "load", "--workdir", str(fleet.workdir), "--rate", "100",
                             "--max-transactions", "5", "--seconds", "30"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "writing on src" in out and "      5 transaction(s)" in out


def test_sandbox_load_command_refuses_a_bad_rate(fleet, capsys):
    """A zero rate is an error naming the option's value, not a writer that never writes."""
    code = sandbox_cli.main(["sandbox", "load", "--workdir", str(fleet.workdir), "--rate", "0"])
    assert code == 2
    assert "rate_per_s must be > 0" in capsys.readouterr().err
