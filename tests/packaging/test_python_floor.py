"""The supported Python floor: declared once in setup.cfg, repeated by the README and .ci/run,
and satisfied by the interpreter running this suite."""
from __future__ import annotations

import configparser
import sys
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _python_requires() -> str:
    """setup.cfg's python_requires, as written."""
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return cfg["options"]["python_requires"].strip()


def _floor() -> str:
    match = re.fullmatch(r">=\s*(\d+\.\d+)", _python_requires())
    assert match, f"python_requires {_python_requires()!r} is not a plain '>=X.Y' floor"
    return match.group(1)


def test_floor_is_3_11():
    """setup.cfg declares Python 3.11 as the floor (gtid_core's possessive quantifiers need it)."""
    assert _python_requires() == ">=3.11"


def test_running_interpreter_satisfies_python_requires():
    """The interpreter running the suite satisfies setup.cfg's python_requires."""
    floor = tuple(int(part) for part in _floor().split("."))
    assert sys.version_info[:2] >= floor, f"Python {sys.version.split()[0]} is below python_requires {_python_requires()!r}"


def test_readme_and_ci_state_the_same_floor():
    """README's quick start and .ci/run name the floor setup.cfg declares, and no other Python version."""
    floor = _floor()
    readme = (REPO / "README.md").read_text()
    assert re.findall(r"Python (\d+\.\d+)\+", readme) == [floor]
    ci = (REPO / ".ci" / "run").read_text()
    assert re.findall(r"^PYTHON_FLOOR=(\S+)$", ci, flags=re.M) == [floor]
    assert 'python="python${PYTHON_FLOOR}"' in ci and 'export PYTHON="$python"' in ci
    assert re.search(r"^PYTHON \?= ", (REPO / "Makefile").read_text(), re.M)  # the env var reaches make
