"""gtid_core.syntax: advice in the words each version accepts."""
from __future__ import annotations

import pytest

from gtid_core.syntax import in_syntax_of
from gtid_core.versions import MySQLVersion

TODAY = ("STOP REPLICA; CHANGE REPLICATION SOURCE TO SOURCE_AUTO_POSITION = 1, SOURCE_DELAY = 0; START REPLICA "
         "IO_THREAD FOR CHANNEL 'c'; SHOW REPLICA STATUS: Replica_IO_Running, Replica_SQL_Running_State 'Replica has "
         "read all relay log', Seconds_Behind_Source. SET PERSIST replica_preserve_commit_order = ON; "
         "log_replica_updates; binlog_expire_logs_seconds.")


@pytest.mark.parametrize("version", [None, "8.0.26", "8.4.3", "9.7.4-2"])
def test_todays_words_stay_for_8026_and_later_and_for_an_unknown_version(version):
    """8.4 removed the old spellings: nothing is rewritten towards them from 8.0.26 (where the last renames
    landed) on, nor when the version was not read."""
    assert in_syntax_of(TODAY, MySQLVersion.parse(version) if version else None) == TODAY


def test_57_gets_every_old_spelling_and_the_option_file_note():
    text = in_syntax_of(TODAY, MySQLVersion.parse("5.7.44-log"))
    assert text == ("STOP SLAVE; CHANGE MASTER TO MASTER_AUTO_POSITION = 1, MASTER_DELAY = 0; START SLAVE IO_THREAD FOR "
                    "CHANNEL 'c'; SHOW SLAVE STATUS: Slave_IO_Running, Slave_SQL_Running_State 'Slave has read all "
                    "relay log', Seconds_Behind_Master. SET GLOBAL slave_preserve_commit_order = ON; log_slave_updates; "
                    "expire_logs_days. MySQL 5.7.44-log cannot persist a setting from SQL: put the same value in the "
                    "server's option file (my.cnf) too, or the next restart loses it.")
    assert in_syntax_of(text, MySQLVersion.parse("5.7.44-log")) == text     # idempotent, the note included


@pytest.mark.parametrize("version, expected", [
    ("8.0.21", ("STOP SLAVE", "CHANGE MASTER TO", "Slave_IO_Running", "'Slave has", "slave_preserve", "SET PERSIST",
                "binlog_expire_logs_seconds")),
    ("8.0.0", ("SET PERSIST", "expire_logs_days")),
    ("8.0.22", ("STOP REPLICA", "CHANGE MASTER TO", "Replica_IO_Running", "'Slave has", "slave_preserve")),
    ("8.0.23", ("STOP REPLICA", "CHANGE REPLICATION SOURCE TO SOURCE_AUTO_POSITION", "'Slave has", "log_slave_updates")),
    ("8.0.25", ("CHANGE REPLICATION SOURCE TO", "'Slave has", "slave_preserve")),
])
def test_each_rename_applies_below_the_release_that_made_it(version, expected):
    text = in_syntax_of(TODAY, MySQLVersion.parse(version))
    for words in expected:
        assert words in text, (words, text)


def test_the_source_version_names_the_binary_log_retention():
    text = in_syntax_of("START REPLICA; keep binlog_expire_logs_seconds", MySQLVersion.parse("8.0.36"),
                        source_version=MySQLVersion.parse("5.7.44"))
    assert text == "START REPLICA; keep expire_logs_days"


@pytest.mark.parametrize("version", ["5.6.51", "5.7.44"])
def test_gtid_purged_plus_becomes_empty_transactions_before_80(version):
    """Before 8.0 gtid_purged is set only while gtid_executed is empty (RESET MASTER: the binary logs go)."""
    text = in_syntax_of("restore them with SET GLOBAL gtid_purged = '+<set>'; otherwise ...", MySQLVersion.parse(version))
    assert text.startswith("restore them with commit one empty transaction per GTID of '<set>' (SET GTID_NEXT=")
    assert "RESET MASTER, which deletes the binary logs" in text and "gtid_purged = '+" not in text
    assert in_syntax_of("SET GLOBAL gtid_purged = '+x:1'", MySQLVersion.parse("8.0.36")) == "SET GLOBAL gtid_purged = '+x:1'"


def test_enforce_gtid_consistency_is_set_in_the_option_file_before_576():
    text = in_syntax_of("First SET PERSIST enforce_gtid_consistency = WARN and fix what warns; then SET PERSIST "
                        "enforce_gtid_consistency = ON.", MySQLVersion.parse("5.6.51"))
    assert text == ("Set enforce_gtid_consistency = ON in the server's option file and restart it (the variable is "
                    "read-only before 5.7.6).")    # 5.6 has no WARN, and no SQL-persist note either
    assert in_syntax_of("SET PERSIST enforce_gtid_consistency = ON.", MySQLVersion.parse("5.7.44")).startswith(
        "SET GLOBAL enforce_gtid_consistency = ON. MySQL 5.7.44 cannot persist")
