"""Download and unpack a private MySQL 9.7 from Debian's ``sid`` suite, cached and self-contained.

This follows /work/shared/docs/mysql-server-here.md step by step:

1. a private apt sources file for ``sid``/``main`` using the archive URI the machine's own apt
   configuration already uses (read from ``/etc/apt/sources.list.d/*.sources``); the system's
   apt configuration and state are never touched;
2. ``apt-get update`` / ``apt-get download`` with private lists, archives and dpkg status;
3. the dependency closure of ``mysql-server-core`` and ``mysql-client-core`` from
   ``apt-cache depends --recurse`` (perl and virtual packages dropped, nothing hard-coded);
4. ``dpkg -x`` of every package into one tree;
5. every binary we run (mysqld, mysql, mysqlbinlog) is checked to resolve each shared library
   inside the tree through the bundled loader; a tree that would load anything from the host is
   refused with :class:`HostLibraryError`;
6. one ``--initialize-insecure`` data directory is kept as a template to copy per server.

The result lives in the cache directory (``$GTID_AUDIT_CACHE``, else
``$XDG_CACHE_HOME/gtid-audit``, else ``~/.cache/gtid-audit``). It is built in a staging
directory, the marker file is written last and the directory renamed into place, so a half-done
cache is never mistaken for a finished one and is rebuilt. Once cached, nothing touches the
network.
"""
from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from jobs.cache_dir import default_cache_dir
from jobs.sandbox.errors import ArchiveUnreachableError, HostLibraryError, InstallError

__all__ = [
    "MySQLDist",
    "ensure_mysql",
    "default_cache_dir",
    "archive_source",
    "resolve_closure",
    "check_self_contained",
    "ROOT_PACKAGES",
    "CHECKED_BINARIES",
]

ROOT_PACKAGES: tuple[str, ...] = ("mysql-server-core", "mysql-client-core")
SUITE = "sid"
COMPONENT = "main"
# Relative to the unpacked root: the binaries the sandbox runs, each checked by the loader.
CHECKED_BINARIES: tuple[str, ...] = ("usr/sbin/mysqld", "usr/bin/mysql", "usr/bin/mysqlbinlog")
LOADER_NAME = "ld-linux-x86-64.so.2"
DIST_DIRNAME = "mysql-sid"
MARKER_NAME = "INSTALLED.json"
_PERL = re.compile(r"^(perl|perl-base|perl-modules-[\d.]+|libperl[\d.]+)$")
# Options that keep an initialized template usable by every server the sandbox starts.
_INIT_OPTIONS = ("--innodb-buffer-pool-size=32M", "--innodb-redo-log-capacity=16M")


@dataclasses.dataclass(frozen=True)
class MySQLDist:
    """An unpacked, verified MySQL distribution; every binary runs through the bundled loader."""

    root: Path
    version: str
    template_datadir: Path
    packages: tuple[str, ...] = ()

    @property
    def library_dirs(self) -> tuple[Path, ...]:
        """The tree's library directories, searched before anything else by the loader."""
        dirs = [self.root / "usr/lib/x86_64-linux-gnu", self.root / "lib/x86_64-linux-gnu"]
        return tuple(d for d in dirs if d.is_dir())

    @property
    def library_path(self) -> str:
        return ":".join(str(d) for d in self.library_dirs)

    @property
    def loader(self) -> Path:
        return _find_loader(self.root)

    @property
    def basedir(self) -> Path:
        return self.root / "usr"

    @property
    def share_dir(self) -> Path:
        return self.root / "usr/share/mysql"

    def binary(self, relpath: str) -> Path:
        path = self.root / relpath
        if not path.is_file():
            raise InstallError(f"binary {relpath!r} is not in the MySQL tree {str(self.root)!r}")
        return path

    def _through_loader(self, relpath: str, args: Iterable[str]) -> list[str]:
        return [str(self.loader), "--inhibit-cache", "--library-path", self.library_path,
                str(self.binary(relpath)), *args]

    def mysqld_argv(self, *args: str) -> list[str]:
        """argv running mysqld through the bundled loader with the options the tree needs."""
        base = (f"--basedir={self.basedir}", f"--lc-messages-dir={self.share_dir}")
        # --no-defaults must come first on mysqld's own command line.
        return self._through_loader("usr/sbin/mysqld", ("--no-defaults", *base, *args))

    def mysql_argv(self, *args: str) -> list[str]:
        """argv running the mysql client (``--no-defaults`` first) through the bundled loader."""
        return self._through_loader("usr/bin/mysql", ("--no-defaults", *args))

    def mysqlbinlog_argv(self, *args: str) -> list[str]:
        """argv running mysqlbinlog (``--no-defaults`` first) through the bundled loader."""
        return self._through_loader("usr/bin/mysqlbinlog", ("--no-defaults", *args))


