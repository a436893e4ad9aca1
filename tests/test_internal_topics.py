"""Kafka's internal topics decoded against bytes written from Kafka's definitions by an independent encoder.

The fixtures (``kafka_internal_records``) write ``__consumer_offsets``,
``__transaction_state``, ``__cluster_metadata`` (log and ``.checkpoint``) and
``__remote_log_metadata`` partitions byte for byte from hand-transcribed
definitions; consumer-protocol member bytes come from kafka-python and
aiokafka. Every field decoded is compared with the field written; the "at
time" answers with a replay of the fixtures' event lists.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import shutil
import struct
import uuid

import kafka_internal_records as K
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import kafkabatch as kb


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    return K.build(tmp_path_factory.mktemp("internal") / "data")


def snake(name: str) -> str:
    """A record type's column name: snake_case, ``KRaft`` as one word."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.replace("KRaft", "Kraft")).lower()


def camel(name: str) -> str:
    """A definition's field name as the tables name it (Kafka's JSON converters' camelCase)."""
    return name[:1].lower() + name[1:]


def uuid_bytes(value) -> bytes:
    """A decoded UUID as 16 bytes, whatever form the table gives it in."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return value.bytes
    try:
        return uuid.UUID(value).bytes
    except ValueError:
        return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def check(actual, expected, where: str) -> None:
    """``actual`` (decoded) equals ``expected`` (written); an absent field is null or its default."""
    if isinstance(expected, K.Absent):
        if actual is None:
            return
        check(actual, expected.default, where + " (absent: its default)")
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: {actual!r} is not a struct"
        for name, value in expected.items():
            name = camel(name)
            assert name in actual, f"{where}: no field {name!r} (fields: {sorted(actual)})"
            check(actual[name], value, f"{where}.{name}")
        return
    if isinstance(expected, list):
        assert actual is not None and len(actual) == len(expected), f"{where}: {actual!r} != {expected!r}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            check(a, e, f"{where}[{i}]")
        return
    if isinstance(expected, bytes) and isinstance(actual, str):
        assert uuid_bytes(actual) == expected, f"{where}: {actual!r} != {expected!r}"
        return
    assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def check_unknown_tags(struct_value: dict, tags, where: str) -> None:
    unknown = struct_value.get("_unknown_tagged_fields")
    got = [(u["tag"], u["data"]) for u in unknown or []]
    assert got == sorted(tags), f"{where}: unknown tagged fields {got!r} != {tags!r}"


def rows_by_offset(table: pa.Table) -> dict[tuple[str, int], dict]:
    return {(f"{r['topic']}-{r['partition']}", r["offset"]): r for r in table.to_pylist()}


def check_event(row: dict, e: K.Event) -> None:
    where = f"{e.partition_folder}@{e.offset} {e.record_type}"
    assert row["error"] is None, f"{where}: {row['error']}"
    assert row["record_type"] == e.record_type, where
    assert row["record_type_id"] == e.record_type_id, where
    assert row["value_version"] == e.value_version, where
    column = snake(e.record_type)
    assert column in row, f"{where}: no column {column!r}"
    decoded = row[column]
    assert decoded is not None, where
    if e.kind in K.COORDINATOR_KINDS:
        assert row["key_version"] == e.key_version, where
        assert row["tombstone"] is e.tombstone, where
        check(decoded["key"], e.expected_key(), where + " key")
        if e.value is None:
            assert decoded["value"] is None, f"{where}: a tombstone has no value"
        else:
            check(decoded["value"], e.expected_value(), where + " value")
            if e.value_message.is_flexible(e.value_version):
                check_unknown_tags(decoded["value"], e.unknown_tags, where)
    else:
        assert row["tombstone"] is False, where
        check(decoded, e.expected_value(), where)
        check_unknown_tags(decoded, e.unknown_tags, where)
    # nothing else is filled on this row
    others = [c for c in row if c.endswith(("_record", "_metadata")) and c != column and row[c] is not None]
    assert not others, f"{where}: other record columns filled: {others}"


# --------------------------------------------------------------------------
# the independent encoder agrees with the client libraries
# --------------------------------------------------------------------------

SUBSCRIPTION = K.M(
    "ConsumerProtocolSubscription",
    "0-3",
    "none",
    [
        K.F("Topics", "[]string"),
        K.F("UserData", "bytes", nullable="0+", default="null"),
        K.F(
            "OwnedPartitions",
            "[]TopicPartition",
            "1+",
            fields=[K.F("Topic", "string", "1+"), K.F("Partitions", "[]int32", "1+")],
        ),
        K.F("GenerationId", "int32", "2+", default="-1"),
        K.F("RackId", "string", "3+", nullable="3+", default="null"),
    ],
)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_encoder_writes_kafka_pythons_consumer_protocol_bytes(version):
    """The fixtures' hand-written encoder gives kafka-python's bytes for the consumer protocol."""
    ours = struct.pack(">h", version) + K.write_message(
        SUBSCRIPTION,
        {
            "Topics": ["orders", "pay"],
            "UserData": b"\x01\x02",
            "OwnedPartitions": [{"Topic": "orders", "Partitions": [3, 1]}],
            "GenerationId": 9,
            "RackId": "r1",
        },
        version,
    )
    theirs = K.kafka_python_subscription(version, ["orders", "pay"], b"\x01\x02", [("orders", [3, 1])], 9, "r1")
    assert ours == theirs


def test_aiokafka_and_kafka_python_agree_on_v0_member_bytes():
    assert K.aiokafka_subscription(["a", "b"], b"u") == K.kafka_python_subscription(0, ["a", "b"], b"u")
    assert K.aiokafka_assignment([("a", [0, 1])], b"") == K.kafka_python_assignment(0, [("a", [0, 1])], b"")


# --------------------------------------------------------------------------
# every record type and version, every field
# --------------------------------------------------------------------------


def test_consumer_offsets_every_field(logs):
    table = kb.scan_log(logs.root, internal="auto", where=_topics("__consumer_offsets")).read_all()
    rows = rows_by_offset(table)
    assert len(rows) == len(logs.consumer_offsets)
    for e in logs.consumer_offsets:
        check_event(rows[(e.partition_folder, e.offset)], e)
    seen = {(e.record_type_id, e.value_version) for e in logs.consumer_offsets}
    # every key type written, every value version of the classic records
    assert {(0, v) for v in range(5)} | {(1, v) for v in range(5)} <= seen | {(0, None), (1, None)}
    assert {(2, v) for v in range(5)} <= seen


def test_consumer_offsets_types_and_codecs(logs):
    """lz4 batches in __consumer_offsets-0, uncompressed in -1: the kinds of each are read."""
    counts = (
        kb.scan_log(logs.root, internal="auto", where=_topics("__consumer_offsets"))
        .read_all()
        .group_by(["partition", "record_type"])
        .aggregate([("offset", "count")])
    )
    got = {(r["partition"], r["record_type"]): r["offset_count"] for r in counts.to_pylist()}
    want: dict = {}
    for e in logs.consumer_offsets:
        key = (int(e.partition_folder.rsplit("-", 1)[1]), e.record_type)
        want[key] = want.get(key, 0) + 1
    assert got == want


def test_transaction_state_every_field(logs):
    table = kb.read_segment(logs.root / "__transaction_state-0" / f"{0:020d}.log", internal="auto")
    rows = rows_by_offset(table)
    assert len(rows) == len(logs.transaction_state)
    for e in logs.transaction_state:
        check_event(rows[(e.partition_folder, e.offset)], e)


def test_cluster_metadata_log_every_field(logs):
    table = kb.scan_log(
        logs.root / "__cluster_metadata-0", internal="cluster_metadata", include_control=True
    ).read_all()
    rows = rows_by_offset(table)
    assert len(rows) == len(logs.cluster_metadata)
    for e in logs.cluster_metadata:
        check_event(rows[(e.partition_folder, e.offset)], e)
    # several versions each, flexible, tagged fields set and an unknown tag
    versions = {(e.record_type, e.value_version) for e in logs.cluster_metadata}
    assert {("PartitionRecord", v) for v in range(3)} <= versions
    assert {("PartitionChangeRecord", v) for v in range(3)} <= versions
    assert {("RegisterBrokerRecord", v) for v in range(4)} <= versions
    assert any(e.unknown_tags for e in logs.cluster_metadata)


def test_cluster_metadata_without_control_records(logs):
    table = kb.scan_log(logs.root / "__cluster_metadata-0", internal="auto").read_all()
    assert table.num_rows == sum(1 for e in logs.cluster_metadata if not e.control)
    assert pc.all(pc.is_null(table["error"])).as_py()


def test_snapshot_checkpoint(logs):
    folder = logs.root / "__cluster_metadata-0"
    (path,) = folder.glob("*.checkpoint")
    assert path.name == f"{logs.snapshot_end_offset:020d}-{logs.snapshot_epoch:010d}.checkpoint"
    table = kb.read_segment(path, internal="auto", include_control=True)
    assert table.column("topic").unique().to_pylist() == ["__cluster_metadata"]
    rows = rows_by_offset(table)
    assert len(rows) == len(logs.snapshot)
    for e in logs.snapshot:
        check_event(rows[(e.partition_folder, e.offset)], e)
    first, last = table["record_type"][0].as_py(), table["record_type"][-1].as_py()
    assert (first, last) == ("SnapshotHeader", "SnapshotFooter")


def test_remote_log_metadata_every_field(logs):
    table = kb.scan_log(logs.root / "__remote_log_metadata-0", internal="auto").read_all()
    rows = rows_by_offset(table)
    assert len(rows) == len(logs.remote_log_metadata)
    for e in logs.remote_log_metadata:
        check_event(rows[(e.partition_folder, e.offset)], e)


def test_group_members_consumer_protocol(logs):
    """Member bytes come back as written, and decoded as kafka-python and aiokafka decode them."""
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

    table = kb.scan_log(logs.root / "__consumer_offsets-0", internal="auto").read_all()
    groups = table.filter(pc.and_(pc.equal(table["record_type"], "GroupMetadata"), pc.invert(table["tombstone"])))
    members = [m for v in pc.struct_field(groups["group_metadata"], "value").to_pylist() for m in v["members"]]
    written = {
        m["memberId"]: m
        for e in logs.consumer_offsets
        if e.record_type == "GroupMetadata" and e.value
        for m in e.value["members"]
    }
    assert len(members) == len(written) > 4
    for m in members:
        assert m["subscription"] == written[m["memberId"]]["subscription"]
        assert m["assignment"] == written[m["memberId"]]["assignment"]
        # the decoded subscription and assignment, as kafka-python (and aiokafka for v0) read the same bytes
        version = struct.unpack_from(">h", m["subscription"])[0]
        theirs = ConsumerProtocolSubscription.decode(m["subscription"])
        ours = m["consumerProtocolSubscription"]
        assert ours["topics"] == list(theirs.topics)
        assert ours["userData"] == theirs.user_data
        if version >= 1:
            owned = [{"topic": tp.topic, "partitions": list(tp.partitions)} for tp in theirs.owned_partitions]
            assert ours["ownedPartitions"] == owned
        if version >= 2:
            assert ours["generationId"] == theirs.generation_id
        if version >= 3:
            assert ours["rackId"] == theirs.rack_id
        assignment = ConsumerProtocolAssignment.decode(m["assignment"])
        assigned = [{"topic": tp.topic, "partitions": list(tp.partitions)} for tp in assignment.assigned_partitions]
        assert m["consumerProtocolAssignment"]["assignedPartitions"] == assigned
        assert m["consumerProtocolAssignment"]["userData"] == assignment.user_data
        if version == 0:
            aio = ConsumerProtocolMemberMetadata.decode(m["subscription"])
            assert ours["topics"] == list(aio.subscription)
            assert ours["userData"] == aio.user_data
            aio_assignment = ConsumerProtocolMemberAssignment.decode(m["assignment"])
            assert [(a["topic"], a["partitions"]) for a in assigned] == [
                (t, list(p)) for t, p in aio_assignment.assignment
            ]


def test_classic_member_metadata_tagged_struct(logs):
    """KIP-848 member records: the tagged ClassicMemberMetadata struct and an unknown tag beside it."""
    table = kb.scan_log(logs.root / "__consumer_offsets-1", internal="auto").read_all()
    members = table.filter(pc.equal(table["record_type"], "ConsumerGroupMemberMetadata"))
    values = pc.struct_field(members["consumer_group_member_metadata"], "value").to_pylist()
    classic = [v["classicMemberMetadata"] for v in values]
    assert classic[0] is None
    assert classic[1]["sessionTimeoutMs"] == 10000
    assert classic[1]["supportedProtocols"][0]["name"] == "range"


# --------------------------------------------------------------------------
# hostile input: a per-row error, never a crash
# --------------------------------------------------------------------------


def test_hostile_records_get_a_per_row_error(tmp_path):
    good = K.coordinator_event(
        "consumer_offsets",
        K.CONSUMER_OFFSETS_TYPES,
        1,
        {"group": "g", "topic": "t", "partition": 0},
        3,
        {"offset": 5, "leaderEpoch": 1, "metadata": "", "commitTimestamp": K.T0},
        K.T0,
    )
    flexible = K.write_message(
        K.OFFSET_COMMIT_VALUE, {"offset": 1, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 0}, 4
    )
    bad = [
        (good.raw_key[:5], good.raw_value),  # key truncated inside the group name
        (struct.pack(">h", 99) + good.raw_key[2:], good.raw_value),  # unknown record type
        (good.raw_key, struct.pack(">h", 99) + good.raw_value[2:]),  # value version out of range
        (good.raw_key, good.raw_value[:9]),  # value truncated
        (good.raw_key, struct.pack(">h", 4) + flexible[:-1] + b"\x01\x07\x7f\x00"),  # a tag's size past the end
        (
            struct.pack(">h", 2) + K.write_message(K.GROUP_METADATA_KEY, {"group": "g"}, 2),
            struct.pack(">hhi", 0, 0, 0) + b"\xff\xff\xff\xff" + b"\x7f\xff\xff\xff",  # members count past the end
        ),
        (b"", good.raw_value),  # an empty key
        (None, good.raw_value),  # no key at all
    ]
    records = [{"key": good.raw_key, "value": good.raw_value, "timestamp": K.T0}]
    records += [{"key": k, "value": v, "timestamp": K.T0} for k, v in bad]
    records += [{"key": good.raw_key, "value": good.raw_value, "timestamp": K.T0}]
    path = tmp_path / "__consumer_offsets-3" / f"{0:020d}.log"
    kb.write_segment(path, records, compression="lz4")
    table = kb.read_segment(path, internal="auto")
    errors = table["error"].to_pylist()
    assert errors[0] is None and errors[-1] is None
    assert all(isinstance(e, str) and e for e in errors[1:-1]), errors
    for row in (table.slice(0, 1).to_pylist()[0], table.slice(len(records) - 1).to_pylist()[0]):
        check_event(row, dataclasses.replace(good, partition_folder="__consumer_offsets-3", offset=row["offset"]))


def test_hostile_metadata_frames(tmp_path):
    good = K.framed_event("cluster_metadata", K.METADATA, 12, 0, {"Name": "f", "FeatureLevel": 1}, K.T0)
    body = good.raw_value[3:]
    values = [
        good.raw_value,
        b"\x00\x0c\x00" + body,  # frame version 0
        b"\x01\xe7\x07\x00" + body,  # api key 999
        b"\x01\x0c\x09" + body,  # version 9 of a version-0 record
        good.raw_value + b"\x00",  # garbage after the record
        b"\x01\x0c",  # the frame cut short
        b"\x01\x02\x00\xff\xff\xff\xff\x0f",  # a string length far past the end
        good.raw_value,
    ]
    path = tmp_path / "__cluster_metadata-0" / f"{0:020d}.log"
    kb.write_segment(path, [{"value": v, "timestamp": K.T0} for v in values])
    table = kb.read_segment(path, internal="auto")
    errors = table["error"].to_pylist()
    assert errors[0] is None and errors[-1] is None
    assert all(isinstance(e, str) and e for e in errors[1:-1]), errors
    assert table["feature_level_record"][0].as_py()["name"] == "f"


# --------------------------------------------------------------------------
# the options
# --------------------------------------------------------------------------


def test_internal_is_off_by_default_and_named_kinds_work(logs):
    path = logs.root / "__transaction_state-0" / f"{0:020d}.log"
    assert kb.read_segment(path).schema == kb.SCHEMA
    data = path.read_bytes()
    forced = kb.decode(data, internal="transaction_state")  # no topic: the kind is named
    by_name = kb.decode(data, topic="__transaction_state", internal="auto")
    assert forced["transaction_log"].to_pylist() == by_name["transaction_log"].to_pylist()
    mapped = kb.decode(
        data, topic="mirror.__transaction_state", internal={"mirror.__transaction_state": "transaction_state"}
    )
    assert mapped["transaction_log"].to_pylist() == by_name["transaction_log"].to_pylist()
    assert kb.decode(data, topic="orders", internal="auto").schema == kb.SCHEMA


def test_internal_keyword_errors(logs):
    path = logs.root / "__transaction_state-0" / f"{0:020d}.log"
    with pytest.raises(TypeError, match="did you mean 'internal'"):
        kb.read_segment(path, interal="auto")
    with pytest.raises(TypeError, match="did you mean 'internal'"):
        kb.scan_log(path, internl="auto")
    with pytest.raises(ValueError, match="did you mean 'consumer_offsets'"):
        kb.read_segment(path, internal="consumer_offset")
    with pytest.raises(FileNotFoundError, match="definitions"):
        kb.read_segment(path, internal="auto", definitions=logs.root / "nowhere")
    with pytest.raises(ValueError, match="value_format"):
        kb.read_segment(path, internal="auto", value_format="string")


def _topics(*names: str):
    from kafkabatch.log.prune import RecordFilter

    return RecordFilter.where("topic", "in", list(names))


# --------------------------------------------------------------------------
# state at a point in time
# --------------------------------------------------------------------------


def _offsets_rows(table: pa.Table) -> dict:
    return {
        (r["group"], r["topic"], r["partition"]): {
            "offset": r["offset"],
            "metadata": r["metadata"],
            "commit_timestamp": r["commit_timestamp"],
            "leader_epoch": -1 if r["leader_epoch"] is None else r["leader_epoch"],
        }
        for r in table.to_pylist()
    }


@pytest.mark.parametrize("hours", [-1, 0, 1.5, 2.5, 6, 12.25, 20.0, 21, 23, 30])
def test_consumer_offsets_at_matches_a_replay(logs, hours):
    time = K.T0 + int(hours * K.HOUR) + 10
    table = kb.consumer_offsets_at(logs.root, time)
    want = K.replay_offsets(logs.consumer_offsets, time)
    got = _offsets_rows(table)
    for v in got.values():
        v["commit_timestamp"] = int(v["commit_timestamp"].timestamp() * 1000)
    assert got == want
    assert table.schema.field("commit_timestamp").type == pa.timestamp("ms", tz="UTC")


def test_consumer_offsets_at_one_group_and_exact_time(logs):
    e = next(e for e in logs.consumer_offsets if e.record_type == "OffsetCommit" and e.key["group"] == "audit")
    at = kb.consumer_offsets_at(logs.root, e.timestamp, group="audit")
    before = kb.consumer_offsets_at(logs.root, e.timestamp - 1, group="audit")
    assert set(at["group"].to_pylist()) == {"audit"}
    assert at.num_rows == before.num_rows + 1  # a record at exactly `time` counts
    with pytest.raises(FileNotFoundError, match="__consumer_offsets"):
        kb.consumer_offsets_at(logs.root / "orders-0", e.timestamp)


def _image_expected(state: dict) -> dict:
    topics = sorted(state["topics"].values(), key=lambda t: t["name"])
    uid = lambda b: base64.urlsafe_b64encode(K._uuid_bytes(b)).decode().rstrip("=")  # noqa: E731
    return {
        "topics": [{"topic": t["name"], "topic_id": uid(t["id"]), "partitions": len(t["partitions"])} for t in topics],
        "partitions": [
            {
                "topic": t["name"],
                "partition": pid,
                "leader": p["Leader"],
                "leader_epoch": p["LeaderEpoch"],
                "partition_epoch": p["PartitionEpoch"],
                "replicas": p["Replicas"],
                "isr": p["Isr"],
                "removing_replicas": p["RemovingReplicas"],
                "adding_replicas": p["AddingReplicas"],
                "eligible_leader_replicas": p["EligibleLeaderReplicas"] or [],
                "last_known_elr": p["LastKnownElr"] or [],
                "leader_recovery_state": p["LeaderRecoveryState"],
                "directories": [uid(d) for d in p["Directories"] or []],
            }
            for t in topics
            for pid, p in sorted(t["partitions"].items())
        ],
        "configs": [
            {"resource_type_id": k[0], "resource_name": k[1], "name": k[2], "value": v}
            for k, v in sorted(state["configs"].items())
        ],
        "brokers": [
            {
                "broker_id": b["BrokerId"],
                "broker_epoch": b["BrokerEpoch"],
                "rack": b["Rack"],
                "fenced": b["Fenced"],
                "in_controlled_shutdown": b["InControlledShutdown"],
                "is_migrating_zk_broker": b["IsMigratingZkBroker"],
                "log_dirs": [uid(d) for d in b["LogDirs"]],
                "endpoints": [
                    {
                        "name": x["Name"],
                        "host": x["Host"],
                        "port": x["Port"],
                        "security_protocol": x["SecurityProtocol"],
                    }
                    for x in b["EndPoints"]
                ],
            }
            for _, b in sorted(state["brokers"].items())
        ],
        "features": [{"name": n, "level": v} for n, v in sorted(state["features"].items())],
    }


def _image_got(image) -> dict:
    keep = {
        "topics": ["topic", "topic_id", "partitions"],
        "partitions": list(_image_expected_keys("partitions")),
        "configs": ["resource_type_id", "resource_name", "name", "value"],
        "brokers": list(_image_expected_keys("brokers")),
        "features": ["name", "level"],
    }
    return {name: getattr(image, name).select(cols).to_pylist() for name, cols in keep.items()}


def _image_expected_keys(name: str):
    sample = {
        "partitions": [
            "topic", "partition", "leader", "leader_epoch", "partition_epoch", "replicas", "isr", "removing_replicas",
            "adding_replicas", "eligible_leader_replicas", "last_known_elr", "leader_recovery_state", "directories",
        ],
        "brokers": [
            "broker_id", "broker_epoch", "rack", "fenced", "in_controlled_shutdown", "is_migrating_zk_broker",
            "log_dirs", "endpoints",
        ],
    }  # fmt: skip
    return sample[name]


@pytest.mark.parametrize(
    "offset_ms", [0, 5, 13, K.HOUR, K.HOUR + 3, 2 * K.HOUR - 1, 2 * K.HOUR + 1, 2 * K.HOUR + 4, 3 * K.HOUR, 9 * K.HOUR]
)
def test_cluster_image_at_matches_a_replay(logs, offset_ms):
    time = K.T0 + offset_ms
    image = kb.cluster_image_at(logs.root, time)
    assert _image_got(image) == _image_expected(K.replay_cluster(logs.cluster_metadata, time))
    snapshot_time = max(e.timestamp for e in logs.cluster_metadata[: logs.snapshot_end_offset])
    assert (image.snapshot is not None) == (time >= snapshot_time)


def test_cluster_image_from_the_snapshot_when_the_log_start_is_gone(logs, tmp_path):
    """After a snapshot, Kafka deletes the log before it: the image needs the snapshot."""
    folder = tmp_path / "__cluster_metadata-0"
    shutil.copytree(logs.root / "__cluster_metadata-0", folder)
    (folder / f"{0:020d}.log").unlink()
    for offset_ms in (2 * K.HOUR - 1, 2 * K.HOUR + 2, 5 * K.HOUR):
        time = K.T0 + offset_ms
        image = kb.cluster_image_at(folder, time)
        assert image.snapshot is not None
        assert _image_got(image) == _image_expected(K.replay_cluster(logs.cluster_metadata, time))
    with pytest.raises(ValueError, match="starts at offset 14"):
        kb.cluster_image_at(folder, K.T0 + 5)


def test_at_time_tables_go_to_spark_shapes(logs):
    """Spark-friendly: plain Arrow types pandas and Spark take (no unsigned, no views)."""
    image = kb.cluster_image_at(logs.root, K.T0 + 9 * K.HOUR)
    offsets = kb.consumer_offsets_at(logs.root, K.T0 + 9 * K.HOUR)
    for table in (offsets, image.topics, image.partitions, image.configs, image.brokers, image.features):
        frame = table.to_pandas()
        assert len(frame) == table.num_rows
        for f in table.schema:
            assert not pa.types.is_unsigned_integer(f.type), f


# --------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from kafkabatch.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_dump_offsets_decoder(logs, capsys):
    """kafka-dump-log's --offsets-decoder: each record's key and payload as JSON, <DELETE> for a tombstone."""
    path = logs.root / "__consumer_offsets-0" / f"{0:020d}.log"
    code, out, _ = _cli(capsys, "dump", "--offsets-decoder", str(path))
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith("| offset: ")]
    events = [e for e in logs.consumer_offsets if e.partition_folder == "__consumer_offsets-0"]
    events = [e for e in events if e.offset < len(lines)]
    assert len(lines) == len(events) > 10
    for line, e in zip(lines, events):
        key_text = line.split(" key: ", 1)[1].split(" payload: ", 1)[0]
        key = json.loads(key_text)
        assert key["type"] == str(e.key_version)
        check(key["data"], e.expected_key(), f"line {line[:30]}")
        payload = line.split(" payload: ", 1)[1]
        if e.value is None:
            assert payload == "<DELETE>"
        else:
            value = json.loads(payload)
            assert value["version"] == str(e.value_version)
            assert (
                value["data"]["offset" if e.record_type == "OffsetCommit" else "generation"]
                == e.value["offset" if e.record_type == "OffsetCommit" else "generation"]
            )


def test_cli_dump_json_cluster_metadata(logs, capsys):
    path = logs.root / "__cluster_metadata-0" / f"{0:020d}.log"
    code, out, _ = _cli(capsys, "dump", "--json", "--include-control", "--cluster-metadata-decoder", str(path))
    assert code == 0
    objs = [json.loads(line) for line in out.splitlines()]
    events = {e.offset: e for e in logs.cluster_metadata}
    assert len(objs) == sum(1 for e in logs.cluster_metadata if e.offset < 14)
    for obj in objs:
        e = events[obj["offset"]]
        assert obj["decode_error"] is None
        assert obj["decoded_key"] is None
        assert obj["decoded_value"]["version"] == e.value_version
        if e.record_type == "TopicRecord":
            assert obj["decoded_value"]["data"]["name"] == e.value["Name"]
            assert uuid_bytes(obj["decoded_value"]["data"]["topicId"]) == K._uuid_bytes(e.value["TopicId"])


def test_cli_decoder_errors(logs, capsys):
    path = logs.root / "__cluster_metadata-0" / f"{0:020d}.log"
    code, _, err = _cli(capsys, "dump", "--decoder", "cluster_metdata", str(path))
    assert code != 0 and "did you mean 'cluster_metadata'" in err
    code, _, err = _cli(capsys, "dump", "--definitions", str(logs.root), str(path))
    assert code != 0 and "--definitions needs --decoder" in err


def test_cli_convert_decoder_parquet(logs, tmp_path, capsys):
    import pyarrow.parquet as pq

    out = tmp_path / "offsets.parquet"
    code, _, _ = _cli(capsys, "convert", "-q", "--decoder", "auto", str(logs.root / "__transaction_state-0"), str(out))
    assert code == 0
    written = pq.read_table(out)
    expected = kb.scan_log(logs.root / "__transaction_state-0", internal="auto").read_all()
    assert written.column_names == expected.column_names
    assert written["transaction_log"].to_pylist() == expected["transaction_log"].to_pylist()
    assert written["record_type"].to_pylist() == ["TransactionLog"] * len(logs.transaction_state)


# --------------------------------------------------------------------------
# Spark
# --------------------------------------------------------------------------


def test_spark_internal_topic_option(logs, spark, kafka_log):
    df = spark.read.format(kafka_log).option("internalTopic", "auto").load(str(logs.root / "__consumer_offsets-1"))
    names = df.schema.fieldNames()
    assert names[:8] == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    assert {"record_type", "consumer_group_member_metadata", "error"} <= set(names)
    rows = df.where("record_type = 'ConsumerGroupMemberMetadata'").orderBy("offset").collect()
    expected = [e for e in logs.consumer_offsets if e.record_type == "ConsumerGroupMemberMetadata"]
    assert len(rows) == len(expected)
    for row, e in zip(rows, expected):
        check(row["consumer_group_member_metadata"]["key"].asDict(recursive=True), e.expected_key(), "spark key")
        check(row["consumer_group_member_metadata"]["value"].asDict(recursive=True), e.expected_value(), "spark value")
    # SQL on the typed columns, no JSON parsing
    df.createOrReplaceTempView("co")
    groups = spark.sql(
        "SELECT DISTINCT consumer_group_member_metadata.key.groupId AS g FROM co WHERE consumer_group_member_metadata IS NOT NULL"
    )
    assert [r.g for r in groups.collect()] == ["modern"]
    # unsigned ints widened and UUIDs as binary, as Spark takes them
    meta = (
        spark.read.format(kafka_log)
        .option("internalTopic", "cluster_metadata")
        .load(str(logs.root / "__cluster_metadata-0"))
    )
    brokers = meta.where("record_type = 'RegisterBrokerRecord'").orderBy("offset").collect()
    written = [e for e in logs.cluster_metadata if e.record_type == "RegisterBrokerRecord"]
    assert [b["register_broker_record"]["endPoints"][1]["port"] for b in brokers] == [65535] * len(written)
    assert [bytes(b["register_broker_record"]["incarnationId"]) for b in brokers] == [
        K._uuid_bytes(e.value["IncarnationId"]) for e in written
    ]
    with pytest.raises(Exception, match="did you mean 'internalTopic'"):
        spark.read.format(kafka_log).option("internalTopics", "auto").load(str(logs.root / "__consumer_offsets-1"))


def test_spark_definitions_option(tmp_path, spark, kafka_log):
    """definitions on both sources; the JVM source reads the folder on the driver and carries the
    definitions to the tasks, which decode without it."""
    folder, path = offset_commit_v5(tmp_path)
    builtin = spark.read.format(kafka_log).option("internalTopic", "auto").load(str(path.parent))
    assert builtin.select("error").first()["error"]  # version 5 is past the built-in definition's versions
    df = spark.read.format(kafka_log).options(internalTopic="auto", definitions=str(folder)).load(str(path.parent))
    if kafka_log == "kafka-log-jvm":
        shutil.rmtree(folder)
    row = df.select("offset_commit", "error", "record_type").first()
    assert (row["error"], row["record_type"]) == (None, "OffsetCommit")
    decoded = row["offset_commit"]["value"]
    assert (decoded["offset"], decoded["metadata"], bytes(decoded["topicId"])) == (7, "m", V5_TOPIC_ID)
    assert decoded["_unknown_tagged_fields"] == []


def test_spark_internal_topic_errors(logs, tmp_path, spark, kafka_log):
    """Bad internalTopic and definitions options fail load() with the same texts on both sources."""
    path = str(logs.root / "__consumer_offsets-1")
    cases = [
        (
            {"internalTopic": "consumer_offset"},
            "kafka-log option 'internalTopic': unknown internal 'consumer_offset': use 'auto', 'none' or one of "
            "consumer_offsets, transaction_state, share_group_state, cluster_metadata, remote_log_metadata; "
            "did you mean 'consumer_offsets'?",
        ),
        (
            {"internalTopic": '{"mirror.offsets": "consumer_ofsets"}'},
            "kafka-log option 'internalTopic': unknown internal kind for topic 'mirror.offsets' 'consumer_ofsets': "
            "use 'auto', 'none' or one of consumer_offsets, transaction_state, share_group_state, "
            "cluster_metadata, remote_log_metadata; did you mean 'consumer_offsets'?",
        ),
        (
            {"internalTopic": "auto", "definitions": str(tmp_path / "missing")},
            f"kafka-log option 'definitions': no folder '{tmp_path / 'missing'}' "
            "(a folder of Kafka's *.json message definitions)",
        ),
        (
            {"definitions": str(tmp_path)},
            "kafka-log option 'definitions' needs option 'internalTopic' (auto or a kind)",
        ),
        (
            {"internalTopic": "auto", "valueFormat": "json"},
            "kafka-log option 'internalTopic' decodes the raw key and value: it can't be combined with valueformat",
        ),
    ]
    for options, text in cases:
        with pytest.raises(Exception, match=re.escape(text)):
            spark.read.format(kafka_log).options(**options).load(path)


def test_spark_internal_topic_pruned_and_counted(logs, spark, kafka_log):
    """Without a decoded column selected, a read is the plain one (the JVM source answers count() from
    batch headers, as without internalTopic); a decoded column alone reads its rows."""
    path = str(logs.root / "__consumer_offsets-1")
    df = spark.read.format(kafka_log).option("internalTopic", "auto").load(path)
    assert df.count() == kb.scan_log(path).read_all().num_rows
    if kafka_log == "kafka-log-jvm":
        plan = df.groupBy().count()._jdf.queryExecution().executedPlan().toString()
        assert "LocalTableScan" in plan and "BatchScan" not in plan, plan
    types = [r["record_type"] for r in df.select("record_type").collect()]
    want = kb.scan_log(path, internal="auto").read_all()["record_type"].to_pylist()
    assert sorted(types, key=str) == sorted(want, key=str)


def test_spark_internal_topic_stream(logs, tmp_path, spark, kafka_log):
    """A stream decodes the internal topics' records as a batch read does."""
    from test_stream import run

    path = logs.root / "__consumer_offsets-1"
    run(spark, path, tmp_path / "ck", tmp_path / "out", source=kafka_log, internalTopic="auto")
    column = "consumer_group_member_metadata"
    got = spark.read.parquet(str(tmp_path / "out")).select("offset", "record_type", "error", column).collect()
    want = {r["offset"]: r for r in kb.scan_log(path, internal="auto").read_all().to_pylist()}
    assert sorted(r["offset"] for r in got) == sorted(want)
    members = 0
    for row in got:
        expected = want[row["offset"]]
        assert (row["record_type"], row["error"]) == (expected["record_type"], expected["error"])
        if expected[column] is not None:
            members += 1
            assert row[column]["key"]["groupId"] == expected[column]["key"]["groupId"]
            assert row[column]["value"]["clientId"] == expected[column]["value"]["clientId"]
    assert members > 0


