"""The deploy artefacts a scheduler runs do what they say: the cron entry maps submit.sh's exit
codes (run as cron would run it, against a stand-in submit.sh), and the Kubernetes manifest
names an application file and arguments the image's wheel really has."""
from __future__ import annotations

import configparser
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]
CRON = ROOT / "deploy" / "cron" / "gtid-audit.cron"
MANIFEST = ROOT / "deploy" / "kubernetes" / "sparkapplication.yaml"


def cron_entry() -> tuple[dict[str, str], str, str]:
    """(variables, user, command) of the cron file's one job line."""
    variables, jobs = {}, []
    for line in CRON.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = re.match(r"^([A-Z_]+)=(.*)$", line)
        if m:
            variables[m.group(1)] = m.group(2)
            continue
        jobs.append(line.split(None, 6))
    (fields,) = jobs
    assert len(fields) == 7, fields  # five time fields, the user (/etc/cron.d format), the command
    return variables, fields[5], fields[6]


def run_cron_command(tmp_path, submit_rc: int | None, *, env_file: bool = True):
    """The cron line's command, with the repository for /opt/gtid-audit and a stand-in submit.sh
    that exits ``submit_rc``, run by the cron file's SHELL."""
    variables, _, command = cron_entry()
    fake = tmp_path / "submit.sh"
    fake.write_text(f"#!/bin/sh\necho \"submit.sh $*\"\necho 'spark says hello' >&2\nexit {submit_rc}\n")
    fake.chmod(0o755)
    log = tmp_path / "nightly.log"
    env = tmp_path / "env"
    if env_file:
        env.write_text(f"SUBMIT={fake}\nGTID_AUDIT_LOG={log}\nSPARK_MASTER=spark://nowhere:7077\n")
    command = command.replace("/etc/gtid-audit/env", str(env)).replace("/opt/gtid-audit", str(ROOT))
    done = subprocess.run([variables["SHELL"], "-c", command], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    return done, (log.read_text() if log.exists() else "")


@pytest.mark.parametrize("submit_rc, cron_rc, mailed", [
    (0, 0, False),
    (2, 0, False),     # open findings: the alert feed has them, cron stays silent
    (1, 1, True),      # the job failed
    (137, 137, True),  # killed
], ids=["ok", "findings", "failed", "killed"])
def test_cron_entry_maps_submit_exit_codes(tmp_path, submit_rc, cron_rc, mailed):
    """0 and 2 are logged and silent; any other code is logged, written to stderr (cron mails it) and returned."""
    done, log = run_cron_command(tmp_path, submit_rc)
    assert done.returncode == cron_rc, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert bool(done.stderr) is mailed, done.stderr
    assert "submit.sh /etc/gtid-audit/prod.yaml" in log and "spark says hello" in log
    assert f"exit {'code ' if mailed else ''}{submit_rc}" in log
    if mailed:
        assert f"FAILED: exit code {submit_rc}" in done.stderr and "spark says hello" in done.stderr


def test_cron_entry_without_its_env_file_fails_loudly(tmp_path):
    """A missing /etc/gtid-audit/env stops the entry with a mailed error; submit.sh never runs."""
    done, log = run_cron_command(tmp_path, 0, env_file=False)
    assert done.returncode != 0 and done.stderr
    assert log == ""


def test_cron_file_is_valid_for_cron_d():
    """The entry runs as gtid-audit, in UTC, with bash, and mails failures somewhere."""
    variables, user, _ = cron_entry()
    assert user == "gtid-audit"
    assert variables["SHELL"] == "/bin/bash" and variables["CRON_TZ"] == "UTC" and "@" in variables["MAILTO"]


def test_submit_sh_own_errors_are_not_the_findings_code(tmp_path):
    """submit.sh's usage and missing-file errors exit 1, never 2 (2 means open findings)."""
    submit = ROOT / "deploy" / "submit.sh"
    no_args = subprocess.run(["bash", str(submit)], capture_output=True, text=True, timeout=30)
    missing = subprocess.run(["bash", str(submit), str(tmp_path / "nope.yaml")], capture_output=True, text=True,
                             timeout=30, env={**os.environ, "PYFILES_ZIP": str(CRON)})
    assert (no_args.returncode, missing.returncode) == (1, 1), missing.stderr
    assert "not found" in missing.stderr


def shipped_packages() -> set[str]:
    """The packages the wheel ships: setup.cfg's [options.packages.find] include list, applied."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    include = [s.strip() for s in cfg["options.packages.find"]["include"].split() if s.strip()]
    return set(find_packages(str(ROOT), include=include))


def image_file(url: str) -> Path | None:
    """The repository file a ``local://<venv>/lib/pythonX.Y/site-packages/<module path>`` URL
    of the image names, when the wheel ships it; None otherwise."""
    m = re.fullmatch(r"local://(/.+)/lib/python(\d+\.\d+)/site-packages/(.+\.py)", url)
    if not m:
        return None
    module = m.group(3)
    if module.rsplit("/", 1)[0].replace("/", ".") not in shipped_packages():
        return None
    return ROOT / module


def test_kubernetes_application_file_is_in_the_wheel_and_runs_as_a_script(tmp_path):
    """mainApplicationFile is the wheel's jobs/cli.py in the image's venv, whose Python is the
    one spark.pyspark.python names; started as a file it parses the manifest's arguments."""
    template = yaml.safe_load(MANIFEST.read_text())["spec"]["template"]
    url = template["mainApplicationFile"]
    assert image_file("local:///opt/gtid-audit/deploy/gtid_audit_main.py") is None  # not shipped: the old path
    path = image_file(url)
    assert path is not None and path.is_file(), url
    assert 'if __name__ == "__main__":' in path.read_text()
    venv = re.match(r"local://(/.+)/lib/", url).group(1)
    assert template["sparkConf"]["spark.pyspark.python"] == f"{venv}/bin/python"
    assert template["sparkConf"]["spark.pyspark.driver.python"] == f"{venv}/bin/python"
    from jobs.cli import build_parser

    args = build_parser().parse_args(template["arguments"])
    assert args.command == "run" and args.config == "/etc/gtid-audit/prod.yaml"
    done = subprocess.run([sys.executable, str(path), "run", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "--config" in done.stdout
