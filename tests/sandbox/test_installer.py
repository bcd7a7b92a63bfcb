"""The sandbox installer: cached, idempotent, self-contained, and refusing host libraries."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from jobs.sandbox.errors import HostLibraryError, InstallError
from jobs.sandbox.installer import (CHECKED_BINARIES, DIST_DIRNAME, MARKER_NAME, archive_source,
                                    check_self_contained, ensure_mysql, resolve_closure)

pytestmark = pytest.mark.mysql


def _linked_tree(dist, dest: Path) -> Path:
    """A hard-linked copy of the binaries and the library directory of ``dist`` under ``dest``."""
    for rel in CHECKED_BINARIES:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        os.link(dist.root / rel, dest / rel)
    shutil.copytree(dist.root / "usr/lib/x86_64-linux-gnu", dest / "usr/lib/x86_64-linux-gnu",
                    symlinks=True, copy_function=os.link)
    return dest


def test_ensure_mysql_is_idempotent(mysql_dist):
    """A second ensure_mysql() reuses the finished cache: same tree, marker untouched."""
    marker = mysql_dist.root.parent / MARKER_NAME
    before = marker.stat().st_mtime_ns
    again = ensure_mysql(mysql_dist.root.parent.parent)
    assert again.root == mysql_dist.root
    assert marker.stat().st_mtime_ns == before
    assert json.loads(marker.read_text())["version"].startswith("9.7")


def test_mysqld_runs_through_the_bundled_loader(mysql_dist):
    """mysqld started with the dist's argv reports the 9.7 version recorded in the cache marker."""
    out = subprocess.run(mysql_dist.mysqld_argv("--version"), capture_output=True, text=True, check=True).stdout
    assert "Ver 9.7" in out
    assert mysql_dist.version in out


def test_every_library_resolves_inside_the_tree(mysql_dist):
    """The checker resolves mysqld's libraries (libxxhash included) to files inside the tree."""
    resolved = check_self_contained(mysql_dist.root)
    assert set(resolved) == set(CHECKED_BINARIES)
    names = [Path(p).name for p in resolved["usr/sbin/mysqld"]]
    assert any(n.startswith("libxxhash.so") for n in names)
    root = str(mysql_dist.root) + os.sep
    assert all(p.startswith(root) for libs in resolved.values() for p in libs)


def test_a_complete_copy_of_the_tree_is_accepted(mysql_dist, tmp_path):
    """Control for the refusal test: the hard-linked copy itself passes the check."""
    tree = _linked_tree(mysql_dist, tmp_path / "tree")
    assert check_self_contained(tree)["usr/sbin/mysqld"]


def test_a_tree_missing_one_library_is_refused(mysql_dist, tmp_path):
    """With libxxhash removed, the loader would use the host's copy (or none): the tree is refused."""
    tree = _linked_tree(mysql_dist, tmp_path / "tree")
    removed = list((tree / "usr/lib/x86_64-linux-gnu").glob("libxxhash.so*"))
    assert removed
    for path in removed:
        path.unlink()
    with pytest.raises(HostLibraryError, match="libxxhash"):
        check_self_contained(tree)


def test_a_half_done_cache_is_discarded_and_an_unreachable_archive_is_named(tmp_path, monkeypatch):
    """A cache directory without its marker is removed and rebuilt; an unreachable archive is named."""
    half = tmp_path / DIST_DIRNAME
    (half / "root").mkdir(parents=True)
    (half / "root" / "leftover").write_text("x")
    sources = tmp_path / "sources.list.d"
    sources.mkdir()
    (sources / "debian.sources").write_text(
        "Types: deb\nURIs: http://127.0.0.1:9/debian\nSuites: bookworm\nComponents: main\n")
    import jobs.sandbox.installer as installer
    monkeypatch.setattr(installer, "archive_source", lambda: archive_source(sources, tmp_path / "none"))
    with pytest.raises(InstallError, match=r"http://127\.0\.0\.1:9/debian"):
        ensure_mysql(tmp_path)
    assert not half.exists()          # the half-done tree was thrown away, not trusted
    assert not list(tmp_path.glob(f"{DIST_DIRNAME}.staging-*"))


def test_archive_source_reads_the_deb822_main_stanza(tmp_path):
    """The archive URI and keyring come from the non-security deb stanza of *.sources."""
    (tmp_path / "d.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n"
        "Components: main\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\nSigned-By: /k.gpg\n")
    assert archive_source(tmp_path, tmp_path / "none") == ("http://mirror.example/debian", "/k.gpg")


def test_resolve_closure_drops_perl_and_virtual_packages():
    """Perl, virtual packages and what only they pull in are left out; alternatives take the first."""
    output = (
        "mysql-server-core\n  Depends: libc6\n  Depends: <perl:any>\n    perl\n"
        "  |Depends: liba\n  Depends: libb\n"
        "libc6\n  Depends: libgcc-s1\n"
        "libgcc-s1\n"
        "liba\n"
        "libb\n"
        "perl\n  Depends: libperl5.42\n"
        "libperl5.42\n  Depends: libdb5.3t64\n"
        "libdb5.3t64\n"
        "<perl:any>\n")
    assert resolve_closure(output, ["mysql-server-core"]) == ["mysql-server-core", "libc6", "liba", "libgcc-s1"]
