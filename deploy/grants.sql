-- Least-privilege account for the gtid-audit collector (read-only), for MySQL 8.0.22+ / 8.4 / 9.x.
-- Run on every server of the fleet as an administrator, with a real password instead of
-- CHANGE_ME, and sql_log_bin=0 so the account does not become an errant transaction on replicas.
-- The sandbox creates its `audit` account with exactly these statements
-- (jobs/sandbox/accounts.py, checked by tests/sandbox/test_accounts.py).
--
--   REPLICATION CLIENT  SHOW REPLICA STATUS, SHOW BINARY LOGS, SHOW BINARY LOG STATUS
--   REPLICATION SLAVE   SHOW BINLOG EVENTS, SHOW RELAYLOG EVENTS (no narrower privilege exists;
--                       it also allows streaming binary logs: guard the password like a replica's)
--   SELECT on each performance_schema.replication_* table, named one by one (not
--   performance_schema.*, which would expose statement history with query text).
--   @@GLOBAL.gtid_executed, gtid_purged and server_uuid need no privilege.
-- The account can neither write nor read application tables.
-- REPLICATION SLAVE means the account can read every binary log in full (every row change),
-- so harden it: a host pattern narrower than '%' for the collector's network, and
--   ALTER USER 'audit'@'%' REQUIRE X509    (the job then sets tls.cert_file and tls.key_file)
-- or at least REQUIRE SSL. docs/deployment.md, "Security", says why each grant is needed.

SET SESSION sql_log_bin = 0;

CREATE USER IF NOT EXISTS 'audit'@'%' IDENTIFIED BY 'CHANGE_ME';
GRANT REPLICATION CLIENT, REPLICATION SLAVE ON *.* TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_applier_configuration TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_applier_filters TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_applier_global_filters TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_applier_status TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_applier_status_by_coordinator TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_applier_status_by_worker TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_asynchronous_connection_failover TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_asynchronous_connection_failover_managed TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_connection_configuration TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_connection_status TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_group_member_stats TO 'audit'@'%';
GRANT SELECT ON performance_schema.replication_group_members TO 'audit'@'%';

SET SESSION sql_log_bin = 1;