# --------------------------------------------------------------------------
# the docs' example
# --------------------------------------------------------------------------


def test_docs_lag_example(logs, capsys):
    """docs/internal-topics.md's lag example, run on the fixture log dir, against a replay of the events."""
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "internal-topics.md").read_text()
    section = text[text.index("### Example: a group's lag over a day") :]
    code = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    scope: dict = {}
    exec(compile(code.replace('"/tmp/kafka-internal"', repr(str(logs.root))), "internal-topics.md", "exec"), scope)
    printed = capsys.readouterr().out
    lag = scope["lag"].to_pylist()
    assert len(lag) == 48
    for row in lag:
        at_ms = int(row["at"].timestamp() * 1000)
        committed = K.replay_offsets(logs.consumer_offsets, at_ms)[("billing", "orders", row["partition"])]["offset"]
        n = logs.orders_end_offsets[row["partition"]]
        end = (at_ms - K.T0) // (24 * K.HOUR // n) + 1  # the fixture writes record i at T0 + i * (day // n)
        assert (row["committed"], row["end"], row["lag"]) == (committed, end, end - committed)
    shown = re.findall(r"```text\n(.*?)```", section, re.S)[-1]
    assert printed.split() == shown.split()


#: Kafka's JSON format (comments included) for a newer OffsetCommitValue whose tagged field 9 the
#: built-in definition doesn't know.
OFFSET_COMMIT_VALUE_V5 = """// Licensed to the Apache Software Foundation (ASF) under one or more contributor license agreements.
{
  "type": "data",
  "name": "OffsetCommitValue",
  // a version 5 with a tagged field, as a newer Kafka could ship
  "validVersions": "0-5",
  "flexibleVersions": "4+",
  "fields": [
    { "name": "offset", "type": "int64", "versions": "0+" },
    { "name": "leaderEpoch", "type": "int32", "versions": "3+", "default": -1, "ignorable": true},
    { "name": "metadata", "type": "string", "versions": "0+" },
    { "name": "commitTimestamp", "type": "int64", "versions": "0+" },
    { "name": "expireTimestamp", "type": "int64", "versions": "1", "default": -1, "ignorable": true},
    { "name": "topicId", "type": "uuid", "versions": "5+", "taggedVersions": "5+", "tag": 9 }
  ]
}
"""

