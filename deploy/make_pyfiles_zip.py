"""Build ``DIST/gtid_audit-pyfiles.zip`` for ``spark-submit --py-files``.

It holds the three import packages (gtid_core, schemas, jobs) and nothing else: executors
import ``jobs.collector`` to read the servers and ``jobs.audit_tasks`` / ``gtid_core`` to run the
checks inside mapInArrow batches. Third-party dependencies are
not zipped (mysql-connector-python and pydantic have compiled parts): install the wheel into the
cluster's Python or ship a packed environment with ``--archives`` (docs/deployment.md).
"""
from __future__ import annotations

import sys
import zipfile
from pathlib import Path

PACKAGES = ("gtid_core", "schemas", "jobs")


def build(dist: Path) -> Path:
    """Write the zip into ``dist`` and return its path."""
    root = Path(__file__).resolve().parent.parent
    dist.mkdir(parents=True, exist_ok=True)
    out = dist / "gtid_audit-pyfiles.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in PACKAGES:
            for path in sorted((root / package).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts and path.suffix in {".py", ".yaml", ".sql", ".html", ".css", ".js", ".properties"}:
                    zf.write(path, path.relative_to(root).as_posix())
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("dist")
    print(build(target))
