"""The one error hierarchy of the sandbox (installer, servers, fleets, scenarios).

Every message quotes the offending input with ``{value!r}`` so a failure names what to fix.
"""
from __future__ import annotations

__all__ = [
    "SandboxError",
    "InstallError",
    "ArchiveUnreachableError",
    "HostLibraryError",
    "ServerStartError",
    "TopologyError",
    "FleetError",
    "FleetNotFoundError",
    "ScenarioError",
]


class SandboxError(RuntimeError):
    """Base class of every error raised by ``jobs.sandbox``."""


class InstallError(SandboxError):
    """Raised when the MySQL distribution cannot be downloaded, unpacked or initialized."""


class ArchiveUnreachableError(InstallError):
    """Raised when the Debian archive (the URI named in the message) cannot be reached."""


class HostLibraryError(InstallError):
    """Raised when a bundled binary would load a shared library from the host system, or a
    library cannot be found at all: the tree is not self-contained and is refused."""


class ServerStartError(SandboxError):
    """Raised when a mysqld does not start or does not become ready (the message quotes its
    error log tail)."""


class TopologyError(SandboxError, ValueError):
    """Raised when a topology (YAML or dict) is invalid; the message names the key."""


class FleetError(SandboxError):
    """Raised when a fleet cannot be brought up, found, or driven to the wanted state."""


class FleetNotFoundError(FleetError, FileNotFoundError):
    """Raised when a workdir holds no saved fleet state (nothing was brought up there)."""


class ScenarioError(SandboxError):
    """Raised when a fault scenario cannot produce the state it promises."""
