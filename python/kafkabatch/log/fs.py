"""Reading bytes of segments: memory maps for local files; for URIs, the core's object stores
(``s3://``, ``s3a://``, ``gs://``, ``abfs://``, ``az://``, ``http(s)://``), else :mod:`pyarrow.fs`.

Remote URIs the core serves are read with ranged GETs through Rust's ``object_store``
(credentials and endpoints from the environment: ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``...; see docs/tiered-storage.md). :mod:`pyarrow.fs` reads
the others (``hdfs://``...), S3 when its credentials can only come from an AWS
profile (``AWS_PROFILE``, ``~/.aws``: pyarrow's credential chain reads them), and
every URI when the environment sets ``KAFKABATCH_STORAGE=pyarrow``. A caller's
``filesystem`` (see :func:`filesystem_of`) reads every path of a read: paths in it.

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

from kafkabatch import _kafkabatch as _native
from kafkabatch._util import mapped_file
from kafkabatch.log.naming import without_query

URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://")


def filesystem_of(filesystem: Any) -> Any:
    """The caller's ``filesystem=`` as the reads take it: a :class:`pyarrow.fs.FileSystem`
    (an fsspec file system wrapped by the caller: ``pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(fs))``),
    or ``None`` for the package's own choice of storage. A
    :class:`pyarrow.fs.LocalFileSystem` is ``None`` too: its paths are local paths, memory-mapped."""
    if filesystem is None:
        return None
    from pyarrow import fs as pafs

    if not isinstance(filesystem, pafs.FileSystem):
        name = f"{type(filesystem).__module__}.{type(filesystem).__qualname__}"
        fsspec = any(c.__module__.split(".")[0] == "fsspec" for c in type(filesystem).__mro__)
        hint = "; wrap an fsspec file system as pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(fs))" if fsspec else ""
        raise TypeError(f"filesystem must be a pyarrow.fs.FileSystem, not {name}{hint}")
    return None if isinstance(filesystem, pafs.LocalFileSystem) else filesystem


def filesystem_path(root: str, filesystem: Any, what: str = "path") -> str:
    """``root`` as a path in the caller's ``filesystem``: as it is; a URI is a
    :class:`ValueError` (``what``: the caller's word for the argument), as
    :func:`pyarrow.dataset.dataset` refuses one: the file system alone says where
    its paths are, so a scheme and a query (an endpoint, keys) could only disagree with it."""
    match = URI.match(root)
    if match is None:
        return root
    inside = without_query(root)[match.end() :]
    raise ValueError(
        f"{what} {root!r} is a URI, but filesystem= was given: give paths in that file system "
        f"({inside!r}), or leave filesystem out to read the URI"
    )


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


#: The environment variable choosing who reads remote URIs: ``pyarrow`` for :mod:`pyarrow.fs` only.
STORAGE_ENV = "KAFKABATCH_STORAGE"


def native_storage(uri: str, options: dict[str, str] | None = None) -> Any:
    """The core's object storage for ``uri`` (a ``_kafkabatch.ObjectStorage``), or ``None``
    when :mod:`pyarrow.fs` reads it: a scheme the core doesn't serve, a query in pyarrow's
    words the core doesn't map, or ``KAFKABATCH_STORAGE=pyarrow``. ``options``: object_store
    configuration keys (``aws_endpoint``, ``aws_region``...) over the environment's."""
    choice = os.environ.get(STORAGE_ENV, "").strip().lower()
    if choice == "pyarrow":
        return None
    if choice not in ("", "native"):
        raise ValueError(f"{STORAGE_ENV} must be 'pyarrow' or 'native', not {choice!r}")
    if not choice and not options and _s3_credentials_from_chain(uri):
        return None
    return _native.resolve_storage(uri, options)


def _s3_credentials_from_chain(uri: str) -> bool:
    """Whether an S3 URI's credentials are left to a credential chain: no keys in
    the environment (``AWS_ACCESS_KEY_ID``, IRSA's ``AWS_WEB_IDENTITY_TOKEN_FILE``, a
    container's ``AWS_CONTAINER_CREDENTIALS_*``) or the query (``access_key``,
    ``anonymous``), or an ``AWS_PROFILE``. pyarrow's chain then reads them (profiles,
    SSO, the instance profile, else unsigned requests), as it always has; object_store's
    reads no profiles and, without keys, fails where no instance metadata answers."""
    match = URI.match(uri)
    if not match or match["scheme"].lower() not in ("s3", "s3a", "s3n"):
        return False
    if os.environ.get("AWS_PROFILE"):
        return True
    if any(
        os.environ.get(name)
        for name in (
            "AWS_ACCESS_KEY_ID",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        )
    ):
        return False
    query = uri.partition("?")[2]
    return not any(word in query for word in ("access_key=", "anonymous="))


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
    """A remote file read by ranges: through the core's object store when it serves
    the URI (see :func:`native_storage`), else (or with a pyarrow ``filesystem``)
    through :mod:`pyarrow.fs`. Reads past the end give the bytes there are."""

    def __init__(self, uri: str, filesystem: Any = None) -> None:
        self._uri = uri
        self._file: Any = None
        self._storage = native_storage(uri) if filesystem is None else None
        if self._storage is not None:
            size = self._storage.size(uri)
            if size is None:
                raise FileNotFoundError(f"no such file or folder: {uri}")
            self.size = size
            return
        if filesystem is None:
            filesystem, fs_path = resolve_remote(uri)
        else:
            fs_path = remote_uri(without_query(uri)).split("://", 1)[-1]
        self._file = filesystem.open_input_file(fs_path)
        self.size = self._file.size()

    def read(self, position: int, length: int) -> Any:
        if length <= 0:
            return b""
        if self._storage is not None:
            end = min(position + length, self.size)
            if end <= position:
                return b""
            return memoryview(self._storage.read(self._uri, position, end))
        return memoryview(self._file.read_at(length, position)).cast("B")

    def release(self) -> None:
        pass

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def is_remote(path: str) -> bool:
    match = URI.match(path)
    return bool(match and match["scheme"].lower() != "file")


def remote_size(uri: str) -> int | None:
    """The size of the remote file ``uri``, ``None`` when there is none (a prefix, nothing)."""
    storage = native_storage(uri)
    if storage is not None:
        return storage.size(uri)  # type: ignore[no-any-return]
    from pyarrow import fs as pafs

    filesystem, fs_path = resolve_remote(uri)
    info = filesystem.get_file_info(fs_path)
    return info.size if info.type == pafs.FileType.File else None


def open_source(path: str, filesystem: Any = None) -> Any:
    """A :class:`Source` for ``path``: a :class:`RemoteSource` through ``filesystem``
    (a :class:`pyarrow.fs.FileSystem`, ``path`` a path in it) when given, else
    memory-mapped when local, else a :class:`RemoteSource`."""
    if filesystem is not None or is_remote(path):
        return RemoteSource(path, filesystem)
    return MappedSource(local_path(path))
