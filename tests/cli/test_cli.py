"""The gtid-audit command teaches and refuses clearly: help, config check, explain, findings."""
from __future__ import annotations

import shlex

import pytest

from jobs.cli import build_parser, main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_sub_command_is_registered():
    """--help lists every command the README documents."""
    text = build_parser().format_help()
    for command in ("run", "collect", "audit", "findings", "explain", "config", "sandbox", "demo"):
        assert f"    {command} " in text, command


def test_config_check_validates_the_audit_section(tmp_path, capsys):
    """A typo in audit.fail_on fails `config check` (exit 1) naming the file, key and value."""
    cfg = tmp_path / "prod.yaml"
    cfg.write_text("warehouse: ./wh\ndefaults: {user: audit, password_env: X}\n"
                   "servers:\n  - {name: a, host: 127.0.0.1}\naudit:\n  fail_on: critcal\n")
    code, _, err = run(capsys, "config", "check", str(cfg))
    assert code == 1
    assert "prod.yaml" in err and "audit.fail_on" in err and "'critcal'" in err


def test_config_check_strict_fails_on_unresolved_secrets(tmp_path, capsys, monkeypatch):
    """--strict turns an unresolved password reference into exit 3; without it, a warning."""
    monkeypatch.delenv("GTID_AUDIT_TEST_NO_SUCH_VAR", raising=False)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("warehouse: ./wh\ndefaults: {user: audit, password_env: GTID_AUDIT_TEST_NO_SUCH_VAR}\n"
                   "servers:\n  - {name: a, host: 127.0.0.1}\n")
    code, out, _ = run(capsys, "config", "check", str(cfg))
    assert code == 0 and "password_env not set" in out
    code, _, _ = run(capsys, "config", "check", "--strict", str(cfg))
    assert code == 3


def test_explain_is_case_insensitive_and_suggests_close_ids(capsys):
    """explain accepts any case and answers a near miss with 'did you mean'."""
    code, out, _ = run(capsys, "explain", "ERRANT_Transactions")
    assert code == 0 and out.startswith("errant_transactions:") and "what to do:" in out
    code, _, err = run(capsys, "explain", "errant_transaction")
    assert code == 1 and "did you mean 'errant_transactions'" in err


def test_findings_refuses_an_unknown_check_filter(tmp_path, capsys):
    """`findings --check` with an unknown id is an error listing the ids, not an empty table."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"warehouse: {tmp_path / 'wh'}\ndefaults: {{user: audit, password_env: X}}\n"
                   "servers:\n  - {name: a, host: 127.0.0.1}\n")
    code, _, err = run(capsys, "findings", "--config", str(cfg), "--check", "errant_transaction")
    assert code == 1 and "unknown check id 'errant_transaction'" in err and "errant_transactions" in err


@pytest.mark.parametrize("command", ["run", "audit", "explain", "demo", "collect"])
def test_sub_command_help_describes_it(command, capsys):
    """Each main sub-command's --help has a description, not only a usage line."""
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert len(text.split("\n\n")[1]) > 40, text[:400]


def test_demo_report_tells_a_check_firing_on_many_servers_once():
    """render_report folds a server check on 3+ servers into one entry; pair findings stay apart."""
    from jobs.demo import render_report

    def finding(check, server, severity="warning", **kw):
        return {"status": "open", "severity": severity, "check_id": check, "server": server, "title": "t",
                "detail": f"detail of {server}", "remediation": "first step\nsecond step", "cluster": "c",
                "gtid_set": kw.get("gtid_set"), "source": kw.get("source"), "channel": None, "gtid_count": None}

    text = render_report([finding("config_sync_binlog", s) for s in ("a", "b", "c")]
                         + [finding("gtid_mode_off", "x"),
                            finding("errant_transactions", "r", "critical", gtid_set="u:1", source="s")])
    assert text.count("config_sync_binlog") == 1
    assert "config_sync_binlog on 3 servers: a, b, c" in text
    assert "gtid_mode_off on x" in text and "CRITICAL errant_transactions on r <- s" in text
    assert text.index("CRITICAL") < text.index("config_sync_binlog")


