"""Exceptions raised by pubsub_go. A failed native call returns a typed
reason (code, kind, message; go/include/pubsubgo.h struct PgError): the
exception class follows the kind, never the message text, and also derives
from the closest Python built-in, so `except ValueError` catches a bad
config. Kinds and code names come from the Go side (contract.py)."""

from __future__ import annotations

from typing import TypeVar

from . import contract

_E = TypeVar("_E", bound="PubSubError")


class PubSubError(Exception):
    """An error from the native data plane, carrying its gRPC status code
    and its machine-readable kind (e.g. "not_found", "decoder_time_limit")."""

    kind = "unknown"  # a class's kind when none is given

    def __init__(self, code: int, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.code_name = contract.code_names().get(code, f"CODE_{code}")
        self.kind = kind or type(self).kind
        self.message = message

    @classmethod
    def new(cls: type[_E], message: str) -> _E:
        """An error Python raises itself, with the code of the class's kind."""
        return cls(contract.error_kinds()[cls.kind], message)


class InvalidArgumentError(PubSubError, ValueError):
    """A malformed config or bad input (INVALID_ARGUMENT)."""

    kind = "invalid_argument"


class NotFoundError(PubSubError, LookupError):
    """The topic or subscription does not exist (NOT_FOUND)."""

    kind = "not_found"


class AlreadyExistsError(PubSubError):
    """The topic or subscription already exists (ALREADY_EXISTS)."""

    kind = "already_exists"


class PermissionDeniedError(PubSubError, PermissionError):
    """The credentials lack a permission (PERMISSION_DENIED / UNAUTHENTICATED)."""

    kind = "permission_denied"


class UnavailableError(PubSubError, ConnectionError):
    """The endpoint could not be reached after bounded retries (UNAVAILABLE)."""

    kind = "unavailable"


class DeadlineExceededError(PubSubError, TimeoutError):
    """A bounded wait ran out (DEADLINE_EXCEEDED; kind decoder_time_limit:
    a decoder's time limit)."""

    kind = "deadline_exceeded"


class ResourceExhaustedError(PubSubError):
    """A quota or a limit was hit (RESOURCE_EXHAUSTED; kind
    decoder_memory_limit: a decoder's memory cap)."""

    kind = "resource_exhausted"


class AbortedError(PubSubError):
    """The operation was aborted (ABORTED; kind decoder_crashed: a decoder
    module crashed)."""

    kind = "aborted"


class ClosedError(PubSubError, RuntimeError):
    """The handle was closed (kind closed), or another FAILED_PRECONDITION."""

    kind = "closed"


class InternalError(PubSubError, RuntimeError):
    """A bug in the native library, e.g. a recovered Go panic (INTERNAL)."""

    kind = "internal"


# Every kind the library returns (contract.error_kinds(); tests/test_contract.py
# checks none is missing) -> its exception class.
BY_KIND: dict[str, type[PubSubError]] = {
    "cancelled": PubSubError, "unknown": PubSubError, "invalid_argument": InvalidArgumentError,
    "deadline_exceeded": DeadlineExceededError, "decoder_time_limit": DeadlineExceededError,
    "not_found": NotFoundError, "already_exists": AlreadyExistsError,
    "permission_denied": PermissionDeniedError, "unauthenticated": PermissionDeniedError,
    "resource_exhausted": ResourceExhaustedError, "decoder_memory_limit": ResourceExhaustedError,
    "failed_precondition": ClosedError, "closed": ClosedError,
    "aborted": AbortedError, "decoder_crashed": AbortedError,
    "out_of_range": PubSubError, "unimplemented": PubSubError,
    "internal": InternalError, "panic": InternalError,
    "unavailable": UnavailableError, "data_loss": PubSubError,
}


def error_for(code: int, message: str, kind: str) -> PubSubError:
    """The exception for a typed reason from the library."""
    return BY_KIND.get(kind, PubSubError)(code, message, kind)


def closed_error(what: str) -> ClosedError:
    """A call on a handle this process already closed (never reaches the library)."""
    code = contract.error_kinds()["closed"]
    return ClosedError(code, f"{contract.code_names()[code]}: {what} is closed")


class ForkedProcessError(RuntimeError):
    """The native library was loaded before a fork() and cannot run in the child."""
