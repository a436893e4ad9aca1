"""Kafka's names on disk: ``<topic>-<partition>`` folders, segment files, folders a broker is moving or deleting.

>>> folder_topic_partition("/data/orders-3", None, None)
('orders', 3)
"""

from __future__ import annotations

import base64
import re
from typing import Any, overload

from kafkabatch._util import topic_partition_of_folder

TRANSIENT_FOLDER = re.compile(r"\.[0-9a-fA-F]{32}-(delete|future|stray)$")
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


def is_segment_name(file_name: str) -> bool:
    # Kafka renames segments it is about to delete, or swapping in after
    # compaction, to *.log.deleted / *.log.cleaned / *.log.swap: not ".log".
    return file_name.endswith(".log")


def folder_topic_partition(folder: str, topic: str | None, partition: int | None) -> tuple[str, int]:
    if topic is not None and partition is not None:
        return topic, partition
    found = topic_partition_of_folder(basename(folder))
    if found is None:
        missing = " and ".join(n for n, v in (("topic", topic), ("partition", partition)) if v is None)
        raise ValueError(
            f"folder {folder!r} is not named <topic>-<partition> (like 'orders-0'), so its "
            f"segments have no {missing}; rename it, or give the {missing} explicitly "
            "(keyword arguments topic=/partition=, Spark options 'topic'/'partition'). Tiered-storage "
            "segments are found by their own names instead: {topic}-{topicId}/{partition}/"
            "{offset}-{segmentId}.log with its .rsm-manifest (Aiven), {topic}-{partition}-{topicId}/"
            "{offset}-{segmentId}.log (Kafka's LocalTieredStorage)"
        )
    return (found[0] if topic is None else topic, found[1] if partition is None else partition)


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
