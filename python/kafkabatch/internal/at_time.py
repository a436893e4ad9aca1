"""State at a point in time, from Kafka's internal topics: committed offsets and the KRaft cluster image.

>>> kb.consumer_offsets_at("/var/lib/kafka/data", "2024-05-01T12:00:00Z").num_rows    # doctest: +SKIP
42
>>> kb.cluster_image_at("/var/lib/kafka/meta", "2024-05-01T12:00:00Z").partitions      # doctest: +SKIP
pyarrow.Table ...
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafkabatch.internal.kinds import Internal, resolve_internal
from kafkabatch.log.bounds import parse_timestamp
from kafkabatch.log.listing import Segment, list_segments
from kafkabatch.log.naming import kafka_uuid, snapshot_id
from kafkabatch.log.prune import RecordFilter
from kafkabatch.log.scan import scan_log
from kafkabatch.log.segment import read_segment

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MS_UTC = pa.timestamp("ms", tz="UTC")
_US_UTC = pa.timestamp("us", tz="UTC")


def _moment(time: Any) -> int:
    """``time`` (epoch ms, ISO-8601 text, a datetime) in microseconds."""
    try:
        return parse_timestamp(time)
    except (TypeError, ValueError) as error:
        raise ValueError(f"time: {error}") from None


def _until(time_us: int) -> _dt.datetime:
    """The exclusive end bound that keeps records at or before ``time_us``."""
    return _EPOCH + _dt.timedelta(microseconds=time_us + 1)


def _internal(kind: str, definitions: Any) -> Internal:
    resolved = resolve_internal(kind, definitions)
    assert resolved is not None
    return resolved


def _segments_of(path: Any, kind: str, topics: Any) -> list[Segment]:
    internal = resolve_internal(topics if topics is not None else "auto")
    segments = list_segments(path)
    if internal is None:
        return []
    return [s for s in segments if internal.kind_for(s.topic) == kind]


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


# --------------------------------------------------------------------------
# consumer offsets
# --------------------------------------------------------------------------

_OFFSETS_SCHEMA = pa.schema(
    [
        pa.field("group", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("leader_epoch", pa.int32()),
        pa.field("metadata", pa.string()),
        pa.field("commit_timestamp", _MS_UTC),
        pa.field("expire_timestamp", _MS_UTC),
        pa.field("record_partition", pa.int32()),
        pa.field("record_offset", pa.int64()),
        pa.field("record_timestamp", _US_UTC),
    ]
)


def consumer_offsets_at(
    path: str | os.PathLike[str],
    time: Any,
    *,
    group: str | None = None,
    definitions: str | os.PathLike[str] | None = None,
    topics: Any = None,
) -> pa.Table:
    """Each consumer group's committed offset per topic-partition as of ``time``.

    Reads the ``__consumer_offsets`` partitions under ``path`` (a broker's log
    dir, or the partition folders) as the group coordinator would have after
    loading them at ``time``: per (group, topic, partition), the last
    OffsetCommit record at or before ``time`` (by record timestamp, in offset
    order), unless that record is a tombstone, which deletes the offset (a
    group deleted, an offset expired or removed). Offsets committed in a
    transaction (``sendOffsetsToTransaction``) count once it commits: those
    of aborted transactions, and of transactions with no marker in the log,
    never do (a transaction committed after ``time`` counts from its
    records' own timestamps). ``time`` is epoch
    milliseconds, ISO-8601 text or a datetime.

    One row per live offset: ``group``, ``topic``, ``partition``, ``offset``
    (the committed offset, the next record the group reads), ``leader_epoch``
    (null when not recorded), ``metadata``, ``commit_timestamp``,
    ``expire_timestamp`` (value version 1 only, else null), and where the
    commit was read: ``record_partition``, ``record_offset``,
    ``record_timestamp``. ``group`` keeps one group. ``topics`` maps other
    topic names to ``"consumer_offsets"`` (a mirrored copy), as ``internal=``
    does; ``definitions`` as in :func:`kafkabatch.decode`.

    For Spark: ``spark.createDataFrame(table.to_pandas())``.
    """
    time_us = _moment(time)
    segments = _segments_of(path, "consumer_offsets", topics)
    if not segments:
        raise FileNotFoundError(f"no __consumer_offsets partitions under {os.fspath(path)!r}")
    names = sorted({s.topic for s in segments})
    internal = _internal("consumer_offsets", definitions)
    table = scan_log(
        path,
        where=RecordFilter.where("topic", "in", names),
        end_timestamp=_until(time_us),
        isolation="read_committed",  # offsets of aborted (and still open) transactions never count
        internal=internal.kind,
        definitions=internal.definitions,
    ).read_all()
    kept = pc.and_(pc.equal(table["record_type"], "OffsetCommit"), pc.is_null(table["error"]))
    table = table.filter(kept)
    commit = table["offset_commit"]
    key = pc.struct_field(commit, "key")
    value = pc.struct_field(commit, "value")
    flat = pa.table(
        {
            "group": pc.struct_field(key, "group"),
            "topic": pc.struct_field(key, "topic"),
            "partition": pc.struct_field(key, "partition").cast(pa.int32()),
            "offset": pc.struct_field(value, "offset").cast(pa.int64()),
            "leader_epoch": _no_minus_one(pc.struct_field(value, "leaderEpoch").cast(pa.int32())),
            "metadata": pc.struct_field(value, "metadata"),
            "commit_timestamp": pc.struct_field(value, "commitTimestamp").cast(pa.int64()).cast(_MS_UTC),
            "expire_timestamp": _no_minus_one(pc.struct_field(value, "expireTimestamp").cast(pa.int64())).cast(_MS_UTC),
            "record_partition": table["partition"],
            "record_offset": table["offset"],
            "record_timestamp": table["timestamp"],
            "_tombstone": table["tombstone"],
        }
    )
    if group is not None:
        flat = flat.filter(pc.equal(flat["group"], group))
    # the last record of each key, in offset order (a key lives in one partition)
    flat = flat.sort_by([("group", "ascending"), ("topic", "ascending"), ("partition", "ascending"),
                         ("record_partition", "ascending"), ("record_offset", "ascending")])  # fmt: skip
    last = _last_of_key(flat, ("group", "topic", "partition"))
    flat = flat.filter(pc.and_(last, pc.invert(flat["_tombstone"])))
    return flat.drop_columns(["_tombstone"]).cast(_OFFSETS_SCHEMA)


def _no_minus_one(array: Any) -> Any:
    return pc.if_else(pc.equal(array, -1), pa.scalar(None, array.type), array)


def _last_of_key(table: pa.Table, names: tuple[str, ...]) -> pa.Array:
    """True on each row whose key differs from the next row's (sorted by key)."""
    n = table.num_rows
    if n == 0:
        return pa.array([], pa.bool_())
    differs = pa.array([False] * (n - 1), pa.bool_())
    for name in names:
        col = table[name].combine_chunks()
        differs = pc.or_(differs, pc.fill_null(pc.not_equal(col.slice(0, n - 1), col.slice(1)), True))
    return pa.concat_arrays([differs, pa.array([True])])


# --------------------------------------------------------------------------
# the cluster image
# --------------------------------------------------------------------------

_INT_LIST = pa.list_(pa.int32())
_ENDPOINT = pa.struct(
    [
        pa.field("name", pa.string()),
        pa.field("host", pa.string()),
        pa.field("port", pa.int32()),
        pa.field("security_protocol", pa.int16()),
    ]
)
_TOPICS = pa.schema([("topic", pa.string()), ("topic_id", pa.string()), ("partitions", pa.int32())])
_PARTITIONS = pa.schema(
    [
        ("topic", pa.string()),
        ("topic_id", pa.string()),
        ("partition", pa.int32()),
        ("leader", pa.int32()),
        ("leader_epoch", pa.int32()),
        ("partition_epoch", pa.int32()),
        ("replicas", _INT_LIST),
        ("isr", _INT_LIST),
        ("removing_replicas", _INT_LIST),
        ("adding_replicas", _INT_LIST),
        ("eligible_leader_replicas", _INT_LIST),
        ("last_known_elr", _INT_LIST),
        ("leader_recovery_state", pa.int8()),
        ("directories", pa.list_(pa.string())),
    ]
)
_CONFIGS = pa.schema(
    [
        ("resource_type", pa.string()),
        ("resource_type_id", pa.int8()),
        ("resource_name", pa.string()),
        ("name", pa.string()),
        ("value", pa.string()),
    ]
)
_BROKERS = pa.schema(
    [
        ("broker_id", pa.int32()),
        ("broker_epoch", pa.int64()),
        ("incarnation_id", pa.string()),
        ("rack", pa.string()),
        ("fenced", pa.bool_()),
        ("in_controlled_shutdown", pa.bool_()),
        ("is_migrating_zk_broker", pa.bool_()),
        ("endpoints", pa.list_(_ENDPOINT)),
        ("log_dirs", pa.list_(pa.string())),
    ]
)
_FEATURES = pa.schema([("name", pa.string()), ("level", pa.int16())])

#: ConfigResource.Type ids as ConfigRecord stores them
CONFIG_RESOURCE_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}

