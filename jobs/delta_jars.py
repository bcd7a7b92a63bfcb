"""Delta Lake's jars for the installed pyspark and delta-spark: fetched once, then used offline.

delta-spark (the pip package) holds only Python; its Scala classes come as Maven jars that must
match both the installed Delta version and the installed Spark version. This module:

1. derives the Maven coordinate from the two installed packages exactly as delta-spark's own
   ``delta/pip_utils.py`` does (``io.delta:delta-spark_<spark major.minor>_2.13:<delta version>``
   from Delta 4.1 on; ``delta-spark_2.13`` before), after checking the pair against
   :data:`COMPATIBILITY`, Delta's own compatibility table;
2. resolves it with Spark's own Ivy resolution (``spark-submit --packages`` with
   ``spark.jars.ivy`` pointing into the cache), so no Maven install is needed;
3. records the resolved jar paths in a small manifest (``manifest.json``, written last), under
   ``<cache>/delta-jars/<artifact>-<version>/``; the cache root is ``jobs.cache_dir``'s
   (``$GTID_AUDIT_CACHE``, ``$XDG_CACHE_HOME/gtid-audit`` or ``~/.cache/gtid-audit``).

Sessions then get ``spark.jars=<cached paths>`` (:meth:`DeltaJars.spark_conf`), never
``spark.jars.packages``: once cached, nothing touches the network. A missing, incomplete or
mismatched cache raises a :class:`DeltaJarsError` that names the jar, the versions and the exact
command that fixes it.

Command line (``make jars`` runs the first)::

    python -m jobs.delta_jars install [--repositories URL,...] [--ivy-settings FILE]
    python -m jobs.delta_jars show [--csv]      # the cached jars (for spark-submit --jars)
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from urllib.parse import unquote, urlparse

from jobs.cache_dir import default_cache_dir

__all__ = [
    "COMPATIBILITY",
    "DELTA_CATALOG_CLASS",
    "DELTA_EXTENSION_CLASS",
    "DeltaArtifact",
    "DeltaJars",
    "DeltaJarsError",
    "DeltaClassesMissingError",
    "JarsFetchError",
    "JarsMismatchError",
    "JarsNotInstalledError",
    "UnsupportedVersionsError",
    "delta_artifact",
    "install",
    "install_command",
    "installed_artifact",
    "installed_jars",
    "main",
    "register",
    "require_delta_classes",
]

SCALA_VERSION = "2.13"
DELTA_EXTENSION_CLASS = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG_CLASS = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
#: Delta Lake major.minor -> the Spark major.minor versions it is built for, from Delta's
#: compatibility table (docs.delta.io "releases") and the release notes of each version
#: ("Delta Spark 4.4.0 is built for Apache Spark 4.2.0, 4.1.0 and 4.0.1", ...).
COMPATIBILITY: Mapping[str, tuple[str, ...]] = {
    "4.0": ("4.0",),
    "4.1": ("4.0", "4.1"),
    "4.2": ("4.0", "4.1"),
    "4.3": ("4.0", "4.1"),
    "4.4": ("4.0", "4.1", "4.2"),
}
#: From this Delta version on the artifact name carries the Spark version (delta-spark_4.2_2.13).
FIRST_SUFFIXED_DELTA = (4, 1)
MANIFEST_NAME = "manifest.json"
JARS_DIRNAME = "delta-jars"
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")
# A resolution the probe reports; anything else on stdout is Spark's noise.
_PROBE_PREFIX = "GTID_AUDIT_RESOLVED_JARS="
_PROBE = f"""\
import json
from pyspark.java_gateway import launch_gateway
gateway = launch_gateway()  # spark-submit's own JVM, which already resolved --packages
print({_PROBE_PREFIX!r} + json.dumps(gateway.jvm.java.lang.System.getProperty("spark.jars")))
"""
# Ivy settings for the resolution: Maven Central (Ivy's default root) only. Spark's default chain
# also searches ~/.m2, where a pom without its jar (left by an earlier `mvn` run) makes the
# resolution fail with "download failed"; --repositories adds mirrors after Central.
_IVY_SETTINGS = """\
<ivysettings>
  <settings defaultResolver="gtid-audit"/>
  <resolvers>
    <chain name="gtid-audit" returnFirst="true">
      <ibiblio name="central" m2compatible="true"/>
    </chain>
  </resolvers>
