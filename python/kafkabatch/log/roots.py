"""Roots: what every reader takes as its ``path`` — a path, URI or glob, or a list of them.

>>> [s.path for s in list_roots(["s3://bucket/kafka/", "/var/lib/kafka/data/orders-0"])]  # doctest: +SKIP
['s3://bucket/kafka/orders-MWJ6FHTfRYy67jzwZdeqSQ/0/00000000000000000000-tqimKeZwStOEOwRzT3L5oQ.log', ...]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Union

from kafkabatch.log.listing import Segment, list_segments, resolve_overlaps, sort_key

#: A root or a list of roots: local paths, ``file:`` or remote URIs, globs.
Roots = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]


def root_list(roots: Any, what: str = "path") -> list[str]:
    """``roots`` as a list of strings; ``what`` is the caller's word for the argument, in errors."""
    if isinstance(roots, (str, os.PathLike)):
        return [os.fspath(roots)]
    if isinstance(roots, (list, tuple)):
        if not roots:
            raise ValueError(f"{what} is an empty list: give at least one path, URI or glob")
        out = []
        for root in roots:
            if not isinstance(root, (str, os.PathLike)):
                raise TypeError(
                    f"{what} must be a path, URI or glob, or a list of them; the list holds a {type(root).__name__}"
                )
            out.append(os.fspath(root))
        return out
    raise TypeError(f"{what} must be a path, URI or glob, or a list of them, not {type(roots).__name__}")


def list_roots(
    roots: Roots,
    *,
    topic: str | None = None,
    partition: int | None = None,
    tiered_keys: Any = None,
    problems: list[tuple[Segment, Exception]] | None = None,
    what: str = "path",
) -> list[Segment]:
    """The segments under each of ``roots`` (see :func:`kafkabatch.list_segments`),
    joined: a file found under two roots is listed once, partitions come in the order
    of the roots that hold them (each in offset order), and where a partition's
    segments come from several places (a bucket and a broker log dir), each of its
    offsets is left to one segment by the same rule as within one root."""
    paths = root_list(roots, what)
    if len(paths) == 1:
        return list_segments(paths[0], topic=topic, partition=partition, tiered_keys=tiered_keys, problems=problems)
    found: dict[str, Segment] = {}
    for path in paths:
        for seg in list_segments(path, topic=topic, partition=partition, tiered_keys=tiered_keys, problems=problems):
            found.setdefault(seg.path, seg)
    # Partitions in the order the roots give them; each partition's segments in offset order.
    order: dict[tuple[str, int], int] = {}
    for seg in found.values():
        order.setdefault((seg.topic, seg.partition), len(order))

    def key(seg: Segment) -> tuple:
        return (order[(seg.topic, seg.partition)], sort_key(seg))

    joined = sorted(found.values(), key=key)
    if all(s.layout == "broker" for s in joined):
        return joined
    resolved = resolve_overlaps(joined)  # the rule list_segments applies within one root
    # Copies left out within a root stay the twins of the segment kept there.
    return sorted((replace(s, twins=found[s.path].twins + s.twins) for s in resolved), key=key)
