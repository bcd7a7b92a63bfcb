"""Spark's Python worker daemon for the sessions the job starts in local mode, without the import
costs a pip-installed PySpark pays in every worker (issue #21).

Why. Spark starts Python workers by forking them from a daemon (``python -m pyspark.daemon``),
with ``pyspark.zip`` and ``py4j-*-src.zip`` from the PySpark package at the front of
``PYTHONPATH``. Python cannot cache the compiled code of modules imported from a zip, so every
worker compiled each PySpark module it imported after the fork from source again. And PySpark's
worker calls ``importlib.invalidate_caches()`` on its first task, which makes Python re-read
the 1,377-entry directory of ``pyspark.zip``. A profile of the Python workers of one night at 1,000
simulated servers (py-spy, docs/benchmarks.md, "Where the workers' CPU went") found 60 % of
their samples in imports, against 14 % in the reads of the servers.

What this daemon does, then hands over to PySpark's own (``pyspark.daemon.manager``):

1. drops those two zips from ``sys.path`` (and their importers from ``sys.path_importer_cache``,
   which ``invalidate_caches()`` walks) when they are the ones inside the PySpark package that
   the same interpreter imports from its site-packages (a pip install: the same files, with
   their compiled code cached), so that PySpark is imported from there; a zip from anywhere else
   (a Spark distribution whose version may differ from the package's) stays;
2. imports, before any fork, the modules every task imports and that start no thread
   (:data:`PRELOADED`): each worker inherits them. Modules that load numpy or pyarrow are not
   among them: their thread pools must not exist before a fork (PySpark's daemon imports its
   worker module after the fork for the same reason). A module that does not import is left to
   the worker, which then fails with the same error it would have without this daemon; the
   daemon says so on stderr. Whatever the imports print goes to stderr too: Spark reads the
   daemon's port from its stdout.

Used by :func:`jobs.spark.build_session` for ``local`` masters only (``spark.python.daemon.module``,
which the ``spark.conf`` of the job's configuration overrides): on a cluster the executors would
need this module on the daemon's path before any ``--py-files`` is unpacked, which Spark does not
promise.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import os
import sys

__all__ = ["PRELOADED", "shadowing_zips", "main"]

#: Modules imported in the daemon before it forks: what the read and audit tasks import, none of
#: which loads numpy or pyarrow (``schemas`` imports pyarrow only where it builds Arrow).
PRELOADED = ("pyspark.worker", "mysql.connector", "gtid_core", "schemas", "jobs.mysql_connection",
             "jobs.collector", "jobs.read_staging", "jobs.audit_tasks")


def shadowing_zips(path: list[str], package_dirs: dict[str, str | None]) -> list[str]:
    """The entries of ``path`` that are PySpark's own ``pyspark.zip`` / ``py4j-*-src.zip`` inside
    the PySpark package directory, when the package each holds is importable without them
    (``package_dirs``: ``pyspark`` and ``py4j`` -> the directory of the package the path
    without zips imports, or None): copies of what site-packages holds already."""
    pyspark_dir = package_dirs.get("pyspark")
    if not pyspark_dir:
        return []
    lib = os.path.join(os.path.realpath(pyspark_dir), "python", "lib")
    out = []
    for p in path:
        name = os.path.basename(p)
        package = "pyspark" if name == "pyspark.zip" else "py4j" if name.startswith("py4j-") else None
        if (p.endswith(".zip") and package and package_dirs.get(package)
                and os.path.dirname(os.path.realpath(p)) == lib):
            out.append(p)
    return out


def _package_dirs(names=("pyspark", "py4j")) -> dict[str, str | None]:
    """Per package, its directory as the path without zip entries would import it, or None."""
    plain = [p for p in sys.path if not p.endswith(".zip")]
    out: dict[str, str | None] = {}
    for name in names:
        spec = importlib.machinery.PathFinder.find_spec(name, plain)
        locations = list(spec.submodule_search_locations or []) if spec else []
        out[name] = locations[0] if locations else None
    return out


def main() -> None:
    """Adjust the path, preload, and run PySpark's daemon (module docstring)."""
    for entry in shadowing_zips(sys.path, _package_dirs()):
        sys.path.remove(entry)
        sys.path_importer_cache.pop(entry, None)
    with contextlib.redirect_stdout(sys.stderr):
        for name in PRELOADED:
            try:
                importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001 - the worker imports it again and reports its own error
                print(f"jobs.worker_daemon: {name} not preloaded ({type(exc).__name__}: {exc}); "
                      "the workers import it themselves", file=sys.stderr)
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
