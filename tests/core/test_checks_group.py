"""The Group Replication checks on hand-made members (gtid_core/checks/group.py).

What the real servers do with the same situations is proven in tests/sandbox/test_group_replication.py;
these pin the rules, the soundness choices and what is left unsaid.
"""
from __future__ import annotations

from gtid_core import GtidSet
from gtid_core.checks.group import (
    GroupMember,
    ViewMember,
    check_group_member_errant,
    check_group_member_unrecoverable,
    predict_primary,
)
from gtid_core.snapshots import ServerSnapshot
from gtid_core.versions import MySQLVersion

G = "aaaaaaaa-0000-0000-0000-000000000001"          # the group name
A, B, C = ("aaaaaaaa-0000-0000-0000-00000000000a", "bbbbbbbb-0000-0000-0000-00000000000b",
           "cccccccc-0000-0000-0000-00000000000c")
X = "dddddddd-0000-0000-0000-00000000000d"          # an outside source replicating into the group


def at(second):
    """A read instant, ``second`` seconds into the night."""
    import datetime as dt

    return dt.datetime(2026, 11, 2, 3, 0, second, tzinfo=dt.timezone.utc)


def member(name, uuid, state, executed, *, purged="", received=None, role=None, weight=50,
           version="9.7.4", view=None, async_retrieved="", single_primary=True, read=None):
    """A group member; ``read``: the second its GTID read began (it returned half a second later)."""
    import datetime as dt

    times = {} if read is None else {"read_started_at": at(read), "read_at": at(read) + dt.timedelta(seconds=0.5)}
    snap = ServerSnapshot(name=name, server_uuid=uuid, version=MySQLVersion.parse(version),
                          gtid_executed=GtidSet.parse(executed), gtid_purged=GtidSet.parse(purged), **times)
    return GroupMember(snapshot=snap, group_name=G, state=state,
                       role=role if role is not None else ("SECONDARY" if state == "ONLINE" else None),
                       weight=weight, single_primary=single_primary,
                       applier_received=GtidSet.parse(received if received is not None else executed),
                       async_retrieved=GtidSet.parse(async_retrieved), view=tuple(view or ()))


def views(*members):
    """Give each ONLINE member the view of every ONLINE member; others see themselves only."""
    online = [m for m in members if m.state == "ONLINE"]
    out = []
    for m in members:
        seen = online if m.state == "ONLINE" else [m]
        v = tuple(ViewMember(o.uuid, o.state, o.role, o.snapshot.version) for o in seen)
        out.append(GroupMember(**{**m.__dict__, "view": v}))
    return out


def test_healthy_group_read_at_different_instants_has_no_finding():
    # the primary was read last and holds 20 more certified transactions than the secondaries
    a = member("a", A, "ONLINE", f"{G}:1-120", role="PRIMARY")
    b = member("b", B, "ONLINE", f"{G}:1-100", received=f"{G}:1-103")
    c = member("c", C, "ONLINE", f"{G}:1-95")
    assert check_group_member_errant(views(a, b, c)) == []
    assert check_group_member_unrecoverable(views(a, b, c)) == []


def test_offline_member_with_a_local_write_is_errant_with_its_set_and_the_sql():
    a = member("a", A, "ONLINE", f"{G}:1-120", role="PRIMARY")
    b = member("b", B, "ONLINE", f"{G}:1-120")
    c = member("c", C, "OFFLINE", f"{G}:1-90,{C}:1")
    [f] = check_group_member_errant(views(a, b, c))
    assert (f.check_id, f.server, f.severity.value) == ("group_member_errant", "c", "critical")
    assert f.gtid_set == GtidSet.parse(f"{C}:1")
    assert "START GROUP_REPLICATION will refuse it" in f.detail
    assert f"SET GTID_NEXT='{C}:1'; BEGIN; COMMIT;" in f.remediation and "run on a " in f.remediation


