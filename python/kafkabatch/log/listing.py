"""Finding segments: broker log dirs, ``<topic>-<partition>`` folders, segment files and globs, local or remote; tiered-storage layouts too.

>>> [(s.topic, s.partition, s.base_offset) for s in list_segments("/var/lib/kafka/data")]  # doctest: +SKIP
[('orders', 0, 0), ('orders', 0, 81234), ('orders', 1, 0)]
"""

from __future__ import annotations

import glob as _glob
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any

import kafkabatch.log.fs as fs
import kafkabatch.log.tiered as tiered
from kafkabatch._util import segment_base_offset
from kafkabatch.log.bounds import Bounds
from kafkabatch.log.fs import GLOB_CHARS, URI, local_path, parent_uri
from kafkabatch.log.naming import TRANSIENT_FOLDER, basename, folder_topic_partition, is_segment_name


@dataclass(frozen=True)
class Segment:
    """One segment file of one topic-partition.

    ``path`` is a local path, or a URI for remote files (``s3://...``).
    ``base_offset`` comes from the file name (``00000000000000001234.log`` →
    1234); it is ``None`` for a file you named directly whose name isn't an
    offset.

    Remote segments (see :mod:`kafkabatch.log.tiered`) also say their
    ``layout`` (``"broker"``, ``"aiven"`` or ``"local-tiered"``), their
    ``manifest`` object (Aiven), ids, and the offsets the overlap rule gives
    them: ``floor_offset`` (offsets below come from an earlier segment) and
    ``stop_offset`` (offsets from there on come from a later one). ``size``
    is the segment's own size (for Aiven, the original ``.log``'s).
    """

    path: str
    topic: str
    partition: int
    base_offset: int | None
    size: int
    layout: str = "broker"
    manifest: str | None = None
    segment_id: str | None = None
    topic_id: str | None = None
    floor_offset: int | None = None
    stop_offset: int | None = None
    keys: tiered.KeySpec = field(default=(), repr=False, compare=False)
    #: Other copies of this segment's offsets (another upload, a broker folder)
    #: that the overlap rule left out: read instead when this one turns out damaged.
    twins: tuple[Segment, ...] = field(default=(), repr=False, compare=False)

    @property
    def name(self) -> str:
        """The file name."""
        return basename(self.path)


def sort_key(s: Segment) -> tuple:
    return (
        s.topic,
        s.partition,
        -1 if s.base_offset is None else s.base_offset,
        -1 if s.floor_offset is None else s.floor_offset,
        s.path,
    )


def open_segment(
    seg: Segment, max_decompressed_size: int | None = None, cap_name: str = "max_decompressed_size"
) -> Any:
    """Random access to a segment's bytes (a :class:`~kafkabatch.log.fs.Source`):
    memory-mapped, through :mod:`pyarrow.fs`, or, for Aiven remote segments,
    chunk by chunk as their manifest says (each chunk inflating to at most
    ``max_decompressed_size``, default that of :func:`kafkabatch.decode`;
    ``cap_name`` is the caller's word for that option, in errors)."""
    if seg.layout == "aiven" and seg.manifest is not None:
        return tiered.TieredSource(seg.path, seg.manifest, seg.keys, max_decompressed_size, cap_name)
    return fs.open_source(seg.path)


def segment_bounds(seg: Segment, bounds: Bounds) -> Bounds:
    """``bounds`` narrowed to the offsets the overlap rule leaves to ``seg``."""
    if seg.floor_offset is None and seg.stop_offset is None:
        return bounds
    start, end = bounds.start_offset, bounds.end_offset
    if seg.floor_offset is not None:
        start = seg.floor_offset if start is None else max(start, seg.floor_offset)
    if seg.stop_offset is not None:
        end = seg.stop_offset if end is None else min(end, seg.stop_offset)
    return replace(bounds, start_offset=start, end_offset=end)


