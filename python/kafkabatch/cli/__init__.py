"""The ``kafkabatch`` command line: ``dump``, ``stats``, ``convert``, ``generate``.

Run ``kafkabatch --help`` (or ``python -m kafkabatch --help``) and
``kafkabatch <command> --help``; ``docs/cli.md`` shows every command's output.

Errors print one line on stderr (``kafkabatch: error: ...``) and exit with
status 1 (2 for a bad command line, 130 on Ctrl-C); ``--debug`` shows the
traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence

from kafkabatch._kafkabatch import KafkaBatchError, TieredStorageError
from kafkabatch._util import closest
from kafkabatch.values.vocabulary import CLI, in_words

from ._common import CliError, warn

__all__ = ["CliError", "build_parser", "main"]

EPILOG = """\
examples:
  kafkabatch dump orders-0/00000000000000000000.log
  kafkabatch stats /var/lib/kafka/data
  kafkabatch convert /var/lib/kafka/data/orders-0 orders.parquet
  kafkabatch generate /tmp/kafka-logs --size 64MB

Run "kafkabatch COMMAND --help" for each command's options and examples.
"""


def build_parser() -> argparse.ArgumentParser:
    from kafkabatch import __version__

    from . import convert, dump, generate, stats

    parser = argparse.ArgumentParser(
        prog="kafkabatch",
        description="Read Apache Kafka log segments: dump them like kafka-dump-log.sh, summarise them, "
        "convert them to Parquet/Arrow/JSON.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kafkabatch {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    # --debug after the command too; SUPPRESS keeps the subcommand from resetting it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks for errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (dump, stats, convert, generate):
        module.add_parser(subparsers, [common])
    return parser


def _message(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror and error.filename:
        text = f"{error.filename}: {error.strerror}"
    elif isinstance(error, (CliError, ValueError, NotImplementedError)) or type(error).__module__ == "kafkabatch":
        text = str(error)
        if not isinstance(error, KafkaBatchError) or isinstance(error, TieredStorageError):
            # the value options' and tiered_keys' names as the command line spells them
            text = in_words(text, CLI)
    else:
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return " ".join(text.split()) or type(error).__name__


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args``, a misspelled flag answered with the closest one
    of its command ("did you mean --isolation?")."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        command = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                command = action.choices.get(str(getattr(args, "command", "")), parser)
        flags = [flag for action in command._actions for flag in action.option_strings if flag.startswith("--")]
        hint = ""
        for extra in extras:
            close = closest(extra.split("=", 1)[0], flags) if extra.startswith("--") else None
            if close is not None:
                hint = f"; did you mean {close}?"
                break
        command.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kafkabatch`` console script and ``python -m kafkabatch``."""
    with _safe_stdout():
        parser = build_parser()
        args = _parse(parser, argv)
        debug = bool(getattr(args, "debug", False))
        try:
            with _one_line_warnings():
                return int(args.func(args) or 0)
        except KeyboardInterrupt:
            print("kafkabatch: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:
            # The reader went away (| head): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 141
        except Exception as error:  # noqa: BLE001 - every error becomes one line
            if debug:
                traceback.print_exc()
            else:
                hint = (
                    ""
                    if isinstance(error, (CliError, OSError)) or type(error).__module__ == "kafkabatch"
                    else (" (run with --debug for the traceback)")
                )
                print(f"kafkabatch {args.command}: error: {_message(error)}{hint}", file=sys.stderr)
            return 1


@contextlib.contextmanager
def _one_line_warnings() -> Iterator[None]:
    """Python warnings and the package's logged warnings as one
    ``kafkabatch: warning: ...`` line each (no source line), each text once."""
    shown: set[str] = set()

    def show(text: str) -> None:
        text = " ".join(text.split())
        if text not in shown:
            shown.add(text)
            warn(text)

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            show(record.getMessage())

    logger = logging.getLogger("kafkabatch")
    handler = Handler(logging.WARNING)
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = lambda message, *rest, **kw: show(str(message))
            yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


class _safe_stdout:
    """Never fail on characters the terminal's encoding can't show."""

    def __enter__(self) -> None:
        for stream in (sys.stdout, sys.stderr):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                try:
                    reconfigure(errors="backslashreplace")
                except (ValueError, OSError):  # pragma: no cover
                    pass

    def __exit__(self, *exc: object) -> None:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
