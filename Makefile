# Two commands on a fresh machine: `make demo` and `make test`.
# Everything lives in a .venv inside the checkout; MySQL is unpacked into ~/.cache/gtid-audit
# ($GTID_AUDIT_CACHE overrides it; see jobs/sandbox/installer.py), and so are Delta's jars
# (`make jars`: the delta-spark jars matching the installed pyspark, see jobs/delta_jars.py), and
# so is the Airflow that loads and runs deploy/airflow's DAG in the tests (`make airflow`: its own
# virtualenv, never .venv, pinned by deploy/airflow/constraints-3.11.txt, see tests/fixtures/airflow.py).
PYTHON ?= python3
DIST   ?= dist
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test venv mysql jars class-archive airflow clean dist bench

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

mysql: $(STAMP)
	$(VENV)/bin/gtid-audit sandbox install

# Spark's own Ivy resolution, once; offline and instant when cached
jars: $(STAMP)
	$(PY) -m jobs.delta_jars install

# The JVM class archive local sessions start from (jobs/class_archive.py): about a minute once per
# JDK, Spark and Delta jars, then about 3.5 s less for a local session and its first Delta query;
# instant when built.
# The suite starts many; a one-off demo would not win back the minute.
class-archive: jars
	$(PY) -m jobs.class_archive_build

# Airflow and its Spark provider in <cache>/airflow-venv/, once (about 1.5 min); then offline, 0.4 s
airflow: $(STAMP)
	$(PY) -m tests.fixtures.airflow install

demo: mysql jars
	$(VENV)/bin/gtid-audit demo

# pytest's exit code is make's: 5 (no tests collected) fails like any other failure
test: mysql jars class-archive airflow
	$(PY) -m pytest

bench: mysql jars
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/gtid_set_ops.py
	$(PY) benchmarks/sandbox_fleet_up.py
	$(PY) benchmarks/collect_fleet.py
	$(PY) benchmarks/audit_pairs.py 10000 100000

dist: $(STAMP)
	$(PY) -m pip install --quiet build
	$(PY) -m build --wheel --outdir $(DIST) .
	$(PY) deploy/make_pyfiles_zip.py $(DIST)

clean:
	rm -rf build dist *.egg-info warehouse .sandbox conf/sandbox.yaml
