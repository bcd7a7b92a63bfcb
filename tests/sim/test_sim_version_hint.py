"""The read's first statement from the version the plan knows (``version_hint``, issue #21, stop 51).

A read planned from tonight's probe or the previous run's tables starts with the variables SELECT of
the version it knows, whose ``@@GLOBAL.version`` column confirms the guess: one statement less than a
read that asks for the version first. A wrong guess (an upgrade or a downgrade since), a hint that does
not parse and any server error fall back to that read. The judge is the read without a hint: the same
rows and the same collection errors, on every version the simulator speaks and on the collection
faults that fail the first statements.
"""
from __future__ import annotations

import datetime as dt

import pytest

from jobs.collector import read_server, RunContext
from jobs.config import load_config
from jobs.sandbox.sim import FleetBuilder, Simulator

VERSIONS = ("5.6.14", "5.7.44", "8.0.21", "8.0.36", "8.4.3", "9.7.4")
FAULTS = ("privilege", "garbage", "gtid_off")
TIMES = {"read_at", "read_started_at", "read_finished_at", "gtid_read_at", "binlog_status_read_at",
         "receiver_read_at", "status_read_at"}


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    b = FleetBuilder(seed=51)
    for version in VERSIONS:
        b.cluster("v" + version.replace(".", ""), version, replicas=1)
    b.group("gr", "8.0.36", members=2)
    for fault in FAULTS:
        b.collection_fault(f"f-{fault}", "8.0.36", fault)
    fleet = b.fleet()
    work = tmp_path_factory.mktemp("simhint")
    fleet.save(work / "fleet.json")
    config = fleet.write_audit_config(work / "audit.yaml", warehouse=str(work / "wh"), password_file=work / "pw")
    with Simulator(work / "fleet.json", lifetime_s=300, latency="0-1"):
        yield fleet, load_config(config)


def _read(spec, config, hint, statements):
    """The read's rows (times left out) and its statements (``statements``: the fixture's list)."""
    statements.clear()
    result = read_server(spec, RunContext("t", dt.date.today(), config.collection.read_settings()), version_hint=hint)
    rows = [(table, {k: v for k, v in row.items() if k not in TIMES}) for table, row in result.rows()]
    return rows, list(statements)


def test_a_right_hint_saves_the_version_select_and_reads_the_same_rows(sim, statements):
    fleet, config = sim
    for spec in config.inventory():
        if spec.name.startswith("f-"):
            continue
        version = fleet.server(spec.name).version
        plain, plain_statements = _read(spec, config, None, statements)
        hinted, hinted_statements = _read(spec, config, version, statements)
        assert hinted == plain, spec.name
        assert plain_statements[0] == "SELECT @@GLOBAL.version AS version"
        assert hinted_statements == plain_statements[1:], spec.name


@pytest.mark.parametrize("hint", ["5.6.14", "8.0.21", "9.7.4", "8.4.3-log", "not a version", "99.1.2"])
def test_a_wrong_or_unparseable_hint_reads_what_a_read_without_one_reads(sim, hint, statements):
    """An upgrade or downgrade since the hint (other variable names, other statements) and a hint
    that does not parse: the same rows and errors as without a hint, at most one statement more.
    A hint of the same statements and variables (8.4.3-log for 8.4.3) is as good as the version."""
    fleet, config = sim
    for spec in config.inventory():
        if spec.name.startswith("f-"):
            continue
        plain, plain_statements = _read(spec, config, None, statements)
        hinted, hinted_statements = _read(spec, config, hint, statements)
        assert hinted == plain, (spec.name, hint)
        assert len(plain_statements) - 1 <= len(hinted_statements) <= len(plain_statements) + 1


@pytest.mark.parametrize("fault", FAULTS)
def test_collection_faults_give_the_same_rows_and_errors_with_a_hint(sim, fault, statements):
    fleet, config = sim
    spec = next(s for s in config.inventory() if s.name == f"f-{fault}")
    plain, _ = _read(spec, config, None, statements)
    hinted, _ = _read(spec, config, fleet.server(spec.name).version, statements)
    strip = [(t, {k: v for k, v in r.items() if k != "seq"}) for t, r in hinted]
    assert strip == [(t, {k: v for k, v in r.items() if k != "seq"}) for t, r in plain]
    assert any(t == "collection_errors" for t, _ in plain) or fault == "garbage"
