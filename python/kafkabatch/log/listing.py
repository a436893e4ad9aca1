"""Finding segments: broker log dirs, ``<topic>-<partition>`` folders, segment files and globs, local or remote; tiered-storage layouts too.

>>> [(s.topic, s.partition, s.base_offset) for s in list_segments("/var/lib/kafka/data")]  # doctest: +SKIP
[('orders', 0, 0), ('orders', 0, 81234), ('orders', 1, 0)]
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import kafkabatch.log.fs as fs
import kafkabatch.log.tiered as tiered
from kafkabatch._kafkabatch import list_roots as _native_list_roots
from kafkabatch.log.bounds import Bounds
from kafkabatch.log.fs import URI, local_path
from kafkabatch.log.naming import basename

if TYPE_CHECKING:
    from pyarrow import fs as pafs


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
    #: The caller's :class:`pyarrow.fs.FileSystem` it was listed in (``path`` is a
    #: path in it), read through it; ``None``: a local path or a URI.
    filesystem: Any = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        """The file name."""
        return basename(self.path)


def open_segment(
    seg: Segment, max_decompressed_size: int | None = None, cap_name: str = "max_decompressed_size"
) -> Any:
    """Random access to a segment's bytes (a :class:`~kafkabatch.log.fs.Source`):
    memory-mapped, through :mod:`pyarrow.fs`, or, for Aiven remote segments,
    chunk by chunk as their manifest says (each chunk inflating to at most
    ``max_decompressed_size``, default that of :func:`kafkabatch.decode`;
    ``cap_name`` is the caller's word for that option, in errors)."""
    if seg.layout == "aiven" and seg.manifest is not None:
        return tiered.TieredSource(seg.path, seg.manifest, seg.keys, max_decompressed_size, cap_name, seg.filesystem)
    return fs.open_source(seg.path, seg.filesystem)


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
    filesystem: pafs.FileSystem | None = None,
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
    docs/tiered-storage.md). ``tiered_keys`` (key-pair id → PEM
    private key, a path or the text) unlocks encrypted segments.

    A remote segment that can't be listed (a manifest whose ``.log`` object is
    missing, a file named like a remote segment in folders that fit no
    layout) is a :class:`TieredStorageError` naming the object; with a
    ``problems`` list, it is appended there instead, as ``(segment, error)``
    (what is known of the segment), and listing goes on.

    ``filesystem`` (a :class:`pyarrow.fs.FileSystem`): ``path_or_glob`` is a
    path in it (``"bucket/kafka/"`` for an ``S3FileSystem``, no scheme), listed
    through it; the segments' paths are its paths, and reading them goes through it too.

    >>> [(s.topic, s.partition, s.base_offset) for s in list_segments("/var/lib/kafka/data")]  # doctest: +SKIP
    [('orders', 0, 0), ('orders', 0, 81234), ('orders', 1, 0), ('payments', 0, 0)]
    """
    filesystem = fs.filesystem_of(filesystem)
    path = os.fspath(path_or_glob)
    if filesystem is not None:
        path = fs.filesystem_path(path, filesystem, "path_or_glob")
    return listed_roots([path], _native_list_roots, topic, partition, tiered_keys, problems, filesystem=filesystem)[0]


def native_root(path: str) -> str:
    """``path`` as the core lists it: a remote URI as it is, a local path (or ``file:`` URI) as a path."""
    uri = URI.match(path)
    return path if uri and uri["scheme"].lower() != "file" else local_path(path)


def listed_roots(
    paths: list[str],
    call: Callable[..., tuple[Any, ...]],
    topic: str | None,
    partition: int | None,
    tiered_keys: Any,
    problems: list[tuple[Segment, Exception]] | None,
    filesystem: Any = None,
    **more: Any,
) -> tuple[Any, ...]:
    """``call`` (the core's ``list_roots`` or ``plan_roots``) over ``paths``, joined:
    its answer with the segments as :class:`Segment` s (``call``'s first item: the
    segments, or partitions whose first item is theirs), remote ones holding the
    resolved ``tiered_keys``; the listing's warnings re-emitted as
    :class:`TieredStorageWarning` s, its problems appended to ``problems``.
    ``filesystem`` (checked by :func:`kafkabatch.log.fs.filesystem_of`): ``paths``
    are paths in it, and the segments keep it for their reads."""
    if partition is not None:
        partition = int(partition)
    resolved: list[tiered.KeySpec] = []

    def keyspec() -> tiered.KeySpec:
        if not resolved:
            resolved.append(tiered.resolve_keys(tiered_keys))
        return resolved[0]

    def held_last_offset(log_path: str, manifest: str, base_offset: int) -> int | None:
        return tiered.held_last_offset(log_path, manifest, keyspec(), base_offset, filesystem)

    try:
        found, warned, unlisted, *rest = call(
            paths if filesystem is not None else [native_root(p) for p in paths],
            topic=topic,
            partition=partition,
            collect_problems=problems is not None,
            held_last_offset=held_last_offset,
            filesystem=filesystem,
            **more,
        )
    except tiered.TieredStorageError as error:  # what the listing said before it stopped, then why
        for _kind, message in getattr(error, "listing_warnings", None) or ():
            warnings.warn(message, tiered.TieredStorageWarning, stacklevel=3)
        raise
    keys = keyspec()
    for _kind, message in warned:  # one kind so far: a remote object left out
        warnings.warn(message, tiered.TieredStorageWarning, stacklevel=3)
    if problems is not None:
        problems.extend((_segment(seg, (), filesystem), error) for seg, error in unlisted)
    if call is _native_list_roots:
        return ([_segment(seg, keys, filesystem) for seg in found],)
    parts = [([_segment(seg, keys, filesystem) for seg in segs], *more_of) for segs, *more_of in found]
    return (parts, *rest)


def _segment(fields: dict[str, Any], keys: tiered.KeySpec, filesystem: Any = None) -> Segment:
    """A :class:`Segment` from the core's listing (remote segments carry the keys; all of
    them the caller's ``filesystem``, if any): the core gives its fields, taken as they are
    (a frozen dataclass's ``__init__`` would set them one by one through
    ``object.__setattr__``, the listing's cost for many segments)."""
    twins = fields["twins"]
    fields["twins"] = tuple(_segment(twin, keys, filesystem) for twin in twins) if twins else ()
    fields["keys"] = keys if fields["layout"] != "broker" else ()
    if filesystem is not None:
        fields["filesystem"] = filesystem
    seg = _new_object(Segment)
    seg.__dict__.update(fields)
    return seg


_new_object = object.__new__
