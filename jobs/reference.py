"""The README's reference sections, generated from the code so they cannot drift.

Two blocks of README.md are written by this module and checked by ``tests/cli/test_readme.py``:
the checks (from ``gtid_core.CHECKS`` and the audit job's own checks) and the Delta tables (from
``schemas``). After changing a check or a schema run ``python -m jobs.reference`` to refresh them
(``--check``: only say whether they are current; exit 1 when not, the file untouched).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Sequence

__all__ = ["checks_markdown", "tables_markdown", "refresh", "BLOCKS", "MissingBlockError", "main"]


class MissingBlockError(ValueError):
    """The README lacks a generated block's BEGIN/END markers."""


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def checks_markdown() -> str:
    """One row per check id: severity, scope, what it means, the server error it predicts."""
    from jobs.audit import check_catalogue

    lines = ["| check id | default severity | scope | what it means | server error it predicts |",
             "| --- | --- | --- | --- | --- |"]
    for check_id, info in sorted(check_catalogue().items()):
        lines.append(f"| `{check_id}` | {info.default_severity.value} | {info.scope} | "
                     f"**{_cell(info.title)}.** {_cell(info.meaning)} | {_cell(info.server_error) or '-'} |")
    return "\n".join(lines)


def tables_markdown() -> str:
    """Each Delta table: description, version, key, partitions, then its columns."""
    from schemas import all_tables

    out: list[str] = []
    for name, table in sorted(all_tables().items()):
        out.append(f"#### `{name}` (schema version {table.version})")
        out.append("")
        layout = (f"clustered by `{', '.join(table.cluster_by)}`" if table.cluster_by
                  else f"partitioned by `{', '.join(table.partition_by)}`" if table.partition_by
                  else "not partitioned")
        out.append(f"{table.description} Key: `{', '.join(table.key) or '-'}`; {layout}.")
        out.append("")
        out.append("| column | type | nullable | meaning |")
        out.append("| --- | --- | --- | --- |")
        for col in table.columns:
            out.append(f"| `{col.name}` | {col.type.value} | {'yes' if col.nullable else 'no'} | "
                       f"{_cell(col.description)} |")
        out.append("")
    return "\n".join(out).rstrip()


#: README block name -> generator.
BLOCKS = {"checks": checks_markdown, "tables": tables_markdown}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- BEGIN {name} .*?-->\n)(.*?)(<!-- END {name} -->)", re.S)


def refresh(text: str) -> str:
    """``text`` (the README) with every generated block rewritten."""
    for name, generate in BLOCKS.items():
        pattern = _pattern(name)
        if not pattern.search(text):
            raise MissingBlockError(f"README has no '<!-- BEGIN {name} ... -->' / '<!-- END {name} -->' block")
        body = generate()
        text = pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(3), text)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Refresh the generated blocks of the README (or, with ``--check``, only tell whether they
    are current: exit 1 when not). The file is written only when a block changed."""
    p = argparse.ArgumentParser(prog="python -m jobs.reference", description=__doc__.split("\n\n")[0])
    p.add_argument("readme", nargs="?", type=Path, default=Path("README.md"), help="the README (default: README.md)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a block is stale")
    args = p.parse_args(argv)
    try:
        text = args.readme.read_text(encoding="utf-8")
        fresh = refresh(text)
        if fresh == text:
            print(f"{', '.join(BLOCKS)} in {args.readme}: current")
            return 0
        if args.check:
            print(f"{', '.join(BLOCKS)} in {args.readme}: stale (run `python -m jobs.reference`)", file=sys.stderr)
            return 1
        args.readme.write_text(fresh, encoding="utf-8")
    except (OSError, MissingBlockError) as exc:
        print(f"{args.readme}: {exc}", file=sys.stderr)
        return 2
    print(f"refreshed {', '.join(BLOCKS)} in {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
