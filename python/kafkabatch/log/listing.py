"""Finding segments: broker log dirs, ``<topic>-<partition>`` folders, segment files and globs, local or remote.

>>> [(s.topic, s.partition, s.base_offset) for s in list_segments("/var/lib/kafka/data")]  # doctest: +SKIP
[('orders', 0, 0), ('orders', 0, 81234), ('orders', 1, 0)]
"""

from __future__ import annotations

import glob as _glob
import os
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase

import kafkabatch.log.fs as fs
from kafkabatch._util import segment_base_offset
from kafkabatch.log.fs import GLOB_CHARS, URI, local_path, parent_uri
from kafkabatch.log.naming import TRANSIENT_FOLDER, basename, folder_topic_partition, is_segment_name


@dataclass(frozen=True)
class Segment:
    """One segment file of one topic-partition.

    ``path`` is a local path, or a URI for remote files (``s3://...``).
    ``base_offset`` comes from the file name (``00000000000000001234.log`` →
    1234); it is ``None`` for a file you named directly whose name isn't an
    offset.
    """

    path: str
    topic: str
    partition: int
    base_offset: int | None
    size: int

    @property
    def name(self) -> str:
        """The file name."""
        return basename(self.path)


def sort_key(s: Segment) -> tuple:
    return (s.topic, s.partition, -1 if s.base_offset is None else s.base_offset, s.path)


def list_segments(
    path_or_glob: str | os.PathLike[str],
    *,
    topic: str | None = None,
    partition: int | None = None,
) -> list[Segment]:
    """The segment files under ``path_or_glob``, sorted by topic, partition
    and base offset.

    ``path_or_glob`` may be a broker log dir (a folder of ``<topic>-<partition>``
    folders; deeper nesting, e.g. one folder per broker, works too), one
    ``<topic>-<partition>`` folder, one segment file, or a glob of any of
    those (``/data/orders-*``, ``/data/*-0/000000000000000*.log``). Only
    ``*.log`` files are segments (indexes, snapshots, checkpoints,
    ``*.deleted``/``*.cleaned``/``*.swap`` are ignored), except that a file
    you name directly is read whatever its name. Folders a broker is
    deleting or moving (``<topic>-<partition>.<id>-delete``/``-future``/
    ``-stray``) are skipped.

    Topic and partition come from each folder's name; ``topic``/``partition``
    override them. A folder holding ``.log`` files that isn't named
    ``<topic>-<partition>`` is a :class:`ValueError` (naming the folder)
    unless both are given. A path that doesn't exist (or a glob matching
    nothing) is a :class:`FileNotFoundError`; an empty folder gives ``[]``.

    >>> [(s.topic, s.partition, s.base_offset) for s in list_segments("/var/lib/kafka/data")]  # doctest: +SKIP
    [('orders', 0, 0), ('orders', 0, 81234), ('orders', 1, 0), ('payments', 0, 0)]
    """
    path = os.fspath(path_or_glob)
    if partition is not None:
        partition = int(partition)
    found: list[tuple[str, str, int]] = []  # (folder, file path, size), before naming
    explicit: set[str] = set()
    uri = URI.match(path)
    if uri and uri["scheme"].lower() != "file":
        found, explicit = _list_remote(path)
    else:
        found, explicit = _list_local(local_path(path))
    segments = {}
    for folder, file_path, size in found:
        if TRANSIENT_FOLDER.search(basename(folder)) and file_path not in explicit:
            continue
        seg_topic, seg_partition = folder_topic_partition(folder, topic, partition)
        segments[file_path] = Segment(
            file_path, seg_topic, seg_partition, segment_base_offset(basename(file_path)), size
        )
    return sorted(segments.values(), key=sort_key)


def _list_local(path: str) -> tuple[list[tuple[str, str, int]], set[str]]:
    found: list[tuple[str, str, int]] = []
    explicit: set[str] = set()
    if os.path.exists(path) or not GLOB_CHARS.search(path):
        roots = [path]
        is_glob = False
    else:
        roots = sorted(_glob.glob(path, recursive=True))
        is_glob = True
        if not roots:
            raise FileNotFoundError(f"no Kafka log files match {path!r}")
    for root in roots:
        if os.path.isfile(root):
            if is_glob and not is_segment_name(os.path.basename(root)):
                continue
            if not is_glob:
                explicit.add(root)
            found.append((os.path.dirname(os.path.abspath(root)), root, os.path.getsize(root)))
        elif os.path.isdir(root):
            if not os.access(root, os.R_OK | os.X_OK):
                raise PermissionError(f"can't read the folder {root!r}")
            found.extend(_walk_local(root))
        elif not os.path.exists(root):
            raise FileNotFoundError(f"Kafka log path does not exist: {root!r}")
    return found, explicit


def _walk_local(root: str) -> Iterator[tuple[str, str, int]]:
    seen: set[str] = set()

    def onerror(err: OSError) -> None:
        raise err

    for dirpath, dirnames, filenames in os.walk(root, followlinks=True, onerror=onerror):
        real = os.path.realpath(dirpath)
        if real in seen:  # a symlink loop
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames.sort()
        for name in sorted(filenames):
            if is_segment_name(name):
                file_path = os.path.join(dirpath, name)
                if os.path.isfile(file_path):
                    yield dirpath, file_path, os.path.getsize(file_path)


def _list_remote(uri: str) -> tuple[list[tuple[str, str, int]], set[str]]:
    from pyarrow import fs as pafs

    base, _, query = uri.partition("?")
    suffix = f"?{query}" if query else ""
    scheme_end = URI.match(base).end()  # type: ignore[union-attr]
    glob_at = GLOB_CHARS.search(base, scheme_end)
    if glob_at is None:
        prefix_uri = base
    else:
        prefix_uri = base[: base.rfind("/", 0, glob_at.start())]
    filesystem, prefix_path = fs.resolve_remote(prefix_uri + suffix)
    prefix_path = prefix_path.rstrip("/")

    def to_uri(fs_path: str) -> str:
        return prefix_uri.rstrip("/") + fs_path[len(prefix_path) :] + suffix

    found: list[tuple[str, str, int]] = []
    explicit: set[str] = set()
    info = filesystem.get_file_info(prefix_path)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"Kafka log path does not exist: {prefix_uri!r}")
    if info.type == pafs.FileType.File:
        if glob_at is None:
            explicit.add(uri)
            return [(parent_uri(uri), uri, info.size)], explicit
        return [], explicit
    infos = filesystem.get_file_info(pafs.FileSelector(prefix_path, recursive=True))
    pattern = base[len(prefix_uri) :].strip("/").split("/") if glob_at is not None else None
    matched_any = False
    for item in sorted(infos, key=lambda i: i.path):
        if item.type != pafs.FileType.File:
            continue
        rel = item.path[len(prefix_path) :].strip("/").split("/")
        if pattern is not None:
            if len(rel) < len(pattern) or not all(fnmatchcase(p, g) for p, g in zip(rel, pattern)):
                continue
            matched_any = True
        if not is_segment_name(rel[-1]):
            continue
        file_uri = to_uri(item.path)
        found.append((parent_uri(file_uri), file_uri, item.size))
    if pattern is not None and not matched_any:
        raise FileNotFoundError(f"no Kafka log files match {uri!r}")
    return found, explicit


def by_partition(segments: list[Segment]) -> list[list[Segment]]:
    groups: dict[tuple[str, int], list[Segment]] = {}
    for seg in segments:
        groups.setdefault((seg.topic, seg.partition), []).append(seg)
    return list(groups.values())
