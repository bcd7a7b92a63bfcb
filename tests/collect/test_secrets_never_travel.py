"""Secrets on executors: the driver ships only secret references, so no password appears in the
Spark event log (task descriptions, closures, properties), in the job's output or in any table."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.mysql, pytest.mark.spark, pytest.mark.slow]


def test_no_secret_in_event_log_output_or_tables(fleet_factory, tmp_path):
    """A full `gtid-audit run` with the event log on: the audit password (given by password_env)
    and a wrong password appear nowhere, although both servers were really logged in to."""
    from deltalake import DeltaTable

    fleet = fleet_factory({"name": "sec", "servers": [{"name": "src"}, {"name": "rep"}],
                           "channels": [{"replica": "rep", "source": "src"}]}, "sec")
    password = fleet.audit_password_file.read_text().strip()
    wrong = "wrong-" + secrets.token_hex(8)
    events = tmp_path / "events"
    events.mkdir()
    path = fleet.write_audit_config(tmp_path / "c.yaml", warehouse=str(tmp_path / "wh"))
    data = yaml.safe_load(path.read_text())
    for server in data["servers"]:
        server.pop("password_file", None)
        server["password_env"] = "GTA_SECRET_TEST"
    data["defaults"].pop("password_file", None)
    data["servers"].append({**data["servers"][0], "name": "wrong", "password_env": "GTA_WRONG_TEST"})
    data["servers"][-1]["port"] = data["servers"][0]["port"]
    data["servers"][-1]["host"] = "localhost"
    data.setdefault("spark", {}).setdefault("conf", {}).update({
        "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
        "spark.eventLog.compress": "false"})
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    env = {**os.environ, "GTA_SECRET_TEST": password, "GTA_WRONG_TEST": wrong}
    done = subprocess.run([sys.executable, "-m", "jobs.cli", "run", "--config", str(path), "--fail-on", "never"],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "servers=3 ok=2 partial=0 failed=1" in done.stdout  # both logins really happened
    logs = [p for p in events.rglob("*") if p.is_file()]   # Spark 4: eventlog_v2_<app>/events_1_<app> (rolling)
    assert logs, "no event log was written"
    haystacks = {"stdout": done.stdout, "stderr": done.stderr}
    haystacks.update({f"event log {p.name}": p.read_text(errors="replace") for p in logs})
    assert any("SparkListenerTaskEnd" in t for k, t in haystacks.items() if k.startswith("event log")), logs
    for name in ("servers", "channels", "collection_errors", "findings", "alerts", "runs"):
        for row in DeltaTable(str(tmp_path / "wh" / name)).to_pyarrow_table().to_pylist():
            haystacks[f"table {name}"] = haystacks.get(f"table {name}", "") + repr(row)
    for where, text in haystacks.items():
        assert password not in text, where
        assert wrong not in text, where
