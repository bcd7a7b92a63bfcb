"""A server the run could not read becomes a finding whose advice fits the error class."""
from jobs.audit_tasks import collection_findings


def server(name, status, cluster="orders"):
    return {"server": name, "status": status, "cluster": cluster, "host": "10.0.0.9", "port": 3306}


def error(name, error_class, message, seq=0):
    return {"server": name, "error_class": error_class, "message": message, "seq": seq, "errno": None,
            "statement": None, "channel_name": None}


def test_failed_and_partial_servers_become_findings_with_class_specific_advice():
    """auth_failed advice is about the password; unreachable about reachability; ok servers give nothing."""
    rows = collection_findings(
        [server("a", "failed"), server("b", "failed"), server("c", "partial"), server("d", "ok")],
        [error("a", "auth_failed", "Access denied for user 'audit'"),
         error("b", "unreachable", "Connection refused"),
         error("c", "privilege_missing", "SHOW RELAYLOG EVENTS denied")])
    by_server = {r["server"]: r for r in rows}
    assert set(by_server) == {"a", "b", "c"}
    assert by_server["a"]["check_id"] == "collection_failed" and by_server["a"]["severity"] == "critical"
    assert "password" in by_server["a"]["remediation"].splitlines()[0]
    assert "firewall" in by_server["b"]["remediation"].splitlines()[0]
    assert by_server["c"]["check_id"] == "collection_partial"
    assert "deploy/grants.sql" in by_server["c"]["remediation"]
    assert "auth_failed" in by_server["a"]["detail"] and "Access denied" in by_server["a"]["detail"]
