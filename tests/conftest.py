"""Session-wide fixtures, shared by every test package.

The fixtures themselves live in ``tests/fixtures/``; this file only exports them so that pytest
finds them everywhere (one Spark session, one sandbox fleet and one demo night per test run, and the
cached Airflow virtualenv).
"""
from tests.fixtures.airflow import *  # noqa: F401,F403
from tests.fixtures.demo import *  # noqa: F401,F403
from tests.fixtures.fleet import *  # noqa: F401,F403
from tests.fixtures.spark import *  # noqa: F401,F403

