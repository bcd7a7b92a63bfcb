"""Process measurements shared by the benchmark scripts (Linux /proc only)."""
from __future__ import annotations

from pathlib import Path

__all__ = ["children", "rss_and_cmdline"]


def children(pid: int) -> list[int]:
    """Every descendant: the children of each thread (the JVM starts Spark's Python workers from
    threads other than its main one)."""
    out = []
    try:   # the process may exit while it is walked
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for child in kids:
            out.append(int(child))
            out.extend(children(int(child)))
    return out


def rss_and_cmdline(pid: int) -> tuple[int, str]:
    """(resident bytes, command line) of ``pid``; (0, '') once it has exited."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return 0, ""
    kb = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return kb * 1024, cmd
