"""Delta's jars: the artifact matching the installed packages, the cache manifest, the clear
errors for a missing or mismatched jar, and a session that really writes with delta-spark."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs import delta_jars as dj
from jobs.config import SparkSettings
from jobs.spark import delta_conf, session_conf

REPO = Path(__file__).resolve().parents[2]
INSTALL_HINT = "-m jobs.delta_jars install"


@pytest.mark.parametrize("pyspark, delta, coordinate", [
    ("4.2.0", "4.4.0", "io.delta:delta-spark_4.2_2.13:4.4.0"),
    ("4.1.0", "4.4.0", "io.delta:delta-spark_4.1_2.13:4.4.0"),
    ("4.0.1", "4.4.0", "io.delta:delta-spark_4.0_2.13:4.4.0"),
    ("4.1.1", "4.3.1", "io.delta:delta-spark_4.1_2.13:4.3.1"),
    ("4.0.1", "4.1.0", "io.delta:delta-spark_4.0_2.13:4.1.0"),
    ("4.0.0", "4.0.0", "io.delta:delta-spark_2.13:4.0.0"),
], ids=["spark4.2-delta4.4", "spark4.1-delta4.4", "spark4.0-delta4.4", "spark4.1-delta4.3",
        "spark4.0-delta4.1", "spark4.0-delta4.0-unsuffixed"])
def test_artifact_of_a_supported_pair(pyspark, delta, coordinate):
    """A pair in Delta's compatibility table gets the artifact pip_utils would name."""
    assert dj.delta_artifact(pyspark, delta).coordinate == coordinate


@pytest.mark.parametrize("pyspark, delta, message", [
    ("4.2.0", "4.3.1", "not built for pyspark 4.2.0"),
    ("4.2.0", "4.1.0", "not built for pyspark 4.2.0"),
    ("3.5.3", "4.4.0", "not built for pyspark 3.5.3"),
    ("4.2.0", "3.3.2", "3.3.2 is not in gtid-audit's compatibility table"),
    ("4.2.0", "5.0.0", "5.0.0 is not in gtid-audit's compatibility table"),
    ("four", "4.4.0", "cannot read the pyspark version 'four'"),
], ids=["delta4.3-on-spark4.2", "delta4.1-on-spark4.2", "delta4.4-on-spark3.5", "delta3-unknown",
        "delta5-unknown", "garbage-version"])
def test_unsupported_pair_is_refused(pyspark, delta, message):
    """A pair Delta does not support is refused before anything is fetched, naming both versions."""
    with pytest.raises(dj.UnsupportedVersionsError, match=message):
        dj.delta_artifact(pyspark, delta)


def test_installed_pair_is_the_pinned_one():
    """The packages pinned in setup.cfg (pyspark 4.2.0, delta-spark 4.4.0) map to the Spark-4.2 artifact."""
    artifact = dj.installed_artifact()
    assert (artifact.pyspark_version, artifact.delta_version) == ("4.2.0", "4.4.0")
    assert artifact.coordinate == "io.delta:delta-spark_4.2_2.13:4.4.0"
    assert artifact.main_jar_name == "io.delta_delta-spark_4.2_2.13-4.4.0.jar"


def _cache_with_manifest(root: Path, dirname: str, manifest: dict) -> Path:
    target = root / "delta-jars" / dirname
    target.mkdir(parents=True)
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target


@pytest.fixture
def real_jars():
    """The jars `make jars` cached (the suite needs them; the error says how to get them)."""
    return dj.installed_jars()


def test_cached_jars_are_complete(real_jars):
    """The installed cache lists the delta-spark and delta-storage jars, all present, and a session conf using them."""
    names = {p.name for p in real_jars.jars}
    assert {"io.delta_delta-spark_4.2_2.13-4.4.0.jar", "io.delta_delta-storage-4.4.0.jar"} <= names
    assert all(p.is_file() for p in real_jars.jars)
    conf = real_jars.spark_conf()
    assert conf["spark.jars"].split(",") == [str(p) for p in real_jars.jars]
    assert "spark.jars.packages" not in conf
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"