# PartitionChangeRecord's "no change" values
_NO_LEADER_CHANGE = -2
_NO_RECOVERY_CHANGE = -1


@dataclass(frozen=True)
class ClusterImage:
    """A KRaft cluster's metadata as of ``time``: five tables.

    ``topics`` (topic, topic_id, partitions), ``partitions`` (leader,
    epochs, replicas, ISR, ELR, directories per partition), ``configs``
    (resource type and name, config name and value), ``brokers`` (id,
    epoch, rack, fenced, endpoints, log dirs) and ``features`` (name,
    level). ``snapshot`` is the ``.checkpoint`` file the image started from
    (None when it was built from the log alone), ``last_offset`` the
    offset of the last record applied (-1 when none), ``skipped`` the
    records that did not decode (left out, with a warning).
    """

    topics: pa.Table
    partitions: pa.Table
    configs: pa.Table
    brokers: pa.Table
    features: pa.Table
    time: _dt.datetime
    snapshot: str | None
    last_offset: int
    skipped: int = 0

    #: the names of the five tables
    TABLES = ("topics", "partitions", "configs", "brokers", "features")

    def __getitem__(self, name: str) -> pa.Table:
        """``image["partitions"]``: one of :attr:`TABLES` by name."""
        if name not in self.TABLES:
            raise KeyError(f"{name!r}: a ClusterImage holds {', '.join(self.TABLES)}")
        table: pa.Table = getattr(self, name)
        return table

    def tables(self) -> dict[str, pa.Table]:
        """The five tables by name."""
        return {name: self[name] for name in self.TABLES}