# --------------------------------------------------------------------------------------------
# apt source and dependency closure

def archive_source(sources_dir: Path = Path("/etc/apt/sources.list.d"),
                   sources_list: Path = Path("/etc/apt/sources.list")) -> tuple[str, str | None]:
    """(URI, Signed-By keyring or None) of the machine's main Debian archive.

    Read from the deb822 ``*.sources`` files (the stanza of type ``deb`` with component ``main``
    whose suites are not ``-security``), falling back to one-line ``sources.list`` entries.
    """
    candidates: list[tuple[str, str | None]] = []
    for path in sorted(sources_dir.glob("*.sources")) if sources_dir.is_dir() else []:
        for stanza in re.split(r"\n\s*\n", path.read_text()):
            fields: dict[str, str] = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line or line[:1].isspace():
                    continue
                key, _, value = line.partition(":")
                fields[key.strip().lower()] = value.strip()
            if "deb" not in fields.get("types", "").split():
                continue
            if "main" not in fields.get("components", "").split():
                continue
            suites = fields.get("suites", "").split()
            if suites and all(s.endswith("-security") for s in suites):
                continue
            for uri in fields.get("uris", "").split():
                candidates.append((uri, fields.get("signed-by")))
    if not candidates and sources_list.is_file():
        for line in sources_list.read_text().splitlines():
            m = re.match(r"^deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s+(.*)$", line.strip())
            if m and "main" in m.group(4).split() and not m.group(3).endswith("-security"):
                signed = re.search(r"signed-by=(\S+?)[\s\]]", m.group(1) or "")
                candidates.append((m.group(2), signed.group(1) if signed else None))
    if not candidates:
        raise InstallError(
            f"no Debian archive URI found in {str(sources_dir)!r}/*.sources or {str(sources_list)!r}")
    return candidates[0]


def resolve_closure(depends_output: str, roots: Sequence[str]) -> list[str]:
    """Package names reachable from ``roots`` in ``apt-cache depends --recurse`` output.

    Virtual packages (``<name>``) and perl are dropped together with whatever only they pull in;
    of alternatives (``|Depends: a`` then ``Depends: b``) the first is taken, as apt would.
    """
    graph: dict[str, list[str]] = {}
    current: list[str] | None = None
    skip_alternative = False
    for line in depends_output.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            name = line.strip()
            current = graph.setdefault(name, []) if not name.startswith("<") else None
            skip_alternative = False
            continue
        if line.startswith("    "):          # providers of a virtual package: ignored
            continue
        m = re.match(r"^\s+(\|)?(Pre)?Depends:\s+(\S+)", line)
        if not m or current is None:
            continue
        alternative, dep = m.group(1), m.group(3)
        if not skip_alternative:
            current.append(dep)
        skip_alternative = bool(alternative)
    missing = [r for r in roots if r not in graph]
    if missing:
        raise InstallError(f"packages {missing!r} are not in the apt-cache depends output")
    seen: list[str] = []
    todo = list(roots)
    while todo:
        name = todo.pop(0)
        if name in seen or name.startswith("<") or _PERL.match(name) or name not in graph:
            continue
        seen.append(name)
        todo.extend(graph[name])
    return seen


# --------------------------------------------------------------------------------------------
# self-containment check

def _find_loader(root: Path) -> Path:
    for rel in ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib64", "lib64"):
        candidate = root / rel / LOADER_NAME
        if candidate.exists():
            return candidate
    raise HostLibraryError(f"the bundled loader {LOADER_NAME!r} is missing from {str(root)!r}")


