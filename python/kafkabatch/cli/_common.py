"""Pieces shared by the subcommands: errors, sizes, byte formatting, file
walking, progress bars."""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as _dt
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kafkabatch as kb
from kafkabatch._util import byte_progress, format_bytes, mapped_file, segment_base_offset, size_arg

# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------


class CliError(Exception):
    """A problem to report as one line on stderr (exit status 1)."""


# --------------------------------------------------------------------------
# argument parsing helpers
# --------------------------------------------------------------------------


def positive_size_arg(text: str) -> int:
    value = size_arg(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return value


_OFFSETS = re.compile(r"^\s*(?P<start>-?\d*)\s*:\s*(?P<end>-?\d*)\s*$")


def offsets_arg(text: str) -> tuple[int | None, int | None]:
    """``START:END`` (END exclusive, either side may be empty) or a single offset ``N`` (= ``N:N+1``)."""
    if re.fullmatch(r"\s*\d+\s*", text):
        n = int(text)
        return n, n + 1
    match = _OFFSETS.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(
            f"expected START:END (END exclusive, e.g. 100:200, 100: or :200), not {text!r}"
        )
    start = int(match["start"]) if match["start"] else None
    end = int(match["end"]) if match["end"] else None
    if start is not None and end is not None and end < start:
        raise argparse.ArgumentTypeError(f"END is before START in {text!r}")
    return start, end


# --------------------------------------------------------------------------
# human-readable numbers
# --------------------------------------------------------------------------


def format_ms(ms: int | None) -> str:
    """Epoch milliseconds as ``2023-11-14 22:13:20.000`` (UTC)."""
    if ms is None or ms < 0:
        return "-"
    moment = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


TIMESTAMP_TYPE_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}

# --------------------------------------------------------------------------
# bytes as text
# --------------------------------------------------------------------------

BYTE_FORMATS = ("utf8", "hex", "base64")

# Characters escaped in utf8 text output: C0/C1 controls, DEL, backslash,
# Unicode line/paragraph separators, and bytes that are not UTF-8 (which
# surrogateescape turned into U+DC80..U+DCFF).
_ESCAPE = re.compile("[\x00-\x1f\x7f-\x9f\\\\\u2028\u2029\udc80-\udcff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that isn't UTF-8
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:  # C0 control or DEL: the byte itself
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"  # C1 control, U+2028, U+2029 (several bytes in UTF-8)


def escape_utf8(data: bytes) -> str:
    """Bytes as one line of text: UTF-8 where it is UTF-8, ``\\xNN`` for other
    bytes and ASCII control characters, ``\\uNNNN`` for C1 controls and
    U+2028/U+2029, ``\\n``/``\\r``/``\\t``, and ``\\\\`` for a backslash, so the
    text stays on one line and can be turned back into the bytes exactly."""
    text = data.decode("utf-8", "surrogateescape")
    return _ESCAPE.sub(_escape_char, text)


def format_bytes_text(data: bytes, fmt: str) -> str:
    """Bytes for the text dump in ``fmt`` (``utf8``, ``hex`` or ``base64``)."""
    if fmt == "hex":
        return data.hex()
    if fmt == "base64":
        return base64.b64encode(data).decode("ascii")
    if data.isascii() and not _ESCAPE.search(data.decode("ascii")):
        return data.decode("ascii")
    return escape_utf8(data)


def format_bytes_json(data: bytes | None, fmt: str) -> tuple[str | None, str | None]:
    """``(text, encoding)`` for JSON: ``utf8`` gives the UTF-8 text when the
    bytes are valid UTF-8 and falls back to base64 otherwise; ``hex`` and
    ``base64`` always use that encoding. ``None`` stays ``(None, None)``."""
    if data is None:
        return None, None
    if fmt == "utf8":
        try:
            return data.decode("utf-8"), "utf8"
        except UnicodeDecodeError:
            return base64.b64encode(data).decode("ascii"), "base64"
    if fmt == "hex":
        return data.hex(), "hex"
    return base64.b64encode(data).decode("ascii"), "base64"


def record_json(
    topic: str | None,
    partition: int | None,
    offset: int,
    timestamp: int,
    timestamp_type: int | None,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]],
    formats: tuple[str, str, str],
) -> dict[str, Any]:
    """One record as the JSON object shared by ``dump --json`` and ``convert`` to JSON lines."""
    key_fmt, value_fmt, header_fmt = formats
    key_text, key_enc = format_bytes_json(key, key_fmt)
    value_text, value_enc = format_bytes_json(value, value_fmt)
    out_headers = []
    for hk, hv in headers:
        hv_text, hv_enc = format_bytes_json(hv, header_fmt)
        out_headers.append({"key": hk, "value": hv_text, "value_encoding": hv_enc})
    return {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "timestamp": timestamp,
        "timestamp_type": timestamp_type,
        "key": key_text,
        "key_encoding": key_enc,
        "value": value_text,
        "value_encoding": value_enc,
        "headers": out_headers,
    }