def list_segments(
    path_or_glob: str | os.PathLike[str],
    *,
    topic: str | None = None,
    partition: int | None = None,
    tiered_keys: Any = None,
    problems: list[tuple[Segment, Exception]] | None = None,
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

    Tiered storage (see :mod:`kafkabatch.log.tiered`): Aiven remote-storage
    objects under any prefix (``{topic}-{topicId}/{partition}/{offset}-{id}.log``
    with its ``.rsm-manifest``; a ``.log`` without its manifest is an upload in
    progress or abandoned, left out with a :class:`TieredStorageWarning`) and
    Kafka's LocalTieredStorage folders (``{topic}-{partition}-{topicId}``) are
    found too, and a manifest you name stands for its segment. When a
    partition's segments come from several places (a bucket and a broker log
    dir, or two uploads of the same offsets), each offset is left to exactly
    one segment (``floor_offset``/``stop_offset``; the rule is in
    :func:`kafkabatch.log.tiered.resolve`). ``tiered_keys`` (key-pair id → PEM
    private key, a path or the text) unlocks encrypted segments.

    A remote segment that can't be listed (a manifest whose ``.log`` object is
    missing, a file named like a remote segment in folders that fit no
    layout) is a :class:`TieredStorageError` naming the object; with a
    ``problems`` list, it is appended there instead, as ``(segment, error)``
    (what is known of the segment), and listing goes on.

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
    keys = tiered.resolve_keys(tiered_keys)
    manifests = {p for _, p, _ in found if tiered.is_manifest(p)}
    listed_paths = {p for _, p, _ in found}
    segments: dict[str, Segment] = {}
    unmanifested: list[tuple[str, tiered.RemoteName]] = []  # Aiven .log objects without their manifest

    def problem(seg: Segment, error: Exception) -> None:
        if problems is None:
            raise error
        problems.append((seg, error))

    for folder, file_path, size in found:
        if TRANSIENT_FOLDER.search(basename(folder)) and file_path not in explicit:
            continue
        if file_path in manifests:
            log_path = tiered.sibling(file_path, ".log")
            if file_path not in explicit and log_path in listed_paths:
                continue  # found with its .log
            # A manifest named directly, or matched by a glob that its .log doesn't match, stands for its segment.
            log_size = _size_of(log_path)
            if log_size is None:  # a manifest whose segment is gone: never silently
                name = tiered.remote_name(log_path)
                problem(
                    _placeholder(log_path, name, file_path, topic, partition),
                    tiered.missing_object_error(log_path, file_path),
                )
                continue
            file_path, size = log_path, log_size
        name = tiered.remote_name(file_path)
        if name is None:
            seg_topic, seg_partition = folder_topic_partition(folder, topic, partition)
            segments[file_path] = Segment(
                file_path, seg_topic, seg_partition, segment_base_offset(basename(file_path)), size
            )
            continue
        try:
            segment = _remote_segment(
                file_path, size, name, manifests, topic, partition, keys, explicit=file_path in explicit
            )
        except tiered.TieredStorageError as error:
            problem(_placeholder(file_path, name, None, topic, partition), error)
            continue
        if segment is not None:
            segments[file_path] = segment
        elif name.layout == "aiven":
            unmanifested.append((file_path, name))
    for file_path, name in unmanifested:
        folder = parent_uri(file_path)
        neighbours = [s for s in segments.values() if parent_uri(s.path) == folder]
        if any(s.manifest is not None and _holds(s, name.base_offset) for s in neighbours):
            # An abandoned upload whose offsets a completed one (another segment id) holds: nothing is missing.
            warnings.warn(
                f"{file_path}: no {tiered.MANIFEST} beside it (an abandoned upload; another upload holds its "
                "offsets); left out",
                tiered.TieredStorageWarning,
                stacklevel=2,
            )
            continue
        if any((s.base_offset or 0) > name.base_offset for s in neighbours):
            # Segments are uploaded in offset order: a later one is complete, so this is a hole, not an upload.
            problem(_placeholder(file_path, name, None, topic, partition), tiered.missing_manifest_error(file_path))
            continue
        warnings.warn(
            f"{file_path}: no {tiered.MANIFEST} beside it (an upload in progress or abandoned); left out",
            tiered.TieredStorageWarning,
            stacklevel=2,
        )
    listed = sorted(segments.values(), key=sort_key)
    if any(s.layout != "broker" for s in listed):
        listed = sorted(_resolve_overlaps(listed), key=sort_key)
    return listed


def _placeholder(
    path: str, name: tiered.RemoteName | None, manifest: str | None, topic: str | None, partition: int | None
) -> Segment:
    """What is known of a remote segment that can't be read, for reporting it."""
    seg_topic = topic if topic is not None else (name.topic if name is not None else None)
    seg_partition = partition if partition is not None else (name.partition if name is not None else None)
    return Segment(
        path,
        "" if seg_topic is None else seg_topic,
        -1 if seg_partition is None else seg_partition,
        None if name is None else name.base_offset,
        0,
        "aiven" if manifest is not None else (name.layout if name is not None and name.layout else "aiven"),
        manifest,
        None if name is None else name.segment_id,
        None if name is None else name.topic_id,
    )


def _is_listed(name: str) -> bool:
    """Segments, and the manifests that say how remote ones were stored."""
    return is_segment_name(name) or name.endswith(tiered.MANIFEST)


def _size_of(path: str) -> int | None:
    if fs.is_remote(path):
        from pyarrow import fs as pafs

        filesystem, fs_path = fs.resolve_remote(path)
        info = filesystem.get_file_info(fs_path)
        return info.size if info.type == pafs.FileType.File else None
    local = local_path(path)
    return os.path.getsize(local) if os.path.isfile(local) else None