V5_TOPIC_ID = uuid.UUID("6f1c3b0a-54d2-4e0b-9a43-0c1d2e3f4a5b").bytes


def offset_commit_v5(tmp_path):
    """A definitions folder with :data:`OFFSET_COMMIT_VALUE_V5`, and a ``__consumer_offsets`` segment of one
    version 5 commit (offset 7, metadata ``m``, topicId :data:`V5_TOPIC_ID`)."""
    folder = tmp_path / "message"
    folder.mkdir()
    (folder / "OffsetCommitValue.json").write_text(OFFSET_COMMIT_VALUE_V5)
    value = K.write_message(
        K.OFFSET_COMMIT_VALUE, {"offset": 7, "leaderEpoch": 1, "metadata": "m", "commitTimestamp": K.T0}, 4
    )
    value = value[:-1] + b"\x01\x09\x10" + V5_TOPIC_ID  # the tagged field, as version 5 writes it
    key = struct.pack(">h", 1) + K.write_message(K.OFFSET_COMMIT_KEY, {"group": "g", "topic": "t", "partition": 0}, 1)
    path = tmp_path / "__consumer_offsets-0" / f"{0:020d}.log"
    kb.write_segment(path, [{"key": key, "value": struct.pack(">h", 5) + value, "timestamp": K.T0}])
    return folder, path