def add_format_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("byte formats")
    group.add_argument(
        "--key-format",
        choices=BYTE_FORMATS,
        default="utf8",
        help="how keys are shown: utf8 (default; text, non-UTF-8 bytes escaped as \\xNN, "
        "or in JSON base64 with key_encoding=base64), hex or base64",
    )
    group.add_argument(
        "--value-format",
        choices=BYTE_FORMATS,
        default="utf8",
        help="how values are shown (same choices as --key-format)",
    )
    group.add_argument(
        "--header-format",
        choices=BYTE_FORMATS,
        default="utf8",
        help="how header values are shown in JSON (same choices)",
    )


def add_decode_options(parser: argparse.ArgumentParser, *, on_error: bool = True) -> None:
    group = parser.add_argument_group("decoding")
    group.add_argument(
        "--isolation",
        choices=("read_uncommitted", "read_committed"),
        default="read_uncommitted",
        help="read_committed leaves out aborted (and still open) transactions and control "
        "batches, as a read_committed consumer sees the log (default read_uncommitted)",
    )
    if on_error:
        group.add_argument(
            "--on-error",
            choices=("raise", "skip"),
            default="raise",
            help="what a corrupt batch does: raise (stop with an error, default) or skip it "
            "and go on (reported at the end)",
        )
        group.add_argument("--no-crc", dest="validate_crc", action="store_false", help="don't check batch CRCs")
    group.add_argument(
        "--include-control", action="store_true", help="include control records (transaction markers) as rows"
    )
    group.add_argument(
        "--max-decompressed-size",
        type=positive_size_arg,
        default=kb.DEFAULT_MAX_DECOMPRESSED_SIZE,
        metavar="SIZE",
        help="refuse batches that decompress to more than SIZE "
        f"(default {format_bytes(kb.DEFAULT_MAX_DECOMPRESSED_SIZE)})",
    )


# --------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentFile:
    """A segment (or any file of batches) to read, with what its path says."""

    path: str
    topic: str | None
    partition: int | None
    base_offset: int | None
    size: int
    #: Other copies of the same offsets (see :attr:`kafkabatch.log.listing.Segment.twins`).
    twins: tuple[str, ...] = ()


def base_offset_of(path: str | os.PathLike[str]) -> int | None:
    return segment_base_offset(Path(path).name)


def add_tiered_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tiered-key",
        action="append",
        default=[],
        metavar="ID=PEM",
        help="for encrypted tiered-storage segments: the RSA private key of key pair ID, a PEM file "
        "or its text (repeat for several key pairs)",
    )


def tiered_keys(args: argparse.Namespace) -> Any:
    """The --tiered-key flags as :func:`kafkabatch.log.tiered.resolve_keys` takes them."""
    from kafkabatch.log.tiered import resolve_keys

    try:
        return resolve_keys(getattr(args, "tiered_key", None) or None)
    except ValueError as error:
        raise CliError(str(error).replace("tiered_keys", "--tiered-key")) from None


def _segment_file(path: str) -> SegmentFile:
    from kafkabatch.log.tiered import remote_name

    name = remote_name(path)
    if name is not None and name.topic is not None:
        return SegmentFile(path, name.topic, name.partition, name.base_offset, os.path.getsize(path))
    tp = kb.topic_partition_from_path(path)
    return SegmentFile(path, tp[0] if tp else None, tp[1] if tp else None, base_offset_of(path), os.path.getsize(path))