def test_online_member_counts_only_gtids_outside_the_group_and_its_received_set():
    # b holds a group GTID nobody else has yet (certified a moment ago): never errant;
    # and an own-uuid GTID nobody has, though c was read after it: errant
    a = member("a", A, "ONLINE", f"{G}:1-100", role="PRIMARY", read=1)
    b = member("b", B, "ONLINE", f"{G}:1-101,{B}:1-2", received=f"{G}:1-101", read=2)
    c = member("c", C, "ONLINE", f"{G}:1-100", read=3)
    [f] = check_group_member_errant(views(a, b, c))
    assert f.server == "b" and f.gtid_set == GtidSet.parse(f"{B}:1-2")
    assert "next time it leaves and rejoins" in f.detail and f.severity.value == "critical"


def test_online_member_read_last_is_only_an_unconfirmed_warning():
    # the primary, read last, committed X:1 with SET gtid_next just before its read: certified,
    # delivered to b and c after they were read, and in its own received set only at the next
    # certifier garbage collection. Nothing read after it can tell that from an errant write.
    a = member("a", A, "ONLINE", f"{G}:1-100,{X}:1", received=f"{G}:1-100", role="PRIMARY", read=3)
    b = member("b", B, "ONLINE", f"{G}:1-100", read=1)
    c = member("c", C, "ONLINE", f"{G}:1-100", read=2)
    [f] = check_group_member_errant(views(a, b, c))
    assert (f.server, f.severity.value, f.gtid_set) == ("a", "warning", GtidSet.parse(f"{X}:1"))
    assert f.title.startswith("Unconfirmed:") and "no other member was read after a" in f.evidence["unconfirmed"]
    # read first, the same set is confirmed: b and c would hold a certified X:1
    a_first = member("a", A, "ONLINE", f"{G}:1-100,{X}:1", received=f"{G}:1-100", role="PRIMARY", read=0)
    [f] = check_group_member_errant(views(a_first, b, c))
    assert f.severity.value == "critical" and "unconfirmed" not in f.evidence


def test_gtids_of_an_asynchronous_channel_are_not_errant():
    # a, the primary, replicates from X; the secondaries were read before X's latest arrived
    a = member("a", A, "ONLINE", f"{G}:1-100,{X}:1-60", role="PRIMARY", received=f"{G}:1-100",
               async_retrieved=f"{X}:1-60")
    b = member("b", B, "ONLINE", f"{G}:1-100,{X}:1-50")
    assert check_group_member_errant(views(a, b)) == []


def test_history_shared_from_before_the_group_is_not_errant():
    # every member was provisioned from a's backup: a's own uuid is in every set
    a = member("a", A, "ONLINE", f"{A}:1-30,{G}:1-10", role="PRIMARY", received=f"{G}:1-10")
    b = member("b", B, "ONLINE", f"{A}:1-30,{G}:1-10", received=f"{G}:1-10")
    c = member("c", C, "OFFLINE", f"{A}:1-30,{G}:1-8", received=f"{G}:1-8")
    assert check_group_member_errant(views(a, b, c)) == []


def test_nothing_is_said_when_an_online_member_was_not_read():
    a = member("a", A, "ONLINE", f"{G}:1-120", role="PRIMARY")
    c = member("c", C, "OFFLINE", f"{G}:1-90,{C}:1", purged=f"{G}:1-50")
    a_view = GroupMember(**{**a.__dict__, "view": (ViewMember(A, "ONLINE", "PRIMARY"), ViewMember(B, "ONLINE"))})
    assert check_group_member_errant([a_view, c]) == []
    assert check_group_member_unrecoverable([a_view, c]) == []


def test_member_whose_gap_every_donor_purged_cannot_recover():
    a = member("a", A, "ONLINE", f"{G}:1-300", purged=f"{G}:1-200", role="PRIMARY")
    b = member("b", B, "ONLINE", f"{G}:1-300", purged=f"{G}:1-150")
    c = member("c", C, "OFFLINE", f"{G}:1-100")
    [f] = check_group_member_unrecoverable(views(a, b, c))
    assert (f.check_id, f.server, f.severity.value) == ("group_member_unrecoverable", "c", "warning")
    assert f.evidence["closest_donor"] == "b" and f.gtid_set == GtidSet.parse(f"{G}:101-150")


