"""spark-submit entry file: ``spark-submit --files audit.yaml ... deploy/gtid_audit_main.py run --config audit.yaml``.

spark-submit needs a Python file as the application; this one hands its arguments to the same
``gtid-audit`` command a shell would run, so a cluster run and a laptop run behave alike.

``--config``: a path that exists where the driver runs is used as is. A bare file name that does
not exist there is looked up among the files shipped with ``--files`` (``spark.files``, or on
YARN ``spark.yarn.dist.files``; by file name, or by a YARN ``#alias``): ``deploy/submit.sh``
always ships the configuration that way, because a local ``--config`` path means nothing to a
driver on another machine.

- In YARN's cluster mode the shipped files are in the driver's working directory: used as is.
- On Kubernetes in cluster mode, and in client mode anywhere, the entry names a file where the
  driver runs (the file spark-submit was given, or the copy it downloaded), and that file is
  read where it is, before any SparkContext starts, so that the configuration's ``spark.conf``
  reaches the session the job builds.
- Only a file shipped from a remote file system (``hdfs:``, ``s3a:``) needs the context first
  (``SparkFiles``); its ``spark.conf`` then comes too late, and a warning says so.

The SparkSession is built once, here (that last case) or by the job
(``jobs.spark.build_session``), from what spark-submit configured (master,
``--jars``/``--packages``, ``--conf``) and then the configuration's ``spark.conf``; it fails with
a clear error when Delta's classes are not on spark-submit's classpath.
"""
from __future__ import annotations

import logging
import os
import sys
from urllib.parse import unquote, urlparse

from jobs.cli import main


def _config_position(argv: list[str]) -> int | None:
    """Index of the value of ``--config`` in ``argv`` (``--config X`` or ``--config=X``)."""
    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            return i + 1
        if arg.startswith("--config="):
            return i
    return None


def resolve_config(argv: list[str]) -> list[str]:
    """``argv`` with a bare ``--config`` file name replaced by the path of the file shipped with
    ``--files``; no SparkContext is started unless the file must be fetched (module docstring)."""
    pos = _config_position(argv)
    if pos is None:
        return argv
    prefix = "--config=" if argv[pos].startswith("--config=") else ""
    value = argv[pos][len(prefix):]
    if os.path.exists(value) or os.path.basename(value) != value:
        return argv  # a real path: a local file, or the job's own "not found" error names it
    submitted = _submitted_files()
    named = [uri for uri in submitted if value in _names(uri)]
    if not named:
        sys.exit(f"gtid_audit_main: --config {value!r} is neither a file here ({os.getcwd()!r}) nor shipped with "
                 f"spark-submit --files ({' and '.join(FILES_SETTINGS)}: {','.join(submitted) or 'none'})")
    local = [path for path in map(_local_path, named) if path is not None]
    if local and not os.path.isfile(local[0]):
        sys.exit(f"gtid_audit_main: --config {value!r} was shipped with --files as {local[0]!r}, "
                 "which is not a file where the driver runs")
    shipped = local[0] if local else _fetched_by_spark_files(value)
    logging.getLogger("gtid_audit").info("configuration %r shipped with --files: %s", value, shipped)
    print(f"gtid_audit_main: --config {value} from --files: {shipped}", file=sys.stderr)
    out = list(argv)
    out[pos] = prefix + shipped
    return out


#: Where spark-submit lists the files given with ``--files``: YARN has its own setting.
FILES_SETTINGS = ("spark.files", "spark.yarn.dist.files")


def _submitted_files() -> list[str]:
    """The files given to spark-submit with ``--files`` (FILES_SETTINGS), read from
    spark-submit's JVM without starting a SparkContext; none outside spark-submit."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:   # not under spark-submit: no JVM to ask
        return []
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # attaches to spark-submit's JVM; starts no context
    conf = SparkConf()
    return [f for setting in FILES_SETTINGS for f in conf.get(setting, "").split(",") if f]


def _names(uri: str) -> set[str]:
    """The names a ``--files`` entry is known by: its file name and its YARN ``#alias``."""
    parsed = urlparse(uri)
    decode = unquote if parsed.scheme else str   # a bare path is not URL-encoded
    return {decode(name) for name in (os.path.basename(parsed.path), parsed.fragment) if name}


def _local_path(uri: str) -> str | None:
    """The path of a ``--files`` entry where the driver runs (``file:``, ``local:`` or no scheme),
    or None for a remote file system."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file", "local"):
        return unquote(parsed.path) if parsed.scheme else parsed.path
    return None


def _fetched_by_spark_files(value: str) -> str:
    """``value`` as SparkFiles fetched it: a file shipped from a remote file system. That needs
    the SparkContext, which starts before the configuration is read."""
    from pyspark import SparkFiles

    from jobs.spark import build_session

    build_session()  # SparkFiles needs the context; spark-submit's settings make it
    shipped = SparkFiles.get(value)
    if not os.path.isfile(shipped):
        sys.exit(f"gtid_audit_main: --config {value!r} was shipped with --files from a remote file system but "
                 f"is not in {SparkFiles.getRootDirectory()!r} (on YARN in client mode, ship it from a local path)")
    print(f"gtid_audit_main: warning: --config {value} came from a remote file system, so the session started "
          "before it was read and its spark.conf does not apply: give such settings with --conf", file=sys.stderr)
    return shipped


if __name__ == "__main__":
    sys.exit(main(resolve_config(sys.argv[1:])))
