"""Process measurements shared by the benchmark scripts (Linux /proc only)."""
from __future__ import annotations

import os
import signal
from pathlib import Path

__all__ = ["children", "ignores_sigchld", "pss", "rss_and_cmdline", "thread_cpu"]


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


def pss(pid: int) -> int:
    """Proportional set size of ``pid`` in bytes (``Pss:`` of ``/proc/<pid>/smaps_rollup``): each
    page it maps counts divided by the number of processes mapping it, so the PSS of forked
    workers adds up to the memory they really hold, where their RSS counts a page they share
    with their daemon once per process. 0 once it has exited."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0) * 1024


def thread_cpu(pid: int, prefixes: tuple[str, ...]) -> dict[int, float]:
    """CPU seconds (utime + stime) of each thread of ``pid`` whose name (``comm``, at most 15
    characters: ``C2 CompilerThre``) starts with one of ``prefixes``: tid -> seconds; {} once
    the process has exited."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    try:   # threads come and go while they are walked
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            raw = (task / "stat").read_text()
        except OSError:
            continue
        name, fields = raw[raw.index("(") + 1:raw.rindex(")")], raw.rsplit(")", 1)[1].split()
        if name.startswith(prefixes):
            out[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def ignores_sigchld(pid: int) -> bool:
    """True when ``pid`` ignores SIGCHLD (``SigIgn`` in /proc/<pid>/status): the kernel then reaps
    its children itself, and their CPU never reaches its cutime + cstime. Spark's Python daemon
    (``pyspark/daemon.py``) does that with the workers it forks. False once it has exited."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigIgn:")), 0)
    return bool(mask >> (signal.SIGCHLD - 1) & 1)
