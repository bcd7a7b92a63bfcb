"""Run by tests/packaging/test_airflow_dag.py with the Python of the Airflow virtualenv
(tests/fixtures/airflow.py), never the project's: Airflow is imported here and nowhere else.

    python airflow_probe.py dagbag DAG_FOLDER LOGICAL_DATE  # parse as the DAG processor does, render the task
    python airflow_probe.py run DAG_FOLDER LOGICAL_DATE     # dag.test(): one run, metadata DB in $AIRFLOW_HOME

Prints one JSON line prefixed with ``PROBE=`` (Airflow logs to the same streams).
"""
from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta

PREFIX = "PROBE="


def _dag_bag(folder: str):
    from airflow.dag_processing.dagbag import DagBag

    # Airflow 3 has no include_examples argument: $AIRFLOW__CORE__LOAD_EXAMPLES=False does it
    return DagBag(dag_folder=folder)


def _plain(value):
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def dagbag(folder: str, logical_date: datetime) -> dict:
    """What a scheduler's parse sees, and the task's fields as a worker renders them."""
    bag = _dag_bag(folder)
    out = {"import_errors": dict(bag.import_errors), "dag_ids": sorted(bag.dag_ids), "dags": {}}
    for dag_id, dag in bag.dags.items():
        tasks = {}
        for task in dag.tasks:
            fields = {name: _plain(getattr(task, name)) for name in task.template_fields}
            fields.update(conn_id=task._conn_id, retries=task.retries,
                          retry_delay=_plain(task.retry_delay), execution_timeout=_plain(task.execution_timeout))
            entry = {"operator": f"{type(task).__module__}.{type(task).__qualname__}", "fields": fields}
            try:  # as the worker does before execute(): the run's context, the DAG's macros
                task.render_template_fields({"ts_nodash": logical_date.strftime("%Y%m%dT%H%M%S")},
                                            jinja_env=dag.get_template_env())
                entry["rendered"] = {name: _plain(getattr(task, name)) for name in task.template_fields}
            except Exception as exc:  # noqa: BLE001 - reported to the test, which asserts on it
                entry["render_error"] = f"{type(exc).__name__}: {exc}"
            tasks[task.task_id] = entry
        out["dags"][dag_id] = {
            "schedule": str(dag.schedule), "catchup": dag.catchup, "max_active_runs": dag.max_active_runs,
            "start_date": dag.start_date.isoformat(), "tags": sorted(dag.tags), "tasks": tasks,
        }
    return out


def run(folder: str, logical_date: datetime) -> dict:
    """One DAG run with dag.test(); a failed try is not retried (retry_delay is ten minutes)."""
    bag = _dag_bag(folder)
    if bag.import_errors:
        return {"import_errors": dict(bag.import_errors)}
    (dag,) = bag.dags.values()
    for task in dag.tasks:
        task.retries = 0
    run_ = dag.test(logical_date=logical_date)
    return {"import_errors": {}, "dag_id": dag.dag_id, "state": str(run_.state),
            "tasks": {ti.task_id: str(ti.state) for ti in run_.get_task_instances()}}


if __name__ == "__main__":
    mode, dag_folder, when = sys.argv[1:]
    result = {"dagbag": dagbag, "run": run}[mode](dag_folder, datetime.fromisoformat(when))
    print(PREFIX + json.dumps(result), flush=True)
