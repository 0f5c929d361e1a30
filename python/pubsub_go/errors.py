"""Exceptions raised by pubsub_go. Native calls return gRPC status codes;
each maps to an exception class that also derives from the closest Python
built-in, so `except ValueError` catches a bad config."""

from __future__ import annotations

CODE_NAMES = {
    1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED",
    13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}


class PubSubError(Exception):
    """An error from the native data plane, carrying its gRPC status code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.code_name = CODE_NAMES.get(code, f"CODE_{code}")
        self.message = message


class InvalidArgumentError(PubSubError, ValueError):
    """A malformed config or bad input (INVALID_ARGUMENT)."""


class NotFoundError(PubSubError, LookupError):
    """The topic or subscription does not exist (NOT_FOUND)."""


class AlreadyExistsError(PubSubError):
    """The topic or subscription already exists (ALREADY_EXISTS)."""


class PermissionDeniedError(PubSubError, PermissionError):
    """The credentials lack a permission (PERMISSION_DENIED / UNAUTHENTICATED)."""


class UnavailableError(PubSubError, ConnectionError):
    """The endpoint could not be reached after bounded retries (UNAVAILABLE)."""


class DeadlineExceededError(PubSubError, TimeoutError):
    """A bounded wait ran out (DEADLINE_EXCEEDED)."""


class ResourceExhaustedError(PubSubError):
    """A quota or a limit was hit, e.g. a decoder's memory cap (RESOURCE_EXHAUSTED)."""


class AbortedError(PubSubError):
    """The operation was aborted, e.g. a decoder module crashed (ABORTED)."""


class ClosedError(PubSubError, RuntimeError):
    """The handle was closed (FAILED_PRECONDITION)."""


class InternalError(PubSubError, RuntimeError):
    """A bug in the native library, e.g. a recovered Go panic (INTERNAL)."""


_BY_CODE: dict[int, type[PubSubError]] = {
    3: InvalidArgumentError, 4: DeadlineExceededError, 5: NotFoundError, 6: AlreadyExistsError,
    7: PermissionDeniedError, 16: PermissionDeniedError, 8: ResourceExhaustedError, 9: ClosedError,
    10: AbortedError, 13: InternalError,
    14: UnavailableError,
}


def error_for(code: int, message: str) -> PubSubError:
    return _BY_CODE.get(code, PubSubError)(code, message)


class ForkedProcessError(RuntimeError):
    """The native library was loaded before a fork() and cannot run in the child."""
