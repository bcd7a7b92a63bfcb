"""The JVM class archive of local sessions: its key, the record that lets a session use it, and a
real session whose Spark and Delta classes HotSpot maps from the archive `make class-archive` built."""
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
def test_a_local_session_maps_spark_and_delta_classes_from_the_archive(tmp_path, real_jars):
    """`make class-archive` built the archive for this installation; a session the job starts in local
    mode loads SparkContext and DeltaLog from it (HotSpot's class-load log says "shared objects
    file (top)": the dynamic archive), has Delta's jars on its launch class path rather than in
    spark.jars, and writes and reads a Delta table."""
    archive = ca.class_archive(real_jars.jars)
    assert archive is not None and archive.usable(), \
        f"no class archive at {archive and archive.path}: `make class-archive` (make test runs it) builds it"
    script = ("import sys\nfrom jobs.spark import build_session\n"
              "s = build_session()\n"
              "s.range(5).write.format('delta').save(sys.argv[1])\n"
              "print('ROWS', s.read.format('delta').load(sys.argv[1]).count(), 'JARS', s.sparkContext.getConf().get('spark.jars', ''))\n"
              "s.stop()\n")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(REPO),
           "JDK_JAVA_OPTIONS": f"-Xlog:class+load=info:file={tmp_path}/classes-%p.log"}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "t")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "ROWS 5 JARS \n" in done.stdout, done.stdout[-2000:]
    loads = "".join(p.read_text(errors="replace") for p in tmp_path.glob("classes-*.log"))
    for name in ("org.apache.spark.SparkContext", "org.apache.spark.sql.delta.DeltaLog"):
        assert f"{name} source: shared objects file (top)" in loads, f"{name} not from the archive"
