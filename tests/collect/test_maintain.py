"""jobs.maintain and the partition-named writes of jobs.delta_io: on a small warehouse, retention
removes old partitions and only those, OPTIMIZE compacts, VACUUM deletes the dead files, and a
run's rows are replaced inside its own run_date partition."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time
from collections import Counter
from types import SimpleNamespace

import pytest
from deltalake import DeltaTable

from jobs.config import parse_config
from jobs.delta_io import frame_from_rows, merge_latest, read_arrow, run_date_of, write_run_frame, write_run_rows
from jobs.maintain import MaintenanceError, maintain_tables
from schemas import SchemaError, get_table

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
ON = dt.date(2026, 11, 24)
_FILL = {"string": "x", "int64": 0, "int32": 0, "bool": False, "double": 0.0,
         "timestamp": dt.datetime(2026, 11, 24, 2, 15, tzinfo=UTC), "date": ON}


def full_row(table: str, **values) -> dict:
    """A row with every non-nullable column filled by type, overridden by ``values``."""
    row = {}
    for col in get_table(table).columns:
        row[col.name] = values.get(col.name, None if col.nullable else _FILL[col.type.value])
    return row


def relay_rows(run_id: str, run_date: dt.date, n: int = 3) -> list[dict]:
    return [full_row("relay_log_tail", run_id=run_id, run_date=run_date, server="db-a1", channel_name="",
                     seq=i) for i in range(n)]


def config(tmp_path, **maintenance):
    return parse_config({"warehouse": str(tmp_path), "servers": [{"name": "db-a1", "host": "h", "user": "u"}],
                         "maintenance": maintenance})


def add_actions(table_dir) -> list[dict]:
    import pyarrow as pa

    return pa.table(DeltaTable(str(table_dir)).get_add_actions(flatten=True)).to_pylist()


def parquet_on_disk(table_dir) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), table_dir) for d, _, files in os.walk(table_dir)
            for f in files if f.endswith(".parquet") and "_delta_log" not in d}


def test_maintain_removes_old_partitions_compacts_and_vacuums(spark, tmp_path):
    """relay_log_tail loses the partition past 14 days (not the one 13 days old), today's two runs become one file, the
    rerun's and the deleted partitions' files leave the disk; findings (kept) lose nothing."""
    wh = str(tmp_path)
    old, expired, recent = ON - dt.timedelta(days=40), ON - dt.timedelta(days=15), ON - dt.timedelta(days=13)
    for run_id, day in (("r-expired", expired), ("r-recent", recent), ("r-a", ON), ("r-b", ON)):
        write_run_rows(spark, "relay_log_tail", relay_rows(run_id, day), warehouse=wh, run_id=run_id)
    write_run_rows(spark, "relay_log_tail", relay_rows("r-a", ON), warehouse=wh, run_id="r-a")  # a rerun
    write_run_rows(spark, "findings", [full_row("findings", run_id="r-old", run_date=old)], warehouse=wh,
                   run_id="r-old")
    table_dir = tmp_path / "relay_log_tail"
    before = parquet_on_disk(table_dir)
    today = [a for a in add_actions(table_dir) if a["partition.run_date"] == ON]
    assert len(today) >= 2  # two runs' files in today's partition (the positive control)
    time.sleep(1)  # VACUUM keeps files removed less than the retention (0 h here) ago, to the ms

    results = {r.table: r for r in maintain_tables(spark, config(tmp_path, deleted_file_retention_hours=0,
                                                                 vacuum_every_days=1, retention_every_days=1),
                                                   on=ON, tables=["relay_log_tail", "findings"])}

    assert not any(r.error for r in results.values()), [r.line() for r in results.values()]
    relay = read_arrow(wh, "relay_log_tail")
    assert sorted(set(relay.column("run_id").to_pylist())) == ["r-a", "r-b", "r-recent"]
    assert relay.num_rows == 9
    assert results["relay_log_tail"].rows_deleted == 3
    assert results["relay_log_tail"].deleted_before == ON - dt.timedelta(days=14)
    actions = add_actions(table_dir)
    assert len([a for a in actions if a["partition.run_date"] == ON]) == 1
    assert results["relay_log_tail"].files_compacted >= 2
    live = {a["path"] for a in actions}
    assert parquet_on_disk(table_dir) == live  # every dead file is gone from the disk
    assert results["relay_log_tail"].files_vacuumed == len(before - live)
    assert read_arrow(wh, "findings").column("run_id").to_pylist() == ["r-old"]
    props = DeltaTable(str(table_dir)).metadata().configuration
    assert props["delta.deletedFileRetentionDuration"] == "interval 0 hours"
    assert props["delta.logRetentionDuration"] == "interval 30 days"


def test_the_report_tables_keep_thirteen_months_by_default(spark, tmp_path):
    """report_pairs, one row per channel per night like channels, loses its partitions past 400
    days under the default settings (it was kept forever, growing every night); the one 399 days
    old stays."""
    wh = str(tmp_path)
    for run_id, day in (("r-401", ON - dt.timedelta(days=401)), ("r-399", ON - dt.timedelta(days=399)), ("r-now", ON)):
        write_run_rows(spark, "report_pairs", [full_row("report_pairs", run_id=run_id, run_date=day)],
                       warehouse=wh, run_id=run_id)
    [result] = maintain_tables(spark, config(tmp_path, retention_every_days=1), on=ON, tables=["report_pairs"])
    assert not result.error, result.line()
    assert sorted(read_arrow(wh, "report_pairs").column("run_id").to_pylist()) == ["r-399", "r-now"]
    assert result.deleted_before == ON - dt.timedelta(days=400)
    assert all(config(tmp_path).maintenance.retention_days[t] == 400
               for t in ("report_servers", "report_pairs", "report_clusters", "report_groups"))


def operations(table_dir) -> list[str]:
    return [h["operation"] for h in DeltaTable(str(table_dir)).history()]


def test_a_compacted_partition_is_not_rewritten_again(spark, tmp_path):
    """OPTIMIZE touches only the recent partitions holding two files or more: tonight's two runs
    become one file; a recent partition already of one file and an old partition of two (outside
    optimize_days) are left as they are. Maintained again, the table gets no OPTIMIZE commit
    (Delta's Z-order would rewrite every one-file partition of the window each night)."""
    wh = str(tmp_path)
    yesterday, old = ON - dt.timedelta(days=1), ON - dt.timedelta(days=10)
    for run_id, day in (("r-old-1", old), ("r-old-2", old), ("r-yesterday", yesterday), ("r-a", ON), ("r-b", ON)):
        rows = relay_rows(run_id, day, n=1 if day == yesterday else 3)   # one row: one file
        write_run_rows(spark, "relay_log_tail", rows, warehouse=wh, run_id=run_id)
    table_dir = tmp_path / "relay_log_tail"
    files = {day: {a["path"] for a in add_actions(table_dir) if a["partition.run_date"] == day}
             for day in (old, yesterday, ON)}
    assert len(files[old]) >= 2 and len(files[yesterday]) == 1 and len(files[ON]) >= 2   # the positive control
    cfg = config(tmp_path, vacuum=False, optimize_days=3)

    [first] = maintain_tables(spark, cfg, on=ON, tables=["relay_log_tail"])

    assert first.error is None and first.files_compacted == len(files[ON]), first.line()
    after = {day: {a["path"] for a in add_actions(table_dir) if a["partition.run_date"] == day}
             for day in (old, yesterday, ON)}
    assert after[old] == files[old] and after[yesterday] == files[yesterday]
    assert len(after[ON]) == 1 and not after[ON] & files[ON]
    assert operations(table_dir).count("OPTIMIZE") == 1

    [second] = maintain_tables(spark, cfg, on=ON, tables=["relay_log_tail"])

    assert second.error is None and second.files_compacted == 0, second.line()
    assert operations(table_dir).count("OPTIMIZE") == 1
    assert {a["path"] for a in add_actions(table_dir)} == set().union(*after.values())


def test_a_nights_write_is_one_file_and_leaves_nothing_to_compact(spark, tmp_path):
    """A run's rows spread over four tasks are written as one file of their partition (optimized
    writes), so maintenance has nothing to compact: no OPTIMIZE commit, the file kept. Before,
    each task wrote its own file and every night's partition was rewritten by OPTIMIZE."""
    wh = str(tmp_path)
    frame = frame_from_rows(spark, "relay_log_tail", relay_rows("r-a", ON, n=40)).repartition(4)
    assert frame.rdd.getNumPartitions() == 4   # the positive control: four writing tasks
    write_run_frame(spark, "relay_log_tail", frame, warehouse=wh, run_id="r-a", run_date=ON)
    table_dir = tmp_path / "relay_log_tail"
    [written] = [a["path"] for a in add_actions(table_dir)]

    [result] = maintain_tables(spark, config(tmp_path, vacuum=False), on=ON, tables=["relay_log_tail"])

    assert result.error is None and result.files_compacted == 0, result.line()
    assert "OPTIMIZE" not in operations(table_dir)
    assert [a["path"] for a in add_actions(table_dir)] == [written]
    assert read_arrow(wh, "relay_log_tail").num_rows == 40


def test_vacuum_runs_only_when_a_removed_file_is_past_the_retention(spark, tmp_path, monkeypatch):
    """A table never vacuumed whose whole history only added files is not vacuumed, nor after a
    night that only added files (no commits); after a rerun replaced a file, VACUUM deletes it.
    With a week's retention, a file removed just now is not deletable yet, so that night is not
    vacuumed either. Without the hour's allowance, a removal the last VACUUM already deleted does
    not call for another."""
    import jobs.maintain

    wh, table_dir = str(tmp_path), tmp_path / "relay_log_tail"

    def night(run_id, day, retention_hours):
        write_run_rows(spark, "relay_log_tail", relay_rows(run_id, day), warehouse=wh, run_id=run_id)
        time.sleep(1)  # VACUUM keeps files removed less than the retention (0 h here) ago, to the ms
        [result] = maintain_tables(spark, config(tmp_path, deleted_file_retention_hours=retention_hours,
                                                 vacuum_every_days=1),
                                   on=ON, tables=["relay_log_tail"])
        assert result.error is None, result.line()
        return result, operations(table_dir).count("VACUUM START")

    assert night("r-a", ON - dt.timedelta(days=1), 0)[1] == 0              # never vacuumed, nothing removed
    assert night("r-b", ON, 0)[1] == 0                                      # only added: not vacuumed
    replaced = {a["path"] for a in add_actions(table_dir) if a["partition.run_date"] == ON}
    assert night("r-b", ON, 168)[1] == 0         # a rerun: one file removed, a week's retention not past
    result, vacuums = night("r-c", ON - dt.timedelta(days=2), 0)   # no retention: that file is deletable now
    assert vacuums == 1 and result.files_vacuumed == 1 and "vacuum" in result.phase_seconds
    assert not replaced & parquet_on_disk(table_dir)
    assert parquet_on_disk(table_dir) == {a["path"] for a in add_actions(table_dir)}
    monkeypatch.setattr(jobs.maintain, "_VACUUM_SLACK_MS", 0)
    assert night("r-d", ON - dt.timedelta(days=3), 0)[1] == 1   # the rerun's removal: vacuumed already


def test_a_table_is_vacuumed_on_its_own_night_or_when_what_it_can_delete_has_waited(spark, tmp_path, monkeypatch):
    """With ``vacuum_every_days: 7`` a table whose removed file is deletable waits for its own
    night (one in seven), vacuumed before or not; once a deletable file has waited seven days
    (here: days made zero long), any night vacuums it, so a schedule that never runs on the
    table's night (a weekday skipped) does not starve it. The retained tables' nights are spread:
    no night has more than three of them."""
    import jobs.maintain
    from jobs.config import DEFAULT_RETENTION_DAYS
    from jobs.maintain import _vacuum_day

    monkeypatch.setattr(jobs.maintain, "_VACUUM_SLACK_MS", 0)
    wh, table_dir = str(tmp_path), tmp_path / "relay_log_tail"
    for _ in range(2):   # a run and its rerun: the first file removed, deletable at once with 0 h
        write_run_rows(spark, "relay_log_tail", relay_rows("r-a", ON), warehouse=wh, run_id="r-a")
    time.sleep(1)
    its_day = next(ON + dt.timedelta(days=k) for k in range(7)
                   if (ON + dt.timedelta(days=k)).toordinal() % 7 == _vacuum_day("relay_log_tail", 7))
    other_day = its_day + dt.timedelta(days=1)
    weekly = config(tmp_path, deleted_file_retention_hours=0, vacuum_every_days=7)

    [waiting] = maintain_tables(spark, weekly, on=other_day, tables=["relay_log_tail"])
    assert waiting.error is None and "vacuum" not in waiting.phase_seconds, waiting.line()
    assert operations(table_dir).count("VACUUM START") == 0
    [vacuumed] = maintain_tables(spark, weekly, on=its_day, tables=["relay_log_tail"])
    assert vacuumed.error is None and vacuumed.files_vacuumed == 1, vacuumed.line()

    for _ in range(2):   # another removal, then a night that is not the table's
        write_run_rows(spark, "relay_log_tail", relay_rows("r-b", ON), warehouse=wh, run_id="r-b")
    time.sleep(1)
    [waiting] = maintain_tables(spark, weekly, on=other_day, tables=["relay_log_tail"])
    assert waiting.files_vacuumed == 0 and operations(table_dir).count("VACUUM START") == 1
    monkeypatch.setattr(jobs.maintain, "_DAY_MS", 0)   # what it can delete has now waited "a week"
    [caught_up] = maintain_tables(spark, weekly, on=other_day, tables=["relay_log_tail"])
    assert caught_up.files_vacuumed >= 1, caught_up.line()   # the rerun's file, and what OPTIMIZE rewrote
    assert parquet_on_disk(table_dir) == {a["path"] for a in add_actions(table_dir)}

    never, never_dir = tmp_path / "never", tmp_path / "never" / "relay_log_tail"   # never vacuumed, never its night
    for _ in range(2):
        write_run_rows(spark, "relay_log_tail", relay_rows("r-a", ON), warehouse=str(never), run_id="r-a")
    time.sleep(1)
    [starved_not] = maintain_tables(spark, config(never, deleted_file_retention_hours=0, vacuum_every_days=7),
                                    on=other_day, tables=["relay_log_tail"])
    assert starved_not.files_vacuumed == 1, starved_not.line()
    assert parquet_on_disk(never_dir) == {a["path"] for a in add_actions(never_dir)}

    retained = [name for name, days in DEFAULT_RETENTION_DAYS.items() if days is not None]
    assert len(retained) >= 12 and max(Counter(_vacuum_day(name, 7) for name in retained).values()) <= 3


def test_retention_deletes_on_the_tables_own_night_or_once_a_partition_has_waited_the_interval(spark, tmp_path):
    """With ``retention_every_days: 7`` (the default) relay_log_tail (14 days) keeps its partitions 15 and 16
    days old on another night than its own, and deletes both on its own night (one DELETE for both); on
    another night a partition 21 days old (14 + 7: its own night was missed) is deleted at once, with every
    partition past the 14 days. The retained tables' retention nights are spread over the week like their
    VACUUM nights, each the night before its table's VACUUM night."""
    from jobs.config import DEFAULT_RETENTION_DAYS
    from jobs.maintain import _retention_day, _vacuum_day

    its_day = next(ON + dt.timedelta(days=k) for k in range(7)
                   if (ON + dt.timedelta(days=k)).toordinal() % 7 == _retention_day("relay_log_tail", 7))
    other_day = its_day + dt.timedelta(days=1)
    weekly = config(tmp_path, vacuum=False, optimize=False)
    assert weekly.maintenance.retention_every_days == 7

    def partitions():
        return sorted(set(read_arrow(str(tmp_path), "relay_log_tail").column("run_id").to_pylist()))

    for age in (15, 16, 20, 3):        # 20: one night short of the interval (14 + 7 - 1), still waits for its night
        write_run_rows(spark, "relay_log_tail", relay_rows(f"r-{age}", other_day - dt.timedelta(days=age)),
                       warehouse=str(tmp_path), run_id=f"r-{age}")
    [kept] = maintain_tables(spark, weekly, on=other_day, tables=["relay_log_tail"])
    assert (kept.error, kept.deleted_before, kept.rows_deleted) == (None, None, 0), kept.line()
    assert partitions() == ["r-15", "r-16", "r-20", "r-3"] and "no rows deleted" in kept.line()

    next_own = its_day + dt.timedelta(days=7)      # the partitions are a week older there: 21, 22 and 9 days
    [deleted] = maintain_tables(spark, weekly, on=next_own, tables=["relay_log_tail"])
    assert deleted.deleted_before == next_own - dt.timedelta(days=14) and deleted.rows_deleted == 9, deleted.line()
    assert partitions() == ["r-3"]

    write_run_rows(spark, "relay_log_tail", relay_rows("r-missed", other_day - dt.timedelta(days=21)),
                   warehouse=str(tmp_path), run_id="r-missed")
    write_run_rows(spark, "relay_log_tail", relay_rows("r-15b", other_day - dt.timedelta(days=15)),
                   warehouse=str(tmp_path), run_id="r-15b")
    [overdue] = maintain_tables(spark, weekly, on=other_day, tables=["relay_log_tail"])
    assert overdue.deleted_before == other_day - dt.timedelta(days=14) and overdue.rows_deleted == 6, overdue.line()
    assert partitions() == ["r-3"]

    retained = [name for name, days in DEFAULT_RETENTION_DAYS.items() if days is not None]
    assert max(Counter(_retention_day(name, 7) for name in retained).values()) <= 3
    assert all(_retention_day(name, 7) == (_vacuum_day(name, 7) - 1) % 7 for name in retained)
    assert all(_retention_day(name, 1) == 0 for name in retained)      # every night with 1


def test_a_shorter_retention_vacuums_what_the_last_vacuum_kept(spark, tmp_path, monkeypatch):
    """The last VACUUM ran with a week's retention and kept a file removed just before it; once
    the retention is lowered to zero, the next maintenance vacuums (the window of the last
    VACUUM is its own retention's, not today's) and the file leaves the disk."""
    import jobs.maintain

    monkeypatch.setattr(jobs.maintain, "_VACUUM_SLACK_MS", 0)
    wh, table_dir = str(tmp_path), tmp_path / "relay_log_tail"
    for _ in range(2):   # a run and its rerun: the first file removed
        write_run_rows(spark, "relay_log_tail", relay_rows("r-a", ON), warehouse=wh, run_id="r-a")
    removed = parquet_on_disk(table_dir) - {a["path"] for a in add_actions(table_dir)}
    assert len(removed) == 1
    monkeypatch.setattr(jobs.maintain, "_vacuum_due", lambda *args, **kwargs: True)   # a VACUUM at 168 h
    [kept] = maintain_tables(spark, config(tmp_path, deleted_file_retention_hours=168), on=ON,
                             tables=["relay_log_tail"])
    monkeypatch.undo()
    monkeypatch.setattr(jobs.maintain, "_VACUUM_SLACK_MS", 0)
    assert kept.error is None and kept.files_vacuumed == 0 and removed <= parquet_on_disk(table_dir)
    assert operations(table_dir).count("VACUUM START") == 1
    time.sleep(1)

    [result] = maintain_tables(spark, config(tmp_path, deleted_file_retention_hours=0, vacuum_every_days=1),
                               on=ON, tables=["relay_log_tail"])

    assert result.error is None and result.files_vacuumed == 1, result.line()
    assert not removed & parquet_on_disk(table_dir)


def _sizing_refused(spark):
    """The test session as ``_compaction_filter`` sees it, except that the file system's size
    lookup fails, as a store refusing the status call of a file does."""
    def refuse(path):
        raise PermissionError(f"status of {path} refused")

    hadoop = SimpleNamespace(fs=SimpleNamespace(Path=refuse))
    jvm = SimpleNamespace(org=SimpleNamespace(apache=SimpleNamespace(hadoop=hadoop)))
    return SimpleNamespace(read=spark.read, conf=spark.conf,
                           sparkContext=SimpleNamespace(_jsc=spark.sparkContext._jsc, _jvm=jvm))


def test_files_that_cannot_be_sized_fall_back_to_the_whole_window(spark, tmp_path, caplog):
    """When the files cannot be sized, compaction names the whole optimize window (as before
    stop 36) with a warning naming the table, instead of failing; with sizing, the same table
    names only its partition of two files."""
    from jobs.maintain import _compaction_filter

    wh = str(tmp_path)
    for run_id, day in (("r-a", ON), ("r-b", ON)):
        write_run_rows(spark, "relay_log_tail", relay_rows(run_id, day), warehouse=wh, run_id=run_id)
    uri, schema, since = str(tmp_path / "relay_log_tail"), get_table("relay_log_tail"), ON - dt.timedelta(days=3)
    assert _compaction_filter(spark, uri, schema, since) == f"run_date IN (DATE'{ON.isoformat()}')"

    with caplog.at_level("WARNING", logger="gtid_audit.maintain"):
        where = _compaction_filter(_sizing_refused(spark), uri, schema, since)

    assert where == f"run_date >= DATE'{since.isoformat()}'"
    [warning] = [r.getMessage() for r in caplog.records]
    assert warning.startswith(f"sizing the files of {uri} failed (status of ") and "refused" in warning
    assert warning.endswith(": compacting the whole window")


def test_tables_are_maintained_concurrently_with_the_same_outcome(spark, tmp_path):
    """concurrent_tables = 1 and 4 report the same results, in the order of the tables; a table whose log is
    broken fails alone, the tables around it are still maintained."""
    names = ["channels", "relay_log_tail", "servers", "group_members"]
    outcomes = {}
    built = tmp_path / "built"        # one warehouse, copied for each concurrency (its writes cost 10 s)
    for run_id in ("r-a", "r-b"):
        write_run_rows(spark, "relay_log_tail", relay_rows(run_id, ON), warehouse=str(built), run_id=run_id)
        for table in ("channels", "servers", "group_members"):
            write_run_rows(spark, table, [full_row(table, run_id=run_id, run_date=ON, server="db-a1")],
                           warehouse=str(built), run_id=run_id)
    last_commit = sorted((built / "servers" / "_delta_log").glob("*.json"))[-1]
    last_commit.write_text("not a Delta commit\n")
    for concurrency in (1, 4):
        wh = tmp_path / f"wh{concurrency}"
        shutil.copytree(built, wh)
        results = maintain_tables(spark, config(wh, concurrent_tables=concurrency, vacuum=False), on=ON,
                                  tables=names)
        outcomes[concurrency] = [(r.table, r.error is None, r.files_compacted) for r in results]
    assert outcomes[1] == outcomes[4]
    assert [(table, ok) for table, ok, _ in outcomes[4]] == [
        ("channels", True), ("relay_log_tail", True), ("servers", False), ("group_members", True)]
    assert all(compacted >= 2 for _, ok, compacted in outcomes[4] if ok), outcomes[4]


def test_tables_are_created_with_the_default_properties(spark, tmp_path):
    """A new table carries the log retention, deleted-file retention and checkpoint interval."""
    write_run_rows(spark, "relay_log_tail", relay_rows("r1", ON), warehouse=str(tmp_path), run_id="r1")
    props = DeltaTable(str(tmp_path / "relay_log_tail")).metadata().configuration
    assert props == {"delta.logRetentionDuration": "interval 30 days",
                     "delta.deletedFileRetentionDuration": "interval 168 hours",
                     "delta.checkpointInterval": "10"}


def test_a_run_is_replaced_inside_its_partition_and_keeps_its_date(spark, tmp_path):
    """A rerun replaces only its run_date partition; rows of another date for the run are refused;
    run_date_of answers the date recorded in runs."""
    wh = str(tmp_path)
    write_run_rows(spark, "relay_log_tail", relay_rows("r1", ON), warehouse=wh, run_id="r1")
    write_run_rows(spark, "relay_log_tail", relay_rows("r1", ON, n=2), warehouse=wh, run_id="r1")
    assert read_arrow(wh, "relay_log_tail", run_id="r1", run_date=ON).num_rows == 2
    assert read_arrow(wh, "relay_log_tail", run_id="r1", run_date=ON - dt.timedelta(days=1)).num_rows == 0
    with pytest.raises(Exception, match="(?i)replaceWhere|do not satisfy|DELTA_REPLACE_WHERE"):
        write_run_frame(spark, "relay_log_tail", frame_from_rows(spark, "relay_log_tail", relay_rows(
            "r1", ON + dt.timedelta(days=1))), warehouse=wh, run_id="r1", run_date=ON)
    with pytest.raises(SchemaError, match="other dates"):
        write_run_rows(spark, "relay_log_tail", relay_rows("r1", ON + dt.timedelta(days=1)), warehouse=wh,
                       run_id="r1", run_date=ON)
    assert run_date_of(spark, wh, "r1") is None  # no runs table yet
    write_run_rows(spark, "runs", [full_row("runs", run_id="r1", run_date=ON)], warehouse=wh, run_id="r1")
    assert run_date_of(spark, wh, "r1") == ON
    assert run_date_of(spark, wh, "r2") is None


def test_settings_naming_unknown_tables_or_columns_are_refused(spark, tmp_path):
    """A typo in the maintenance settings stops before any table is touched."""
    with pytest.raises(MaintenanceError, match="'relay_log_tial'"):
        maintain_tables(spark, config(tmp_path, retention_days={"relay_log_tial": 7}))
    with pytest.raises(MaintenanceError, match="partition column"):
        maintain_tables(spark, config(tmp_path, zorder={"findings": ["run_date"]}))
    with pytest.raises(MaintenanceError, match="has no run_date"):
        maintain_tables(spark, config(tmp_path, retention_days={"uuid_registry": 30}))


def test_retention_applies_to_the_clustered_one_row_a_night_tables(spark, tmp_path):
    """runs is clustered, not partitioned: a retention set for it (kept by default) still deletes
    the nights older than it, by a predicate on run_date, and compacts the rest."""
    wh = str(tmp_path)
    for run_id, day in (("r-old", ON - dt.timedelta(days=40)), ("r-new", ON - dt.timedelta(days=2)), ("r-now", ON)):
        write_run_rows(spark, "runs", [full_row("runs", run_id=run_id, run_date=day)], warehouse=wh, run_id=run_id)
    assert DeltaTable(str(tmp_path / "runs")).metadata().partition_columns == []

    [result] = maintain_tables(spark, config(tmp_path, retention_days={"runs": 30}, retention_every_days=1), on=ON,
                               tables=["runs"])

    assert result.error is None, result.line()
    assert sorted(read_arrow(wh, "runs").column("run_id").to_pylist()) == ["r-new", "r-now"]
    assert result.rows_deleted == 1 and result.deleted_before == ON - dt.timedelta(days=30)


def finding_row(run_id: str, run_date: dt.date, key: str, status: str = "open", count: int = 1) -> dict:
    return full_row("findings", run_id=run_id, run_date=run_date, finding_key=key, check_id="errant_transactions",
                    severity="critical", server=key, status=status, gtid_count=count, first_seen=ON)


def latest(wh) -> dict[str, tuple]:
    t = read_arrow(wh, "findings_latest").to_pylist()
    return {r["finding_key"]: (r["run_id"], r["status"], r["gtid_count"]) for r in t}


def test_findings_latest_keeps_each_keys_newest_row(spark, tmp_path):
    """MERGE on finding_key: newer runs replace, resolved rows stay resolved, an old run audited
    again does not move a finding back, a rerun's vanished key is deleted; the table is clustered."""
    wh = str(tmp_path)
    d1, d2 = ON - dt.timedelta(days=1), ON

    def merge(run_id, day, rows):
        df = frame_from_rows(spark, "findings", rows)
        merge_latest(spark, "findings_latest", df, warehouse=wh, run_id=run_id)

    merge("r1", d1, [finding_row("r1", d1, "a"), finding_row("r1", d1, "b")])
    merge("r2", d2, [finding_row("r2", d2, "a", count=5), finding_row("r2", d2, "b", "resolved"),
                     finding_row("r2", d2, "c")])
    assert latest(wh) == {"a": ("r2", "open", 5), "b": ("r2", "resolved", 1), "c": ("r2", "open", 1)}
    merge("r1", d1, [finding_row("r1", d1, "a"), finding_row("r1", d1, "b")])  # r1 audited again
    assert latest(wh) == {"a": ("r2", "open", 5), "b": ("r2", "resolved", 1), "c": ("r2", "open", 1)}
    merge("r2", d2, [finding_row("r2", d2, "a", count=5), finding_row("r2", d2, "b", "resolved")])
    assert latest(wh) == {"a": ("r2", "open", 5), "b": ("r2", "resolved", 1)}
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{tmp_path / 'findings_latest'}`").collect()[0]
    assert list(detail["clusteringColumns"]) == ["severity", "check_id", "cluster"]
    assert list(detail["partitionColumns"]) == []


def test_maintain_command_exit_codes(spark, tmp_path, capsys):
    """`gtid-audit maintain` exits 0 on a warehouse with no tables yet and 1 on a bad setting."""
    from jobs.cli import main

    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    base = f"warehouse: {tmp_path / 'wh'}\nservers: [{{name: db-a1, host: h, user: u}}]\n"
    good.write_text(base)
    bad.write_text(base + "maintenance: {zorder: {findings: [run_date]}}\n")
    assert main(["maintain", "--config", str(good), "--table", "relay_log_tail"]) == 0
    out, err = capsys.readouterr()
    assert "relay_log_tail: no table" in out and "relay_log_tail" not in err   # printed, not logged as well
    assert main(["maintain", "--config", str(bad)]) == 1


@pytest.mark.parametrize("after_run", [True, False], ids=["after_run", "off"])
def test_run_maintains_the_tables_only_when_configured(monkeypatch, tmp_path, after_run):
    """`run` (collect + audit) ends with maintenance exactly when maintenance.after_run is set."""
    import jobs.audit
    import jobs.collect
    import jobs.maintain
    from jobs.pipeline import run_night

    calls = []
    monkeypatch.setattr(jobs.collect, "run_collect", lambda *a, **k: type(
        "S", (), {"run_id": "r1", "seconds": 1.0, "line": lambda self: "collected"})())
    monkeypatch.setattr(jobs.audit, "audit_run", lambda *a, **k: type("A", (), {"run_id": "r1", "exit_code": 2})())
    monkeypatch.setattr(jobs.maintain, "maintain_tables", lambda spark, config: calls.append(config) or ["done"])
    night = run_night(config(tmp_path, after_run=after_run), spark=object())
    assert night.exit_code == 2  # maintenance never changes the night's outcome
    assert (night.maintained, len(calls)) == ((["done"], 1) if after_run else (None, 0))
    run_night(config(tmp_path, after_run=after_run), collect=False, spark=object())  # `audit` alone: never
    assert len(calls) == (1 if after_run else 0)


def test_maintain_removes_the_staging_a_killed_collection_left_and_only_that(spark, tmp_path):
    """A run directory under _staging/collect where nothing changed for staging_max_age_hours goes;
    a fresh one (a collection in progress), and an old one with a file just written in it, stay.
    `--table` (one table) never touches the staging."""
    from jobs.maintain import StagingCleanup
    from jobs.read_staging import run_staging_uri

    old = time.time() - 49 * 3600

    def run_dir(run_id: str, *, age: float | None, fresh_file: bool = False):
        root = run_staging_uri(str(tmp_path), run_id)
        table = os.path.join(root, "attempt-1", "read")
        os.makedirs(os.path.join(table, "_delta_log"))
        for path in (os.path.join(table, "part-0.parquet"), os.path.join(table, "_delta_log", "0.json")):
            with open(path, "w") as f:
                f.write("x")
        if age is not None:
            for d, dirs, files in os.walk(root, topdown=False):
                for name in files + dirs:
                    os.utime(os.path.join(d, name), (age, age))
            os.utime(root, (age, age))
        if fresh_file:
            with open(os.path.join(table, "part-1.parquet"), "w") as f:
                f.write("x")
        return root

    killed = run_dir("night-killed", age=old)
    running = run_dir("night-running", age=None)
    still_writing = run_dir("night-slow", age=old, fresh_file=True)
    cfg = config(tmp_path, optimize=False, vacuum=False)

    assert not any(isinstance(r, StagingCleanup) for r in maintain_tables(spark, cfg, on=ON, tables=["runs"]))
    assert os.path.isdir(killed)
    cleanup = maintain_tables(spark, cfg, on=ON)[-1]
    assert isinstance(cleanup, StagingCleanup) and cleanup.error is None
    assert cleanup.removed == [os.path.basename(killed)]
    assert cleanup.line() == "_staging/collect: removed 1 stale run directories"
    assert not os.path.exists(killed) and os.path.isdir(running) and os.path.isdir(still_writing)


def test_a_tables_line_names_its_phases_and_counts_files_in_english():
    """The line ``maintain`` prints: singular for one file, each phase that ran with its seconds."""
    from jobs.maintain import TableMaintenance

    one = TableMaintenance(table="runs", files_compacted=1, files_vacuumed=2, seconds=3.25,
                           phase_seconds={"optimize": 1.04, "vacuum": 2.0})
    assert one.line() == "runs: no rows deleted, compacted 1 file, vacuumed 2 files (3.2s, optimize 1.0s, vacuum 2.0s)"
    none = TableMaintenance(table="findings", seconds=0.5)
    assert none.line() == "findings: no rows deleted, compacted 0 files, vacuumed 0 files (0.5s)"


def test_an_error_from_the_jvm_is_named_by_its_java_exception_not_by_py4j_s_call(spark):
    """What maintenance logs and records about a failure (``jobs.logs.error_line``): Py4J's first
    line ("An error occurred while calling o58.sql.") says which call failed, not why; the Java
    exception's class and message do."""
    from py4j.protocol import Py4JJavaError

    from jobs.logs import error_line

    with pytest.raises(Py4JJavaError) as caught:   # an exception PySpark does not convert
        spark.sparkContext._jvm.java.util.Objects.requireNonNull(None, "no value here")
    assert str(caught.value).startswith("An error occurred while calling")
    assert error_line(caught.value) == "java.lang.NullPointerException: no value here"
    assert error_line(ValueError("first line\nsecond line")) == "first line"
    assert error_line(RuntimeError()) == "RuntimeError"
    assert len(error_line(ValueError("x" * 1000))) == 300


def _lite_refused(spark, uri) -> bool:
    try:
        spark.sql(f"VACUUM delta.`{uri}` LITE")
    except Exception as exc:  # noqa: BLE001 - Py4J or converted: the message says which
        assert "DELTA_CANNOT_VACUUM_LITE" in str(exc), exc
        return True
    return False


def test_a_table_refused_lite_once_gets_its_watermark_back_from_the_full_vacuum(spark, tmp_path, monkeypatch, caplog):
    """Delta's full VACUUM records no LITE watermark (``_last_vacuum_info`` is ``{}``), so a table
    whose log no longer starts at version 0 is refused LITE for ever after. The job's fallback
    records the watermark a LITE would have: past a removal older than the table's retention
    (20 s here), before one inside it, which the full VACUUM keeps. The table's next VACUUM is
    LITE again, and deletes that file: it reads the removal the watermark left after it."""
    import logging

    import jobs.maintain
    from delta.tables import DeltaTable as SparkDeltaTable

    monkeypatch.setattr(jobs.maintain, "_VACUUM_SLACK_MS", 0)
    wh, table_dir = str(tmp_path), tmp_path / "relay_log_tail"
    uri = str(table_dir)
    info = table_dir / "_delta_log" / "_last_vacuum_info"

    def newest() -> int:
        return SparkDeltaTable.forPath(spark, uri).history(1).collect()[0]["version"]

    def rerun(run_id: str) -> set[str]:
        """A run and its rerun: the file the rerun replaced."""
        live = {a["path"] for a in add_actions(table_dir)}
        write_run_rows(spark, "relay_log_tail", relay_rows(run_id, ON), warehouse=wh, run_id=run_id)
        first = {a["path"] for a in add_actions(table_dir)} - live
        write_run_rows(spark, "relay_log_tail", relay_rows(run_id, ON), warehouse=wh, run_id=run_id)
        return first

    write_run_rows(spark, "relay_log_tail", relay_rows("r-0", ON), warehouse=wh, run_id="r-0")
    spark.sql(f"ALTER TABLE delta.`{uri}` SET TBLPROPERTIES ('delta.checkpointInterval' = '1', "
              "'delta.deletedFileRetentionDuration' = 'interval 20 seconds')")
    old_file = rerun("r-a")    # removed now, past the retention after the sleep below
    old_removal = newest()
    assert list((table_dir / "_delta_log").glob("*.checkpoint.parquet"))
    for name in ("00000000000000000000.json", "00000000000000000000.crc"):   # the log's cleanup
        (table_dir / "_delta_log" / name).unlink(missing_ok=True)
    time.sleep(21)
    table = SparkDeltaTable.forPath(spark, uri)

    with jobs.maintain._session_conf(spark, "spark.sql.sources.parallelPartitionDiscovery.parallelism", "2"):
        assert _lite_refused(spark, uri)   # no watermark and no version 0: Delta refuses LITE
        table.vacuum()                     # Delta's own full VACUUM
        assert json.loads(info.read_text()) == {}   # ... records no watermark
        assert _lite_refused(spark, uri)   # so it stays refused
        assert not old_file & parquet_on_disk(table_dir)

        recent_file = rerun("r-b")         # removed inside the retention when the job falls back
        recent_removal = newest()
        with caplog.at_level(logging.INFO, logger="gtid_audit.maintain"):
            jobs.maintain._vacuum(spark, table, uri)
        assert "DELTA_CANNOT_VACUUM_LITE" in caplog.text and "LITE watermark recorded" in caplog.text
        watermark = json.loads(info.read_text())["latestCommitVersionOutsideOfRetentionWindow"]
        assert old_removal <= watermark < recent_removal
        assert recent_file <= parquet_on_disk(table_dir)   # inside the retention: kept

        spark.sql(f"ALTER TABLE delta.`{uri}` SET TBLPROPERTIES "
                  "('delta.deletedFileRetentionDuration' = 'interval 0 seconds')")
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="gtid_audit.maintain"):
            jobs.maintain._vacuum(spark, table, uri)
    assert "not possible" not in caplog.text, caplog.text   # LITE ran
    assert len(recent_file) == 1 and not recent_file & parquet_on_disk(table_dir)
    assert parquet_on_disk(table_dir) == {a["path"] for a in add_actions(table_dir)}
    assert read_arrow(wh, "relay_log_tail").num_rows == 9