def test_user_definitions_replace_the_built_in_ones(tmp_path):
    """definitions=: a newer OffsetCommitValue whose tagged field 9 the built-in definition doesn't know
    decodes by name instead of as an unknown tag."""
    folder, path = offset_commit_v5(tmp_path)
    topic_id = V5_TOPIC_ID
    builtin = kb.read_segment(path, internal="auto")
    assert builtin["error"][0].as_py()  # version 5 is past the built-in definition's versions
    loaded = kb.read_segment(path, internal="auto", definitions=folder)
    assert loaded["error"][0].as_py() is None
    decoded = loaded["offset_commit"][0].as_py()["value"]
    assert (decoded["offset"], decoded["metadata"], uuid_bytes(decoded["topicId"])) == (7, "m", topic_id)
    assert decoded["_unknown_tagged_fields"] == []
    # The folder is read once and kept while its files stay as they are; a changed file is read again.
    assert kb.read_segment(path, internal="auto", definitions=folder)["error"][0].as_py() is None
    text = (folder / "OffsetCommitValue.json").read_text()
    (folder / "OffsetCommitValue.json").write_text(text.replace('"0-5"', '"0-4" '))
    assert kb.read_segment(path, internal="auto", definitions=folder)["error"][0].as_py()


def test_consumer_offsets_at_counts_committed_transactions_only(tmp_path):
    """sendOffsetsToTransaction: offsets of an aborted transaction never count, a committed one's do."""
    commits = [
        K._offset_commit("tx-group", "orders", 0, 10, K.T0),  # a plain commit
        K._offset_commit("tx-group", "orders", 0, 20, K.T0 + 1),  # in a transaction, then aborted
        K._offset_commit("tx-group", "orders", 0, 30, K.T0 + 3),  # in a transaction, then committed
    ]
    data = kb.encode(K._records(commits[:1]))
    data += kb.encode(
        K._records(commits[1:2]), base_offset=1, producer_id=9, producer_epoch=0, base_sequence=0, transactional=True
    )
    data += kb.control_batch("abort", producer_id=9, producer_epoch=0, base_offset=2, timestamp=K.T0 + 2)
    data += kb.encode(
        K._records(commits[2:]), base_offset=3, producer_id=9, producer_epoch=1, base_sequence=0, transactional=True
    )
    data += kb.control_batch("commit", producer_id=9, producer_epoch=1, base_offset=4, timestamp=K.T0 + 4)
    path = tmp_path / "__consumer_offsets-0" / f"{0:020d}.log"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    assert kb.consumer_offsets_at(tmp_path, K.T0 + 2)["offset"].to_pylist() == [10]
    assert kb.consumer_offsets_at(tmp_path, K.T0 + 9)["offset"].to_pylist() == [30]
    # the markers are control records: with include_control they decode as such, not as broken keys
    rows = kb.read_segment(path, internal="auto", include_control=True)
    assert rows["error"].null_count == rows.num_rows
    assert rows["record_type"].to_pylist() == ["OffsetCommit", "OffsetCommit", "Abort", "OffsetCommit", "Commit"]


