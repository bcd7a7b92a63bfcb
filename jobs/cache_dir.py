"""Where gtid-audit caches what its install step downloads (the Delta jars, the sandbox's MySQL
server), so that later runs work offline: ``$GTID_AUDIT_CACHE``, else
``$XDG_CACHE_HOME/gtid-audit``, else ``~/.cache/gtid-audit``. Production (``jobs.delta_jars``)
and the sandbox (``jobs.sandbox.installer``) both use it; standard library only."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_cache_dir"]


def default_cache_dir() -> Path:
    """The cache root: ``$GTID_AUDIT_CACHE``, ``$XDG_CACHE_HOME/gtid-audit`` or ``~/.cache/gtid-audit``."""
    explicit = os.environ.get("GTID_AUDIT_CACHE")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "gtid-audit").resolve()
