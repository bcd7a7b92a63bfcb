"""The README says what the code does: quick start, generated reference blocks, config example."""
import re
from pathlib import Path

import pytest
import yaml

from jobs.config import parse_config
from jobs.reference import main as reference_main, refresh

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_quick_start_is_exactly_two_commands():
    """The quick start block is `make demo` then `make test`, and both targets exist."""
    section = README.split("## Quick start", 1)[1].split("##", 1)[0]
    block = re.search(r"```\n(.*?)```", section, re.S).group(1)
    assert block.strip().splitlines() == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)


def test_ci_runs_the_readme_test_command():
    """.ci/run runs `make test`, the README's test command."""
    assert re.search(r"^make test$", (ROOT / ".ci/run").read_text(), re.M)


def test_generated_reference_blocks_are_current():
    """The checks and tables sections equal what `python -m jobs.reference` generates now."""
    assert refresh(README) == README, "README is stale: run `python -m jobs.reference`"


def test_reference_command_refreshes_checks_and_leaves_help_alone(tmp_path, capsys):
    """`python -m jobs.reference --help` prints its usage and writes nothing; `--check` tells a
    stale copy (exit 1, untouched) from a current one (exit 0); without it the stale copy is
    rewritten to the current blocks."""
    stale = tmp_path / "README.md"
    # a generated block's body replaced: the copy no longer says what the code does
    stale_text = re.sub(r"(<!-- BEGIN checks[^>]*-->\n).*?(<!-- END checks -->)", r"\1(nothing)\n\2", README,
                        count=1, flags=re.S)
    assert stale_text != README
    stale.write_text(stale_text, encoding="utf-8")
    with pytest.raises(SystemExit) as help_exit:
        reference_main(["--help", str(stale)])
    assert help_exit.value.code == 0 and "--check" in capsys.readouterr().out
    assert stale.read_text(encoding="utf-8") == stale_text
    assert reference_main(["--check", str(stale)]) == 1
    assert stale.read_text(encoding="utf-8") == stale_text
    assert reference_main([str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == README
    assert reference_main(["--check", str(stale)]) == 0
    assert reference_main([str(tmp_path / "missing.md")]) == 2
    assert "missing.md" in capsys.readouterr().err
    bare = tmp_path / "BARE.md"
    bare.write_text("# no generated blocks\n", encoding="utf-8")
    assert reference_main([str(bare)]) == 2 and "BEGIN checks" in capsys.readouterr().err
    assert bare.read_text(encoding="utf-8") == "# no generated blocks\n"


def test_readme_configuration_example_is_valid():
    """The YAML example in the README's Configuration section validates as written."""
    section = README.split("## Configuration", 1)[1]
    example = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    config = parse_config(yaml.safe_load(example), "README.md")
    assert [s.name for s in config.servers] == ["db-a1"]
    assert config.servers[0].cluster == "orders"


def test_every_check_id_is_documented():
    """Every check `explain` knows is named in docs/checks.md or docs/audit.md."""
    from jobs.audit import check_catalogue

    docs = (ROOT / "docs/checks.md").read_text() + (ROOT / "docs/audit.md").read_text()
    missing = [c for c in check_catalogue() if c not in docs]
    assert not missing, missing


def test_shipped_example_configs_validate_with_their_audit_section():
    """conf/*.example and the production example validate, audit section included."""
    from jobs.config import load_audit_settings, load_config

    for name in ("example-production.yaml", "sandbox.example.yaml"):
        config = load_config(ROOT / "conf" / name)
        settings = load_audit_settings(config.audit, name)
        assert settings.fail_on == "critical"
    prod = load_audit_settings(load_config(ROOT / "conf/example-production.yaml").audit, "prod")
    assert {s.check for s in prod.silences} == {None, "config_sync_binlog"}


def test_every_maintenance_setting_is_documented():
    """Each key of the ``maintenance`` section is named in the README's configuration table and
    set, with its default, in conf/example-production.yaml."""
    import yaml

    from jobs.config import MaintenanceSettings

    keys = set(MaintenanceSettings.model_fields)
    readme = (ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `maintenance` |"))
    assert not {k for k in keys if f"`{k}`" not in row}
    example = yaml.safe_load((ROOT / "conf/example-production.yaml").read_text())["maintenance"]
    assert keys == set(example)
