"""redacted_error: replication error texts keep their words, names and GTID sets, lose row data."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gtid_core.checks.channel import _error_meaning
from gtid_core.error_text import REDACTED, redacted_error

# Error texts a 9.7.4 replica printed (tests/data/replication_errors_mysql97.json says how).
GOLDEN = {e["id"]: e for e in json.loads(
    (Path(__file__).parents[1] / "data" / "replication_errors_mysql97.json").read_text())["errors"]}
U = "ec9bf385-e878-11f1-96ff-02fc00000001"
R = REDACTED

# id -> the stored text; None: stored verbatim (nothing of the servers' data in it).
EXPECTED = {
    "1062-rows-worker":
        f"Worker 1 failed executing transaction '{U}:3' at source log binlog.000001, end_log_pos 850; Could not "
        f"execute Write_rows event on table w4.t; Duplicate entry '{R}' for key 't.PRIMARY', Error_code: 1062; "
        "handler error HA_ERR_FOUND_DUPP_KEY; the event's source log binlog.000001, end_log_pos 850",
    "coordinator": None,
    "1062-statement-worker":
        f"Worker 1 failed executing transaction '{U}:4' at source log binlog.000001, end_log_pos 1162; Error "
        f"'Duplicate entry '{R}' for key 't.PRIMARY'' on query. Default database: ''. Query: '{R}'",
    "1032-rows-worker": None,
    "1146-statement-worker":
        f"Worker 1 failed executing transaction '{U}:7' at source log binlog.000001, end_log_pos 2021; Error "
        f"'Table 'w4.u' doesn't exist' on query. Default database: ''. Query: '{R}'",
    "13114-purged": None,
    "13117-self": None,
    "2003-connect": None,
}

# Value-quoting messages the sandbox did not provoke, from the server's templates (not captured).
TEMPLATES = [
    ("1366-statement",
     "Error 'Incorrect integer value: 'secret' for column 'n' at row 1' on query. Default database: 'w'. "
     "Query: 'INSERT INTO t (n) VALUES ('secret')'",
     f"Error 'Incorrect integer value: '{R}' for column 'n' at row 1' on query. Default database: 'w'. "
     f"Query: '{R}'"),
    ("1292-statement",
     "Error 'Truncated incorrect DOUBLE value: 'secret'' on query. Default database: 'w'. "
     "Query: 'UPDATE t SET n = 1 WHERE n = 'secret''",
     f"Error 'Truncated incorrect DOUBLE value: '{R}'' on query. Default database: 'w'. Query: '{R}'"),
    ("1062-value-with-quote",
     "Could not execute Write_rows event on table w.t; Duplicate entry '7-o'secret' for key 't.k', "
     "Error_code: 1062; handler error HA_ERR_FOUND_DUPP_KEY; the event's source log binlog.000002, end_log_pos 99",
     f"Could not execute Write_rows event on table w.t; Duplicate entry '{R}' for key 't.k', "
     "Error_code: 1062; handler error HA_ERR_FOUND_DUPP_KEY; the event's source log binlog.000002, end_log_pos 99"),
    ("1526-partition",
     "Error 'Table has no partition for value 4242' on query. Default database: 'w'. "
     "Query: 'INSERT INTO p VALUES (4242)'",
     f"Error 'Table has no partition for value {R}' on query. Default database: 'w'. Query: '{R}'"),
]


def test_golden_and_expected_cover_each_other():
    """Every captured text has its expected redaction here, and nothing expected is missing from the data."""
    assert set(GOLDEN) == set(EXPECTED)


@pytest.mark.parametrize("error_id", list(EXPECTED), ids=list(EXPECTED))
def test_captured_error_texts(error_id):
    """Row values and statement text of real 9.7 errors become the placeholder; the rest is kept verbatim."""
    text = GOLDEN[error_id]["text"]
    expected = EXPECTED[error_id]
    assert redacted_error(text) == (text if expected is None else expected)
    assert "secret" not in redacted_error(text)


@pytest.mark.parametrize(("text", "expected"), [t[1:] for t in TEMPLATES], ids=[t[0] for t in TEMPLATES])
def test_templated_error_texts(text, expected):
    """The other value-quoting messages lose their value too."""
    assert redacted_error(text) == expected


def test_gtid_sets_of_the_purged_refusal_are_kept():
    """13114's purged-binary-logs refusal keeps the set the replica sent and the missing set."""
    stored = redacted_error(GOLDEN["13114-purged"]["text"])
    assert f"sent by the replica is '{U}:1-14', and the missing transactions are '{U}:15''" in stored


@pytest.mark.parametrize("value", [None, ""], ids=["null", "empty"])
def test_no_error_is_kept_as_is(value):
    """NULL stays NULL (unknown is not the empty string) and "" stays ""."""
    assert redacted_error(value) == value


@pytest.mark.parametrize(("error_id", "meaning"), [
    ("13114-purged", "the source purged binary logs holding transactions this replica still needs"),
    ("1062-statement-worker", None), ("2003-connect", None)],
    ids=["13114-purged", "1062-statement", "2003-connect"])
def test_error_meaning_reads_the_stored_text(error_id, meaning):
    """checks.channel._error_meaning names the same meaning from the stored (redacted) text as from the server's."""
    e = GOLDEN[error_id]
    assert _error_meaning(e["errno"], redacted_error(e["text"])) == meaning
    assert _error_meaning(e["errno"], e["text"]) == meaning


def test_error_meaning_more_gtids_wording_survives():
    """The 'more GTIDs than the source' refusal (template text) keeps the words _error_meaning matches."""
    text = ("Got fatal error 1236 from source when reading data from binary log: 'Replica has more GTIDs than the "
            "source has, using the source's SERVER_UUID. This may indicate that the end of the binary log was "
            "truncated or that the last binary log file was lost, e.g., after a power or disk failure when "
            "sync_binlog != 1.'")
    assert redacted_error(text) == text
    assert "has GTIDs the source does not" in _error_meaning(13114, redacted_error(text))
