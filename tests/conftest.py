"""Session-wide fixtures, shared by every test package.

The fixtures themselves live in ``tests/fixtures/``; this file only exports them so that pytest
finds them everywhere (one Spark session, one sandbox fleet and one demo night per test run, and the
cached Airflow virtualenv).
"""
import tests.fixtures.secrets  # noqa: F401  (first: sets the executors' secrets before any Spark starts)
from tests.fixtures.airflow import *  # noqa: F401,F403
from tests.fixtures.demo import *  # noqa: F401,F403
from tests.fixtures.fleet import *  # noqa: F401,F403
from tests.fixtures.spark import *  # noqa: F401,F403


# Property tests have no per-example deadline: a slow example on a loaded machine is not a
# failure (speed is measured by the benchmarks, never by a timed unit test).
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("gtid-audit", deadline=None)
_hypothesis_settings.load_profile("gtid-audit")
