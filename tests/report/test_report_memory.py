"""The report process's Arrow memory pool: the C library's malloc, chosen before pyarrow loads.

The measured effect (the report's driver peak at 1,000 and 100,000 servers) is in
docs/benchmarks.md, "Stop 41"; here, that the choice is made, and only where it may be.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jobs.report import ARROW_POOL_VARIABLE

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str, **env: str) -> str:
    """What ``code`` prints, run in a fresh interpreter (pyarrow not yet loaded) on this
    checkout, without the user's ARROW_DEFAULT_MEMORY_POOL unless ``env`` sets it."""
    base = {k: v for k, v in os.environ.items() if k != ARROW_POOL_VARIABLE}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**base, "PYTHONPATH": str(ROOT), **env},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def _backend(code: str, **env: str) -> tuple[str, str]:
    """Run ``code`` in a fresh interpreter; return the backend of Arrow's default pool and the
    variable as the process left it."""
    backend, variable = _python(f"{code}\nimport os, pyarrow as pa\n"
                                f"print(pa.default_memory_pool().backend_name, os.environ.get({ARROW_POOL_VARIABLE!r}))",
                                **env).split()
    return backend, variable


def test_the_report_process_makes_malloc_arrows_pool_before_pyarrow_loads():
    assert _backend("from jobs.report import _arrow_on_system_malloc; _arrow_on_system_malloc()") == \
        ("system", "system")


def test_without_the_report_setting_arrow_keeps_its_own_default():
    backend, variable = _backend("import jobs.report")
    assert backend != "system" and variable == "None"


def test_a_users_choice_of_pool_wins():
    assert _backend("from jobs.report import _arrow_on_system_malloc; _arrow_on_system_malloc()",
                    **{ARROW_POOL_VARIABLE: "jemalloc"}) == ("jemalloc", "jemalloc")


def test_once_pyarrow_is_loaded_the_pool_is_left_alone():
    # Arrow read the variable when it loaded: setting it now would only mislead the children
    backend, variable = _backend("import pyarrow\nfrom jobs.report import _arrow_on_system_malloc\n"
                                 "_arrow_on_system_malloc()")
    assert backend != "system" and variable == "None"


def test_the_cli_imports_no_pyarrow_before_the_report_command_runs():
    # `gtid-audit report` must reach cmd_report with pyarrow unloaded, or its pool cannot be chosen
    assert _python("import sys\nfrom jobs.cli import build_parser\nbuild_parser()\n"
                   "from jobs.config import load_config\nprint('pyarrow' in sys.modules)") == "False"


def test_gtid_audit_report_writes_the_page_on_mallocs_pool(tmp_path):
    # the command itself, as the nightly job's report process runs it: the page's writer (a stand-in
    # here, which says what pool Arrow got) runs after cmd_report chose the pool
    config = tmp_path / "audit.yaml"
    config.write_text(f"warehouse: {tmp_path / 'warehouse'}\ndefaults: {{user: audit}}\n"
                      "servers: [{name: s1, host: s1.db, port: 3306}]\n")
    code = ("import sys\nimport jobs.report as report\n"
            "def write_report(*args, **kwargs):\n"
            "    import pyarrow as pa\n"
            "    return 'pool=' + pa.default_memory_pool().backend_name\n"
            "report.write_report = write_report\n"
            "from jobs.cli import main\n"
            f"sys.exit(main(['report', '--config', {str(config)!r}]))")
    assert _python(code) == "pool=system"
