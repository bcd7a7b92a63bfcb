"""The JVM class archive of local sessions: its key, the record that lets a session use it, a
real build, and a real session whose Spark and Delta classes HotSpot maps from it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs import class_archive as ca
from jobs.delta_jars import installed_jars

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def real_jars():
    """The jars `make jars` cached (the suite needs them; the error says how to get them)."""
    return installed_jars()


def _jar(path: Path, data: bytes = b"PK") -> Path:
    path.write_bytes(data)
    return path


def test_an_archive_is_used_only_whole(tmp_path):
    """An archive without its record, or whose size is not the recorded one (a truncated file,
    which HotSpot would map and die on), is not used; the recorded size is."""
    archive = ca.ClassArchive(tmp_path / "k.jsa")
    archive.path.write_bytes(b"x" * 100)
    assert not archive.usable()
    archive.record_path.write_text(json.dumps({"size": 100}))
    assert archive.usable()
    archive.path.write_bytes(b"x" * 60)
    assert not archive.usable()
    archive.record_path.write_text("{not json")
    assert not archive.usable()


def test_record_moves_the_written_file_and_records_its_size(tmp_path):
    """record() puts the written file in place and records its size, so it becomes usable."""
    archive = ca.ClassArchive(tmp_path / "k.jsa")
    written = _jar(tmp_path / "k.jsa.1.tmp", b"y" * 42)
    ca.record(archive, written, 1.0)
    assert not written.exists() and archive.usable()
    assert json.loads(archive.record_path.read_text())["size"] == 42


def test_the_key_follows_java_spark_and_delta_jars(tmp_path, monkeypatch):
    """Another Delta jar, a changed one, another java or other Spark jars select another
    archive; the same inputs the same one."""
    java = _jar(tmp_path / "java")
    spark_home = tmp_path / "spark"
    (spark_home / "jars").mkdir(parents=True)
    _jar(spark_home / "jars" / "spark-core.jar")
    monkeypatch.setenv("SPARK_HOME", str(spark_home))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    (tmp_path / "jdk" / "bin").mkdir(parents=True)
    os.symlink(java, tmp_path / "jdk" / "bin" / "java")
    delta = [_jar(tmp_path / "delta-spark.jar")]

    def path():
        return ca.class_archive(delta, tmp_path / "cache").path

    first = path()
    assert first.parent == tmp_path / "cache" / ca.ARCHIVE_DIRNAME and path() == first
    delta.append(_jar(tmp_path / "delta-storage.jar"))
    second = path()
    _jar(delta[0], b"PK2")
    third = path()
    _jar(spark_home / "jars" / "spark-sql.jar")
    fourth = path()
    _jar(java, b"another build")
    assert len({first, second, third, fourth, path()}) == 5
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert ca.class_archive(delta, tmp_path / "cache") is None


def test_delta_jars_come_after_an_existing_dist_class_path():
    """SPARK_DIST_CLASSPATH keeps a value already set first (a Hadoop-free Spark's), Delta's after."""
    assert ca.launch_class_path(["/j/a.jar", "/j/b.jar"], "/hadoop/*") == os.pathsep.join(
        ["/hadoop/*", "/j/a.jar", "/j/b.jar"])
    assert ca.launch_class_path(["/j/a.jar"], None) == "/j/a.jar"


def test_prune_keeps_the_newest_archives_and_removes_old_leftovers(tmp_path):
    """Beside the current archive only the KEEP - 1 newest others stay; a build's temporary
    file older than an hour goes, a fresh one (a build in progress) stays."""
    root = tmp_path / ca.ARCHIVE_DIRNAME
    root.mkdir()
    current = ca.ClassArchive(root / "cur.jsa")
    _jar(current.path)
    for age, name in enumerate(["a", "b", "c", "d"]):
        for suffix in (".jsa", ".json"):
            p = _jar(root / f"{name}{suffix}")
            os.utime(p, (1_000_000 - age, 1_000_000 - age))
    old_tmp, new_tmp = _jar(root / "x.jsa.1.tmp"), _jar(root / "y.jsa.2.tmp")
    os.utime(old_tmp, (1_000, 1_000))
    ca.prune(current)
    assert sorted(p.name for p in root.iterdir()) == ["a.jsa", "a.json", "b.jsa", "b.json", "cur.jsa", "y.jsa.2.tmp"]


@pytest.mark.spark
@pytest.mark.slow
def test_the_build_writes_an_archive_a_local_session_maps_spark_and_delta_classes_from(tmp_path, real_jars):
    """The build leaves the archive and its record, nothing temporary, and a second build finds it
    up to date. A session the job starts in local mode with that cache loads SparkContext and
    DeltaLog from it (HotSpot's class-load log says "shared objects file (top)": the dynamic
    archive), has Delta's jars on its launch class path rather than in spark.jars, writes and
    reads a Delta table, and runs HotSpot's C1 compiler only with a 240 MB code cache, as the JVM
    itself reports its flags (``jobs.spark.LOCAL_JIT_OPTIONS``).

    The archive is the one ``make class-archive`` built for this installation (``make test`` runs
    it first: about 80 s not spent twice); without one, the test builds it into a cache of its own,
    Delta's jars linked in, and checks the build's own report of it."""
    from jobs.delta_jars import JARS_DIRNAME, default_cache_dir

    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(REPO)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    archive = ca.class_archive(real_jars.jars, default_cache_dir())
    if archive is not None and archive.usable():
        cache = default_cache_dir()
    else:
        cache = tmp_path / "cache"
        cache.mkdir()
        (cache / JARS_DIRNAME).symlink_to(default_cache_dir() / JARS_DIRNAME)
        env["GTID_AUDIT_CACHE"] = str(cache)
        built = subprocess.run([sys.executable, "-m", "jobs.class_archive_build"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=900)
        assert built.returncode == 0 and "class-archive: wrote " in built.stderr, built.stderr[-3000:]
        archive = ca.class_archive(real_jars.jars, cache)
        assert sorted(p.name for p in archive.path.parent.iterdir()) == [archive.path.name,
                                                                        archive.record_path.name]
    env["GTID_AUDIT_CACHE"] = str(cache)
    assert archive.usable()
    assert archive.path.parent == cache / ca.ARCHIVE_DIRNAME
    assert not [p.name for p in archive.path.parent.iterdir() if ".tmp" in p.name]
    again = subprocess.run([sys.executable, "-m", "jobs.class_archive_build"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "is up to date" in again.stderr, again.stderr[-2000:]

    script = ("import sys\nfrom jobs.spark import build_session\n"
              "s = build_session()\n"
              "s.range(5).write.format('delta').save(sys.argv[1])\n"
              "print('ROWS', s.read.format('delta').load(sys.argv[1]).count(), 'JARS', s.sparkContext.getConf().get('spark.jars', ''))\n"
              "jvm = s._jvm\n"
              "bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(\n"
              "    jvm.java.lang.Class.forName('com.sun.management.HotSpotDiagnosticMXBean'))\n"
              "print('JIT', *(bean.getVMOption(f).getValue() for f in ('TieredStopAtLevel', 'ReservedCodeCacheSize')))\n"
              "s.stop()\n")
    env["JDK_JAVA_OPTIONS"] = f"-Xlog:class+load=info:file={tmp_path}/classes-%p.log"
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "t")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "ROWS 5 JARS \n" in done.stdout, done.stdout[-2000:]
    assert f"JIT 1 {240 * 1024 * 1024}\n" in done.stdout, done.stdout[-2000:]
    loads = "".join(p.read_text(errors="replace") for p in tmp_path.glob("classes-*.log"))
    for name in ("org.apache.spark.SparkContext", "org.apache.spark.sql.delta.DeltaLog"):
        assert f"{name} source: shared objects file (top)" in loads, f"{name} not from the archive"


def test_a_spark_env_script_keeps_delta_in_spark_jars(tmp_path, monkeypatch, real_jars):
    """With a spark-env.sh in Spark's configuration directory (which the launcher sources after
    the job set SPARK_DIST_CLASSPATH: a Hadoop-free Spark sets it there), or a spark-defaults.conf
    that brings jars of its own, a local session keeps Delta in spark.jars, as before the archive."""
    from pyspark import SparkContext

    from jobs.config import SparkSettings
    from jobs.spark import _launch_delta_jars

    monkeypatch.setattr(SparkContext, "_gateway", None)   # as in a process that starts its first JVM
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert _launch_delta_jars(SparkSettings()) is not None
    (tmp_path / "spark-env.sh").write_text("export SPARK_DIST_CLASSPATH=$(hadoop classpath)\n")
    assert _launch_delta_jars(SparkSettings()) is None
    (tmp_path / "spark-env.sh").unlink()
    (tmp_path / "spark-defaults.conf").write_text("spark.driver.extraClassPath /opt/jars/*\n")
    assert _launch_delta_jars(SparkSettings()) is None
    assert _launch_delta_jars(SparkSettings(conf={"spark.jars.packages": "io.delta:delta-spark_4.2_2.13:4.4.0"})) is None