def test_cluster_image_tables_by_name(logs):
    image = kb.cluster_image_at(logs.root, K.T0 + 9 * K.HOUR)
    assert image["partitions"] is image.partitions
    assert list(image.tables()) == ["topics", "partitions", "configs", "brokers", "features"]
    with pytest.raises(KeyError, match="holds topics"):
        image["acls"]


def test_share_group_state_every_field(logs):
    table = kb.read_segment(logs.root / "__share_group_state-0" / f"{0:020d}.log", internal="auto")
    rows = rows_by_offset(table)
    assert len(rows) == len(logs.share_group_state)
    for e in logs.share_group_state:
        check_event(rows[(e.partition_folder, e.offset)], e)


def test_cli_dump_snapshot_checkpoint(logs, capsys):
    """kafka-dump-log reads a KRaft snapshot (.checkpoint) as batches; so does dump."""
    (path,) = (logs.root / "__cluster_metadata-0").glob("*.checkpoint")
    code, out, err = _cli(capsys, "dump", "--cluster-metadata-decoder", str(path))
    assert code == 0 and "Ignoring" not in err
    lines = [line for line in out.splitlines() if line.startswith("| offset: ")]
    assert len(lines) == len(logs.snapshot)
    assert '"type":"TOPIC_RECORD"' in out or '"type": "TOPIC_RECORD"' in out


