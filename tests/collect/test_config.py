"""jobs.config: YAML validation, resolution against the file's directory, secrets by reference."""
from __future__ import annotations

from pathlib import Path

import pytest

from jobs.server_spec import SecretError
from jobs.config import ConfigError, Secret, load_config, parse_config, resolve_password

ROOT = Path(__file__).resolve().parents[2]

MINIMAL = """\
warehouse: ./warehouse
defaults:
  user: audit
  password_env: GTID_AUDIT_PASSWORD
  connect_timeout_s: 5
servers:
  - name: db-a1
    host: 10.0.0.11
    port: 3306
    cluster: orders
"""


def write(tmp_path: Path, text: str, name: str = "conf.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_brief_example_loads_and_resolves_warehouse_against_file_dir(tmp_path):
    """The keys of the documented example load as written; ./warehouse resolves next to the file."""
    sub = tmp_path / "etc"
    sub.mkdir()
    cfg = load_config(write(sub, MINIMAL))
    assert cfg.resolved_warehouse() == str(sub / "warehouse")
    (spec,) = cfg.inventory()
    assert (spec.name, spec.host, spec.port, spec.cluster, spec.user) == ("db-a1", "10.0.0.11", 3306, "orders", "audit")
    assert spec.password_env == "GTID_AUDIT_PASSWORD"
    assert spec.connect_timeout_s == 5


def test_object_store_warehouse_is_kept_as_written(tmp_path):
    """An s3:// warehouse is not turned into a local path."""
    cfg = load_config(write(tmp_path, MINIMAL.replace("./warehouse", "s3://bucket/wh")))
    assert cfg.resolved_warehouse() == "s3://bucket/wh"


@pytest.mark.parametrize("bad, key, value", [
    ("    port: 3306\n", "servers[0].port", "'abc'"),
    ("    cluster: orders\n", "servers[0].colour", "'red'"),
], ids=["bad-port", "unknown-key"])
def test_errors_name_file_key_and_value(tmp_path, bad, key, value):
    """A bad value or an unknown key yields an error naming the file, the key path and the value."""
    text = MINIMAL.replace(bad, bad.replace("3306", "abc") if "port" in bad else bad + "    colour: red\n")
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path.resolve()) in message and key in message and value in message


def test_inline_password_is_refused_without_quoting_it(tmp_path):
    """A literal password in the file is an error and the error never shows the value."""
    path = write(tmp_path, MINIMAL.replace("  connect_timeout_s: 5\n", "  password: hunter2-secret\n"))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "defaults.password" in str(info.value)
    assert "hunter2-secret" not in str(info.value)


@pytest.mark.parametrize("text, fragment", [
    (MINIMAL + "  - {name: db-a1, host: 10.0.0.12}\n", "duplicate server name 'db-a1'"),
    (MINIMAL + "  - {name: db-a2, host: 10.0.0.11, port: 3306}\n", "also belongs to 'db-a1'"),
    (MINIMAL.replace("  password_env: GTID_AUDIT_PASSWORD\n",
                     "  password_env: A\n  password_file: /x\n"), "at most one of"),
    (MINIMAL + "discovery: {enabled: true, seeds: [nope]}\n", "'nope' is not a configured server"),
    ("warehouse: x\nservers: []\n", "list at least one server"),
    ("- 1\n- 2\n", "top level must be a mapping"),
    (MINIMAL + "    aliases: ['bad host:x']\n", "aliases"),
], ids=["dup-name", "dup-address", "two-secrets", "unknown-seed", "no-servers", "not-mapping", "bad-alias"])
def test_invalid_inventories_are_refused(tmp_path, text, fragment):
    """Inconsistent inventories fail at load with a message saying what is wrong."""
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    assert fragment in str(info.value)


def test_server_overrides_and_own_secret_reference(tmp_path):
    """Per-server settings override defaults; a server's own secret reference replaces the default one."""
    text = MINIMAL + ("  - name: db-b1\n    host: h2\n    read_timeout_s: 60\n"
                      "    password_file: secret.txt\n    aliases: ['db-b1.internal:3307']\n")
    cfg = load_config(write(tmp_path, text))
    a, b = cfg.inventory()
    assert a.read_timeout_s == 10 and b.read_timeout_s == 60
    assert b.password_env is None and b.password_file == str(tmp_path / "secret.txt")
    assert b.aliases == (("db-b1.internal", 3307),)
    assert ("db-b1.internal", 3307) in b.addresses()


def test_resolve_password_from_env_and_file(tmp_path, monkeypatch):
    """Secrets resolve from their reference, and a Secret never prints its value."""
    (tmp_path / "pw").write_text("s3cr3t\n")
    cfg = parse_config({"warehouse": "w", "defaults": {"user": "audit"},
                        "servers": [{"name": "a", "host": "h", "password_env": "GTA_TEST_PW"},
                                    {"name": "b", "host": "h2", "password_file": str(tmp_path / "pw")}]})
    a, b = cfg.inventory()
    monkeypatch.setenv("GTA_TEST_PW", "from-env")
    assert resolve_password(a).reveal() == "from-env"
    secret = resolve_password(b)
    assert secret.reveal() == "s3cr3t"
    assert "s3cr3t" not in repr(secret) and "s3cr3t" not in str(secret) and "s3cr3t" not in f"{secret}"
    monkeypatch.delenv("GTA_TEST_PW")
    with pytest.raises(SecretError, match="'GTA_TEST_PW' is not set"):
        resolve_password(a)


