"""Every exit status of every `chainform` command, and which error gives which: the one list
docs/cli.md's exit-code table is checked against (tests/cli/test_cli_exit_codes.py)."""

from __future__ import annotations

import enum

import click


class ExitCode(enum.IntEnum):
    """What a command's exit status says; scripts can tell a usage mistake from a provider outage
    from a schema the model never satisfied from a map whose rows failed."""

    OK = 0
    OTHER = 1
    USAGE = 2
    PROVIDER = 3
    STRUCTURED = 4
    CHAIN = 5
    BELOW_FLOOR = 6
    COST_CAP = 7
    WAITING = 8
    ROWS_FAILED = 9
    INTERRUPTED = 130


def exit_code_for(exc: BaseException) -> ExitCode:
    """The exit code that names the phase which failed."""
    from chainform import errors
    from chainform.chain._approval import ChainWaitingError
    from chainform.chain._journal import ResumeError
    from chainform.chain._spec import SpecError
    from chainform.store import StoreError

    if isinstance(
        exc,
        errors.SchemaError
        | click.UsageError
        | StoreError
        | errors.HomeError
        | errors.AttachmentError
        | errors.HostedToolError
        | errors.PricingError
        | ResumeError
        | SpecError,
    ):
        return ExitCode.USAGE
    if isinstance(exc, ChainWaitingError):
        return ExitCode.WAITING
    if isinstance(exc, errors.ProviderError | errors.MissingKeyError | errors.ModelNotFoundError):
        return ExitCode.PROVIDER
    if isinstance(exc, errors.StructuredOutputError | errors.FormattingError):
        return ExitCode.STRUCTURED
    if isinstance(exc, errors.ChainError | errors.ToolError | errors.GuardrailError):
        return ExitCode.CHAIN
    if isinstance(exc, KeyboardInterrupt | errors.ChainInterruptedError):
        return ExitCode.INTERRUPTED
    return ExitCode.OTHER


def exit_with(code: ExitCode) -> click.exceptions.Exit:
    """The click exception that ends the command with `code` (raise it)."""
    return click.exceptions.Exit(int(code))


__all__ = ["ExitCode", "exit_code_for", "exit_with"]