def _remote_segment(
    file_path: str,
    size: int,
    name: tiered.RemoteName,
    manifests: set[str],
    topic: str | None,
    partition: int | None,
    keys: tiered.KeySpec,
    *,
    explicit: bool = False,
) -> Segment | None:
    """A remote segment from its names, or None (with a warning) for a ``.log``
    whose manifest is missing (an error for a ``.log`` named directly)."""
    seg_topic = topic if topic is not None else name.topic
    seg_partition = partition if partition is not None else name.partition
    if seg_topic is None or seg_partition is None:
        raise tiered.layout_error(file_path)
    manifest = tiered.sibling(file_path, tiered.MANIFEST)
    if name.layout == "local-tiered" or (name.layout == "" and manifest not in manifests):
        if name.layout == "" and _size_of(manifest) is not None:
            pass  # an Aiven segment in folders of your own naming
        else:
            return Segment(
                file_path, seg_topic, seg_partition, name.base_offset, size, "local-tiered", None,
                name.segment_id, name.topic_id, keys=keys,
            )  # fmt: skip
    elif manifest not in manifests and _size_of(manifest) is None:
        if explicit:
            raise tiered.missing_manifest_error(file_path)
        return None  # decided once the folder is listed (see list_segments)
    facts = tiered.manifest_facts(manifest)
    original = facts["original_size"]
    if topic is None and facts["topic"] and seg_topic != facts["topic"] and seg_topic.endswith(facts["topic"]):
        # A key prefix without a trailing "/" ("v1.2_") is glued to the topic folder: the manifest names the topic.
        seg_topic = facts["topic"]
    return Segment(
        file_path,
        seg_topic,
        seg_partition,
        name.base_offset,
        size if original is None else original,
        "aiven",
        manifest,
        name.segment_id,
        name.topic_id,
        stop_offset=None if facts["end_offset"] is None else facts["end_offset"] + 1,
        keys=keys,
    )


_RANK = {"broker": 0, "local-tiered": 1, "aiven": 2}


def _resolve_overlaps(segments: list[Segment]) -> list[Segment]:
    """Apply :func:`kafkabatch.log.tiered.resolve` to each partition that
    has remote segments: ``floor_offset``/``stop_offset`` set, shadowed
    segments dropped. A segment's last offset is its manifest's end offset,
    else the next segment's base offset in its own folder, minus one."""
    out: list[Segment] = []
    for group in by_partition(segments):
        if all(s.layout == "broker" for s in group) or any(s.base_offset is None for s in group):
            out.extend(group)
            continue
        by_folder: dict[str, list[Segment]] = {}
        for s in group:
            by_folder.setdefault(parent_uri(s.path), []).append(s)
        ends: dict[str, int | None] = {}
        claimed: set[str] = set()  # ends that only a manifest says
        cut: dict[str, int] = {}  # where a segment that holds more than its end must stop
        for members in by_folder.values():
            members.sort(key=lambda s: s.base_offset or 0)
            for s in members:
                later = [m.base_offset or 0 for m in members if (m.base_offset or 0) > (s.base_offset or 0)]
                if later:  # the next segment of its own folder: names, as for broker folders
                    ends[s.path] = min(later) - 1
                    if s.layout == "aiven" and s.stop_offset is not None and s.stop_offset > min(later):
                        # It claims more (another upload, cut otherwise): the next segment takes over there.
                        cut[s.path] = min(later)
                elif s.layout == "aiven" and s.stop_offset is not None:
                    ends[s.path] = s.stop_offset - 1  # the manifest's end offset: a claim, checked below
                    claimed.add(s.path)
                else:
                    ends[s.path] = None
        for s in group:
            claimed_end = ends[s.path]
            if s.path not in claimed or claimed_end is None:
                continue
            folder = parent_uri(s.path)
            base = s.base_offset or 0
            if any(parent_uri(o.path) != folder and base <= (o.base_offset or 0) <= claimed_end for o in group):
                # The claim would hide offsets of another copy: trusted only as far as the bytes confirm it.
                ends[s.path] = tiered.held_last_offset(s.path, s.manifest or "", s.keys, base)
        claims = {s.path: tiered.Claim(s.base_offset or 0, ends[s.path], _RANK.get(s.layout, 3), s.path) for s in group}
        tiered.resolve(list(claims.values()))
        kept = [s for s in group if not claims[s.path].dropped]
        dropped = [s for s in group if claims[s.path].dropped]
        for s in kept:
            claim = claims[s.path]
            first = claim.base if claim.floor is None else max(claim.base, claim.floor)
            twins = tuple(
                replace(d, floor_offset=None, stop_offset=None) for d in dropped if _covers(claims[d.path], first)
            )
            stop = claim.stop if s.path not in cut else min(cut[s.path], claim.stop or cut[s.path])
            out.append(replace(s, floor_offset=claim.floor, stop_offset=stop, twins=twins))
    return out


def _holds(seg: Segment, offset: int) -> bool:
    """Whether an Aiven segment holds ``offset``: its base offset, or one up to its manifest's end offset that its
    bytes confirm (a manifest's claim alone could hide a hole)."""
    base = seg.base_offset or 0
    if base == offset:
        return True
    if base > offset or seg.stop_offset is None or offset >= seg.stop_offset or seg.manifest is None:
        return False
    held = tiered.held_last_offset(seg.path, seg.manifest, seg.keys, base)
    return held is not None and held >= offset


def _covers(claim: tiered.Claim, offset: int) -> bool:
    """Whether a segment's claim reaches from at or before ``offset`` to at or past it."""
    return claim.base <= offset and (claim.end is None or claim.end >= offset)


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
            if is_glob and not _is_listed(os.path.basename(root)):
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
            if _is_listed(name):
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
        if not _is_listed(rel[-1]):
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
