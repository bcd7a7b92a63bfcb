"""deploy/gtid_audit_main.py's lookup of a ``--config`` shipped with ``--files``, without Spark:
what spark-submit lists (``spark.files``, ``spark.yarn.dist.files``) is given, and the answer is
the path the job then reads. The standalone cluster test (tests/cluster/test_submit_on_cluster.py)
runs the real thing, and checks that the shipped configuration's ``spark.conf`` reached the
session."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def entry(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location("gtid_audit_main_under_test", ROOT / "deploy" / "gtid_audit_main.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)   # no audit.yaml here

    def fetch_refused(value):
        raise AssertionError(f"{value!r} must be read where it is, not fetched by a SparkContext")

    monkeypatch.setattr(module, "_fetched_by_spark_files", fetch_refused)
    return module


def _shipped(monkeypatch, entry, *uris: str) -> None:
    monkeypatch.setattr(entry, "_submitted_files", lambda: list(uris))


def _config(directory: Path, name: str = "audit.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("warehouse: /tmp/w\n")
    return path


def test_a_shipped_local_file_is_read_where_it_is(entry, monkeypatch, tmp_path):
    config = _config(tmp_path / "etc")
    _shipped(monkeypatch, entry, "file:/opt/other.yaml", f"file:{config}")
    assert entry.resolve_config(["run", "--config", "audit.yaml", "--fail-on", "never"]) == \
        ["run", "--config", str(config), "--fail-on", "never"]
    assert entry.resolve_config(["run", "--config=audit.yaml"]) == ["run", f"--config={config}"]


def test_a_url_encoded_path_and_a_yarn_alias_are_found(entry, monkeypatch, tmp_path):
    config = _config(tmp_path / "my etc", "prod 1.yaml")
    encoded = "file:" + str(config).replace(" ", "%20")
    _shipped(monkeypatch, entry, encoded)
    assert entry.resolve_config(["run", "--config", "prod 1.yaml"])[-1] == str(config)
    _shipped(monkeypatch, entry, f"{encoded}#audit.yaml")   # YARN: --files /my etc/prod 1.yaml#audit.yaml
    assert entry.resolve_config(["run", "--config", "audit.yaml"])[-1] == str(config)


def test_a_real_path_is_left_alone(entry, monkeypatch, tmp_path):
    _shipped(monkeypatch, entry)
    config = _config(tmp_path / "etc")
    argv = ["run", "--config", str(config)]
    assert entry.resolve_config(argv) == argv
    missing = ["run", "--config", str(tmp_path / "nowhere" / "audit.yaml")]
    assert entry.resolve_config(missing) == missing   # the job's own error names it
    assert entry.resolve_config(["run"]) == ["run"]


def test_a_name_not_shipped_is_a_clear_error(entry, monkeypatch, tmp_path):
    _shipped(monkeypatch, entry, "file:/opt/other.yaml")
    with pytest.raises(SystemExit) as exited:
        entry.resolve_config(["run", "--config", "audit.yaml"])
    message = str(exited.value)
    assert "'audit.yaml' is neither a file here" in message
    assert "spark.files and spark.yarn.dist.files: file:/opt/other.yaml" in message


def test_a_shipped_local_entry_missing_on_the_driver_is_a_clear_error(entry, monkeypatch, tmp_path):
    _shipped(monkeypatch, entry, f"local:{tmp_path}/on-the-workers-only/audit.yaml")
    with pytest.raises(SystemExit) as exited:
        entry.resolve_config(["run", "--config", "audit.yaml"])
    assert f"as '{tmp_path}/on-the-workers-only/audit.yaml', which is not a file where the driver runs" \
        in str(exited.value)


def test_only_a_remote_file_is_fetched_by_a_spark_context(entry, monkeypatch, tmp_path):
    fetched = _config(tmp_path / "spark-files")
    asked = []
    monkeypatch.setattr(entry, "_fetched_by_spark_files", lambda value: asked.append(value) or str(fetched))
    _shipped(monkeypatch, entry, "s3a://bucket/conf/audit.yaml")
    assert entry.resolve_config(["run", "--config", "audit.yaml"])[-1] == str(fetched)
    assert asked == ["audit.yaml"]


def test_outside_spark_submit_nothing_is_asked_of_a_jvm(entry, monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert entry._submitted_files() == []
