"""Errors, split by who is at fault. Every message says what is wrong and what to do next."""

from __future__ import annotations

from typing import Literal


class EnvScalerError(Exception):
    """Base of every error the tool reports to a person."""

    exit_code = 1


class UsageError(EnvScalerError):
    """The user asked for something that cannot work: a bad flag, a missing file, a malformed input file."""

    exit_code = 2


class InputFileError(UsageError):
    """A file the user gave has the wrong shape. Names the file, the field and what was expected."""

    def __init__(self, path: object, problem: str, hint: str = "") -> None:
        msg = f"{path}: {problem}"
        if hint:
            msg += f"\n  hint: {hint}"
        super().__init__(msg)
        self.path = path
        self.problem = problem


class ProviderError(EnvScalerError):
    """An LLM provider failed (after retries) or is not set up (key, SDK, local model)."""


class ProviderNotConfigured(ProviderError):
    """A provider cannot be used here: say exactly what to set or install."""

    exit_code = 2


class ProviderUnavailable(ProviderError):
    """The provider could not be reached or kept failing (5xx, 429, timeouts, refused connections) after
    every retry. Infrastructure: the episode is retried and, failing that, left out of the scores."""


ModelFaultKind = Literal["context_overflow", "refusal", "invalid_request"]


class ModelFault(ProviderError):
    """The model made its own request fail: its context overflowed, it refused, or its output made the next
    request invalid. The model's failure: the episode is scored (status `model_error`), never excluded."""

    def __init__(self, message: str, kind: ModelFaultKind) -> None:
        super().__init__(message)
        self.kind: ModelFaultKind = kind


class SynthesisError(EnvScalerError):
    """A synthesis step could not produce a valid artefact."""


class EnvironmentCodeError(EnvScalerError):
    """Environment source failed a static check or schema extraction."""


class RenderError(EnvScalerError):
    """Rendering a skeleton into a server failed."""


class UnrenderableSkeleton(RenderError):
    """The skeleton or its scenarios, as given, cannot become a server (a class that does not compile, a
    tool listed twice …): the input's fault, so exit code 2 like any other bad input."""

    exit_code = 2


class ServerStartError(EnvScalerError):
    """An MCP server could not be started or reached."""

    process_exit: int | None = None  # the process's exit code, when it exited while starting


class ServerFault(EnvScalerError):
    """An environment server crashed, stopped answering (a watchdog noticed) or could not be restarted.
    Infrastructure: the episode is retried on a fresh episode and, failing that, left out of the scores."""


class OutputTooLarge(ServerFault):
    """An environment's output (a tool result, the final state) went past its size cap (harness/limits.py):
    the environment's fault, not the model's. The episode is `infra_error` with the reason, at once (a retry
    would meet the same environment code)."""


class HarnessError(EnvScalerError):
    """A bug in the harness itself (not the model's, not the infrastructure's): the run stops, its finished
    episodes and summary are kept, and the traceback is written to the run folder."""


class ValidatorError(EnvScalerError):
    """The validator sandbox itself failed (not a validator returning False)."""


class SandboxFault(ValidatorError):
    """The validator sandbox failed through no fault of the validators or of the model: a worker stopped,
    stalled or was killed from outside, on the first try and again on a fresh worker. Infrastructure:
    the episode's score is unknown, not zero; record it as infra and retry the episode."""
