"""`gtid-audit sandbox sim` generates, serves and stops a simulated fleet by itself."""
from __future__ import annotations

import subprocess
import sys
import time

import mysql.connector
import yaml


def test_sandbox_sim_serve_only_serves_then_stops(tmp_path):
    """--serve-only writes the auditor config, serves every server on its loopback address, then exits 0."""
    proc = subprocess.Popen([sys.executable, "-m", "jobs.cli", "sandbox", "sim", "--servers", "12", "--serve-only", "20",
                             "--workdir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "sim-0.ready").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.1)
        config = yaml.safe_load((tmp_path / "audit.yaml").read_text())
        password = (tmp_path / "audit.password").read_text().strip()
        served = 0
        for server in config["servers"]:
            try:
                cnx = mysql.connector.connect(host=server["host"], port=server["port"], user="audit", password=password,
                                              use_pure=True, connection_timeout=2)
            except mysql.connector.Error:
                continue   # a collection fault (refused, hung, rotated password)
            cur = cnx.cursor()
            cur.execute("SELECT @@GLOBAL.server_uuid AS u")
            assert cur.fetchall()[0][0]
            cnx.close()
            served += 1
        assert served >= len(config["servers"]) - 1
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "12 simulated servers" in proc.stdout.read()
