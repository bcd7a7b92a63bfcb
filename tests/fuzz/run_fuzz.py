"""Coverage-guided fuzzing of the server-facing parsers with atheris (libFuzzer for Python).

    .venv/bin/pip install -e '.[fuzz]'
    .venv/bin/python -m tests.fuzz.run_fuzz                      # every target, 1,000,000 inputs each
    .venv/bin/python -m tests.fuzz.run_fuzz relay_log --runs 20000

Each target (tests/fuzz/targets.py) starts from the seed corpus ``tests/data/fuzz/seeds/<target>/``
(golden strings and real server rows, written by ``tests/fuzz/make_seeds.py``) plus the stored
crashes; a crashing input is written to ``tests/data/fuzz/crashes/<target>/`` (kept as test data,
replayed by ``tests/fuzz/test_fuzz_replay.py``). Prints one line per target with the inputs run,
the time, libFuzzer's coverage counters (``cov`` = covered edges, ``ft`` = features) and the crashes.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "fuzz"
TARGET_NAMES = ("gtid_set", "server_snapshot", "channel_snapshot", "relay_log")


def _fuzz_one(name: str, libfuzzer_args: list[str]) -> None:
    """In this process: instrument gtid_core, then hand the target to libFuzzer (never returns)."""
    import atheris

    with atheris.instrument_imports(include=["gtid_core"]):
        import gtid_core  # noqa: F401  (every gtid_core module is loaded, hence instrumented, here)
    from tests.fuzz.targets import TARGETS

    target = TARGETS[name]
    atheris.Setup([sys.argv[0], *libfuzzer_args], target)
    atheris.Fuzz()


def _summary(name: str, runs: int, seconds: float, log: str, crashes: list[Path]) -> dict:
    done = re.findall(r"#(\d+)\s+DONE\s+cov: (\d+) ft: (\d+) corp: (\d+)/", log)
    last = re.findall(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/", log)
    executed, cov, ft, corpus = (done or last or [("0", "0", "0", "0")])[-1]
    return {"target": name, "inputs": int(executed), "asked": runs, "seconds": round(seconds, 1),
            "per_s": round(int(executed) / seconds) if seconds else 0, "cov": int(cov), "ft": int(ft),
            "corpus": int(corpus), "crashes": [str(p.relative_to(ROOT)) for p in crashes]}


def fuzz(name: str, runs: int, max_len: int, timeout_s: int, max_seconds: int = 0) -> dict:
    """Run one target in a child process; the summary of its run. ``max_seconds`` (0: none) stops
    the run early; the summary then says how many inputs it reached."""
    seeds = DATA / "seeds" / name
    crash_dir = DATA / "crashes" / name
    crash_dir.mkdir(parents=True, exist_ok=True)
    before = set(crash_dir.iterdir())
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{name}-") as work:
        args = [work, *[str(d) for d in (seeds, crash_dir) if d.exists() and any(d.iterdir())],
                f"-runs={runs}", f"-max_len={max_len}", f"-timeout={timeout_s}",
                f"-artifact_prefix={crash_dir}/", "-print_final_stats=1", f"-max_total_time={max_seconds}"]
        started = time.monotonic()
        log_path = Path(work) / "libfuzzer.log"
        with open(log_path, "w") as log_file:   # a file, not a pipe: a long run's output is unbounded
            proc = subprocess.run([sys.executable, "-m", "tests.fuzz.run_fuzz", "--child", name, "--", *args],
                                  cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT)
        seconds = time.monotonic() - started
        log = log_path.read_text(errors="replace")
    crashes = sorted(set(crash_dir.iterdir()) - before)
    result = _summary(name, runs, seconds, log, crashes)
    result["exit"] = proc.returncode
    if proc.returncode != 0:
        result["log_tail"] = log[-3000:]
    return result


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:          # --child NAME -- libFuzzer arguments...
        _fuzz_one(argv[1], argv[3:] if argv[2:3] == ["--"] else argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", metavar="TARGET", help=f"default: all of {', '.join(TARGET_NAMES)}")
    parser.add_argument("--runs", type=int, default=1_000_000, help="inputs per target (default 1,000,000)")
    parser.add_argument("--max-len", type=int, default=4096, help="largest input in bytes")
    parser.add_argument("--timeout", type=int, default=10, help="seconds one input may take")
    parser.add_argument("--max-seconds", type=int, default=0, help="stop each target after this long (0: never)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.targets) - set(TARGET_NAMES))
    if unknown:
        parser.error(f"unknown target(s) {unknown!r}; targets are {', '.join(TARGET_NAMES)}")
    worst = 0
    for name in args.targets or TARGET_NAMES:
        result = fuzz(name, args.runs, args.max_len, args.timeout, args.max_seconds)
        tail = result.pop("log_tail", None)
        print(" ".join(f"{k}={v}" for k, v in result.items()), flush=True)
        if tail:
            print(tail, file=sys.stderr)
            worst = 1
    return worst


if __name__ == "__main__":
    sys.exit(main())
