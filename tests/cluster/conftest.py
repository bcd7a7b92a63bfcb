"""Fixtures of the cluster tests: a Spark standalone cluster (see standalone.py)."""
from __future__ import annotations

import pytest

from tests.cluster.standalone import StandaloneCluster


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    """One master and two 1-core/1g workers on 127.0.0.1, each its own JVM, shared by the tests of
    a module (the applications its tests submit) and stopped by pid after them."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster")).start()
    try:
        yield cluster
    finally:
        cluster.stop()