def test_models_are_frozen(tmp_path):
    """A loaded configuration cannot be changed by the code that uses it."""
    cfg = load_config(write(tmp_path, MINIMAL))
    with pytest.raises(Exception):
        cfg.servers[0].host = "other"  # type: ignore[misc]


def test_audit_section_is_validated_with_the_rest(tmp_path):
    """The audit section is one of the configuration's models: valid values load, a bad one is
    an error naming the key and the file."""
    cfg = load_config(write(tmp_path, MINIMAL + "audit:\n  fail_on: warning\n  silences: []\n"))
    assert cfg.audit.fail_on == "warning" and cfg.audit.silences == ()
    with pytest.raises(ConfigError, match=r"audit\.fail_on.*'sometimes'") as err:
        load_config(write(tmp_path, MINIMAL + "audit:\n  fail_on: sometimes\n"))
    assert str(tmp_path) in str(err.value)


@pytest.mark.parametrize("name", ["example-production.yaml", "sandbox.example.yaml"])
def test_shipped_examples_are_valid(name):
    """The configurations shipped in conf/ validate."""
    cfg = load_config(ROOT / "conf" / name)
    assert cfg.inventory()


def test_secret_refuses_to_be_pickled():
    """A Secret never travels in a task closure: executors resolve the reference themselves."""
    import pickle

    with pytest.raises(TypeError, match="never pickled"):
        pickle.dumps(Secret("pw"))


def test_server_spec_ships_only_the_reference(monkeypatch):
    """What a task receives names the secret's reference and never holds its value."""
    import pickle

    monkeypatch.setenv("GTA_TEST_PW", "value-that-must-not-travel")
    cfg = parse_config({"warehouse": "w", "defaults": {"user": "audit", "password_env": "GTA_TEST_PW"},
                        "servers": [{"name": "a", "host": "h"}]})
    (spec,) = cfg.inventory()
    blob = pickle.dumps((spec, cfg.collection.read_settings()))
    assert b"value-that-must-not-travel" not in blob and b"GTA_TEST_PW" in blob


@pytest.mark.spark
@pytest.mark.parametrize("collection, per_task", [
    ({}, 32),                                                   # local[2]: 64 reads at once in 2 tasks
    ({"concurrency": 200}, 100),
    ({"concurrency": 20}, 10),
    ({"concurrency": 12}, 8),                                   # never fewer than 8 a task ...
    ({"concurrency": 4}, 4),                                    # ... nor more than the reads allowed at once
    ({"concurrency": 1024}, 256),                               # ... nor more than 256
    ({"per_task_concurrency": 8}, 8),                           # what the configuration sets stays
    ({"concurrency": 64, "per_task_concurrency": 2}, 2),
])
def test_threads_per_task_in_local_mode_carry_the_configured_concurrency(spark, collection, per_task):
    """Unset, per_task_concurrency is what makes the tasks Spark runs at once (one per core of the
    tests' local[2]) read ``concurrency`` servers between them, at least 8 and at most
    ``concurrency`` and 256; set, it is kept. With 8 a task, local[2] read 16 servers at once of 64."""
    from jobs.collect import read_settings

    assert spark.sparkContext.master == "local[2]" and spark.sparkContext.defaultParallelism == 2
    assert read_settings(spark, _config(collection)).per_task_concurrency == per_task


def _stub_session(master, parallelism):
    from types import SimpleNamespace

    return SimpleNamespace(sparkContext=SimpleNamespace(master=master, defaultParallelism=parallelism))


def _config(collection):
    return parse_config({"warehouse": "/tmp/unused", "defaults": {"user": "audit", "password_env": "X"},
                         "servers": [{"name": "a", "host": "127.0.0.1"}], "collection": collection})


@pytest.mark.parametrize("master", ["spark://127.0.0.1:7077", "local-cluster[2,1,1024]", "yarn"])
def test_threads_per_task_off_local_mode_are_the_configured_or_eight(master):
    """On a cluster (and local-cluster, whose executors are processes of their own) the threads per
    task are the configuration's, else 8: the tasks that run at once are the executors' cores,
    which Spark may not know yet when the job starts."""
    from jobs.collect import read_settings

    for collection, per_task in (({}, 8), ({"per_task_concurrency": 3}, 3)):
        assert read_settings(_stub_session(master, 2), _config(collection)).per_task_concurrency == per_task


@pytest.mark.parametrize("master, cores, per_task, tasks", [
    ("local[3]", 3, 21, 3),            # 64 // 3: three tasks of 21 read 63 at once, not two of 22
    ("local[*]", 5, 12, 5),
    ("local", 1, 64, 1),
    ("local[16]", 16, 8, 8),           # 8 at least: eight tasks of 8
])
def test_threads_per_task_and_the_read_tasks_agree_in_local_mode(master, cores, per_task, tasks):
    """The automatic threads per task and the number of read tasks (jobs.collect._partitions) use
    the same floor division, so tasks x threads never exceeds ``concurrency`` and every core that
    Spark runs a task on has one."""
    from jobs.collect import _partitions, read_settings

    settings = read_settings(_stub_session(master, cores), _config({}))
    assert settings.per_task_concurrency == per_task
    assert _partitions(64, settings.per_task_concurrency, 10_000) == tasks
