"""Fixtures of the audit tests: a real Prometheus Alertmanager on 127.0.0.1.

CI starts from a clean machine, so the fixture installs Debian's ``prometheus-alertmanager``
package when its binary is missing (the package's service is not started: the fixture runs the
binary itself with a temporary configuration, gossip disabled, and stops it by pid).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
CONFIG = """\
route:
  receiver: "null"
  group_wait: 1s
receivers:
  - name: "null"
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ensure_installed() -> None:
    if os.access(ALERTMANAGER, os.X_OK):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.fail(f"{ALERTMANAGER} is missing and cannot be installed here "
                    "(needs root and apt-get: apt-get install prometheus-alertmanager)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "prometheus-alertmanager"], check=True, env=env)


@pytest.fixture(scope="session")
def alertmanager_url(tmp_path_factory):
    """URL of a real Alertmanager started for this test session (stopped by pid afterwards)."""
    _ensure_installed()
    work = tmp_path_factory.mktemp("alertmanager")
    (work / "alertmanager.yml").write_text(CONFIG)
    port = _free_port()
    log = open(work / "alertmanager.log", "wb")
    proc = subprocess.Popen(
        [ALERTMANAGER, f"--config.file={work / 'alertmanager.yml'}",
         f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=",
         f"--storage.path={work / 'data'}"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            if proc.poll() is not None:
                pytest.fail(f"alertmanager exited: {(work / 'alertmanager.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/-/ready", timeout=1) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail(f"alertmanager not ready: {(work / 'alertmanager.log').read_text()[-2000:]}")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
