"""Errors a user can act on.

Each error's message is one line that says what went wrong and how to fix it;
the CLI prints it without a traceback (unless ``--debug``) and exits with 1.
"""

from __future__ import annotations


class KGAgentError(Exception):
    """Base class of every error kgagent raises on purpose."""


class ConfigError(KGAgentError):
    """A configuration file, field or value is wrong."""


class MemoryStoreError(KGAgentError):
    """The memory directory cannot be used as asked."""


class SchemaVersionError(MemoryStoreError):
    """The memory was written by a newer kgagent, or migrations are broken."""


class EncoderMismatchError(MemoryStoreError):
    """Features from one encoder offered to a memory built with another."""


class QueryError(KGAgentError):
    """A Cypher query failed (syntax, unknown name, missing parameter)."""


class ReadOnlyViolation(QueryError):
    """A query that writes was run without ``--write``."""


class ArchiveError(KGAgentError):
    """An exported memory archive is corrupt, unsafe or incompatible."""


class EnvironmentError_(KGAgentError):
    """An environment cannot be created or driven (no display, window gone)."""


class ActionRefused(KGAgentError):
    """An operation would act outside the target window or region."""


class GroundingError(KGAgentError):
    """An object of a skill was not found on the current screen."""


class WeightsUnavailable(KGAgentError):
    """Model weights were asked for but cannot be loaded."""


class BrainError(KGAgentError):
    """The VLM endpoint failed beyond retries, or the budget is spent."""


class BudgetExceeded(BrainError):
    """The configured spending cap has been reached."""
