"""Small helpers with one home each: sizes, byte counts, Kafka's file and
folder names, memory maps and progress bars. Everything else in the package
(the API, log folders, the generator, Spark, the CLI, the demo) imports them
from here.

>>> parse_size("64MB"), format_bytes(1536), topic_partition_of_folder("my-topic-12")
(67108864, '1.5 KiB', ('my-topic', 12))
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import inspect
import mmap
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ParamSpec, TypeVar

__all__ = [
    "TOPIC_PARTITION",
    "byte_progress",
    "check_keywords",
    "format_bytes",
    "mapped_file",
    "parse_size",
    "segment_base_offset",
    "size_arg",
    "suggest_keywords",
    "topic_partition_of_folder",
]

# --------------------------------------------------------------------------
# sizes
# --------------------------------------------------------------------------

_SIZE = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(value: int | str, name: str = "size") -> int:
    """A byte count: an int, or a string such as ``"128m"``, ``"64MB"``,
    ``"64MiB"``, ``"1.5g"`` (k/m/g/t are powers of 1024, as in Kafka and
    Spark configs). ``name`` is what error messages call the value.

    >>> parse_size("64MB"), parse_size("128k"), parse_size(1000)
    (67108864, 131072, 1000)
    """
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an int or a size string such as '64MB', not {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{name} can't be negative: {value}")
        return value
    if not isinstance(value, str):
        raise TypeError(f"{name} must be an int or a size string such as '64MB', not {type(value).__name__}")
    match = _SIZE.match(value)
    if match is None:
        raise ValueError(
            f"{name} {value!r} is not a size such as 65536, 128m, 64MB or 1.5GiB (k/m/g/t are powers of 1024)"
        )
    return int(float(match["n"]) * 1024 ** " kmgt".index(match["unit"].lower() or " "))


def size_arg(text: str) -> int:
    """argparse ``type=`` for sizes (see :func:`parse_size`)."""
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def format_bytes(n: float) -> str:
    """``1536`` → ``'1.5 KiB'``.

    >>> format_bytes(512), format_bytes(3 << 30)
    ('512 B', '3.0 GiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


# --------------------------------------------------------------------------
# Kafka's names: <topic>-<partition> folders, <base offset>.<suffix> files
# --------------------------------------------------------------------------

#: A partition folder: ``<topic>-<partition>`` (topics may contain ``-``).
TOPIC_PARTITION = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
# ``<offset>.<suffix>``, and LocalTieredStorage's ``<offset>-<segment id>.<suffix>``.
_NUMBERED = re.compile(r"^(\d+)(?:\.|$|-[A-Za-z0-9_-]{22}\.)")


def topic_partition_of_folder(name: str) -> tuple[str, int] | None:
    """``("my-topic", 12)`` for a folder named ``my-topic-12``, else None.

    >>> topic_partition_of_folder("orders-3"), topic_partition_of_folder("data")
    (('orders', 3), None)
    """
    match = TOPIC_PARTITION.match(name)
    return (match["topic"], int(match["partition"])) if match else None


def segment_base_offset(file_name: str) -> int | None:
    """The base offset in a segment or index file name
    (``00000000000000001234.log``, ``.index``, ``.timeindex``...), else None.

    >>> segment_base_offset("00000000000000001234.timeindex"), segment_base_offset("notes.log")
    (1234, None)
    """
    match = _NUMBERED.match(file_name)
    return int(match[1]) if match else None


# --------------------------------------------------------------------------
# memory maps
# --------------------------------------------------------------------------


@contextlib.contextmanager
def mapped_file(path: str | os.PathLike[str]) -> Iterator[Any]:
    """The bytes of ``path`` as a memoryview of a read-only memory map
    (``b""`` for an empty file, which can't be mapped).

    >>> with mapped_file("orders-0/00000000000000000000.log") as data:   # doctest: +SKIP
    ...     kb.decode(data).num_rows
    """
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            yield b""
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        view = memoryview(mm)
        try:
            yield view
        finally:
            # A consumer still holding the buffer (e.g. an iterator after an
            # error) keeps the map alive; it is unmapped when the last user goes.
            with contextlib.suppress(BufferError):
                view.release()
                mm.close()


# --------------------------------------------------------------------------
# progress
# --------------------------------------------------------------------------


def byte_progress(description: str, *, transient: bool = False) -> Any:
    """A rich progress bar for bytes on stderr (description, bar, bytes done,
    speed, time left); the caller starts it (``with``) and adds tasks."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn(description),
        BarColumn(),
        DownloadColumn(binary_units=True),  # MiB, as format_bytes and every summary
        _binary_speed_column(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=transient,
    )


def _binary_speed_column() -> Any:
    """rich's transfer speed column in binary units (``12.5 MiB/s``; rich's
    own ``TransferSpeedColumn`` shows decimal ``MB/s``)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class BinarySpeedColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text("?" if speed is None else f"{format_bytes(speed)}/s", style="progress.data.speed")

    return BinarySpeedColumn()


# --------------------------------------------------------------------------
# keyword arguments
# --------------------------------------------------------------------------


def closest(name: str, known: Iterable[str]) -> str | None:
    """The name in ``known`` closest to a misspelled ``name``, or None: the
    one "did you mean ...?" of keywords, Spark options and command-line flags.

    >>> closest("isolaton", ["isolation", "on_error"]), closest("zzz", ["isolation"])
    ('isolation', None)
    """
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return close[0] if close else None


def check_keywords(function: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Raise :class:`TypeError` for the first name in ``given`` that is not in
    ``known``, as Python does, naming ``function`` (the one the user called)
    and the closest known keyword.

    >>> check_keywords("read_segment", ["isolaton"], ["isolation", "on_error"])
    Traceback (most recent call last):
    ...
    TypeError: read_segment() got an unexpected keyword argument 'isolaton'; did you mean 'isolation'?
    """
    error = keyword_error(function, given, known)
    if error is not None:
        raise error


def keyword_error(function: str, given: Iterable[str], known: Iterable[str]) -> TypeError | None:
    """The error :func:`check_keywords` raises, or None when all are known."""
    known = list(known)
    for name in given:
        if name not in known:
            close = closest(str(name), known)
            hint = f"; did you mean {close!r}?" if close else f"; its keywords: {', '.join(known)}"
            return TypeError(f"{function}() got an unexpected keyword argument {name!r}{hint}")
    return None


_P = ParamSpec("_P")
_R = TypeVar("_R")


def keyword_names(func: Callable[..., Any]) -> list[str]:
    """The names ``func`` accepts as keywords.

    >>> keyword_names(lambda data, *, topic=None, **rest: None)
    ['data', 'topic']
    """
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [name for name, p in inspect.signature(func).parameters.items() if p.kind in kinds]


def suggest_keywords(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorate a public function so that a misspelled keyword argument gets
    :func:`check_keywords`' "did you mean ...?" (no cost on good calls).

    >>> @suggest_keywords
    ... def f(*, isolation="read_uncommitted"): ...
    >>> f(isolaton="read_committed")
    Traceback (most recent call last):
    ...
    TypeError: f() got an unexpected keyword argument 'isolaton'; did you mean 'isolation'?
    """
    known = keyword_names(func)

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return func(*args, **kwargs)
        except TypeError:
            better = keyword_error(func.__name__, kwargs, known)
            if better is None:
                raise
            raise better from None

    return wrapper