def check_self_contained(root: Path, binaries: Sequence[str] = CHECKED_BINARIES) -> dict[str, list[str]]:
    """Resolve every shared library of ``binaries`` through the bundled loader; refuse the host.

    Runs ``ld-linux-x86-64.so.2 --inhibit-cache --library-path TREE --list BINARY`` (the exact
    resolution the sandbox uses to run it) and raises :class:`HostLibraryError` when a library
    is not found or resolves outside ``root``. Returns {binary: [resolved library paths]}.
    """
    root = Path(root).resolve()
    loader = _find_loader(root)
    lib_dirs = [d for d in (root / "usr/lib/x86_64-linux-gnu", root / "lib/x86_64-linux-gnu") if d.is_dir()]
    resolved: dict[str, list[str]] = {}
    problems: list[str] = []
    for rel in binaries:
        binary = root / rel
        if not binary.is_file():
            raise HostLibraryError(f"binary {rel!r} is missing from {str(root)!r}")
        proc = subprocess.run(
            [str(loader), "--inhibit-cache", "--library-path", ":".join(map(str, lib_dirs)),
             "--list", str(binary)],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0 and "not found" not in proc.stdout:
            raise HostLibraryError(
                f"{str(loader)!r} --list {rel!r} failed ({proc.returncode}): {proc.stderr.strip()!r}")
        libs: list[str] = []
        for line in proc.stdout.splitlines():
            line = line.strip()
            if not line or line.startswith("linux-vdso"):
                continue
            if "=>" in line:
                soname, _, target = line.partition("=>")
                target = target.strip()
                if target.startswith("not found"):
                    problems.append(f"{rel}: {soname.strip()} not found")
                    continue
                path = target.split(" (")[0].strip()
            else:
                # The program interpreter (PT_INTERP) line: it is the loader we ran ourselves.
                path = line.split(" (")[0].strip()
                if Path(path).name == LOADER_NAME:
                    libs.append(str(loader))
                    continue
            real = os.path.realpath(path)
            if not real.startswith(str(root) + os.sep):
                problems.append(f"{rel}: {path} is outside the tree")
            libs.append(real)
        resolved[rel] = libs
    if problems:
        raise HostLibraryError(
            f"the MySQL tree {str(root)!r} is not self-contained; refusing to use it: "
            + "; ".join(problems))
    return resolved


# --------------------------------------------------------------------------------------------
# the install itself

class _Apt:
    """apt-get / apt-cache with private sources, lists, archives and dpkg status."""

    def __init__(self, workdir: Path, uri: str, signed_by: str | None):
        self.uri = uri
        self.dir = workdir
        for sub in ("lists/partial", "archives/partial"):
            (workdir / sub).mkdir(parents=True, exist_ok=True)
        (workdir / "status").write_text("")
        option = f"[signed-by={signed_by}] " if signed_by else ""
        (workdir / "sources.list").write_text(f"deb {option}{uri} {SUITE} {COMPONENT}\n")
        self.options = [
            "-o", f"Dir::Etc::sourcelist={workdir / 'sources.list'}",
            "-o", "Dir::Etc::sourceparts=-",
            "-o", f"Dir::State::Lists={workdir / 'lists'}",
            "-o", f"Dir::State::status={workdir / 'status'}",
            "-o", f"Dir::Cache::archives={workdir / 'archives'}",
            "-o", "Dir::Cache::pkgcache=",
            "-o", "Dir::Cache::srcpkgcache=",
            "-o", "APT::Sandbox::User=root",
            "-o", "Debug::NoLocking=1",
        ]

    def run(self, tool: str, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run([tool, "-q", *self.options, *args], capture_output=True, text=True,
                              cwd=cwd, check=False)
        if proc.returncode != 0:
            text = (proc.stderr or proc.stdout).strip()
            if tool == "apt-get" and args[:1] in (("update",), ("download",)):
                raise ArchiveUnreachableError(
                    f"cannot fetch MySQL from the Debian archive {self.uri!r} (suite {SUITE!r}): "
                    f"{tool} {args[0]} exited {proc.returncode}: {text[-800:]!r}")
            raise InstallError(f"{tool} {' '.join(args[:3])} failed ({proc.returncode}): {text[-800:]!r}")
        return proc.stdout

    def update(self) -> None:
        out = self.run("apt-get", "update")
        if not any((self.dir / "lists").glob("*_Packages*")):
            raise ArchiveUnreachableError(
                f"cannot fetch the {SUITE!r} package index from the Debian archive {self.uri!r}: {out[-400:]!r}")


def _log(message: str) -> None:
    print(f"[sandbox install] {message}", flush=True)


def _build(staging: Path, uri: str, signed_by: str | None) -> dict:
    started = time.monotonic()
    apt = _Apt(staging / "apt", uri, signed_by)
    _log(f"apt-get update ({uri} {SUITE} {COMPONENT}) ...")
    apt.update()
    depends = apt.run("apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                      "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", *ROOT_PACKAGES)
    packages = resolve_closure(depends, ROOT_PACKAGES)
    _log(f"downloading {len(packages)} packages ...")
    debs_dir = staging / "debs"
    debs_dir.mkdir()
    apt.run("apt-get", "download", *packages, cwd=debs_dir)
    debs = sorted(debs_dir.glob("*.deb"))
    if len(debs) != len(packages):
        raise InstallError(f"expected {len(packages)} .deb files in {str(debs_dir)!r}, found {len(debs)}")
    root = staging / "root"
    root.mkdir()
    for deb in debs:
        proc = subprocess.run(["dpkg", "-x", str(deb), str(root)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise InstallError(f"dpkg -x {deb.name!r} failed: {proc.stderr.strip()!r}")
    check_self_contained(root)
    dist = MySQLDist(root=root.resolve(), version="", template_datadir=staging / "template")
    version = subprocess.run(dist.mysqld_argv("--version"), capture_output=True, text=True,
                             check=False).stdout.strip()
    if "Ver" not in version:
        raise InstallError(f"mysqld --version printed {version!r}")
    version = _short_version(version)
    _log(f"{version}; initializing the template data directory ...")
    _initialize_template(dist, staging / "template", staging / "init-tmp")
    shutil.rmtree(staging / "apt")
    shutil.rmtree(debs_dir)
    return {
        "version": version,
        "archive": uri,
        "suite": SUITE,
        "packages": [d.name for d in debs],
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "build_seconds": round(time.monotonic() - started, 1),
    }


def _short_version(text: str) -> str:
    """'.../mysqld  Ver 9.7.4-2 for Linux ...' -> '9.7.4-2' (already short text is kept)."""
    m = re.search(r"\bVer\s+(\S+)", text)
    return m.group(1) if m else text


def _initialize_template(dist: MySQLDist, datadir: Path, tmpdir: Path) -> None:
    tmpdir.mkdir(parents=True, exist_ok=True)
    log = tmpdir / "init.err"
    argv = dist.mysqld_argv(
        "--initialize-insecure", f"--datadir={datadir}", "--user=root", "--secure-file-priv=",
        f"--log-error={log}", f"--tmpdir={tmpdir}", *_INIT_OPTIONS)
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, start_new_session=True)
    if proc.returncode != 0:
        tail = log.read_text()[-1500:] if log.exists() else proc.stderr[-1500:]
        raise InstallError(f"mysqld --initialize-insecure --datadir={str(datadir)!r} failed: {tail!r}")
    (datadir / "auto.cnf").unlink(missing_ok=True)
    shutil.rmtree(tmpdir)


def _load(dist_dir: Path) -> MySQLDist | None:
    marker = dist_dir / MARKER_NAME
    if not marker.is_file():
        return None
    info = json.loads(marker.read_text())
    return MySQLDist(root=(dist_dir / "root").resolve(), version=_short_version(info["version"]),
                     template_datadir=(dist_dir / "template").resolve(),
                     packages=tuple(info.get("packages", ())))


def ensure_mysql(cache_dir: str | os.PathLike | None = None) -> MySQLDist:
    """Return the cached MySQL distribution, building it first when the cache lacks it.

    Idempotent and safe to call from several processes at once (an exclusive lock on
    ``cache_dir/.lock``). A cached tree is re-checked for self-containment on every call (three
    loader runs), so a damaged cache is refused rather than silently using host libraries.
    """
    cache = Path(cache_dir).expanduser().resolve() if cache_dir else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    dist_dir = cache / DIST_DIRNAME
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        dist = _load(dist_dir)
        if dist is None:
            if dist_dir.exists():
                _log(f"removing the half-done cache {str(dist_dir)!r}")
                shutil.rmtree(dist_dir)
            for stale in cache.glob(f"{DIST_DIRNAME}.staging-*"):
                shutil.rmtree(stale, ignore_errors=True)
            uri, signed_by = archive_source()
            staging = Path(tempfile.mkdtemp(prefix=f"{DIST_DIRNAME}.staging-", dir=cache))
            try:
                info = _build(staging, uri, signed_by)
                (staging / MARKER_NAME).write_text(json.dumps(info, indent=2) + "\n")
                os.rename(staging, dist_dir)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            _log(f"installed into {str(dist_dir)!r} in {info['build_seconds']} s")
            dist = _load(dist_dir)
            assert dist is not None
        check_self_contained(dist.root)
        return dist