class _Image:
    """The image being replayed, as Kafka's MetadataDelta applies records."""

    def __init__(self) -> None:
        self.topics: dict[Any, dict[str, Any]] = {}
        self.brokers: dict[int, dict[str, Any]] = {}
        self.configs: dict[tuple[int, str, str], str] = {}
        self.features: dict[str, int] = {}

    def apply(self, kind: str, r: dict[str, Any]) -> None:
        handler = getattr(self, "_" + kind, None)
        if handler is not None:
            handler(r)

    def _topic_record(self, r: dict[str, Any]) -> None:
        self.topics[_key(r["topicId"])] = {"name": r["name"], "id": r["topicId"], "partitions": {}}

    def _partition_record(self, r: dict[str, Any]) -> None:
        topic = self.topics.get(_key(r["topicId"]))
        if topic is None:
            return
        topic["partitions"][r["partitionId"]] = {
            "replicas": list(r.get("replicas") or []),
            "isr": list(r.get("isr") or []),
            "removing_replicas": list(r.get("removingReplicas") or []),
            "adding_replicas": list(r.get("addingReplicas") or []),
            "leader": r["leader"],
            "leader_epoch": r["leaderEpoch"],
            "partition_epoch": r["partitionEpoch"],
            "leader_recovery_state": r.get("leaderRecoveryState") or 0,
            "eligible_leader_replicas": list(r.get("eligibleLeaderReplicas") or []),
            "last_known_elr": list(r.get("lastKnownElr") or []),
            "directories": [kafka_uuid(d) for d in r.get("directories") or []],
        }

    def _partition_change_record(self, r: dict[str, Any]) -> None:
        topic = self.topics.get(_key(r["topicId"]))
        p = None if topic is None else topic["partitions"].get(r["partitionId"])
        if p is None:
            return
        for field, name in (
            ("replicas", "replicas"),
            ("isr", "isr"),
            ("removingReplicas", "removing_replicas"),
            ("addingReplicas", "adding_replicas"),
            ("eligibleLeaderReplicas", "eligible_leader_replicas"),
            ("lastKnownElr", "last_known_elr"),
        ):
            if r.get(field) is not None:
                p[name] = list(r[field])
        if r.get("directories") is not None:
            p["directories"] = [kafka_uuid(d) for d in r["directories"]]
        leader = r.get("leader")
        if leader is not None and leader != _NO_LEADER_CHANGE:
            p["leader"] = leader
            p["leader_epoch"] += 1
        recovery = r.get("leaderRecoveryState")
        if recovery is not None and recovery != _NO_RECOVERY_CHANGE:
            p["leader_recovery_state"] = recovery
        p["partition_epoch"] += 1

    def _clear_elr_record(self, r: dict[str, Any]) -> None:
        # as a PartitionChangeRecord emptying both lists, on each partition that has either
        # (of the named topic, or of every topic when the name is empty)
        name = r.get("topicName") or ""
        for topic in self.topics.values():
            if name not in ("", topic["name"]):
                continue
            for p in topic["partitions"].values():
                if p["eligible_leader_replicas"] or p["last_known_elr"]:
                    p["eligible_leader_replicas"], p["last_known_elr"] = [], []
                    p["partition_epoch"] += 1

    def _remove_topic_record(self, r: dict[str, Any]) -> None:
        topic = self.topics.pop(_key(r["topicId"]), None)
        if topic is not None:  # a deleted topic's configs go with it
            for key in [k for k in self.configs if k[0] == 2 and k[1] == topic["name"]]:
                del self.configs[key]

    def _config_record(self, r: dict[str, Any]) -> None:
        key = (r["resourceType"], r["resourceName"], r["name"])
        if r.get("value") is None:
            self.configs.pop(key, None)
        else:
            self.configs[key] = r["value"]

    def _register_broker_record(self, r: dict[str, Any]) -> None:
        self.brokers[r["brokerId"]] = {
            "broker_id": r["brokerId"],
            "broker_epoch": r["brokerEpoch"],
            "incarnation_id": kafka_uuid(r.get("incarnationId")),
            "rack": r.get("rack"),
            "fenced": bool(r.get("fenced", True)) if r.get("fenced") is not None else True,
            "in_controlled_shutdown": bool(r.get("inControlledShutdown") or False),
            "is_migrating_zk_broker": bool(r.get("isMigratingZkBroker") or False),
            "endpoints": [
                {"name": e["name"], "host": e["host"], "port": e["port"], "security_protocol": e["securityProtocol"]}
                for e in r.get("endPoints") or []
            ],
            "log_dirs": [kafka_uuid(d) for d in r.get("logDirs") or []],
        }

    def _unregister_broker_record(self, r: dict[str, Any]) -> None:
        self.brokers.pop(r["brokerId"], None)

    def _fence_broker_record(self, r: dict[str, Any]) -> None:
        if r["id"] in self.brokers:
            self.brokers[r["id"]]["fenced"] = True

    def _unfence_broker_record(self, r: dict[str, Any]) -> None:
        if r["id"] in self.brokers:
            self.brokers[r["id"]]["fenced"] = False

    def _broker_registration_change_record(self, r: dict[str, Any]) -> None:
        b = self.brokers.get(r["brokerId"])
        if b is None:
            return
        fenced = r.get("fenced")  # 1 fence, -1 unfence, 0 no change
        if fenced in (1, -1):
            b["fenced"] = fenced == 1
        if r.get("inControlledShutdown") == 1:
            b["in_controlled_shutdown"] = True
        if r.get("logDirs"):
            b["log_dirs"] = [kafka_uuid(d) for d in r["logDirs"]]

    def _feature_level_record(self, r: dict[str, Any]) -> None:
        if r["featureLevel"] == 0:
            self.features.pop(r["name"], None)
        else:
            self.features[r["name"]] = r["featureLevel"]

    def tables(self) -> dict[str, pa.Table]:
        topics = sorted(self.topics.values(), key=lambda t: t["name"])
        partitions = [
            {"topic": t["name"], "topic_id": kafka_uuid(t["id"]), "partition": pid, **p}
            for t in topics
            for pid, p in sorted(t["partitions"].items())
        ]
        return {
            "topics": pa.Table.from_pylist(
                [
                    {"topic": t["name"], "topic_id": kafka_uuid(t["id"]), "partitions": len(t["partitions"])}
                    for t in topics
                ],
                _TOPICS,
            ),
            "partitions": pa.Table.from_pylist(partitions, _PARTITIONS),
            "configs": pa.Table.from_pylist(
                [
                    {
                        "resource_type": CONFIG_RESOURCE_TYPES.get(rtype, str(rtype)),
                        "resource_type_id": rtype,
                        "resource_name": rname,
                        "name": name,
                        "value": value,
                    }
                    for (rtype, rname, name), value in sorted(self.configs.items())
                ],
                _CONFIGS,
            ),
            "brokers": pa.Table.from_pylist([self.brokers[b] for b in sorted(self.brokers)], _BROKERS),
            "features": pa.Table.from_pylist(
                [{"name": n, "level": v} for n, v in sorted(self.features.items())], _FEATURES
            ),
        }


