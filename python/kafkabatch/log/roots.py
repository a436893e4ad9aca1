"""Roots: what every reader takes as its ``path`` — a path, URI or glob, or a list of them.

>>> [s.path for s in list_roots(["s3://bucket/kafka/", "/var/lib/kafka/data/orders-0"])]  # doctest: +SKIP
['s3://bucket/kafka/orders-MWJ6FHTfRYy67jzwZdeqSQ/0/00000000000000000000-tqimKeZwStOEOwRzT3L5oQ.log', ...]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

from kafkabatch._kafkabatch import list_roots as _native_list_roots
from kafkabatch.log.fs import filesystem_of, filesystem_path
from kafkabatch.log.listing import Segment, listed_roots

if TYPE_CHECKING:
    from pyarrow import fs as pafs

#: A root or a list of roots: local paths, ``file:`` or remote URIs, globs.
Roots = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]


def root_list(roots: Any, what: str = "path", filesystem: Any = None) -> list[str]:
    """``roots`` as a list of strings; ``what`` is the caller's word for the argument, in errors.
    With ``filesystem`` (a :class:`pyarrow.fs.FileSystem`), they are paths in it: a URI is a
    :class:`ValueError` (see :func:`kafkabatch.log.fs.filesystem_path`)."""
    if isinstance(roots, (str, os.PathLike)):
        out = [os.fspath(roots)]
    elif isinstance(roots, (list, tuple)):
        if not roots:
            raise ValueError(f"{what} is an empty list: give at least one path, URI or glob")
        out = []
        for root in roots:
            if not isinstance(root, (str, os.PathLike)):
                raise TypeError(
                    f"{what} must be a path, URI or glob, or a list of them; the list holds a {type(root).__name__}"
                )
            out.append(os.fspath(root))
    else:
        raise TypeError(f"{what} must be a path, URI or glob, or a list of them, not {type(roots).__name__}")
    if filesystem is not None:
        out = [filesystem_path(root, filesystem, what) for root in out]
    return out


def list_roots(
    roots: Roots,
    *,
    topic: str | None = None,
    partition: int | None = None,
    tiered_keys: Any = None,
    problems: list[tuple[Segment, Exception]] | None = None,
    what: str = "path",
    name_glob: str | None = None,
    filesystem: pafs.FileSystem | None = None,
) -> list[Segment]:
    """The segments under each of ``roots`` (see :func:`kafkabatch.list_segments`),
    joined in the core: a file found under two roots is listed once, partitions come in the order
    of the roots that hold them (each in offset order), and where a partition's
    segments come from several places (a bucket and a broker log dir), each of its
    offsets is left to one segment by the same rule as within one root. With
    ``name_glob`` (Spark's ``pathGlobFilter``), only segments whose file names
    match it (an :func:`fnmatch.fnmatchcase` pattern on the name alone). With
    ``filesystem`` (a :class:`pyarrow.fs.FileSystem`), ``roots`` are paths in it,
    listed and later read through it."""
    filesystem = filesystem_of(filesystem)
    segments: list[Segment] = listed_roots(
        root_list(roots, what, filesystem),
        _native_list_roots,
        topic,
        partition,
        tiered_keys,
        problems,
        name_glob=name_glob,
        filesystem=filesystem,
    )[0]
    return segments