def test_one_donor_with_the_binary_logs_is_enough():
    a = member("a", A, "ONLINE", f"{G}:1-300", purged=f"{G}:1-200", role="PRIMARY")
    b = member("b", B, "ONLINE", f"{G}:1-300", purged=f"{G}:1-80")
    c = member("c", C, "OFFLINE", f"{G}:1-100")
    assert check_group_member_unrecoverable(views(a, b, c)) == []


def test_election_follows_weight_then_uuid_among_the_lowest_version():
    a = member("a", A, "ONLINE", f"{G}:1-9", role="PRIMARY")
    b = member("b", B, "ONLINE", f"{G}:1-9", weight=50)
    c = member("c", C, "ONLINE", f"{G}:1-7", received=f"{G}:1-9", weight=70)
    e = predict_primary(views(a, b, c))
    assert (e.primary, e.elected, e.candidates) == ("a", "c", ("c", "b"))
    assert e.backlog == GtidSet.parse(f"{G}:8-9")
    # equal weights: the lowest server_uuid
    c50 = member("c", C, "ONLINE", f"{G}:1-9", weight=50)
    assert predict_primary(views(a, b, c50)).elected == "b"
    # from 8.0.17 the whole version counts: a newer patch is never elected
    old = member("c", C, "ONLINE", f"{G}:1-9", weight=10, version="8.0.35")
    new = member("b", B, "ONLINE", f"{G}:1-9", weight=90, version="8.0.36")
    assert predict_primary(views(member("a", A, "ONLINE", f"{G}:1-9", role="PRIMARY", version="8.0.36"),
                                 new, old)).elected == "c"
    # before 8.0.17 only the major version: weight decides between 5.7.20 and 5.7.30
    b57 = member("b", B, "ONLINE", f"{G}:1-9", weight=90, version="5.7.30")
    c57 = member("c", C, "ONLINE", f"{G}:1-9", weight=10, version="5.7.20")
    assert predict_primary(views(member("a", A, "ONLINE", f"{G}:1-9", role="PRIMARY", version="5.7.30"),
                                 b57, c57)).elected == "b"


def test_election_is_undetermined_without_a_weight_and_absent_in_multi_primary_mode():
    a = member("a", A, "ONLINE", f"{G}:1-9", role="PRIMARY")
    b = member("b", B, "ONLINE", f"{G}:1-9", weight=None)
    e = predict_primary(views(a, b))
    assert e.elected is None and "weight" in e.undetermined
    # before 5.7.20 there is no group_replication_member_weight: the lowest server_uuid, not undetermined
    old = [member(n, u, "ONLINE", f"{G}:1-9", role="PRIMARY" if n == "a" else None, weight=None, version="5.7.19")
           for n, u in (("a", A), ("c", C), ("b", B))]
    assert (predict_primary(views(*old)).elected, predict_primary(views(*old)).undetermined) == ("b", None)
    mp = [member(n, u, "ONLINE", f"{G}:1-9", role="PRIMARY", single_primary=False) for n, u in (("a", A), ("b", B))]
    assert predict_primary(views(*mp)) is None


def async_replica(name, uuid, executed, retrieved):
    from gtid_core.checks.group import AsyncReplica
    from gtid_core.snapshots import ChannelSnapshot

    snap = ServerSnapshot(name=name, server_uuid=uuid, version=MySQLVersion.parse("9.7.4"),
                          gtid_executed=GtidSet.parse(executed), gtid_purged=GtidSet.parse(""))
    channel = ChannelSnapshot(channel_name="", source_uuid=A, io_running="Yes", sql_running="Yes",
                              auto_position=True, retrieved_gtid_set=GtidSet.parse(retrieved))
    return AsyncReplica(snapshot=snap, channel=channel)


def test_a_replica_read_after_the_elected_member_loses_nothing_the_group_certified():
    # busy group: the elected member was read first, the primary and its replica 30 transactions later
    from gtid_core.checks.group import group_failover_rows

    a = member("a", A, "ONLINE", f"{G}:1-130", role="PRIMARY")
    b = member("b", B, "ONLINE", f"{G}:1-100", received=f"{G}:1-101", weight=70)
    c = member("c", C, "ONLINE", f"{G}:1-120")
    r = async_replica("r", X, f"{G}:1-128", f"{G}:1-130")
    rows = group_failover_rows(views(a, b, c), {"a": [r]})
    assert {(row["candidate"], row["sibling"]) for row in rows} == {("b", "a"), ("b", "r")}
    assert {row["verdict"] for row in rows} == {"safe_after_catch_up"}
    assert all(row["lost_count"] == 0 for row in rows)