def test_missing_jar_names_the_jar_the_versions_and_the_fix(tmp_path, real_jars):
    """A manifest listing a jar that is gone raises JarsNotInstalledError quoting that path, the coordinate and the command."""
    manifest = json.loads(real_jars.manifest.read_text())
    gone = tmp_path / "gone" / "io.delta_delta-storage-4.4.0.jar"
    manifest["jars"] = [str(gone) if p.endswith("delta-storage-4.4.0.jar") else p for p in manifest["jars"]]
    _cache_with_manifest(tmp_path, real_jars.manifest.parent.name, manifest)
    with pytest.raises(dj.JarsNotInstalledError) as err:
        dj.installed_jars(tmp_path)
    text = str(err.value)
    assert repr(str(gone)) in text
    assert "io.delta:delta-spark_4.2_2.13:4.4.0 (pyspark 4.2.0, delta-spark 4.4.0)" in text
    assert f"{sys.executable} {INSTALL_HINT}" in text


def test_nothing_cached_names_the_fix(tmp_path):
    """An empty cache raises JarsNotInstalledError with the coordinate and the install command."""
    with pytest.raises(dj.JarsNotInstalledError, match="not installed: io.delta:delta-spark_4.2_2.13:4.4.0") as err:
        dj.installed_jars(tmp_path)
    assert INSTALL_HINT in str(err.value)


def test_jars_of_other_versions_are_a_mismatch(tmp_path):
    """Only another version's jars cached: JarsMismatchError names what is cached and what is needed."""
    _cache_with_manifest(tmp_path, "delta-spark_4.1_2.13-4.2.0", {
        "coordinate": "io.delta:delta-spark_4.1_2.13:4.2.0", "pyspark": "4.1.0", "delta_spark": "4.2.0", "jars": []})
    with pytest.raises(dj.JarsMismatchError) as err:
        dj.installed_jars(tmp_path)
    text = str(err.value)
    assert "delta-spark_4.1_2.13-4.2.0" in text and "io.delta:delta-spark_4.2_2.13:4.4.0" in text
    assert INSTALL_HINT in text


def test_manifest_recording_other_versions_is_a_mismatch(tmp_path, real_jars):
    """A manifest in the right place that records other versions is refused, both named."""
    manifest = json.loads(real_jars.manifest.read_text())
    manifest["pyspark"] = "4.1.0"
    _cache_with_manifest(tmp_path, real_jars.manifest.parent.name, manifest)
    with pytest.raises(dj.JarsMismatchError, match=r"records io.delta:delta-spark_4.2_2.13:4.4.0 \(pyspark 4.1.0"):
        dj.installed_jars(tmp_path)


def test_manifest_without_the_delta_spark_jar_is_a_mismatch(tmp_path, real_jars):
    """A manifest whose jars do not include delta-spark's own jar names the jar it lacks."""
    manifest = json.loads(real_jars.manifest.read_text())
    manifest["jars"] = [p for p in manifest["jars"] if "delta-spark_4.2" not in p]
    _cache_with_manifest(tmp_path, real_jars.manifest.parent.name, manifest)
    with pytest.raises(dj.JarsMismatchError, match="io.delta_delta-spark_4.2_2.13-4.4.0.jar"):
        dj.installed_jars(tmp_path)


def test_session_conf_refuses_a_broken_cache(tmp_path, monkeypatch, real_jars):
    """build_session's conf for a new session raises the clear error when the cached jar is gone."""
    manifest = json.loads(real_jars.manifest.read_text())
    manifest["jars"] = [str(tmp_path / Path(p).name) for p in manifest["jars"]]
    _cache_with_manifest(tmp_path, real_jars.manifest.parent.name, manifest)
    monkeypatch.setenv("GTID_AUDIT_CACHE", str(tmp_path))
    with pytest.raises(dj.JarsNotInstalledError, match="is missing"):
        session_conf(SparkSettings())


def test_session_conf_adds_jars_extension_and_catalog(real_jars):
    """A new session gets the cached jars after the user's own, the Delta extension and catalog, never packages."""
    conf = session_conf(SparkSettings(conf={"spark.jars": "/opt/extra.jar"}))
    assert conf["spark.jars"] == "/opt/extra.jar," + real_jars.csv
    assert conf["spark.sql.catalog.spark_catalog"] == "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert "spark.jars.packages" not in conf


def test_users_own_delta_wins(tmp_path, monkeypatch):
    """A config that brings Delta itself (--packages style) gets no cached jars, so needs no cache."""
    monkeypatch.setenv("GTID_AUDIT_CACHE", str(tmp_path))  # empty cache: would raise if consulted
    conf = delta_conf({"spark.jars.packages": "io.delta:delta-spark_4.2_2.13:4.4.0"})
    assert "spark.jars" not in conf
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"


