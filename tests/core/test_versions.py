"""MySQLVersion: parsing @@version strings and the version-dependent GTID behaviours."""
import pytest

from gtid_core.errors import VersionParseError
from gtid_core.versions import MySQLVersion


@pytest.mark.parametrize(
    "text, triple, suffix",
    [
        ("8.0.36-28", (8, 0, 36), "-28"),
        ("5.6.21-log", (5, 6, 21), "-log"),
        ("9.7.4-2", (9, 7, 4), "-2"),
        ("5.7.44", (5, 7, 44), ""),
        ("5.6.23-baidu-rds-0.1.6.0-log", (5, 6, 23), "-baidu-rds-0.1.6.0-log"),
        (b"8.4.3", (8, 4, 3), ""),
    ],
    ids=["percona", "log-suffix", "debian", "plain", "vendor", "bytes"],
)
def test_parse_valid(text, triple, suffix):
    """A version string parses to its numbers and keeps the rest as suffix."""
    v = MySQLVersion.parse(text)
    assert v.triple == triple
    assert v.suffix == suffix


@pytest.mark.parametrize("text", ["", "8.0", "v8.0.1", "eight", "8.0.x", None, 8], ids=str)
def test_parse_invalid_quotes_input(text):
    """A string without major.minor.patch raises VersionParseError quoting it."""
    with pytest.raises(VersionParseError) as info:
        MySQLVersion.parse(text)
    assert repr(text) in str(info.value)


def test_order_ignores_suffix():
    """Versions compare numerically (5.6.9 < 5.6.10) and the suffix does not count."""
    assert MySQLVersion.parse("5.6.9") < MySQLVersion.parse("5.6.10-log")
    assert MySQLVersion.parse("8.0.36-28") == MySQLVersion.parse("8.0.36")
    assert MySQLVersion.parse("10.0.0") > MySQLVersion.parse("9.7.4-2")


@pytest.mark.parametrize(
    "text, purged, more_gtids, owned, boundary, bug72392",
    [
        ("5.6.14", False, False, False, False, False),
        ("5.6.15", False, False, False, False, True),
        ("5.6.21-log", False, False, False, False, True),
        ("5.6.22", True, False, False, False, True),
        ("5.6.23", True, True, False, False, True),
        ("5.6.51", True, True, False, False, True),
        ("5.7.5", False, False, False, False, True),
        ("5.7.6", True, True, True, True, False),
        ("8.0.36-28", True, True, True, True, False),
        ("9.7.4-2", True, True, True, True, False),
    ],
    ids=["5.6.14", "5.6.15", "5.6.21", "5.6.22", "5.6.23", "5.6.51", "5.7.5", "5.7.6", "8.0.36", "9.7.4"],
)
def test_feature_thresholds(text, purged, more_gtids, owned, boundary, bug72392):
    """Each behaviour switches where the server source says: gtid_purged check 5.6.22 (Bug#19012085),
    own-uuid ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER 5.6.23 (Bug#18789758), both 5.7.6 on the 5.7 line,
    boundary parser 5.7.6, the 5.6.15 workaround until 5.7.5."""
    v = MySQLVersion.parse(text)
    assert v.checks_purged_on_connect is purged
    assert v.checks_replica_has_more_on_connect is more_gtids
    assert v.replica_has_more_counts_owned is owned
    assert v.has_boundary_parser is boundary
    assert v.bug_72392_exposed is bug72392
    assert v.leaves_out_last_retrieved_gtid is bug72392


def test_str_round_trip():
    """str() gives back the server's text."""
    assert str(MySQLVersion.parse("8.0.36-28")) == "8.0.36-28"


@pytest.mark.parametrize(
    "replica, source, skips",
    [("9.7.4", "8.0.36", True), ("8.3.0", "8.2.0", True), ("8.4.3", "5.7.44", True), ("9.7.4", "8.3.0", False),
     ("8.4.3", "9.7.4", False), ("8.2.0", "8.0.36", False), ("8.0.36", "9.7.4", False)],
    ids=["9.7.4-to-8.0.36", "8.3.0-to-8.2.0", "8.4.3-to-5.7.44", "9.7.4-to-8.3.0", "8.4.3-to-9.7.4",
         "8.2.0-to-8.0.36", "8.0.36-to-9.7.4"],
)
def test_skips_tagged_gtids_towards(replica, source, skips):
    """Only an 8.3+ replica of a source older than 8.3 leaves its tagged GTIDs out of COM_BINLOG_DUMP_GTID."""
    assert MySQLVersion.parse(replica).skips_tagged_gtids_towards(MySQLVersion.parse(source)) is skips
