"""One versioned schema per Delta table (see ``schemas.base`` for the framework).

``schemas.collection`` holds the tables of ``gtid-audit collect``; ``schemas.audit`` the tables
of ``gtid-audit audit``; ``schemas.failover`` the failover_readiness table; ``schemas.report`` the report's input tables. Importing this package registers them all.
"""
from schemas.base import (
    SCHEMA_VERSION_PROPERTY,
    Column,
    LogicalType,
    SchemaError,
    TableSchema,
    all_tables,
    get_table,
    register,
    run_columns,
    server_columns,
)
from schemas import audit, collection, failover, report  # noqa: F401  (registers the tables)

__all__ = [
    "SCHEMA_VERSION_PROPERTY",
    "Column",
    "LogicalType",
    "SchemaError",
    "TableSchema",
    "all_tables",
    "get_table",
    "register",
    "run_columns",
    "server_columns",
]
