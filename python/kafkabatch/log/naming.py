"""Kafka's names on disk: file and folder names of paths and URIs, KRaft snapshots, ids.

(Segment, ``<topic>-<partition>`` and tiered-storage names that listing reads are the
core's: :mod:`kafkabatch.log.listing`.)

>>> basename("s3://bucket/orders-3/00000000000000000000.log?region=eu-west-1")
'00000000000000000000.log'
"""

from __future__ import annotations

import base64
import re
from typing import Any, overload

# a KRaft snapshot: <end offset, 20 digits>-<epoch, 10 digits>.checkpoint (not .checkpoint.part/.deleted)
_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def without_query(path: str) -> str:
    """A URI without its ``?query``; a local path as it is (``?`` is a character of its names)."""
    return path.split("?", 1)[0] if _URI.match(path) else path


def basename(path: str) -> str:
    return re.split(r"[\\/]", without_query(path).rstrip("/\\"))[-1]


def parent_name(path: str) -> str:
    parts = re.split(r"[\\/]", without_query(path).rstrip("/\\"))
    return parts[-2] if len(parts) >= 2 else ""


def snapshot_id(file_name: str) -> tuple[int, int] | None:
    """``(end offset, epoch)`` of a KRaft snapshot file's name, else None.

    >>> snapshot_id("00000000000000001234-0000000005.checkpoint"), snapshot_id("x.checkpoint")
    ((1234, 5), None)
    """
    found = _SNAPSHOT.match(file_name)
    return None if found is None else (int(found[1]), int(found[2]))


@overload
def kafka_uuid(value: bytes | bytearray) -> str: ...
@overload
def kafka_uuid(value: Any) -> str | None: ...
def kafka_uuid(value: Any) -> str | None:
    """Kafka's text form of a UUID (URL-safe base64, no padding), as its tools print it.

    >>> kafka_uuid(bytes(16))
    'AAAAAAAAAAAAAAAAAAAAAA'
    """
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return base64.urlsafe_b64encode(bytes(value)).decode("ascii").rstrip("=")
    return str(value)
