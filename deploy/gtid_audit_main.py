"""spark-submit entry file: ``spark-submit --files audit.yaml ... deploy/gtid_audit_main.py run --config audit.yaml``.

spark-submit needs a Python file as the application; this one hands its arguments to the same
``gtid-audit`` command a shell would run, so a cluster run and a laptop run behave alike.

``--config``: a path that exists where the driver runs is used as is. A bare file name that does
not exist there is looked up among the files shipped with ``--files`` (``SparkFiles``), which is
where spark-submit puts them in client mode (and in cluster mode they are also in the driver's
working directory): ``deploy/submit.sh`` always ships the configuration that way, because a
local ``--config`` path means nothing to a driver on another machine.

The SparkSession is built once, here or by the job (``jobs.spark.build_session``), from what
spark-submit configured (master, ``--jars``/``--packages``, ``--conf``); it fails with a clear
error when Delta's classes are not on spark-submit's classpath.
"""
from __future__ import annotations

import logging
import os
import sys

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
    """``argv`` with a bare ``--config`` file name replaced by its SparkFiles copy."""
    pos = _config_position(argv)
    if pos is None:
        return argv
    prefix = "--config=" if argv[pos].startswith("--config=") else ""
    value = argv[pos][len(prefix):]
    if os.path.exists(value) or os.path.basename(value) != value:
        return argv  # a real path: a local file, or the job's own "not found" error names it
    from pyspark import SparkFiles

    from jobs.spark import build_session

    build_session()  # SparkFiles needs the context; spark-submit's settings make it
    shipped = SparkFiles.get(value)
    if not os.path.isfile(shipped):
        sys.exit(f"gtid_audit_main: --config {value!r} is neither a file here ({os.getcwd()!r}) nor shipped with "
                 f"spark-submit --files (looked in {SparkFiles.getRootDirectory()!r})")
    logging.getLogger("gtid_audit").info("configuration %r shipped with --files: %s", value, shipped)
    print(f"gtid_audit_main: --config {value} from --files: {shipped}", file=sys.stderr)
    out = list(argv)
    out[pos] = prefix + shipped
    return out


if __name__ == "__main__":
    sys.exit(main(resolve_config(sys.argv[1:])))
