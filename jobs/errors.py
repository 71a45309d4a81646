"""Errors of the jobs app. Each has a stable code for API clients and an HTTP status."""

from __future__ import annotations

from core.errors import ApiError


class JobError(ApiError):
    """The API answers it in the one error shape (core/errors.py) with its status and code."""

    code = "runtime_job_error"
    status = 400


class JobNotFound(JobError):
    code = "not_found"
    status = 404


class JobForbidden(JobError):
    code = "forbidden"
    status = 403


class JobNotCancellable(JobError):
    code = "runtime_job_not_cancellable"
    status = 409


class JobNotRetryable(JobError):
    code = "runtime_job_not_retryable"
    status = 409


class InvalidTransition(JobError):
    """A state change the state machine does not allow: a programming error, never user input."""

    code = "runtime_job_invalid_transition"
    status = 500


class JobOptionsError(JobError):
    """Job options out of range (a manifest the loader should have refused, or a bad caller)."""

    code = "runtime_job_invalid_options"
    status = 400


class RunnerNotFound(JobError):
    code = "runtime_job_runner_missing"
    status = 500


class JobStopped(Exception):  # noqa: N818 - it is a signal to the runner, not an error
    """Raised inside a runner (by JobContext.check/sleep) when the job must stop now:
    its execution deadline passed, it was cancelled, or its lease was lost."""