def _key(topic_id: Any) -> Any:
    return bytes(topic_id) if isinstance(topic_id, (bytes, bytearray)) else topic_id


def _records(table: pa.Table) -> Iterator[tuple[str, dict[str, Any] | None, int, str | None]]:
    """(struct column name, its value, offset, error) per row, in order."""
    types = table["record_type"].to_pylist()
    errors = table["error"].to_pylist()
    offsets = table["offset"].to_pylist()
    columns: dict[str, list[Any]] = {}
    for i, name in enumerate(types):
        if errors[i] is not None or name is None:
            yield "", None, offsets[i], errors[i] or "no record type"
            continue
        column = _snake(name)
        if column not in columns:
            columns[column] = table[column].to_pylist() if column in table.column_names else [None] * table.num_rows
        yield column, columns[column][i], offsets[i], None


def _snapshots(segments: list[Segment], path: Any) -> list[tuple[int, int, str]]:
    """(end offset, epoch, path) of every local snapshot beside the metadata log, newest first."""
    folders = {os.path.dirname(s.path) for s in segments}
    root = os.fspath(path)
    if os.path.isdir(root) and os.path.basename(root.rstrip("/\\")).startswith("__cluster_metadata-"):
        folders.add(root)
    found = []
    for folder in folders:
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            sid = snapshot_id(name)
            if sid is not None:
                found.append((sid[0], sid[1], os.path.join(folder, name)))
    return sorted(found, reverse=True)


