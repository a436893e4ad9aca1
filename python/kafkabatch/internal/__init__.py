"""Kafka's own topics as typed tables.

This room owns:

- ``kinds``: which topics are Kafka's internal topics (``__consumer_offsets``,
  ``__transaction_state``, ``__share_group_state``, ``__cluster_metadata``,
  ``__remote_log_metadata``), by topic name, and the ``internal=`` /
  ``definitions=`` keywords that :func:`kafkabatch.decode`,
  :func:`kafkabatch.read_segment` and :func:`kafkabatch.scan_log` take;
- ``columns``: the decoded columns (record type, versions, tombstone, one
  struct column per record type, a per-row error, optionally Kafka's JSON)
  appended to a decoded table, over the native ``decode_internal``, which
  reads the records with Kafka's message definitions;
- ``at_time`` (the one module above :mod:`kafkabatch.log`, which it reads
  with): :func:`consumer_offsets_at` and :func:`cluster_image_at`, the state
  of a group's offsets or of a KRaft cluster at a point in time.

Snapshot files (``<end offset>-<epoch>.checkpoint`` in a
``__cluster_metadata-0`` folder) are record batches like a segment:
:func:`kafkabatch.read_segment` reads one named directly.
"""

from __future__ import annotations

from kafkabatch.internal.columns import decode_internal_columns, internal_schema
from kafkabatch.internal.kinds import (
    INTERNAL_OPTIONS,
    INTERNAL_TOPICS,
    KINDS,
    Internal,
    InternalOption,
    Kind,
    kind_of_topic,
    pop_internal,
    resolve_internal,
)

__all__ = [
    "INTERNAL_OPTIONS",
    "INTERNAL_TOPICS",
    "Internal",
    "KINDS",
    "InternalOption",
    "Kind",
    "decode_internal_columns",
    "internal_schema",
    "kind_of_topic",
    "pop_internal",
    "resolve_internal",
]