def test_demo_report_hints_are_commands_that_run():
    """The hints under the demo's report are whole commands: the configuration audited, and the
    check whose remediation was cut (`findings` needs --config)."""
    from jobs.cli import build_parser
    from jobs.demo import render_report

    rows = [{"status": "open", "severity": "critical", "check_id": "errant_transactions", "server": "r",
             "title": "t", "detail": None, "remediation": "\n".join(f"step {i}" for i in range(9)), "cluster": "c",
             "gtid_set": "u:1", "source": "s", "channel": None, "gtid_count": 1},
            {"status": "open", "severity": "info", "check_id": "config_sync_binlog", "server": "x", "title": "t",
             "detail": None, "remediation": None, "cluster": "c", "gtid_set": None, "source": None,
             "channel": None, "gtid_count": None}]
    text = render_report(rows, config="conf/sandbox.yaml", command="gtid-audit")
    more = "gtid-audit findings --config conf/sandbox.yaml --check errant_transactions --format json"
    infos = "gtid-audit findings --config conf/sandbox.yaml"
    assert f"(3 more line(s): {more})" in text
    assert f"(+1 info finding(s), not shown here: {infos} lists them with the others)" in text
    parser = build_parser()
    for hint in (more, infos):   # both parse as the command line they show
        args = parser.parse_args(shlex.split(hint)[1:])
        assert args.func.__name__ == "cmd_findings" and args.config == "conf/sandbox.yaml"
    # a path with a space stays one argument for a shell
    spaced = render_report(rows, config="my conf/sandbox.yaml", command="my venv/bin/gtid-audit")
    (hint,) = [line for line in spaced.splitlines() if "not shown here: " in line]
    argv = shlex.split(hint.split("not shown here: ", 1)[1].rsplit(" lists them", 1)[0])
    assert argv[0] == "my venv/bin/gtid-audit"
    assert parser.parse_args(argv[1:]).config == "my conf/sandbox.yaml"


def test_output_to_a_reader_that_left_ends_quietly():
    """`gtid-audit ... | head`: the reader closes the pipe; no traceback, the shell's SIGPIPE code."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("import sys\nfrom jobs.cli import main\ncodes = []\n"
            "for _ in range(5000):\n"
            "    codes.append(main(['explain', 'errant_transactions']))\n"
            "    if codes[-1] != 0:\n"
            "        break\n"
            "sys.stderr.write(f'codes {sorted(set(codes))}')\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err, err[-2000:]
    assert err.endswith("141]"), err[-2000:]   # the write that found the reader gone: 128 + SIGPIPE


def test_a_short_output_to_a_reader_gone_before_it_ends_quietly_too():
    """`gtid-audit explain X | true`: the reader is gone before anything is written, and the
    output is small enough to sit in stdout's buffer until the command returns (the flush that
    fails is main()'s, not the interpreter's at exit, which would print "Exception ignored")."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("import sys\nsys.stdin.readline()\nfrom jobs.cli import main\n"
            "sys.exit(main(['explain', 'errant_transactions']))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}   # stdout buffered, as usual
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=root, env={**env, "PYTHONPATH": str(root)},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()   # the reader leaves first
    proc.stdin.write("go\n")
    proc.stdin.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141, err[-2000:]
    assert "BrokenPipeError" not in err and "Exception ignored" not in err, err[-2000:]


def test_config_check_shows_the_spark_and_maintenance_settings_it_read(tmp_path, capsys):
    """`config check` names the values of the spark and maintenance sections as loaded."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("warehouse: ./wh\nservers:\n  - {name: a, host: 127.0.0.1, user: u}\n"
                   "spark: {master: 'local[2]'}\n"
                   "maintenance: {after_run: true, vacuum_every_days: 3, retention_days: {servers: 90, binary_logs: keep}}\n")
    code, out, _ = run(capsys, "config", "check", str(cfg))
    assert code == 0
    assert "spark: master=local[2] conf=0 setting(s)" in out
    line = next(x for x in out.splitlines() if x.startswith("maintenance:"))
    assert "after_run=on" in line and "servers=90d" in line and "vacuum=every 3 nights" in line
    assert "binary_logs" in line.split("kept:")[1]