def find_segments(paths: list[str], keys: Any = (), *, skip: bool = False) -> list[SegmentFile]:
    """Expand files and folders into segment files.

    A file is read whatever its name. A folder is a ``<topic>-<partition>``
    folder, a broker log dir of them, or any folder holding ``.log`` files
    (topic and partition then unknown); its ``*.log`` files are taken in
    topic, partition, base offset order (see :func:`kafkabatch.log.list_segments`).
    ``keys``: the ``--tiered-key`` flags; ``skip`` (``--on-error skip``): a
    remote object that can't be listed is left to the read, which reports it.
    """
    from kafkabatch.log.listing import list_segments

    out: list[SegmentFile] = []
    rooted: list[str] = []  # the paths listed as roots (not files named, nor folders of unknown partition)
    for path in paths:
        remote = is_remote(path)
        if not remote:
            if os.path.isfile(path):
                out.append(_segment_file(path))
                continue
            if not os.path.exists(path):
                raise CliError(f"no such file or folder: {path}")
            if not os.path.isdir(path):
                raise CliError(f"not a file or folder: {path}")
        problems: list[Any] | None = [] if skip else None
        try:
            segments = list_segments(path, tiered_keys=keys, problems=problems)
        except kb.TieredStorageError:
            raise  # a remote object that can't be listed: never read the tree some other way
        except FileNotFoundError:
            if not remote:
                raise
            raise CliError(f"no such file or folder: {path}") from None
        except ValueError:
            if remote:
                raise
            # A folder that isn't named <topic>-<partition>: take its files,
            # topic and partition unknown.
            segments = list_segments(path, topic="", partition=-1)
            found = [_segment_file(s.path) for s in segments]
            segments = []  # not a root the joined listing below can take
        else:
            found = [
                SegmentFile(s.path, s.topic, s.partition, s.base_offset, s.size, tuple(t.path for t in s.twins))
                for s in segments
            ]
        if not found and not problems:  # (objects that can't be listed: the read reports them)
            raise CliError(f"no .log segment files in {path}")
        out.extend(found)
        if segments:
            rooted.append(path)
    if len(paths) > 1 and len(rooted) == len(paths):
        # Several roots (a bucket and a broker log dir, two copies of one): listed together, so a
        # partition found under several gives each offset once, as scan_log and convert read them.
        from kafkabatch.log.roots import list_roots

        joined = list_roots(paths, tiered_keys=keys, problems=[] if skip else None)
        out = [
            SegmentFile(s.path, s.topic, s.partition, s.base_offset, s.size, tuple(t.path for t in s.twins))
            for s in joined
        ]
    return out


def is_remote(path: str) -> bool:
    """Whether ``path`` is a URI read through pyarrow.fs (``s3://``, ``gs://``...)."""
    from kafkabatch.log.fs import is_remote as remote

    return remote(path)


@contextlib.contextmanager
def mapped(path: str, keys: Any = (), max_decompressed_size: int | None = None) -> Iterator[Any]:
    """A segment's bytes: memory-mapped, read through pyarrow.fs for a URI,
    or, for an Aiven tiered-storage segment (its ``.log`` or
    ``.rsm-manifest``), undone from its chunks. An Aiven ``.log`` without
    its manifest is a :class:`kafkabatch.TieredStorageError` (its chunks
    can't be read alone)."""
    from kafkabatch.log.fs import open_source
    from kafkabatch.log.tiered import MANIFEST, TieredSource, missing_manifest_error, remote_name, sibling

    name = remote_name(path)
    if is_remote(path):
        aiven = name is not None and name.layout == "aiven" and name.suffix in ("log", "rsm-manifest")
        source = (
            TieredSource(
                sibling(path, ".log"), sibling(path, MANIFEST), keys, max_decompressed_size, "--max-decompressed-size"
            )
            if aiven
            else open_source(path)
        )
        try:
            yield source.read(0, source.size)
        finally:
            source.close()
        return
    manifest = sibling(path, MANIFEST) if name is not None else ""
    if name is not None and name.suffix in ("log", "rsm-manifest") and os.path.isfile(manifest):
        source = TieredSource(sibling(path, ".log"), manifest, keys, max_decompressed_size, "--max-decompressed-size")
        if source.manifest.compression or source.manifest.encrypted:
            try:
                yield source.read(0, source.size)  # undone bytes of its own: no map to release under a reader
            finally:
                source.close()
            return
        source.close()  # stored as it is (checked against its manifest): mapped, as a broker segment
        path = sibling(path, ".log")
    elif name is not None and name.layout == "aiven" and name.suffix == "log":
        raise missing_manifest_error(path)
    with mapped_file(path) as data:
        yield data


# --------------------------------------------------------------------------
# progress
# --------------------------------------------------------------------------


def stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _NoProgress:
    def advance(self, n: int, description: str | None = None) -> None:
        pass


class _RichProgress:
    def __init__(self, progress: Any, task: Any) -> None:
        self._progress = progress
        self._task = task

    def advance(self, n: int, description: str | None = None) -> None:
        if description is None:
            self._progress.advance(self._task, n)
        else:
            self._progress.update(self._task, advance=n, description=description)


@contextlib.contextmanager
def progress_bar(total: int, description: str, *, enabled: bool) -> Iterator[Any]:
    """A byte progress bar on stderr, only when ``enabled`` and stderr is a terminal."""
    if not enabled or not stderr_is_tty():
        yield _NoProgress()
        return
    with byte_progress("[progress.description]{task.description}", transient=True) as progress:
        task = progress.add_task(description, total=total)
        yield _RichProgress(progress, task)


def warn(message: str) -> None:
    print(f"kafkabatch: warning: {message}", file=sys.stderr)
