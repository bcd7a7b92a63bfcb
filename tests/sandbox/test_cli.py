"""`gtid-audit sandbox up --faults / status / down` drive a real fleet across processes."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from jobs.sandbox.cli import register
from jobs.sandbox.fleet import STANDARD_TOPOLOGY, Fleet
from tests.sandbox.test_fleet import our_processes

REPO = Path(__file__).resolve().parents[2]


def sandbox(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jobs.sandbox.cli", "sandbox", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=600)


def test_register_adds_the_four_subcommands():
    """register() wires sandbox install/up/status/down, each with a func returning an exit code."""
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    for argv in (["sandbox", "install"], ["sandbox", "up", "--faults"], ["sandbox", "status"], ["sandbox", "down"]):
        args = parser.parse_args(argv)
        assert callable(args.func), argv
    args = parser.parse_args(["sandbox", "up"])
    assert (args.topology, args.workdir, args.config_out) == (
        STANDARD_TOPOLOGY, Path(".sandbox"), Path("conf/sandbox.yaml"))


def test_status_of_an_empty_workdir_is_a_clear_error(tmp_path):
    """status on a workdir without a fleet fails with a message naming the state file."""
    proc = sandbox("status", "--workdir", str(tmp_path))
    assert proc.returncode == 2
    assert "sandbox-state.json" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.mysql
@pytest.mark.slow
def test_up_with_faults_then_down(tmp_path):
    """up --faults starts the standard fleet with the demo faults and writes the config; down leaves nothing."""
    workdir, config = tmp_path / "sb", tmp_path / "conf" / "sandbox.yaml"
    try:
        proc = sandbox("up", "--workdir", str(workdir), "--config-out", str(config), "--faults")
        assert proc.returncode == 0, proc.stderr[-3000:]
        fleet = Fleet.attach(workdir)
        r2, src = fleet.server("orders-r2"), fleet.server("orders-src")
        assert r2.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (src.gtid_executed(),)) \
            == f"{r2.server_uuid}:1"
        r3 = fleet.server("orders-r3").query("SHOW REPLICA STATUS")[0]
        assert r3["Replica_IO_Running"] == "No"
        assert fleet.server("billing-r1").query_value(
            "SELECT QUEUEING_TRANSACTION FROM performance_schema.replication_connection_status "
            "WHERE CHANNEL_NAME = 'orders'") != ""
        entries = {s["name"]: s for s in yaml.safe_load(config.read_text())["servers"]}
        assert {"orders-ghost", "billing-archive", "legacy", "orders-r3"} <= set(entries)
        assert entries["billing-archive"]["password_file"].endswith("billing-archive.password")
        assert fleet.server("legacy").query_value("SELECT @@GLOBAL.gtid_mode") == "OFF"
        status = sandbox("status", "--workdir", str(workdir))
        assert status.returncode == 0 and status.stdout.count("running") == 8
    finally:
        down = sandbox("down", "--workdir", str(workdir))
    assert down.returncode == 0, down.stderr
    assert our_processes(workdir) == []