</ivysettings>
"""


class DeltaJarsError(RuntimeError):
    """Base class: Delta's jars are unusable; the message names the jar, versions and the fix."""


class UnsupportedVersionsError(DeltaJarsError):
    """Raised when the installed delta-spark is not built for the installed pyspark."""


class JarsNotInstalledError(DeltaJarsError):
    """Raised when the cache has no manifest for the installed versions, or a listed jar is gone."""


class JarsMismatchError(DeltaJarsError):
    """Raised when the cached jars were resolved for other pyspark / delta-spark versions."""


class JarsFetchError(DeltaJarsError):
    """Raised when Spark's Ivy resolution could not fetch the jars (network, mirror, coordinate)."""


class DeltaClassesMissingError(DeltaJarsError):
    """Raised when a running Spark JVM cannot load Delta's classes (spark-submit without jars)."""


def install_command() -> str:
    """The exact command that installs the jars for this interpreter's packages."""
    return f"{sys.executable} -m jobs.delta_jars install"


def _minor(text: str, what: str) -> tuple[int, int]:
    match = _VERSION.match(text or "")
    if not match:
        raise UnsupportedVersionsError(f"cannot read the {what} version {text!r}")
    return int(match.group(1)), int(match.group(2))


@dataclasses.dataclass(frozen=True)
class DeltaArtifact:
    """The delta-spark Maven artifact matching one (pyspark, delta-spark) pair."""

    pyspark_version: str
    delta_version: str
    artifact_id: str

    @property
    def coordinate(self) -> str:
        """``group:artifact:version`` as spark-submit --packages takes it."""
        return f"io.delta:{self.artifact_id}:{self.delta_version}"

    @property
    def main_jar_name(self) -> str:
        """The file name Spark's Ivy retrieval gives the delta-spark jar itself."""
        return f"io.delta_{self.artifact_id}-{self.delta_version}.jar"

    @property
    def dirname(self) -> str:
        return f"{self.artifact_id}-{self.delta_version}"

    def describe(self) -> str:
        return f"{self.coordinate} (pyspark {self.pyspark_version}, delta-spark {self.delta_version})"


def delta_artifact(pyspark_version: str, delta_version: str) -> DeltaArtifact:
    """The artifact for this pair, or :class:`UnsupportedVersionsError` if Delta does not support it."""
    spark_minor = "%d.%d" % _minor(pyspark_version, "pyspark")
    delta_minor_t = _minor(delta_version, "delta-spark")
    delta_minor = "%d.%d" % delta_minor_t
    supported = COMPATIBILITY.get(delta_minor)
    if supported is None:
        raise UnsupportedVersionsError(
            f"delta-spark {delta_version} is not in gtid-audit's compatibility table "
            f"(known Delta versions: {', '.join(sorted(COMPATIBILITY))}): install a delta-spark "
            "built for your pyspark, e.g. the pair pinned in setup.cfg")
    if spark_minor not in supported:
        raise UnsupportedVersionsError(
            f"delta-spark {delta_version} is not built for pyspark {pyspark_version}: Delta "
            f"{delta_minor}.x supports Spark {', '.join(supported)} only; install the pair pinned "
            "in setup.cfg (pip install -e .)")
    if delta_minor_t >= FIRST_SUFFIXED_DELTA:
        artifact_id = f"delta-spark_{spark_minor}_{SCALA_VERSION}"
    else:
        artifact_id = f"delta-spark_{SCALA_VERSION}"
    return DeltaArtifact(pyspark_version=pyspark_version, delta_version=delta_version, artifact_id=artifact_id)


