"""Reading bytes of segments: memory maps for local files, :mod:`pyarrow.fs` for URIs (``s3://``, ``gs://``...).

>>> source = open_source("/data/orders-0/00000000000000000000.log")  # doctest: +SKIP
>>> bytes(source.read(0, 8))                                          # doctest: +SKIP
b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00'
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from typing import Any

from kafkabatch._util import mapped_file

URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://")


def local_path(path: str) -> str:
    if path.lower().startswith("file:"):
        from urllib.parse import unquote, urlparse

        parsed = urlparse(path)
        return unquote(parsed.path) if not parsed.netloc else f"//{parsed.netloc}{unquote(parsed.path)}"
    return os.path.expanduser(path)


def remote_uri(path: str) -> str:
    """pyarrow.fs spells Hadoop's s3a:// and s3n:// as s3://."""
    match = URI.match(path)
    if match and match["scheme"].lower() in ("s3a", "s3n"):
        return "s3://" + path[match.end() :]
    return path


@functools.lru_cache(maxsize=256)
def resolve_remote(uri: str) -> tuple[Any, str]:
    from pyarrow import fs as pafs

    return pafs.FileSystem.from_uri(remote_uri(uri))


class Source:
    """Random access to one segment's bytes; ``read`` returns a buffer-protocol object."""

    size: int

    def read(self, position: int, length: int) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


class MappedSource(Source):
    def __init__(self, path: str) -> None:
        self._stack = contextlib.ExitStack()
        self._data = self._stack.enter_context(mapped_file(path))
        self.size = len(self._data)
        self._views: list[memoryview] = []

    def read(self, position: int, length: int) -> Any:
        if not self.size:
            return b""
        view = self._data[position : position + length]
        self._views.append(view)
        return view

    def release(self) -> None:
        """Drop the views handed out so far (the decoder copies what it keeps)."""
        for view in self._views:
            # A consumer still holding a buffer of the view (an iterator, a
            # slice) keeps it alive; it goes when the last user goes.
            with contextlib.suppress(BufferError):
                view.release()
        self._views.clear()

    def close(self) -> None:
        self.release()
        self._stack.close()


class RemoteSource(Source):
    def __init__(self, uri: str) -> None:
        filesystem, fs_path = resolve_remote(uri)
        self._file = filesystem.open_input_file(fs_path)
        self.size = self._file.size()

    def read(self, position: int, length: int) -> Any:
        if length <= 0:
            return b""
        return memoryview(self._file.read_at(length, position)).cast("B")

    def release(self) -> None:
        pass

    def close(self) -> None:
        self._file.close()


def is_remote(path: str) -> bool:
    match = URI.match(path)
    return bool(match and match["scheme"].lower() != "file")


def open_source(path: str) -> Any:
    return RemoteSource(path) if is_remote(path) else MappedSource(local_path(path))
