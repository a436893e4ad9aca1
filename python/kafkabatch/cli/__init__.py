"""The ``kafkabatch`` command line: ``dump``, ``stats``, ``convert``, ``generate``.

Run ``kafkabatch --help`` (or ``python -m kafkabatch --help``) and
``kafkabatch <command> --help``; ``docs/cli.md`` shows every command's output.

Errors print one line on stderr (``kafkabatch: error: ...``) and exit with
status 1 (2 for a bad command line, 130 on Ctrl-C); ``--debug`` shows the
traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from kafkabatch._kafkabatch import KafkaBatchError
from kafkabatch.values.vocabulary import CLI, in_words

from ._common import CliError

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
        if not isinstance(error, KafkaBatchError):  # the value options' names as the command line spells them
            text = in_words(text, CLI)
    else:
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return " ".join(text.split()) or type(error).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kafkabatch`` console script and ``python -m kafkabatch``."""
    with _safe_stdout():
        parser = build_parser()
        args = parser.parse_args(argv)
        debug = bool(getattr(args, "debug", False))
        try:
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
