"""Silences (jobs/silences.py): validation, expiry, and which findings they mute."""
from __future__ import annotations

import datetime as dt

import pytest

from jobs.config import SilenceError, parse_silences
from jobs.silences import active_silences, expired_silences, match_silence

W = "aaaaaaaa-0000-0000-0000-000000000001"
X = "bbbbbbbb-0000-0000-0000-000000000002"
DAY = dt.date(2026, 11, 22)


def finding(**kw):
    base = {"check_id": "errant_transactions", "cluster": "main", "server": "r1", "gtid_set": None}
    return {**base, **kw}


def test_uuid_silence_mutes_only_sets_made_of_that_uuid():
    """A writable replica's UUID mutes errant sets of that UUID alone, not mixed ones."""
    (s,) = parse_silences([{"gtid_uuids": [W.upper()], "expires": "2026-12-31", "reason": "reporting replica"}])
    assert match_silence(finding(gtid_set=f"{W}:1-5"), [s]).reason == "reporting replica"
    assert match_silence(finding(gtid_set=f"{W}:1-5,\n{X}:3"), [s]) is None
    assert match_silence(finding(gtid_set=None), [s]) is None


def test_check_and_cluster_selectors_must_all_match():
    """A check muted for one cluster stays loud in another cluster and for other checks."""
    (s,) = parse_silences([{"id": "mute-purged", "check": "purged_required", "cluster": "legacy",
                            "expires": DAY, "reason": "decommissioning"}])
    assert match_silence(finding(check_id="purged_required", cluster="legacy"), [s]).silence_id == "mute-purged"
    assert match_silence(finding(check_id="purged_required", cluster="main"), [s]) is None
    assert match_silence(finding(check_id="errant_transactions", cluster="legacy"), [s]) is None


def test_expiry_is_inclusive():
    """A silence applies on its expiry date and stops the day after."""
    silences = parse_silences([{"server": "r1", "expires": "2026-11-22", "reason": "r"}])
    assert active_silences(silences, DAY) == silences and expired_silences(silences, DAY) == ()
    nxt = DAY + dt.timedelta(days=1)
    assert active_silences(silences, nxt) == () and expired_silences(silences, nxt) == silences


@pytest.mark.parametrize(
    "raw,fragment",
    [
        ([{"expires": "2026-01-01", "reason": "r"}], "at least one of"),
        ([{"server": "r1", "reason": "r"}], "expires"),
        ([{"server": "r1", "expires": "2026-01-01"}], "reason"),
        ([{"gtid_uuids": ["not-a-uuid"], "expires": "2026-01-01", "reason": "r"}], "'not-a-uuid'"),
        ([{"server": "r1", "expires": "2026-01-01", "reason": "r", "sever": "x"}], "sever"),
        ({"server": "r1"}, "must be a list"),
        ([{"id": "a", "server": "r1", "expires": "2026-01-01", "reason": "r"},
          {"id": "a", "server": "r2", "expires": "2026-01-01", "reason": "r"}], "duplicate"),
    ],
    ids=["no-selector", "no-expiry", "no-reason", "bad-uuid", "typo-key", "not-a-list", "dup-id"],
)
def test_bad_silences_are_refused_with_the_entry(raw, fragment):
    """Invalid silences raise SilenceError naming the problem."""
    with pytest.raises(SilenceError) as err:
        parse_silences(raw)
    assert fragment in str(err.value)


def test_derived_ids_are_stable():
    """A silence without an id gets the same derived id on every load."""
    raw = [{"check": "c", "expires": "2026-01-01", "reason": "r"}]
    assert parse_silences(raw)[0].id == parse_silences(raw)[0].id
    assert parse_silences(raw)[0].id.startswith("silence-")


def test_audit_settings_refuse_a_silence_for_an_unknown_check():
    """A silence whose check id does not exist is a config error naming it, not a dead silence."""
    from jobs.config import ConfigError, load_audit_settings

    with pytest.raises(ConfigError, match=r"audit\.silences\[0\]\.check: unknown check id 'purged_required'"):
        load_audit_settings({"silences": [{"check": "purged_required", "expires": "2099-01-01",
                                           "reason": "typo"}]}, "prod.yaml")
    ok = load_audit_settings({"silences": [{"check": "source_purged_required_gtids", "cluster": "legacy",
                                            "expires": "2099-01-01", "reason": "decommissioning"}]}, "prod.yaml")
    assert ok.silences[0].check == "source_purged_required_gtids"
