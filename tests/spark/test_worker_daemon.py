"""The local sessions' Python worker daemon (jobs.worker_daemon, issue #21): workers import
PySpark from site-packages rather than from the zips Spark puts first on their path, and the
thread-free modules every task needs are imported once, before the fork."""
from __future__ import annotations

import os

from jobs.worker_daemon import PRELOADED, shadowing_zips

SITE = "/venv/lib/python3.11/site-packages"
OWN_ZIPS = [f"{SITE}/pyspark/python/lib/pyspark.zip", f"{SITE}/pyspark/python/lib/py4j-0.10.9.9-src.zip"]


def test_the_package_s_own_zips_are_dropped_when_site_packages_has_both_packages():
    """A pip install: both zips are copies of packages site-packages holds, so both go."""
    path = [*OWN_ZIPS, "/usr/lib/python311.zip", SITE]
    dirs = {"pyspark": f"{SITE}/pyspark", "py4j": f"{SITE}/py4j"}
    assert shadowing_zips(path, dirs) == OWN_ZIPS


def test_zips_of_another_spark_stay():
    """A Spark distribution's zips may be another version than the pip package: never dropped."""
    path = ["/opt/spark/python/lib/pyspark.zip", "/opt/spark/python/lib/py4j-0.10.9.9-src.zip", SITE]
    dirs = {"pyspark": f"{SITE}/pyspark", "py4j": f"{SITE}/py4j"}
    assert shadowing_zips(path, dirs) == []


def test_a_zip_stays_when_its_package_is_not_importable_without_it():
    """Dropping a zip must never make its package unimportable."""
    path = [*OWN_ZIPS, SITE]
    assert shadowing_zips(path, {"pyspark": f"{SITE}/pyspark", "py4j": None}) == OWN_ZIPS[:1]
    assert shadowing_zips(path, {"pyspark": None, "py4j": f"{SITE}/py4j"}) == []


def _worker_view(_):
    import sys

    import pyspark
    def pyspark_zip(p):
        return os.path.basename(str(p)).startswith(("pyspark.zip", "py4j-"))

    return [(pyspark.__file__, [p for p in sys.path if pyspark_zip(p)],
             [p for p in sys.path_importer_cache if pyspark_zip(p)],
             sorted(m for m in PRELOADED if m in sys.modules))]


def test_workers_import_pyspark_from_site_packages_with_the_modules_preloaded(spark):
    """Fails on PySpark's own daemon: its workers import pyspark from pyspark.zip (compiled from
    source in every worker, no bytecode cache) with both zips first on their path; and fails if
    the zips' importers stay cached, since ``importlib.invalidate_caches()`` on a worker's first
    task would re-read the zip's directory through them."""
    views = spark.sparkContext.parallelize(range(2), 2).mapPartitions(_worker_view).collect()
    for pyspark_file, zips, cached_importers, preloaded in views:
        assert ".zip" not in pyspark_file, pyspark_file
        assert zips == []
        assert cached_importers == []
        assert preloaded == sorted(PRELOADED)


def test_the_preloaded_modules_start_no_thread_and_load_neither_numpy_nor_pyarrow():
    """The daemon forks every worker after importing them: a thread (numpy's BLAS pool, Arrow's)
    would not exist in the child. Fails if, say, schemas imports pyarrow at its top again."""
    import subprocess
    import sys

    script = ("import importlib, os, sys\n"
              f"for m in {PRELOADED!r}: importlib.import_module(m)\n"
              "print(len(os.listdir('/proc/self/task')), sorted({'numpy', 'pyarrow', 'pandas'} & set(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "[]"], done.stdout