def test_a_write_the_group_never_certified_is_lost_when_only_a_replica_has_it():
    # the primary holds a transaction of its own UUID (written outside the group) that its async
    # replica received and the elected member never will
    from gtid_core.checks.group import group_failover_rows

    a = member("a", A, "ONLINE", f"{G}:1-130,{A}:1", received=f"{G}:1-130", role="PRIMARY", read=1)
    b = member("b", B, "ONLINE", f"{G}:1-130", weight=70, read=2)
    r = async_replica("r", X, f"{G}:1-130,{A}:1", f"{G}:1-130,{A}:1")
    rows = group_failover_rows(views(a, b), {"a": [r]})
    assert {row["verdict"] for row in rows} == {"loses_transactions"}
    [rep] = [row for row in rows if row["sibling"] == "r"]
    assert rep["lost_gtid_set"] == f"{A}:1"
    [old] = [row for row in rows if row["sibling"] == "a"]
    assert (old["sibling_result"], old["refusal"]) == ("refused", "ER_GRP_RPL_MEMBER_TRANS_GREATER_THAN_GRP")


def test_the_elected_member_read_before_the_primary_leaves_a_client_gtid_undetermined():
    # the primary committed D:7 with SET gtid_next a moment before its read (certified: b
    # receives it, but b was read before); its replica already has it. Not lost, not refused:
    # undetermined, until a night reads b after a.
    from gtid_core.checks.group import group_failover_rows

    d = "eeeeeeee-0000-0000-0000-00000000000e"
    a = member("a", A, "ONLINE", f"{G}:1-130,{d}:7", received=f"{G}:1-130", role="PRIMARY", read=2)
    b = member("b", B, "ONLINE", f"{G}:1-130", weight=70, read=1)
    r = async_replica("r", X, f"{G}:1-130,{d}:7", f"{G}:1-130,{d}:7")
    rows = group_failover_rows(views(a, b), {"a": [r]})
    assert {row["verdict"] for row in rows} == {"undetermined"}
    assert {row["sibling"]: (row["sibling_result"], row["lost_count"]) for row in rows} == {
        "a": ("undetermined", 0), "r": ("undetermined", 0)}
    assert all("unconfirmed: b was not read after a" in row["reconnect_rule"] for row in rows)


def _replica_of_a(executed, retrieved, *, receiver="YES", read=5):
    import dataclasses
    import datetime as dt

    r = async_replica("r", X, executed, retrieved)
    snap = dataclasses.replace(r.snapshot, read_started_at=at(read), read_at=at(read) + dt.timedelta(seconds=0.5))
    return dataclasses.replace(r, snapshot=snap, channel=dataclasses.replace(r.channel, io_running=receiver))


def _purged_replica_findings(members, replica):
    from gtid_core.checks.group import check_group_member_purged_replica_gtids

    return [(f.server, f.source, str(f.gtid_set)) for f in
            check_group_member_purged_replica_gtids(views(*members), {"a": [replica]})]


def test_a_replica_of_a_member_whose_applier_is_held_is_lagging_not_refused():
    # a's applier waits on a table lock: it has queued G:101-115, which the primary c certified
    # and then purged. r, replicating from a with its receiver running, lacks them only until a
    # applies them; c was read before r, so the old rule would have judged it refused.
    a = member("a", A, "ONLINE", f"{G}:1-100", received=f"{G}:1-115", read=9)
    c = member("c", C, "ONLINE", f"{G}:1-115", purged=f"{G}:1-115", role="PRIMARY", read=1)
    r = _replica_of_a(f"{G}:1-100", f"{G}:1-100")
    assert _purged_replica_findings([a, c], r) == []