def installed_artifact() -> DeltaArtifact:
    """The artifact for the pyspark and delta-spark installed in this interpreter."""
    found = {}
    for package in ("pyspark", "delta-spark"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            raise UnsupportedVersionsError(
                f"the Python package {package!r} is not installed in {sys.executable}: "
                "run `pip install -e .` (setup.cfg pins pyspark and delta-spark)") from None
    return delta_artifact(found["pyspark"], found["delta-spark"])


@dataclasses.dataclass(frozen=True)
class DeltaJars:
    """Resolved, cached jars of one artifact; every path exists when this is returned."""

    artifact: DeltaArtifact
    jars: tuple[Path, ...]
    manifest: Path

    @property
    def csv(self) -> str:
        """The jars as spark.jars / --jars take them (comma-separated)."""
        return ",".join(str(p) for p in self.jars)

    def spark_conf(self) -> dict[str, str]:
        """The settings that give a new session Delta: the jars, the SQL extension, the catalog."""
        return {
            "spark.jars": self.csv,
            "spark.sql.extensions": DELTA_EXTENSION_CLASS,
            "spark.sql.catalog.spark_catalog": DELTA_CATALOG_CLASS,
        }


def _jars_root(cache_root: Path | None) -> Path:
    return Path(cache_root or default_cache_dir()) / JARS_DIRNAME


def _read_manifest(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise JarsNotInstalledError(
            f"the Delta jar manifest {str(path)!r} is unreadable ({exc}); "
            f"run `{install_command()}` to rebuild it") from None
    return data if isinstance(data, dict) else {}


def installed_jars(cache_root: Path | None = None) -> DeltaJars:
    """The cached jars for the installed versions, checked; never touches the network.

    Raises :class:`UnsupportedVersionsError` for a pair Delta does not support,
    :class:`JarsMismatchError` when only other versions' jars are cached (or the manifest names
    other versions), and :class:`JarsNotInstalledError` when nothing is cached or a jar is gone.
    """
    artifact = installed_artifact()
    root = _jars_root(cache_root)
    manifest_path = root / artifact.dirname / MANIFEST_NAME
    fix = f"run `{install_command()}` (or `make jars`)"
    data = _read_manifest(manifest_path)
    if data is None:
        others = sorted(p.parent.name for p in root.glob(f"*/{MANIFEST_NAME}"))
        if others:
            raise JarsMismatchError(
                f"the cached Delta jars are for {', '.join(others)}, but the installed packages need "
                f"{artifact.describe()}: {fix}")
        raise JarsNotInstalledError(
            f"Delta's jars are not installed: {artifact.describe()} has no manifest at "
            f"{str(manifest_path)!r}: {fix}")
    recorded = (data.get("coordinate"), data.get("pyspark"), data.get("delta_spark"))
    if recorded != (artifact.coordinate, artifact.pyspark_version, artifact.delta_version):
        raise JarsMismatchError(
            f"the Delta jar manifest {str(manifest_path)!r} records {recorded[0]} (pyspark {recorded[1]}, "
            f"delta-spark {recorded[2]}), but the installed packages need {artifact.describe()}: {fix}")
    jars = tuple(Path(p) for p in data.get("jars") or ())
    if not any(p.name == artifact.main_jar_name for p in jars):
        raise JarsMismatchError(
            f"the Delta jar manifest {str(manifest_path)!r} does not list {artifact.main_jar_name} "
            f"for {artifact.describe()}: {fix}")
    for jar in jars:
        if not jar.is_file():
            raise JarsNotInstalledError(
                f"the Delta jar {str(jar)!r} listed by {str(manifest_path)!r} is missing "
                f"({artifact.describe()}): {fix}")
    return DeltaJars(artifact=artifact, jars=jars, manifest=manifest_path)


def _spark_submit() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"


def _paths_from_spark_jars(value: str) -> tuple[Path, ...]:
    paths = []
    for item in filter(None, (v.strip() for v in value.split(","))):
        parsed = urlparse(item)
        paths.append(Path(unquote(parsed.path)) if parsed.scheme in ("file", "") else Path(item))
    return tuple(paths)


def _failure_lines(stderr: str, limit: int = 12) -> str:
    """The lines of Spark's output that say why the resolution failed."""
    keep = [line.strip() for line in stderr.splitlines()
            if re.search(r"unresolved|not found|download failed|FAILED|Exception|Error", line)]
    return "\n".join(keep[-limit:]) or "\n".join(stderr.strip().splitlines()[-limit:])


def _resolve(artifact: DeltaArtifact, target: Path, repositories: Sequence[str],
             ivy_settings: Path | None, timeout_s: float) -> tuple[Path, ...]:
    """Run spark-submit --packages once; return the jar paths Spark resolved."""
    ivy_dir = target / "ivy"
    settings = ivy_settings or (target / "ivysettings.xml")
    if ivy_settings is None:
        settings.write_text(_IVY_SETTINGS)
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with tempfile.TemporaryDirectory(prefix="gtid-audit-jars-") as tmp:
        probe = Path(tmp) / "probe.py"
        probe.write_text(_PROBE)
        argv = [str(_spark_submit()), "--master", "local[1]",
                "--conf", "spark.ui.enabled=false",
                "--conf", f"spark.jars.ivy={ivy_dir}",
                "--conf", f"spark.jars.ivySettings={settings}",
                "--packages", artifact.coordinate]
        if repositories:
            argv += ["--repositories", ",".join(repositories)]
        argv.append(str(probe))
        try:
            done = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise JarsFetchError(
                f"resolving {artifact.describe()} with Spark's Ivy took more than {timeout_s:.0f} s; "
                f"check the network or pass a mirror: `{install_command()} --repositories URL`") from None
    resolved = [line[len(_PROBE_PREFIX):] for line in done.stdout.splitlines() if line.startswith(_PROBE_PREFIX)]
    if done.returncode != 0 or not resolved:
        raise JarsFetchError(
            f"Spark's Ivy resolution of {artifact.describe()} failed (exit {done.returncode}):\n"
            f"{_failure_lines(done.stderr)}\n"
            f"Retry with `{install_command()}`; behind a mirror add `--repositories URL` or "
            "`--ivy-settings FILE`.")
    return _paths_from_spark_jars(json.loads(resolved[-1]) or "")


def install(*, cache_root: Path | None = None, repositories: Sequence[str] = (),
            ivy_settings: Path | None = None, timeout_s: float = 900.0,
            log=lambda message: None) -> DeltaJars:
    """Fetch the jars for the installed versions into the cache (once) and return them.

    Idempotent: a complete cache returns at once without starting a JVM. Concurrent installs
    wait for each other (a lock file). The manifest is written last, so an interrupted install
    is simply redone.
    """
    artifact = installed_artifact()
    try:
        return installed_jars(cache_root)
    except (JarsNotInstalledError, JarsMismatchError):
        pass
    root = _jars_root(cache_root)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:  # another process may have finished while we waited
            return installed_jars(cache_root)
        except (JarsNotInstalledError, JarsMismatchError):
            pass
        target = root / artifact.dirname
        target.mkdir(exist_ok=True)
        log(f"resolving {artifact.coordinate} with Spark's Ivy into {target}")
        jars = _resolve(artifact, target, repositories, ivy_settings, timeout_s)
        missing = [str(j) for j in jars if not j.is_file()]
        if missing or not any(j.name == artifact.main_jar_name for j in jars):
            raise JarsFetchError(
                f"Spark resolved {artifact.describe()} but the jars are not all there "
                f"(missing: {missing or [artifact.main_jar_name]}); retry `{install_command()}`")
        manifest = {
            "coordinate": artifact.coordinate,
            "pyspark": artifact.pyspark_version,
            "delta_spark": artifact.delta_version,
            "scala": SCALA_VERSION,
            "resolved_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "jars": [str(j) for j in jars],
        }
        tmp = target / (MANIFEST_NAME + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=2) + "\n")
        os.replace(tmp, target / MANIFEST_NAME)
        # Ivy's download cache duplicates the retrieved jars; the manifest's copies are the product.
        shutil.rmtree(target / "ivy" / "cache", ignore_errors=True)
    return installed_jars(cache_root)


def require_delta_classes(spark=None, *, jvm=None) -> None:
    """Raise :class:`DeltaClassesMissingError` unless the JVM (of ``spark``, or ``jvm``, a py4j
    view of one) can load Delta's classes.

    Needed under spark-submit, where the classpath is spark-submit's (``--jars``/``--packages``)
    and cannot be changed any more from Python.
    """
    jvm = jvm if jvm is not None else spark.sparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(DELTA_EXTENSION_CLASS, False, loader)
    except Exception:  # py4j wraps ClassNotFoundException
        try:
            expected = installed_artifact().coordinate
        except DeltaJarsError:
            expected = "io.delta:delta-spark_<spark>_2.13:<delta>"
        raise DeltaClassesMissingError(
            f"the Spark JVM cannot load {DELTA_EXTENSION_CLASS}: Delta's jars ({expected}) are not on its "
            "classpath. Pass them to spark-submit: `--jars \"$(python -m jobs.delta_jars show --csv)\"` "
            f"after `{install_command()}`, or `--packages {expected}`") from None


# ---------------------------------------------------------------------------------------------
# command line


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    inst = sub.add_parser("install", help="fetch the Delta jars for the installed pyspark/delta-spark (once)")
    inst.add_argument("--repositories", default="",
                      help="extra Maven repositories (comma-separated URLs), searched after Maven Central")
    inst.add_argument("--ivy-settings", type=Path, default=None,
                      help="an Ivy settings file replacing the default resolver chain (corporate mirror)")
    show = sub.add_parser("show", help="print the cached jars (fails with the fix if they are not installed)")
    show.add_argument("--csv", action="store_true", help="one comma-separated line, as spark-submit --jars takes it")


def _run(args: argparse.Namespace) -> int:
    try:
        if args.action == "show":
            jars = installed_jars()
            if args.csv:
                print(jars.csv)
            else:
                print(f"{jars.artifact.describe()}\nmanifest {jars.manifest}")
                print("\n".join(str(j) for j in jars.jars))
            return 0
        repositories = [r for r in (getattr(args, "repositories", "") or "").split(",") if r]
        jars = install(repositories=repositories, ivy_settings=getattr(args, "ivy_settings", None),
                       log=lambda m: print(f"delta-jars: {m}", file=sys.stderr))
        print(f"delta-jars: {jars.artifact.coordinate}: {len(jars.jars)} jars cached, manifest {jars.manifest}",
              file=sys.stderr)
        return 0
    except DeltaJarsError as exc:
        print(f"delta-jars: error: {exc}", file=sys.stderr)
        return 1


def register(subparsers) -> None:
    """``gtid-audit delta-jars install|show`` (for jobs/cli.py's COMMAND_MODULES)."""
    parser = subparsers.add_parser("delta-jars", help="install or show Delta Lake's jars for the installed Spark")
    _add_arguments(parser)
    parser.set_defaults(func=_run, action="install")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m jobs.delta_jars [install|show]``; ``install`` when no action is given."""
    parser = argparse.ArgumentParser(prog="python -m jobs.delta_jars", description=__doc__.split("\n\n")[0])
    _add_arguments(parser)
    args = parser.parse_args(argv)
    args.action = args.action or "install"
    return _run(args)


if __name__ == "__main__":
    sys.exit(main())
