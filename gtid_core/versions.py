"""MySQL server versions and the GTID behaviours that changed between them.

``MySQLVersion.parse(@@version)`` keeps ``major.minor.patch`` for comparison and the rest of the
string (``-log``, ``-28``, ``-2``) as ``suffix``. The feature properties name the server change they
stand for, so a check reads ``source.version.checks_purged_on_connect`` rather than a bare tuple.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from gtid_core.errors import VersionParseError

__all__ = ["MySQLVersion"]

_VERSION_RE = re.compile(r"\s*(\d{1,4})\.(\d{1,4})\.(\d{1,4})(.*)\Z", re.DOTALL)


@dataclass(frozen=True, order=True)
class MySQLVersion:
    """A server version: ordered and compared on (major, minor, patch) only."""

    major: int
    minor: int
    patch: int
    suffix: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str | bytes) -> "MySQLVersion":
        """Parse ``@@version`` ('8.0.36-28', '5.6.21-log', '9.7.4-2'); raise VersionParseError."""
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError:
                raise VersionParseError(f"version {text!r} is not UTF-8 text") from None
        if not isinstance(text, str):
            raise VersionParseError(f"version {text!r} is not a string")
        match = _VERSION_RE.match(text)
        if match is None:
            raise VersionParseError(f"version {text!r} does not start with major.minor.patch")
        major, minor, patch, suffix = match.groups()
        return cls(int(major), int(minor), int(patch), suffix.rstrip())

    @classmethod
    def of(cls, major: int, minor: int, patch: int) -> "MySQLVersion":
        """A version from its three numbers (for comparisons in code and tests)."""
        return cls(major, minor, patch)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}{self.suffix}"

    @property
    def triple(self) -> tuple[int, int, int]:
        """(major, minor, patch)."""
        return (self.major, self.minor, self.patch)

    # --- behaviours of the source's dump thread (COM_BINLOG_DUMP_GTID) -----------------------
    #
    # Settled from the server's own source (docs/checks.md, "Version rules", cites every line):
    #
    # * 5.6.0 - 5.6.21: ``mysql_binlog_send`` (sql/rpl_master.cc, 5.6.21: lines 951-961) goes
    #   straight to ``MYSQL_BIN_LOG::find_first_log_not_in_gtid_set`` (sql/binlog.cc, 5.6.21:
    #   2819-2924). Neither ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER nor the gtid_purged check exists.
    # * 5.6.22: adds ``if (!gtid_state->get_lost_gtids()->is_subset(slave_gtid_executed))`` ->
    #   ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (Bug#19012085; rpl_master.cc:980 of the 5.6.22
    #   release branch).
    # * 5.6.23+: adds ``slave_gtid_executed->is_subset_for_sid(gtid_state->get_logged_gtids(),
    #   server_sidno, subset_sidno)`` -> ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER (Bug#18789758;
    #   rpl_master.cc:972 of the 5.6.23 release branch): only the source's own server_uuid,
    #   against gtid_executed alone.
    # * 5.7: ``Binlog_sender::check_start_file`` (sql/rpl_binlog_sender.cc). A 2014 copy of
    #   that file (mysql/mysql-server@0313b35, a 5.7 development tree) has neither check; both
    #   fixes were pushed in October/November 2014, after 5.7.5 (September 2014), so 5.7.0 -
    #   5.7.5 (development milestones, never GA) are modelled like 5.6.21 and 5.7.6+ has both,
    #   comparing against gtid_executed ∪ gtid_owned.
    # * 8.0+ and 9.x: the same two checks in ``Binlog_sender::check_start_file``; from 8.3 on
    #   every tag of the own uuid counts (observed on 9.7.4, tests/core/test_checks_live.py).
    # * The replica side (what it announces): see ``leaves_out_last_retrieved_gtid`` and
    #   ``skips_tagged_gtids_towards`` -- an 8.3+ replica sends no tagged GTID to a source older
    #   than 8.3, so such a source never sees, and never refuses, a tagged GTID of its own uuid.

    @property
    def checks_purged_on_connect(self) -> bool:
        """The source refuses a replica lacking part of its gtid_purged with
        ER_MASTER_HAS_PURGED_REQUIRED_GTIDS before scanning binary logs (Bug#19012085: 5.6.22 and
        5.7.6; before it a source restored with ``SET GLOBAL gtid_purged`` streamed from its
        first binary log, whose Previous_gtids is empty, and silently skipped those GTIDs)."""
        return (5, 6, 22) <= self.triple < (5, 7, 0) or self.triple >= (5, 7, 6)

    @property
    def checks_replica_has_more_on_connect(self) -> bool:
        """The source refuses a replica holding GTIDs of the source's own server_uuid that the
        source never executed, with ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER (``is_subset_for_sid``,
        Bug#18789758: 5.6.23 and 5.7.6). Only the source's own uuid is compared, on every
        release line that has the check; on 8.3+ every tag of that uuid (9.7.4 verified).
        Before it, extra GTIDs were accepted silently whatever their uuid."""
        return (5, 6, 23) <= self.triple < (5, 7, 0) or self.triple >= (5, 7, 6)

    @property
    def replica_has_more_counts_owned(self) -> bool:
        """The own-uuid comparison is made against gtid_executed ∪ gtid_owned (5.7.6+,
        ``Binlog_sender::check_start_file``) rather than gtid_executed alone (5.6.23+,
        ``mysql_binlog_send``). The audit does not read gtid_owned; see ReconnectOutcome."""
        return self.triple >= (5, 7, 6)

    # --- behaviours of the replica's receiver thread -----------------------------------------

    def skips_tagged_gtids_towards(self, source: "MySQLVersion") -> bool:
        """As a replica, this version leaves every tagged GTID out of the set it sends with
        COM_BINLOG_DUMP_GTID to ``source``: an 8.3+ replica does so for a source older than 8.3.

        ``request_dump`` (sql/rpl_replica.cc, mysql/mysql-server@72751f76201e, an 8.4 / 9.x tree):
        ``if (mysql_get_server_version(mysql) < MYSQL_TAGGED_GTIDS_VERSION_SUPPORT) rpl->flags |=
        MYSQL_RPL_SKIP_TAGGED_GTIDS;``, and the set is encoded with that flag
        (``fix_gtid_set`` -> ``Gtid_set::encode(..., skip_tagged_gtids)``; ``get_encoded_length``
        counts a TSID only ``if (tsid.is_tagged() == false || skip_tagged_gtids == false)``,
        sql/rpl_gtid_set.cc@c88b0fa9fed9). The server's own test
        rpl_gtid/t/rpl_com_binlog_dump_gtids_skip_tagged.test@312d9ed741ea states the rule and the
        version the constant stands for ("In case MYSQL_RPL_SKIP_TAGGED_GTIDS is set (for servers <
        8.3), replica should send only untagged GTIDs to the source in COM_BINLOG_DUMP_GTID"), and its
        .result records a source sending again a tagged transaction the replica had committed, once
        the flag is forced. A replica older than 8.3 has no tagged GTID to leave out."""
        return self.has_tagged_gtids and not source.has_tagged_gtids

    @property
    def has_boundary_parser(self) -> bool:
        """The receiver adds a GTID to Retrieved_Gtid_Set only once its whole transaction is in
        the relay log (Transaction_boundary_parser, 5.7.6)."""
        return self.triple >= (5, 7, 6)

    @property
    def leaves_out_last_retrieved_gtid(self) -> bool:
        """On reconnect the replica leaves the last retrieved GTID out of the set it announces
        when that GTID is not in gtid_executed (the 5.6.15 workaround, replaced in 5.7.6)."""
        return (5, 6, 15) <= self.triple < (5, 7, 6)

    @property
    def bug_72392_exposed(self) -> bool:
        """Bug #72392: with the 5.6.15 workaround, a replica whose gtid_executed lost its history
        (RESET MASTER) fetches and applies its last retrieved transaction a second time. Exposed
        on 5.6.15 .. 5.7.5."""
        return self.leaves_out_last_retrieved_gtid

    @property
    def has_tagged_gtids(self) -> bool:
        """Tagged GTIDs (``uuid:tag:gno``) exist from 8.3 on."""
        return self.triple >= (8, 3, 0)

    @property
    def has_assign_gtids_to_anonymous_transactions(self) -> bool:
        """``ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS`` exists from 8.0.23 on."""
        return self.triple >= (8, 0, 23)
