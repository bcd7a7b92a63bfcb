# Two commands on a fresh machine: `make demo` and `make test`.
# Everything lives in a .venv inside the checkout; MySQL is unpacked into ~/.cache/gtid-audit
# ($GTID_AUDIT_CACHE overrides it; see jobs/sandbox/installer.py).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test venv mysql clean dist bench

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

mysql: $(STAMP)
	$(VENV)/bin/gtid-audit sandbox install

demo: mysql
	$(VENV)/bin/gtid-audit demo

test: mysql
	$(PY) -m pytest

bench: mysql
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/gtid_set_ops.py
	$(PY) benchmarks/sandbox_fleet_up.py
	$(PY) benchmarks/collect_fleet.py
	$(PY) benchmarks/audit_pairs.py 10000 100000

dist: $(STAMP)
	$(PY) -m pip install --quiet build
	$(PY) -m build --wheel --outdir dist .
	$(PY) deploy/make_pyfiles_zip.py dist

clean:
	rm -rf build dist *.egg-info warehouse .sandbox
