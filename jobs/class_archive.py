"""The JVM class archive of a local session: Spark's and Delta's classes loaded from a
class-data-sharing (CDS) archive instead of from their jars.

Why (issue #20). Every process that starts a local session pays for its JVM loading, verifying
and linking some 21,600 classes: about 5-6 s to a session and 7 s more to its first Delta query
on this 2-core machine, on every night, first or not (docs/benchmarks.md, "The JVM's class
archive"). HotSpot can map the classes one run loaded from an archive that run wrote at its exit
(JDK 13+, ``-XX:ArchiveClassesAtExit`` then ``-XX:SharedArchiveFile``: JEP 350, dynamic CDS
archives). It maps only classes of the JVM's own class loaders, so Delta's jars are put on the
launch class path, after Spark's (:func:`launch_class_path`), rather than in ``spark.jars``,
whose classes a loader of Spark's own loads.

This module knows where the archive of a launch lives and whether it may be used; building it
is :mod:`jobs.class_archive_build` (``make class-archive``, once). Standard library only.

Safety. An archive is used only if it was written whole: the build renames it into place after
the writing JVM logged that it wrote it and exited, and records its size beside it; a session
uses it only when the file still has that size (HotSpot maps a truncated archive and dies of
SIGBUS, tried with JDK 17). An archive of another JDK, another class path or other heap
settings is refused by HotSpot itself, which then loads every class from the jars as without
an archive (``-Xshare:auto``, HotSpot's default); its CDS log is off, so that refusal is
silent. Its key names the ``java`` the launcher runs, Spark's jars and Delta's jars, each with
its size and modification time, so a change to any of them selects another archive (and none
until the next build).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from jobs.cache_dir import default_cache_dir

__all__ = ["ARCHIVE_DIRNAME", "ClassArchive", "launch_java", "spark_home", "spark_jars_dir", "launch_class_path",
           "class_archive", "use_options", "dump_options", "record", "prune", "KEEP"]

#: Where the archives live, under the cache root (:func:`jobs.cache_dir.default_cache_dir`).
ARCHIVE_DIRNAME = "class-archive"

#: The format of the key and of the record beside an archive; a change selects new archives.
_FORMAT = 1

#: Archives kept in the cache (a checkout's venv and a fresh clone's each have their own key).
KEEP = 3

#: A build's temporary files older than this are a killed build's leftovers.
_LEFTOVER_SECONDS = 3600

#: What HotSpot logs once it has written a dynamic archive (``DynamicArchiveBuilder``, JDK 17).
WRITTEN_LINE = "Written dynamic archive"


@dataclass(frozen=True)
class ClassArchive:
    """The archive of one launch: ``path`` (``<key>.jsa``) and its record ``<key>.json``."""

    path: Path

    @property
    def record_path(self) -> Path:
        return self.path.with_suffix(".json")

    def usable(self) -> bool:
        """Whether the archive exists whole: its record names the size it was written with."""
        try:
            recorded = json.loads(self.record_path.read_text())
            return isinstance(recorded, dict) and self.path.stat().st_size == recorded.get("size")
        except (OSError, ValueError):
            return False


def launch_java() -> Path | None:
    """The ``java`` that Spark's launcher runs (``$JAVA_HOME/bin/java``, else the first on
    ``PATH``: ``bin/spark-class``), resolved; ``None`` when there is none."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return Path(found).resolve() if found and os.path.exists(found) else None


def spark_home() -> Path:
    """The Spark that PySpark's launcher runs: ``$SPARK_HOME``, else the pip-installed PySpark's
    own directory."""
    home = os.environ.get("SPARK_HOME")
    if home:
        return Path(home)
    import pyspark   # noqa: PLC0415 - only its location: a local session imports it anyway

    return Path(pyspark.__file__).resolve().parent


def spark_jars_dir() -> Path:
    """Spark's own jars: ``<spark_home>/jars``."""
    return spark_home() / "jars"


def launch_class_path(delta_jars: Sequence[Path | str], existing: str | None = None) -> str:
    """``SPARK_DIST_CLASSPATH`` with Delta's jars: Spark's launcher puts that variable *after*
    Spark's own jars (``AbstractCommandBuilder.buildClassPath``), so a class both have (Delta
    brings Jackson 2.13, Spark has 2.21) comes from Spark's, as it does from ``spark.jars``,
    whose loader asks Spark's first. A value already set (a Hadoop-free Spark's) comes first."""
    return os.pathsep.join([p for p in (existing or "").split(os.pathsep) if p] + [str(j) for j in delta_jars])


def _stamp(path: Path) -> list:
    try:
        st = path.stat()
        return [str(path), st.st_size, st.st_mtime_ns]
    except OSError:
        return [str(path), None, None]


def _key(java: Path, delta_jars: Sequence[Path | str]) -> str:
    jars = spark_jars_dir()
    try:
        spark = sorted(jars.iterdir())
    except OSError:
        spark = []
    inputs = {"format": _FORMAT, "java": _stamp(java), "spark_jars": [_stamp(p) for p in spark],
              "delta_jars": [_stamp(Path(j)) for j in delta_jars]}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:20]


def class_archive(delta_jars: Sequence[Path | str], cache_root: Path | None = None) -> ClassArchive | None:
    """The archive for a local launch with ``delta_jars`` on its class path (whether or not it
    exists yet); ``None`` without a ``java`` to key it by."""
    java = launch_java()
    if java is None:
        return None
    root = Path(cache_root or default_cache_dir()) / ARCHIVE_DIRNAME
    return ClassArchive(root / f"{_key(java, delta_jars)}.jsa")


def use_options(archive: ClassArchive) -> list[str]:
    """The JVM options that map ``archive``, its CDS log off (an archive HotSpot refuses is
    then not used, silently)."""
    return [f"-XX:SharedArchiveFile={archive.path}", "-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]


def dump_options(target: Path, log: Path) -> list[str]:
    """The JVM options that write the classes of the run into ``target`` at its exit, logging
    the dump (:data:`WRITTEN_LINE` ends it) to ``log``."""
    return [f"-XX:ArchiveClassesAtExit={target}", f"-Xlog:cds+dynamic=info:file={log}"]


def record(archive: ClassArchive, written: Path, seconds: float) -> None:
    """Move the archive ``written`` whole into place, then write its record (size last: until
    the record exists the archive is not used)."""
    os.replace(written, archive.path)
    tmp = archive.record_path.with_name(archive.record_path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"size": archive.path.stat().st_size, "format": _FORMAT,
                               "build_seconds": round(seconds, 1)}))
    os.replace(tmp, archive.record_path)


def prune(archive: ClassArchive, keep: int = KEEP) -> list[Path]:
    """Remove all but the ``keep`` newest archives beside ``archive`` (it among them), and
    leftovers of builds that did not finish; return what was removed."""
    root = archive.path.parent
    removed = []

    def modified(path: Path) -> float | None:   # another build may move or remove it meanwhile
        try:
            return path.stat().st_mtime
        except FileNotFoundError:
            return None

    archives = sorted(((m, p) for p in root.glob("*.jsa") if p != archive.path
                       for m in [modified(p)] if m is not None), reverse=True)
    for _, old in archives[max(0, keep - 1):]:
        for path in (old, old.with_suffix(".json")):
            path.unlink(missing_ok=True)
            removed.append(path)
    for leftover in root.glob("*.tmp*"):
        # another build's in progress keeps its files for the length of a build
        m = modified(leftover)
        if m is not None and m < time.time() - _LEFTOVER_SECONDS:
            leftover.unlink(missing_ok=True)
            removed.append(leftover)
    return removed