def test_cluster_image_from_a_snapshot_alone(logs, tmp_path):
    """A folder holding only a .checkpoint: the image is the snapshot's state."""
    folder = tmp_path / "__cluster_metadata-0"
    folder.mkdir()
    (snapshot,) = (logs.root / "__cluster_metadata-0").glob("*.checkpoint")
    shutil.copy(snapshot, folder / snapshot.name)
    covered = logs.cluster_metadata[: logs.snapshot_end_offset]
    image = kb.cluster_image_at(folder, K.T0 + 30 * K.HOUR)
    assert image.snapshot == str(folder / snapshot.name)
    assert image.last_offset == logs.snapshot_end_offset - 1
    assert _image_got(image) == _image_expected(K.replay_cluster(covered))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no __cluster_metadata log or snapshot"):
        kb.cluster_image_at(empty, K.T0)


def test_cluster_image_applies_a_metadata_transaction_only_at_its_end(tmp_path):
    """KIP-868: records between BeginTransactionRecord and EndTransactionRecord
    apply at the End; an aborted transaction's records never do, nor those of
    one whose End comes after ``time`` (framing from MetadataRecordSerde:
    frame version, api key, version; then the record, here tagged fields only)."""
    marker = {name: K.uvarint(1) + K.uvarint(api) + K.uvarint(0) + K.uvarint(0) for name, api in
              (("begin", 23), ("end", 24), ("abort", 25))}  # fmt: skip

    def topic(name: str, ts: int) -> dict:
        e = K.framed_event("cluster_metadata", K.METADATA, 2, 0, {"Name": name, "TopicId": uuid.uuid4()}, ts)
        return {"value": e.raw_value, "timestamp": ts}

    t = K.T0
    records = [
        topic("plain", t),
        {"value": marker["begin"], "timestamp": t + 1},
        topic("committed", t + 2),
        {"value": marker["end"], "timestamp": t + 3},
        {"value": marker["begin"], "timestamp": t + 4},
        topic("aborted", t + 5),
        {"value": marker["abort"], "timestamp": t + 6},
        {"value": marker["begin"], "timestamp": t + 7},
        topic("late", t + 8),
        {"value": marker["end"], "timestamp": t + 20},
    ]
    kb.write_segment(tmp_path / "__cluster_metadata-0" / f"{0:020d}.log", records)

    def names(time: int) -> set[str]:
        return set(kb.cluster_image_at(tmp_path, time).topics["topic"].to_pylist())

    assert names(t + 2) == {"plain"}  # inside the first transaction: not yet
    assert names(t + 3) == {"plain", "committed"}
    assert names(t + 10) == {"plain", "committed"}  # "aborted" never, "late" not ended yet
    assert names(t + 20) == {"plain", "committed", "late"}
