"""gtid_core imports only the standard library: proven in a subprocess with third-party packages blocked."""
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BLOCKED = ["pyspark", "mysql", "yaml", "pandas", "pyarrow", "deltalake", "delta", "pydantic", "tenacity", "rich",
           "numpy"]

SCRIPT = textwrap.dedent(
    """
    import importlib, pkgutil, sys
    BLOCKED = set(%r)

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked third-party import: {name}")
            return None

    sys.meta_path.insert(0, Blocker())
    import gtid_core
    names = [m.name for m in pkgutil.walk_packages(gtid_core.__path__, "gtid_core.")]
    for name in names:
        importlib.import_module(name)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    print("modules", len(names), "blocked-loaded", loaded)
    """
)


def test_gtid_core_imports_with_third_party_packages_blocked():
    """Every gtid_core module imports in a fresh interpreter where pyspark, mysql, yaml, pandas, pyarrow... fail."""
    proc = subprocess.run([sys.executable, "-c", SCRIPT % BLOCKED], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "blocked-loaded []" in proc.stdout
    count = int(proc.stdout.split()[1])
    assert count >= 7  # versions, snapshots, reconnect, relay_log, findings, checks, gtid_set, errors


def test_blocker_really_blocks():
    """The blocker used above does make a blocked import fail (so the test above can fail)."""
    probe = SCRIPT.split("import gtid_core")[0] % BLOCKED + "\nimport yaml\n"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "blocked third-party import: yaml" in proc.stderr