def cluster_image_at(
    path: str | os.PathLike[str],
    time: Any,
    *,
    definitions: str | os.PathLike[str] | None = None,
    topics: Any = None,
) -> ClusterImage:
    """A KRaft cluster's metadata image as of ``time``: topics, partitions,
    configs, brokers and features, as pyarrow tables (see :class:`ClusterImage`).

    Built as a controller loads it: from the newest snapshot
    (``<end offset>-<epoch>.checkpoint`` beside the ``__cluster_metadata-0``
    log, local folders) whose SnapshotHeader says its last record is at or
    before ``time``, then the log's records from the snapshot's end offset
    whose timestamps are at or before ``time``, applied in order
    (PartitionChangeRecord deltas, RemoveTopicRecord, a ConfigRecord with a
    null value deleting the config, fencing and registration changes,
    feature levels; a metadata transaction's records only once its
    EndTransactionRecord is in, none when it was aborted). Without such a snapshot the log is replayed from its
    start, which must then be offset 0 (a log whose start was deleted after
    a snapshot can't say what came before). ``path`` is the metadata log
    dir or the ``__cluster_metadata-0`` folder; ``time`` epoch ms, ISO-8601
    text or a datetime; ``definitions`` as in :func:`kafkabatch.decode`.

    For Spark: ``spark.createDataFrame(image.partitions.to_pandas())``.
    """
    time_us = _moment(time)
    time_ms = time_us // 1000
    segments = _segments_of(path, "cluster_metadata", topics)
    snapshots = _snapshots(segments, path)
    if not segments and not snapshots:
        raise FileNotFoundError(f"no __cluster_metadata log or snapshot under {os.fspath(path)!r}")
    internal = _internal("cluster_metadata", definitions)
    image = _Image()
    skipped = 0
    used: str | None = None
    start = 0
    last_offset = -1
    for end_offset, _epoch, snap_path in snapshots:
        table = read_segment(
            snap_path, internal="cluster_metadata", definitions=internal.definitions, include_control=True
        )
        header = [r for r in _records(table.slice(0, 1)) if r[0] == "snapshot_header" and r[1] is not None]
        if not header:
            warnings.warn(f"{snap_path}: no SnapshotHeader first; snapshot left out", stacklevel=2)
            continue
        if header[0][1]["lastContainedLogTimestamp"] > time_ms:  # type: ignore[index]
            continue
        for column, record, _offset, error in _records(table):
            if error is not None:
                skipped += 1
            elif record is not None:
                image.apply(column, record)
        used, start, last_offset = snap_path, end_offset, end_offset - 1
        break
    if used is None and segments:
        first = min(s.base_offset or 0 for s in segments)
        if first > 0:
            raise ValueError(
                f"the metadata log under {os.fspath(path)!r} starts at offset {first} and no snapshot is at or before "
                f"{_until(time_us - 1).isoformat()}: the state before its start is unknown"
            )
    if segments:
        names = sorted({s.topic for s in segments})
        log = scan_log(
            path,
            where=RecordFilter.where("topic", "in", names),
            start_offset=start or None,
            end_timestamp=_until(time_us),
            internal=internal.kind,
            definitions=internal.definitions,
        ).read_all()
        # KIP-868's metadata transactions: the records between a Begin and its End
        # apply together at the End; an Abort, or no End by `time`, drops them.
        pending: list[tuple[str, dict[str, Any]]] | None = None
        for column, record, offset, error in _records(log):
            if error is not None:
                skipped += 1
            elif column == "begin_transaction_record":
                pending = []
            elif column == "end_transaction_record":
                for held in pending or ():
                    image.apply(*held)
                pending = None
            elif column == "abort_transaction_record":
                pending = None
            elif record is not None:
                if pending is None:
                    image.apply(column, record)
                else:
                    pending.append((column, record))
            last_offset = max(last_offset, offset)
    if skipped:
        warnings.warn(f"cluster_image_at: {skipped} metadata records did not decode and were left out", stacklevel=2)
    tables = image.tables()
    return ClusterImage(**tables, time=_until(time_us - 1), snapshot=used, last_offset=last_offset, skipped=skipped)
