"""Roots: what every reader takes as its ``path`` — a path, URI or glob, or a list of them.

>>> [s.path for s in list_roots(["s3://bucket/kafka/", "/var/lib/kafka/data/orders-0"])]  # doctest: +SKIP
['s3://bucket/kafka/orders-MWJ6FHTfRYy67jzwZdeqSQ/0/00000000000000000000-tqimKeZwStOEOwRzT3L5oQ.log', ...]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Union

from kafkabatch._kafkabatch import list_roots as _native_list_roots
from kafkabatch.log.listing import Segment, listed_roots

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
    name_glob: str | None = None,
) -> list[Segment]:
    """The segments under each of ``roots`` (see :func:`kafkabatch.list_segments`),
    joined in the core: a file found under two roots is listed once, partitions come in the order
    of the roots that hold them (each in offset order), and where a partition's
    segments come from several places (a bucket and a broker log dir), each of its
    offsets is left to one segment by the same rule as within one root. With
    ``name_glob`` (Spark's ``pathGlobFilter``), only segments whose file names
    match it (an :func:`fnmatch.fnmatchcase` pattern on the name alone)."""
    segments: list[Segment] = listed_roots(
        root_list(roots, what), _native_list_roots, topic, partition, tiered_keys, problems, name_glob=name_glob
    )[0]
    return segments
