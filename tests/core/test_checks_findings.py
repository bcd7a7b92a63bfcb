"""Finding records, the empty-transaction remediation SQL, the registry, and property tests of the checks."""
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gtid_core.checks import CHECKS, FleetContext, run_pair_checks
from gtid_core.findings import TAGGED_GTID_PRIVILEGE_NOTE, Finding, Severity, empty_transaction_sql
from gtid_core.gtid_set import GtidSet
from gtid_core.snapshots import BinaryLog, ChannelSnapshot, ServerSnapshot
from gtid_core.versions import MySQLVersion

S = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
R = "5a33bc69-93ec-33a3-b055-ea2cc1641784"
E = "7c55de8b-b50e-55c5-d277-0c4ee3863906"  # a uuid used only for injected errant transactions
G = GtidSet.parse


def test_finding_to_dict_uses_canonical_text():
    """to_dict gives the severity name and single-line canonical set text, in evidence too."""
    s = G(f"{R}:3-4:1-2,{S}:1")
    f = Finding(check_id="errant_transactions", severity="critical", server="rep", title="t", detail="d",
                check_version=1, source="src", channel="", gtid_set=s, evidence={"replica_gtid_executed": s})
    d = f.to_dict()
    assert d["severity"] == "critical" and f.severity is Severity.CRITICAL
    assert d["gtid_set"] == f"{S}:1,{R}:1-4"
    assert d["gtid_count"] == 5
    assert d["evidence"] == {"replica_gtid_executed": f"{S}:1,{R}:1-4"}
    assert d["source"] == "src" and d["channel"] == ""


def test_finding_is_frozen():
    """A finding cannot be changed, its evidence neither."""
    f = Finding(check_id="x", severity=Severity.INFO, server="a", title="t", detail="d", check_version=1,
                evidence={"k": 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.server = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        f.evidence["k"] = 2  # type: ignore[index]


def test_severity_is_a_str_enum():
    """Severity values are the strings critical/warning/info and rank in that order."""
    assert [s.value for s in Severity] == ["critical", "warning", "info"]
    assert Severity("warning") == "warning"
    assert Severity.CRITICAL.rank > Severity.WARNING.rank > Severity.INFO.rank


def test_empty_transaction_sql_exact():
    """One SET GTID_NEXT / BEGIN / COMMIT per GTID, tagged form included, then back to AUTOMATIC; a set with a
    tagged GTID first names the privilege that needs (an untagged set does not)."""
    sql = empty_transaction_sql(G(f"{S}:5-6:ops:1"))
    assert sql.splitlines() == [
        TAGGED_GTID_PRIVILEGE_NOTE,
        f"SET GTID_NEXT='{S}:5'; BEGIN; COMMIT;",
        f"SET GTID_NEXT='{S}:6'; BEGIN; COMMIT;",
        f"SET GTID_NEXT='{S}:ops:1'; BEGIN; COMMIT;",
        "SET GTID_NEXT='AUTOMATIC';",
    ]


def test_untagged_empty_transaction_sql_has_no_privilege_note():
    assert TAGGED_GTID_PRIVILEGE_NOTE not in empty_transaction_sql(G(f"{S}:5-6"))


def test_empty_transaction_sql_capped_for_huge_sets():
    """A set of a million GTIDs gives `cap` statements and a note with the count left out."""
    sql = empty_transaction_sql(G(f"{S}:1-1000000"), cap=10)
    lines = sql.splitlines()
    assert sum("BEGIN; COMMIT;" in line for line in lines) == 10
    assert "999990 more GTIDs not listed" in lines[-1]
    assert f"{S}:1-1000000" in lines[-1]


def test_registry_entries_are_complete():
    """Every registered check has a title, a meaning, a remediation and a known scope."""
    assert len(CHECKS) >= 19
    for cid, info in CHECKS.items():
        assert info.check_id == cid
        assert info.title and info.meaning and info.remediation
        assert info.scope in ("server", "pair", "group", "job")
        assert isinstance(info.default_severity, Severity)


# ---------------------------------------------------------------- properties

intervals = st.lists(st.tuples(st.integers(1, 400), st.integers(0, 30)), min_size=1, max_size=6)


def _set(uuid, ivs, tag=None):
    return GtidSet.from_intervals((uuid, tag, a, a + n) for a, n in ivs)


def _replica(executed, retrieved, version="8.0.36"):
    rep = ServerSnapshot(name="rep", server_uuid=R, version=MySQLVersion.parse(version), gtid_mode="ON",
                         gtid_executed=executed, gtid_purged=GtidSet.EMPTY)
    ch = ChannelSnapshot.from_rows({"Replica_IO_Running": "Yes", "Replica_SQL_Running": "Yes", "Auto_Position": "1",
                                    "Retrieved_Gtid_Set": retrieved.to_text(), "Executed_Gtid_Set": executed.to_text(),
                                    "Source_Log_File": "b.000001", "Read_Source_Log_Pos": "9",
                                    "Relay_Source_Log_File": "b.000001", "Exec_Source_Log_Pos": "9"})
    return rep, ch


def _source(executed, version="8.0.36"):
    return ServerSnapshot(name="src", server_uuid=S, version=MySQLVersion.parse(version), gtid_mode="ON",
                          gtid_executed=executed, gtid_purged=GtidSet.EMPTY, binary_logs=())


@settings(max_examples=60, deadline=None)
@given(src_ivs=intervals, tagged=intervals, version=st.sampled_from(["5.6.40", "5.7.44", "8.0.36", "9.7.4"]))
def test_healthy_pairs_yield_no_warning_or_critical(src_ivs, tagged, version):
    """A replica that has exactly its source's transactions (tags included), caught up, yields nothing serious."""
    executed = _set(S, src_ivs) | _set(S, tagged, "t1")
    # a replica identical to its source; the source's first binary log makes the scan succeed
    src = ServerSnapshot(name="src", server_uuid=S, version=MySQLVersion.parse(version), gtid_mode="ON",
                         gtid_executed=executed, gtid_purged=GtidSet.EMPTY,
                         binary_logs=(BinaryLog("binlog.000001", previous_gtids=GtidSet.EMPTY),))
    rep, ch = _replica(executed, executed, version)
    findings = run_pair_checks(rep, ch, src, None, FleetContext())
    assert [f for f in findings if f.severity.rank >= Severity.WARNING.rank] == []


@settings(max_examples=60, deadline=None)
@given(src_ivs=intervals, errant_ivs=intervals, tag=st.sampled_from([None, "ops"]))
def test_injected_errant_set_is_reported_exactly(src_ivs, errant_ivs, tag):
    """Whatever the source has, the errant set reported is exactly the transactions injected on the replica."""
    source_set = _set(S, src_ivs)
    injected = _set(E, errant_ivs, tag)
    rep, ch = _replica(source_set | injected, GtidSet.EMPTY)
    findings = run_pair_checks(rep, ch, _source(source_set), None, FleetContext())
    errant = [f for f in findings if f.check_id == "errant_transactions"]
    assert len(errant) == 1
    assert errant[0].gtid_set == injected
    assert errant[0].gtid_count == sum(n + 1 for _, n in _merge(errant_ivs))


def _merge(ivs):
    """Merge (start, length-1) intervals by hand, to count the injected GTIDs independently of GtidSet."""
    spans = sorted((a, a + n) for a, n in ivs)
    merged = []
    for a, b in spans:
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b - a) for a, b in merged]