def test_install_is_idempotent_when_cached(real_jars):
    """A second install with everything cached returns the same jars and rewrites nothing."""
    before = real_jars.manifest.stat().st_mtime_ns
    again = dj.install()
    assert again == real_jars
    assert real_jars.manifest.stat().st_mtime_ns == before


def test_show_prints_the_jars_for_spark_submit(real_jars):
    """`python -m jobs.delta_jars show --csv` prints exactly the manifest's jars, for --jars."""
    done = subprocess.run([sys.executable, "-m", "jobs.delta_jars", "show", "--csv"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == real_jars.csv


def test_show_without_jars_exits_1_with_the_fix(tmp_path):
    """`show` on an empty cache exits 1 and prints the coordinate and the install command, no traceback."""
    done = subprocess.run([sys.executable, "-m", "jobs.delta_jars", "show", "--csv"], cwd=REPO,
                          env={**os.environ, "GTID_AUDIT_CACHE": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert "io.delta:delta-spark_4.2_2.13:4.4.0" in done.stderr and INSTALL_HINT in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.spark
def test_session_writes_and_reads_delta_with_delta_spark(spark, tmp_path):
    """The test session writes a Delta table with df.write.format('delta') and reads it back; Delta's log records the writes."""
    from delta.tables import DeltaTable

    path = str(tmp_path / "t")
    rows = [("a", 1), ("b", 2)]
    spark.createDataFrame(rows, "k string, v int").write.format("delta").save(path)
    spark.createDataFrame([("c", 3)], "k string, v int").write.format("delta").mode("append").save(path)
    back = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert back == [("a", 1), ("b", 2), ("c", 3)]
    assert (tmp_path / "t" / "_delta_log" / "00000000000000000001.json").is_file()
    history = DeltaTable.forPath(spark, path).history().select("version", "operation").collect()
    assert sorted((r.version, r.operation) for r in history) == [(0, "WRITE"), (1, "WRITE")]


def _spark_submit(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """The venv's spark-submit with ``args``, this checkout's Python on both sides."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(REPO)}
    spark_submit = Path(sys.executable).parent / "spark-submit"
    return subprocess.run([str(spark_submit), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.spark
@pytest.mark.slow
def test_spark_submit_without_delta_jars_is_a_clear_error(tmp_path):
    """Under spark-submit without --jars, build_session fails with DeltaClassesMissingError naming the jars and the fix."""
    script = tmp_path / "app.py"
    script.write_text("from jobs.spark import build_session\nbuild_session()\nprint('SESSION-STARTED')\n")
    done = _spark_submit(tmp_path, "--master", "local[1]", "--conf", "spark.ui.enabled=false", str(script))
    output = done.stdout + done.stderr  # spark-submit merges the Python app's stderr into stdout
    assert done.returncode != 0
    assert "SESSION-STARTED" not in output
    assert "DeltaClassesMissingError" in output, output[-3000:]
    assert "io.delta:delta-spark_4.2_2.13:4.4.0" in output and "--jars" in output


@pytest.mark.parametrize("cores", [1, 2, 3, 16])
def test_local_sessions_size_their_shuffle_by_cores(cores):
    """Issue #19: no pinned shuffle partitions; a local session gets 4 per core of its
    defaultParallelism and one Delta snapshot partition per core; and no generated code (issue #21)."""
    from jobs.spark import local_defaults

    assert local_defaults(cores) == {"spark.sql.shuffle.partitions": str(4 * cores),
                                     "spark.databricks.delta.snapshotPartitions": str(cores),
                                     "spark.sql.codegen.wholeStage": "false",
                                     "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def test_the_local_heap_and_page_size_are_ours_unless_the_user_chose_them(tmp_path, monkeypatch):
    """spark.conf, SPARK_DRIVER_MEMORY or spark-defaults.conf's spark.driver.memory keep the
    user's heap; spark.conf or spark-defaults.conf's spark.buffer.pageSize the user's page size."""
    from jobs.config import SparkSettings
    from jobs.spark import _user_sets

    def heap(settings):
        return _user_sets(settings, "spark.driver.memory", "SPARK_DRIVER_MEMORY")

    def page(settings):
        return _user_sets(settings, "spark.buffer.pageSize")

    for var in ("SPARK_DRIVER_MEMORY", "SPARK_CONF_DIR", "SPARK_HOME"):
        monkeypatch.delenv(var, raising=False)
    assert not heap(SparkSettings()) and not page(SparkSettings())
    assert heap(SparkSettings(conf={"spark.driver.memory": "8g"}))
    assert page(SparkSettings(conf={"spark.buffer.pageSize": "16m"}))
    assert not page(SparkSettings(conf={"spark.driver.memory": "8g"}))
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    (tmp_path / "spark-defaults.conf").write_text("spark.driver.memoryOverhead 1g\n")
    assert not heap(SparkSettings()) and not page(SparkSettings())
    (tmp_path / "spark-defaults.conf").write_text("spark.ui.enabled false\nspark.driver.memory 6g\nspark.buffer.pageSize 8m\n")
    assert heap(SparkSettings()) and page(SparkSettings())
    (tmp_path / "spark-defaults.conf").write_text("spark.driver.memory=6g\nspark.buffer.pageSize: 8m\n")
    assert heap(SparkSettings()) and page(SparkSettings())    # a Java properties file's other forms
    monkeypatch.delenv("SPARK_CONF_DIR")
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "4g")
    assert heap(SparkSettings()) and not page(SparkSettings())


def test_a_local_session_the_job_starts_gets_them_below_the_users_conf(tmp_path, real_jars):
    """build_session on local[3] (a JVM of its own): 12 shuffle partitions, the user's
    snapshotPartitions wins over the default, the workers come from jobs.worker_daemon, and
    expressions are interpreted unless the user's conf says otherwise (whole-stage code
    generation stays off: the user set only the factory mode); its heap is 2 GB and its memory
    pages 2 MB (jobs.spark.LOCAL_PAGE_SIZE). The catalog's first use leaves
    no spark-warehouse/ in the working directory: it is under the cache directory."""
    script = ("from jobs.config import SparkSettings\nfrom jobs.spark import build_session\n"
              "s = build_session(SparkSettings(master='local[3]', conf={'spark.databricks.delta.snapshotPartitions': '5',\n"
              "                                                        'spark.sql.codegen.factoryMode': 'FALLBACK'}))\n"
              "print('CONF', s.conf.get('spark.sql.shuffle.partitions'), s.conf.get('spark.databricks.delta.snapshotPartitions'),\n"
              "      s.sparkContext.getConf().get('spark.python.daemon.module'), s.conf.get('spark.sql.codegen.wholeStage'),\n"
              "      s.conf.get('spark.sql.codegen.factoryMode'), s.sparkContext.getConf().get('spark.driver.memory'),\n"
              "      s.sparkContext._jsc.sc().env().memoryManager().pageSizeBytes())\n"
              "s.catalog.listDatabases()\n"
              "s.stop()\n")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(REPO)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert f"CONF 12 5 jobs.worker_daemon false FALLBACK 2g {2 * 1024 * 1024}" in done.stdout, done.stdout[-2000:]
    assert not (tmp_path / "spark-warehouse").exists()


@pytest.mark.spark
@pytest.mark.slow
def test_spark_submit_in_local_mode_gets_them_below_its_own_settings(tmp_path, real_jars):
    """Under spark-submit --master local[2] (the cached jars given with --jars), build_session
    fills in the local defaults that neither spark-submit nor the configuration set: 8 shuffle
    partitions, 2 Delta snapshot partitions, no whole-stage code generation, 2 MB memory pages
    (read back from the context's memory manager); spark-submit's own
    --conf (the factory mode) and the configuration's (the snapshot partitions) win."""
    from jobs.delta_jars import installed_jars

    script = tmp_path / "app.py"
    script.write_text("from jobs.config import SparkSettings\nfrom jobs.spark import build_session\n"
                      "s = build_session(SparkSettings(conf={'spark.databricks.delta.snapshotPartitions': '5'}))\n"
                      "print('CONF', s.conf.get('spark.sql.shuffle.partitions'),\n"
                      "      s.conf.get('spark.databricks.delta.snapshotPartitions'),\n"
                      "      s.conf.get('spark.sql.codegen.wholeStage'), s.conf.get('spark.sql.codegen.factoryMode'),\n"
                      "      s.sparkContext._jsc.sc().env().memoryManager().pageSizeBytes())\n"
                      "s.stop()\n")
    done = _spark_submit(tmp_path, "--master", "local[2]", "--jars", installed_jars().csv, "--conf",
                         "spark.ui.enabled=false", "--conf", "spark.sql.codegen.factoryMode=FALLBACK", str(script))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert f"CONF 8 5 false FALLBACK {2 * 1024 * 1024}" in output, output[-2000:]