def test_a_stopped_replica_of_that_member_is_refused_for_what_it_lacks():
    # the same, with r's receiver stopped: nothing reaches it, c would refuse it
    a = member("a", A, "ONLINE", f"{G}:1-100", received=f"{G}:1-115", read=9)
    c = member("c", C, "ONLINE", f"{G}:1-115", purged=f"{G}:1-115", role="PRIMARY", read=1)
    r = _replica_of_a(f"{G}:1-90", f"{G}:1-90", receiver="NO")
    assert _purged_replica_findings([a, c], r) == [("r", "c", f"{G}:91-115")]


def test_a_running_replica_is_refused_for_what_its_source_will_never_have():
    # c purged a transaction of its own that the group never certified (so a never gets it):
    # moved to c, r is refused for it even though its receiver runs
    a = member("a", A, "ONLINE", f"{G}:1-100", read=9)
    c = member("c", C, "ONLINE", f"{G}:1-100,{C}:1", purged=f"{G}:1-100,{C}:1", received=f"{G}:1-100",
               role="PRIMARY", read=1)
    r = _replica_of_a(f"{G}:1-100", f"{G}:1-100")
    assert _purged_replica_findings([a, c], r) == [("r", "c", f"{C}:1")]


def test_what_the_source_purged_itself_is_not_credited_to_a_connecting_replica():
    # r's receiver is CONNECTING; a holds G:91-115 but purged G:91-95 from its binary logs, so r
    # can get only G:96-115 from it: c, which purged G:1-115, refuses it for G:91-95
    a = member("a", A, "ONLINE", f"{G}:1-115", purged=f"{G}:1-95", read=9)
    c = member("c", C, "ONLINE", f"{G}:1-115", purged=f"{G}:1-115", role="PRIMARY", read=1)
    r = _replica_of_a(f"{G}:1-90", f"{G}:1-90", receiver="CONNECTING")
    assert _purged_replica_findings([a, c], r) == [("r", "c", f"{G}:91-95")]
    [f] = check_group_member_purged_replica_gtids_of(a, c, r)
    assert f.evidence["receiver_running"] is True
    assert f.evidence["credited_from_current_source"] == f"{G}:96-115"


def test_a_replica_whose_receiver_state_was_not_read_is_not_judged():
    # neither stopped (its set may grow) nor known to receive (no credit can be given)
    a = member("a", A, "ONLINE", f"{G}:1-100", read=9)
    c = member("c", C, "ONLINE", f"{G}:1-115", purged=f"{G}:1-115", role="PRIMARY", read=1)
    r = _replica_of_a(f"{G}:1-90", f"{G}:1-90", receiver=None)
    assert _purged_replica_findings([a, c], r) == []


def test_a_running_replica_is_not_judged_when_its_source_was_read_before_the_member():
    # a, read first, may have received since what c certified and purged before its read: what a
    # can send r is not known, so even c's own purged transaction C:1 is left unjudged
    a = member("a", A, "ONLINE", f"{G}:1-100", read=0)
    c = member("c", C, "ONLINE", f"{G}:1-100,{C}:1", purged=f"{G}:1-100,{C}:1", received=f"{G}:1-100",
               role="PRIMARY", read=1)
    r = _replica_of_a(f"{G}:1-100", f"{G}:1-100")
    assert _purged_replica_findings([a, c], r) == []
    # stopped, r is judged whatever the order
    stopped = _replica_of_a(f"{G}:1-100", f"{G}:1-100", receiver="NO")
    assert _purged_replica_findings([a, c], stopped) == [("r", "c", f"{C}:1")]


def test_a_running_replica_is_not_judged_when_its_source_purged_set_was_not_read():
    import dataclasses

    a = member("a", A, "ONLINE", f"{G}:1-100", received=f"{G}:1-115", read=9)
    a = dataclasses.replace(a, snapshot=dataclasses.replace(a.snapshot, gtid_purged=None))
    c = member("c", C, "ONLINE", f"{G}:1-115", purged=f"{G}:1-115", role="PRIMARY", read=1)
    r = _replica_of_a(f"{G}:1-90", f"{G}:1-90")
    assert _purged_replica_findings([a, c], r) == []


def check_group_member_purged_replica_gtids_of(source, other, replica):
    from gtid_core.checks.group import check_group_member_purged_replica_gtids

    return check_group_member_purged_replica_gtids(views(source, other), {source.name: [replica]})
