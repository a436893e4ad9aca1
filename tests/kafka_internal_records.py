"""Kafka's internal topics, written byte for byte from Kafka's message definitions.

An encoder of its own, independent of kafkabatch's decoder: the message
definitions below are transcribed by hand from Kafka's JSON definitions
(``group-coordinator/.../common/message``, ``transaction-coordinator/...``,
``metadata/src/main/resources/common/metadata``, ``storage/src/main/resources/
message``, ``clients/src/main/resources/common/message``) and the bytes are
packed with ``struct`` and varints as Kafka's generated ``write`` methods do:

* non-flexible versions: int16-length strings (-1 null), int32-length bytes and
  arrays (-1 null);
* flexible versions: compact strings, bytes and arrays (unsigned varint of
  length + 1, 0 null) and, after each struct's fields, the tagged fields
  (unsigned varint count, then tag, size and data for each, in tag order);
* framing as ``CoordinatorRecordSerde`` (key: int16 record type + key message;
  value: int16 version + value message; null value = tombstone),
  ``AbstractApiMessageSerde`` (``__cluster_metadata``, ``__remote_log_metadata``:
  unsigned varints frame version 1, api key, version, then the record) and
  KRaft control records (key: int16 version 0 + int16 type; value: the message
  at version 0).

Consumer-protocol member bytes (``subscription``/``assignment`` of a classic
group's members) come from kafka-python's and aiokafka's own classes.

The segment files are written with kafkabatch's encoder (``kb.encode``,
``kb.write_segment``; lz4 and none); KRaft control batches, which that encoder
does not write, are laid out by ``realclients.encode_v2_batch``. Every fixture
keeps the list of events it wrote, so tests compute their expectations from
the events, not from a decoder.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid as _uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import realclients as rc

# --------------------------------------------------------------------------
# definitions (transcribed)
# --------------------------------------------------------------------------


def _versions(spec: str | None) -> tuple[int, int] | None:
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), 1 << 15
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def _within(version: int, spec: tuple[int, int] | None) -> bool:
    return spec is not None and spec[0] <= version <= spec[1]


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    type: str
    versions: tuple[int, int] | None
    nullable: tuple[int, int] | None = None
    tag: int | None = None
    tagged: tuple[int, int] | None = None
    default: Any = None
    fields: tuple[Field, ...] = ()

    @property
    def element(self) -> str | None:
        return self.type[2:] if self.type.startswith("[]") else None

    @property
    def is_struct(self) -> bool:
        t = self.element or self.type
        return t[:1].isupper()

    def in_version(self, v: int) -> bool:
        return _within(v, self.versions)

    def tagged_in(self, v: int) -> bool:
        return _within(v, self.tagged)

    def default_value(self) -> Any:
        """What Kafka's generated reader leaves in a field it did not read."""
        d = self.default
        if self.element is not None:
            return None if d == "null" else []
        if self.is_struct:
            return None
        if self.type in ("string",):
            return None if d == "null" else (d if d is not None else "")
        if self.type in ("bytes", "records"):
            return None if d == "null" else b""
        if self.type == "uuid":
            return _uuid.UUID(int=0).bytes
        if self.type == "bool":
            return d in (True, "true")
        if self.type == "float64":
            return float(d) if d is not None else 0.0
        if d is None:
            return 0
        return int(d, 0) if isinstance(d, str) else int(d)


def F(
    name: str,
    type: str,
    versions: str | None = "0+",
    *,
    nullable: str | None = None,
    tag: int | None = None,
    tagged: str | None = None,
    default: Any = None,
    fields: Iterable[Field] = (),
) -> Field:
    if versions is None:  # a tagged field declared by its tagged versions only
        versions = tagged
    return Field(name, type, _versions(versions), _versions(nullable), tag, _versions(tagged), default, tuple(fields))


@dataclasses.dataclass(frozen=True)
class Message:
    name: str
    valid: tuple[int, int]
    flexible: tuple[int, int] | None
    fields: tuple[Field, ...]
    api_key: int | None = None

    def is_flexible(self, v: int) -> bool:
        return _within(v, self.flexible)


def M(name: str, valid: str, flexible: str, fields: Iterable[Field], api_key: int | None = None) -> Message:
    v = _versions(valid)
    assert v is not None
    return Message(name, v, _versions(flexible), tuple(fields), api_key)


# __consumer_offsets (group-coordinator), keyed by record type
OFFSET_COMMIT_KEY = M(
    "OffsetCommitKey",
    "0-1",
    "none",
    [F("group", "string", "0-1"), F("topic", "string", "0-1"), F("partition", "int32", "0-1")],
)
OFFSET_COMMIT_VALUE = M(
    "OffsetCommitValue",
    "0-4",
    "4+",
    [
        F("offset", "int64"),
        F("leaderEpoch", "int32", "3+", default=-1),
        F("metadata", "string"),
        F("commitTimestamp", "int64"),
        F("expireTimestamp", "int64", "1", default=-1),
    ],
)
GROUP_METADATA_KEY = M("GroupMetadataKey", "2", "none", [F("group", "string", "2")])
MEMBER_METADATA = (
    F("memberId", "string"),
    F("groupInstanceId", "string", "3+", nullable="3+", default="null"),
    F("clientId", "string"),
    F("clientHost", "string"),
    F("rebalanceTimeout", "int32", "1+", default=-1),
    F("sessionTimeout", "int32"),
    F("subscription", "bytes"),
    F("assignment", "bytes"),
)
GROUP_METADATA_VALUE = M(
    "GroupMetadataValue",
    "0-4",
    "4+",
    [
        F("protocolType", "string"),
        F("generation", "int32"),
        F("protocol", "string", nullable="0+"),
        F("leader", "string", nullable="0+"),
        F("currentStateTimestamp", "int64", "2+", default=-1),
        F("members", "[]MemberMetadata", fields=MEMBER_METADATA),
    ],
)
CG_METADATA_KEY = M("ConsumerGroupMetadataKey", "3", "none", [F("GroupId", "string", "3")])
CG_METADATA_VALUE = M("ConsumerGroupMetadataValue", "0", "0+", [F("Epoch", "int32")])
CG_PARTITION_METADATA_KEY = M("ConsumerGroupPartitionMetadataKey", "4", "none", [F("GroupId", "string", "4")])
CG_PARTITION_METADATA_VALUE = M(
    "ConsumerGroupPartitionMetadataValue",
    "0",
    "0+",
    [
        F(
            "Topics",
            "[]TopicMetadata",
            fields=[
                F("TopicId", "uuid"),
                F("TopicName", "string"),
                F("NumPartitions", "int32"),
                F(
                    "PartitionMetadata",
                    "[]PartitionMetadata",
                    fields=[F("Partition", "int32"), F("Racks", "[]string")],
                ),
            ],
        )
    ],
)
CG_MEMBER_METADATA_KEY = M(
    "ConsumerGroupMemberMetadataKey", "5", "none", [F("GroupId", "string", "5"), F("MemberId", "string", "5")]
)
CG_MEMBER_METADATA_VALUE = M(
    "ConsumerGroupMemberMetadataValue",
    "0",
    "0+",
    [
        F("InstanceId", "string", nullable="0+"),
        F("RackId", "string", nullable="0+"),
        F("ClientId", "string"),
        F("ClientHost", "string"),
        F("SubscribedTopicNames", "[]string"),
        F("SubscribedTopicRegex", "string", nullable="0+"),
        F("RebalanceTimeoutMs", "int32", default=-1),
        F("ServerAssignor", "string", nullable="0+"),
        F(
            "ClassicMemberMetadata",
            "ClassicMemberMetadata",
            nullable="0+",
            default="null",
            tagged="0+",
            tag=0,
            fields=[
                F("SessionTimeoutMs", "int32"),
                F("SupportedProtocols", "[]ClassicProtocol", fields=[F("Name", "string"), F("Metadata", "bytes")]),
            ],
        ),
    ],
)
CG_TARGET_METADATA_KEY = M("ConsumerGroupTargetAssignmentMetadataKey", "6", "none", [F("GroupId", "string", "6")])
CG_TARGET_METADATA_VALUE = M("ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", [F("AssignmentEpoch", "int32")])
CG_TARGET_MEMBER_KEY = M(
    "ConsumerGroupTargetAssignmentMemberKey", "7", "none", [F("GroupId", "string", "7"), F("MemberId", "string", "7")]
)
CG_TARGET_MEMBER_VALUE = M(
    "ConsumerGroupTargetAssignmentMemberValue",
    "0",
    "0+",
    [F("TopicPartitions", "[]TopicPartition", fields=[F("TopicId", "uuid"), F("Partitions", "[]int32")])],
)
_TOPIC_PARTITIONS = (F("TopicId", "uuid"), F("Partitions", "[]int32"))
CG_CURRENT_ASSIGNMENT_KEY = M(
    "ConsumerGroupCurrentMemberAssignmentKey", "8", "none", [F("GroupId", "string", "8"), F("MemberId", "string", "8")]
)
CG_CURRENT_ASSIGNMENT_VALUE = M(
    "ConsumerGroupCurrentMemberAssignmentValue",
    "0",
    "0+",
    [
        F("MemberEpoch", "int32"),
        F("PreviousMemberEpoch", "int32"),
        F("State", "int8"),
        F("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
        F("PartitionsPendingRevocation", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
    ],
)
SG_MEMBER_METADATA_KEY = M(
    "ShareGroupMemberMetadataKey", "10", "none", [F("GroupId", "string", "10"), F("MemberId", "string", "10")]
)
SG_MEMBER_METADATA_VALUE = M(
    "ShareGroupMemberMetadataValue",
    "0",
    "0+",
    [
        F("RackId", "string", nullable="0+"),
        F("ClientId", "string"),
        F("ClientHost", "string"),
        F("SubscribedTopicNames", "[]string"),
    ],
)
SG_METADATA_KEY = M("ShareGroupMetadataKey", "11", "none", [F("GroupId", "string", "11")])
SG_METADATA_VALUE = M("ShareGroupMetadataValue", "0", "0+", [F("Epoch", "int32")])

#: record type (key version) -> (record type name, key, value)
CONSUMER_OFFSETS_TYPES: dict[int, tuple[str, Message, Message]] = {
    0: ("OffsetCommit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: ("OffsetCommit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: ("GroupMetadata", GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: ("ConsumerGroupMetadata", CG_METADATA_KEY, CG_METADATA_VALUE),
    4: ("ConsumerGroupPartitionMetadata", CG_PARTITION_METADATA_KEY, CG_PARTITION_METADATA_VALUE),
    5: ("ConsumerGroupMemberMetadata", CG_MEMBER_METADATA_KEY, CG_MEMBER_METADATA_VALUE),
    6: ("ConsumerGroupTargetAssignmentMetadata", CG_TARGET_METADATA_KEY, CG_TARGET_METADATA_VALUE),
    7: ("ConsumerGroupTargetAssignmentMember", CG_TARGET_MEMBER_KEY, CG_TARGET_MEMBER_VALUE),
    8: ("ConsumerGroupCurrentMemberAssignment", CG_CURRENT_ASSIGNMENT_KEY, CG_CURRENT_ASSIGNMENT_VALUE),
    10: ("ShareGroupMemberMetadata", SG_MEMBER_METADATA_KEY, SG_MEMBER_METADATA_VALUE),
    11: ("ShareGroupMetadata", SG_METADATA_KEY, SG_METADATA_VALUE),
}

# __transaction_state (transaction-coordinator)
TXN_KEY = M("TransactionLogKey", "0", "none", [F("TransactionalId", "string", "0")])
TXN_VALUE = M(
    "TransactionLogValue",
    "0-1",
    "1+",
    [
        F("ProducerId", "int64"),
        F("PreviousProducerId", "int64", None, tagged="1+", tag=0, default=-1),
        F("NextProducerId", "int64", None, tagged="1+", tag=1, default=-1),
        F("ProducerEpoch", "int16"),
        F("TransactionTimeoutMs", "int32"),
        F("TransactionStatus", "int8"),
        F(
            "TransactionPartitions",
            "[]PartitionsSchema",
            nullable="0+",
            fields=[F("Topic", "string"), F("PartitionIds", "[]int32")],
        ),
        F("TransactionLastUpdateTimestampMs", "int64"),
        F("TransactionStartTimestampMs", "int64"),
        F("ClientTransactionVersion", "int16", None, tagged="1+", tag=2, default=0),
    ],
)
TRANSACTION_STATE_TYPES = {0: ("TransactionLog", TXN_KEY, TXN_VALUE)}

# __share_group_state (share-coordinator), keyed by record type
_STATE_BATCH = F(
    "StateBatches",
    "[]StateBatch",
    "0",
    fields=[
        F("FirstOffset", "int64", "0"),
        F("LastOffset", "int64", "0"),
        F("DeliveryState", "int8", "0"),
        F("DeliveryCount", "int16", "0"),
    ],
)
SHARE_GROUP_STATE_TYPES = {
    0: (
        "ShareSnapshot",
        M(
            "ShareSnapshotKey",
            "0",
            "none",
            [F("GroupId", "string", "0"), F("TopicId", "uuid", "0"), F("Partition", "int32", "0")],
        ),
        M(
            "ShareSnapshotValue",
            "0",
            "0+",
            [
                F("SnapshotEpoch", "uint16", "0"),
                F("StateEpoch", "int32"),
                F("LeaderEpoch", "int32"),
                F("StartOffset", "int64", "0"),
                _STATE_BATCH,
            ],
        ),
    ),
    1: (
        "ShareUpdate",
        M(
            "ShareUpdateKey",
            "1",
            "none",
            [F("GroupId", "string", "1"), F("TopicId", "uuid", "1"), F("Partition", "int32", "1")],
        ),
        M(
            "ShareUpdateValue",
            "0",
            "0+",
            [
                F("SnapshotEpoch", "uint16", "0"),
                F("LeaderEpoch", "int32"),
                F("StartOffset", "int64", "0"),
                _STATE_BATCH,
            ],
        ),
    ),
}

# __cluster_metadata (metadata), keyed by api key
_ELR = dict(nullable="2+", tagged="2+", default="null")
METADATA: dict[int, Message] = {
    m.api_key: m  # type: ignore[misc]
    for m in [
        M(
            "RegisterBrokerRecord",
            "0-3",
            "0+",
            [
                F("BrokerId", "int32"),
                F("IsMigratingZkBroker", "bool", "2+", default="false"),
                F("IncarnationId", "uuid"),
                F("BrokerEpoch", "int64"),
                F(
                    "EndPoints",
                    "[]BrokerEndpoint",
                    fields=[
                        F("Name", "string"),
                        F("Host", "string"),
                        F("Port", "uint16"),
                        F("SecurityProtocol", "int16"),
                    ],
                ),
                F(
                    "Features",
                    "[]BrokerFeature",
                    fields=[F("Name", "string"), F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16")],
                ),
                F("Rack", "string", nullable="0+"),
                F("Fenced", "bool", default="true"),
                F("InControlledShutdown", "bool", "1+", default="false"),
                F("LogDirs", "[]uuid", "3+", tagged="3+", tag=0),
            ],
            api_key=0,
        ),
        M("UnregisterBrokerRecord", "0", "0+", [F("BrokerId", "int32"), F("BrokerEpoch", "int64")], api_key=1),
        M("TopicRecord", "0", "0+", [F("Name", "string"), F("TopicId", "uuid")], api_key=2),
        M(
            "PartitionRecord",
            "0-2",
            "0+",
            [
                F("PartitionId", "int32", default="-1"),
                F("TopicId", "uuid"),
                F("Replicas", "[]int32"),
                F("Isr", "[]int32"),
                F("RemovingReplicas", "[]int32"),
                F("AddingReplicas", "[]int32"),
                F("Leader", "int32", default="-1"),
                F("LeaderRecoveryState", "int8", default="0", tagged="0+", tag=0),
                F("LeaderEpoch", "int32", default="-1"),
                F("PartitionEpoch", "int32", default="-1"),
                F("Directories", "[]uuid", "1+"),
                F("EligibleLeaderReplicas", "[]int32", "2+", tag=1, **_ELR),
                F("LastKnownElr", "[]int32", "2+", tag=2, **_ELR),
            ],
            api_key=3,
        ),
        M(
            "ConfigRecord",
            "0",
            "0+",
            [
                F("ResourceType", "int8"),
                F("ResourceName", "string"),
                F("Name", "string"),
                F("Value", "string", nullable="0+"),
            ],
            api_key=4,
        ),
        M(
            "PartitionChangeRecord",
            "0-2",
            "0+",
            [
                F("PartitionId", "int32", default="-1"),
                F("TopicId", "uuid"),
                F("Isr", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
                F("Leader", "int32", tagged="0+", tag=1, default="-2"),
                F("Replicas", "[]int32", nullable="0+", tagged="0+", tag=2, default="null"),
                F("RemovingReplicas", "[]int32", nullable="0+", tagged="0+", tag=3, default="null"),
                F("AddingReplicas", "[]int32", nullable="0+", tagged="0+", tag=4, default="null"),
                F("LeaderRecoveryState", "int8", tagged="0+", tag=5, default="-1"),
                F("Directories", "[]uuid", "1+", nullable="1+", tagged="1+", tag=8, default="null"),
                F("EligibleLeaderReplicas", "[]int32", "2+", tag=6, **_ELR),
                F("LastKnownElr", "[]int32", "2+", tag=7, **_ELR),
            ],
            api_key=5,
        ),
        M("FenceBrokerRecord", "0", "0+", [F("Id", "int32"), F("Epoch", "int64")], api_key=7),
        M("UnfenceBrokerRecord", "0", "0+", [F("Id", "int32"), F("Epoch", "int64")], api_key=8),
        M("RemoveTopicRecord", "0", "0+", [F("TopicId", "uuid")], api_key=9),
        M("FeatureLevelRecord", "0", "0+", [F("Name", "string"), F("FeatureLevel", "int16")], api_key=12),
        M(
            "BrokerRegistrationChangeRecord",
            "0-2",
            "0+",
            [
                F("BrokerId", "int32"),
                F("BrokerEpoch", "int64"),
                F("Fenced", "int8", tagged="0+", tag=0),
                F("InControlledShutdown", "int8", "1+", tagged="1+", tag=1),
                F("LogDirs", "[]uuid", "2+", tagged="2+", tag=2),
            ],
            api_key=17,
        ),
        M("NoOpRecord", "0", "0+", [], api_key=20),
        M("ClearElrRecord", "0", "0+", [F("TopicName", "string")], api_key=28),
    ]
}

# KRaft control records (clients), keyed by control record type
_VOTER = (F("VoterId", "int32"), F("VoterDirectoryId", "uuid", "1+"))
CONTROL: dict[int, tuple[str, Message]] = {
    2: (
        "LeaderChange",
        M(
            "LeaderChangeMessage",
            "0-1",
            "0+",
            [
                F("Version", "int16"),
                F("LeaderId", "int32"),
                F("Voters", "[]Voter", fields=_VOTER),
                F("GrantingVoters", "[]Voter", fields=_VOTER),
            ],
        ),
    ),
    3: (
        "SnapshotHeader",
        M("SnapshotHeaderRecord", "0", "0+", [F("Version", "int16"), F("LastContainedLogTimestamp", "int64")]),
    ),
    4: ("SnapshotFooter", M("SnapshotFooterRecord", "0", "0+", [F("Version", "int16")])),
    5: ("KRaftVersion", M("KRaftVersionRecord", "0", "0+", [F("Version", "int16"), F("KRaftVersion", "int16")])),
    6: (
        "Voters",
        M(
            "VotersRecord",
            "0",
            "0+",
            [
                F("Version", "int16"),
                F(
                    "Voters",
                    "[]Voter",
                    fields=[
                        F("VoterId", "int32"),
                        F("VoterDirectoryId", "uuid"),
                        F(
                            "Endpoints",
                            "[]Endpoint",
                            fields=[F("Name", "string"), F("Host", "string"), F("Port", "uint16")],
                        ),
                        F(
                            "KRaftVersionFeature",
                            "KRaftVersionFeature",
                            fields=[F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16")],
                        ),
                    ],
                ),
            ],
        ),
    ),
}

# __remote_log_metadata (storage), keyed by api key
_TIP = F(
    "TopicIdPartition", "TopicIdPartitionEntry", fields=[F("Name", "string"), F("Id", "uuid"), F("Partition", "int32")]
)
_SEGMENT_ID = F("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", fields=[_TIP, F("Id", "uuid")])
_EPOCHS = F(
    "SegmentLeaderEpochs", "[]SegmentLeaderEpochEntry", fields=[F("LeaderEpoch", "int32"), F("Offset", "int64")]
)
_CUSTOM = F("CustomMetadata", "bytes", nullable="0+", default="null")
REMOTE: dict[int, Message] = {
    0: M(
        "RemoteLogSegmentMetadataRecord",
        "0",
        "0+",
        [
            _SEGMENT_ID,
            F("StartOffset", "int64"),
            F("EndOffset", "int64"),
            F("BrokerId", "int32"),
            F("MaxTimestampMs", "int64"),
            F("EventTimestampMs", "int64"),
            _EPOCHS,
            F("SegmentSizeInBytes", "int32"),
            _CUSTOM,
            F("RemoteLogSegmentState", "int8"),
        ],
        api_key=0,
    ),
    1: M(
        "RemoteLogSegmentMetadataUpdateRecord",
        "0",
        "0+",
        [
            _SEGMENT_ID,
            F("BrokerId", "int32"),
            F("EventTimestampMs", "int64"),
            _CUSTOM,
            F("RemoteLogSegmentState", "int8"),
        ],
        api_key=1,
    ),
    2: M(
        "RemotePartitionDeleteMetadataRecord",
        "0",
        "0+",
        [_TIP, F("BrokerId", "int32"), F("EventTimestampMs", "int64"), F("RemotePartitionDeleteState", "int8")],
        api_key=2,
    ),
    3: M(
        "RemoteLogSegmentMetadataSnapshotRecord",
        "0",
        "0+",
        [
            F("SegmentId", "uuid"),
            F("StartOffset", "int64"),
            F("EndOffset", "int64"),
            F("BrokerId", "int32"),
            F("MaxTimestampMs", "int64"),
            F("EventTimestampMs", "int64"),
            _EPOCHS,
            F("SegmentSizeInBytes", "int32"),
            _CUSTOM,
            F("RemoteLogSegmentState", "int8"),
        ],
        api_key=3,
    ),
}


# --------------------------------------------------------------------------
# the wire format
# --------------------------------------------------------------------------


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


_FIXED = {
    "int8": ">b",
    "int16": ">h",
    "uint16": ">H",
    "int32": ">i",
    "uint32": ">I",
    "int64": ">q",
    "float64": ">d",
}


def _uuid_bytes(value: Any) -> bytes:
    if isinstance(value, _uuid.UUID):
        return value.bytes
    assert isinstance(value, bytes) and len(value) == 16
    return value


def _write_scalar(t: str, value: Any, flexible: bool, nullable: bool) -> bytes:
    if t in _FIXED:
        return struct.pack(_FIXED[t], value)
    if t == "bool":
        return b"\x01" if value else b"\x00"
    if t == "uuid":
        return _uuid_bytes(value)
    if t in ("string", "bytes", "records"):
        if value is None:
            assert nullable, f"null {t} in a non-nullable version"
            return b"\x00" if flexible else (struct.pack(">h", -1) if t == "string" else struct.pack(">i", -1))
        raw = value.encode("utf-8") if t == "string" else bytes(value)
        if flexible:
            return uvarint(len(raw) + 1) + raw
        return (struct.pack(">h", len(raw)) if t == "string" else struct.pack(">i", len(raw))) + raw
    raise AssertionError(f"unknown type {t}")


def _write_field(field: Field, value: Any, version: int, flexible: bool) -> bytes:
    nullable = _within(version, field.nullable)
    element = field.element
    if element is not None:
        if value is None:
            assert nullable, f"{field.name}: null array in a non-nullable version"
            return b"\x00" if flexible else struct.pack(">i", -1)
        head = uvarint(len(value) + 1) if flexible else struct.pack(">i", len(value))
        if field.is_struct:
            items = [write_struct(field.fields, item, version, flexible) for item in value]
        else:
            items = [_write_scalar(element, item, flexible, False) for item in value]
        return head + b"".join(items)
    if field.is_struct:
        if value is None:
            # nullable structs: int8 -1 (absent) / 1 (present), as Kafka's generated code writes them
            assert nullable
            return struct.pack(">b", -1)
        body = write_struct(field.fields, value, version, flexible)
        return (struct.pack(">b", 1) + body) if nullable else body
    return _write_scalar(field.type, value, flexible, nullable)


def write_struct(
    fields: Iterable[Field],
    values: dict[str, Any],
    version: int,
    flexible: bool,
    unknown_tags: Iterable[tuple[int, bytes]] = (),
) -> bytes:
    """The bytes of one struct at ``version``. Tagged fields are written when
    ``values`` holds them (a test writes exactly what it lists); ``unknown_tags``
    are extra ``(tag, data)`` pairs a newer writer would have added."""
    out = bytearray()
    tagged: list[tuple[int, bytes]] = []
    for field in fields:
        if field.tagged_in(version):
            if field.name in values and flexible:
                data = field_bytes_tagged(field, values[field.name], version)
                tagged.append((field.tag, data))  # type: ignore[arg-type]
            continue
        if not field.in_version(version):
            continue
        out += _write_field(field, values[field.name], version, flexible)
    if flexible:
        tagged.extend(unknown_tags)
        tagged.sort(key=lambda item: item[0])
        out += uvarint(len(tagged))
        for tag, data in tagged:
            out += uvarint(tag) + uvarint(len(data)) + data
    else:
        assert not list(unknown_tags)
    return bytes(out)


def field_bytes_tagged(field: Field, value: Any, version: int) -> bytes:
    # a tagged struct: Kafka's generated writer puts an unsigned varint 1 (present)
    # before it in its nullable versions (a null one is left out, as its default)
    if field.is_struct and field.element is None:
        body = write_struct(field.fields, value, version, True)
        return (uvarint(1) + body) if _within(version, field.nullable) else body
    return _write_field(field, value, version, True)


def write_message(message: Message, values: dict[str, Any], version: int, unknown_tags=()) -> bytes:
    assert message.valid[0] <= version <= message.valid[1], (message.name, version)
    return write_struct(message.fields, values, version, message.is_flexible(version), unknown_tags)


# --------------------------------------------------------------------------
# what a reader gives back
# --------------------------------------------------------------------------

#: a field the record's version does not have, or a tagged field the record
#: did not carry: Kafka's reader gives the default; a table may say null
ABSENT = object()


@dataclasses.dataclass(frozen=True)
class Absent:
    default: Any


def expected_struct(fields: Iterable[Field], values: dict[str, Any] | None, version: int, flexible: bool) -> dict:
    """Every field of the definition: the value written, or ``Absent(default)``."""
    assert values is not None
    out: dict[str, Any] = {}
    for field in fields:
        present = (field.tagged_in(version) and flexible and field.name in values) or (
            field.in_version(version) and not field.tagged_in(version)
        )
        if not present:
            out[field.name] = Absent(field.default_value())
            continue
        value = values[field.name]
        if field.is_struct and value is not None:
            if field.element is not None:
                value = [expected_struct(field.fields, v, version, flexible) for v in value]
            else:
                value = expected_struct(field.fields, value, version, flexible)
        elif field.type == "uuid":
            value = _uuid_bytes(value)
        elif field.type == "[]uuid" and value is not None:
            value = [_uuid_bytes(v) for v in value]
        out[field.name] = value
    return out


# --------------------------------------------------------------------------
# events: what each fixture wrote
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Event:
    """One record written: where, when, and what a decoder must give back."""

    kind: str  # consumer_offsets, transaction_state, share_group_state, cluster_metadata, remote_log_metadata
    record_type: str
    record_type_id: int
    key_version: int | None
    value_version: int | None
    key: dict | None
    value: dict | None  # None: a tombstone
    timestamp: int
    key_message: Message | None = None
    value_message: Message | None = None
    unknown_tags: tuple[tuple[int, bytes], ...] = ()
    control: bool = False
    offset: int = -1
    partition_folder: str = ""
    raw_key: bytes | None = None
    raw_value: bytes | None = None
    consumer_protocol: dict | None = None  # per member: decoded subscription/assignment, by the libraries

    @property
    def tombstone(self) -> bool:
        return self.value is None and self.kind in COORDINATOR_KINDS

    def expected_key(self) -> dict | None:
        if self.key is None or self.key_message is None:
            return None
        return expected_struct(self.key_message.fields, self.key, self.key_version or 0, False)

    def expected_value(self) -> dict | None:
        if self.value is None or self.value_message is None:
            return None
        v = self.value_version or 0
        return expected_struct(self.value_message.fields, self.value, v, self.value_message.is_flexible(v))


COORDINATOR_KINDS = ("consumer_offsets", "transaction_state", "share_group_state")


def coordinator_event(
    kind: str, types: dict, record_type_id: int, key: dict, value_version: int | None, value: dict | None, ts: int, **kw
) -> Event:
    name, key_msg, value_msg = types[record_type_id]
    raw_key = struct.pack(">h", record_type_id) + write_message(key_msg, key, record_type_id)
    raw_value = None
    if value is not None:
        assert value_version is not None
        raw_value = struct.pack(">h", value_version) + write_message(
            value_msg, value, value_version, kw.get("unknown_tags", ())
        )
    return Event(
        kind,
        name,
        record_type_id,
        record_type_id,
        value_version if value is not None else None,
        key,
        value,
        ts,
        key_message=key_msg,
        value_message=value_msg,
        raw_key=raw_key,
        raw_value=raw_value,
        **kw,
    )


def framed_event(kind: str, table: dict[int, Message], api_key: int, version: int, value: dict, ts: int, **kw) -> Event:
    message = table[api_key]
    raw = (
        uvarint(1)
        + uvarint(api_key)
        + uvarint(version)
        + write_message(message, value, version, kw.get("unknown_tags", ()))
    )
    return Event(
        kind, message.name, api_key, None, version, None, value, ts, value_message=message, raw_value=raw, **kw
    )


def control_event(control_type: int, value: dict, ts: int) -> Event:
    name, message = CONTROL[control_type]
    raw_key = struct.pack(">hh", 0, control_type)
    raw_value = write_message(message, value, 0)
    return Event(
        "cluster_metadata",
        name,
        control_type,
        None,
        0,
        None,
        value,
        ts,
        value_message=message,
        control=True,
        raw_key=raw_key,
        raw_value=raw_value,
    )


# --------------------------------------------------------------------------
# consumer protocol bytes from kafka-python and aiokafka
# --------------------------------------------------------------------------


def kafka_python_subscription(version: int, topics, user_data=None, owned=(), generation=-1, rack=None) -> bytes:
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    kwargs: dict[str, Any] = {"topics": list(topics), "user_data": user_data}
    if version >= 1:
        kwargs["owned_partitions"] = [(t, list(p)) for t, p in owned]
    if version >= 2:
        kwargs["generation_id"] = generation
    if version >= 3:
        kwargs["rack_id"] = rack
    return ConsumerProtocolSubscription(version=version, **kwargs).encode()


def kafka_python_assignment(version: int, assigned, user_data=None) -> bytes:
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    msg = ConsumerProtocolAssignment(
        version=version, assigned_partitions=[(t, list(p)) for t, p in assigned], user_data=user_data
    )
    return msg.encode()


def aiokafka_subscription(topics, user_data=b"") -> bytes:
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

    return ConsumerProtocolMemberMetadata(0, list(topics), user_data).encode()


def aiokafka_assignment(assigned, user_data=b"") -> bytes:
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

    return ConsumerProtocolMemberAssignment(0, [(t, list(p)) for t, p in assigned], user_data).encode()


# --------------------------------------------------------------------------
# the fixture log dir
# --------------------------------------------------------------------------

T0 = rc.BASE_TS  # 2023-11-14T22:13:20Z
HOUR = 3_600_000
TOPIC_ORDERS = _uuid.UUID("6f1c3b0a-54d2-4e0b-9a43-0c1d2e3f4a5b")
TOPIC_PAYMENTS = _uuid.UUID("0d4e2f6a-1b3c-4d5e-8f70-a1b2c3d4e5f6")
DIR_A = _uuid.UUID("11111111-2222-4333-8444-555555555555")
DIR_B = _uuid.UUID("66666666-7777-4888-9999-aaaaaaaaaaaa")


def _offset_commit(group, topic, partition, offset, ts, *, key_version=1, value_version=3, metadata="", epoch=-1, **kw):
    value: dict[str, Any] = {"offset": offset, "metadata": metadata, "commitTimestamp": ts}
    if value_version >= 3:
        value["leaderEpoch"] = epoch
    if value_version == 1:
        value["expireTimestamp"] = ts + 7 * 24 * HOUR
    return coordinator_event(
        "consumer_offsets",
        CONSUMER_OFFSETS_TYPES,
        key_version,
        {"group": group, "topic": topic, "partition": partition},
        value_version,
        value,
        ts,
        **kw,
    )


def _offset_delete(group, topic, partition, ts, key_version=1) -> Event:
    return coordinator_event(
        "consumer_offsets",
        CONSUMER_OFFSETS_TYPES,
        key_version,
        {"group": group, "topic": topic, "partition": partition},
        None,
        None,
        ts,
    )


def consumer_offsets_events() -> list[Event]:
    """Partition ``__consumer_offsets-0``: commits over a day (every key and
    value version), classic groups' membership (every value version, member
    bytes from kafka-python and aiokafka), KIP-848 records, share-group
    records and tombstones."""
    ev: list[Event] = []
    # commits: group "billing" reads orders-0/1 hourly; "audit" reads orders-0 and payments-0
    for h in range(24):
        ts = T0 + h * HOUR
        vv = (0, 1, 2, 3, 4)[h % 5]
        kv = 0 if h % 2 == 0 else 1
        unknown = ((9, b"future"),) if vv == 4 and h % 3 == 0 else ()
        ev.append(
            _offset_commit(
                "billing",
                "orders",
                0,
                90 * h + 10,
                ts + 1,
                key_version=kv,
                value_version=vv,
                metadata=f"h{h}",
                epoch=h,
                unknown_tags=unknown,
            )
        )
        ev.append(_offset_commit("billing", "orders", 1, 80 * h + 5, ts + 2, value_version=vv, epoch=h))
        if h % 6 == 0:
            ev.append(_offset_commit("audit", "payments", 0, 7 * (h + 1), ts + 3, value_version=4, metadata="ü✓"))
    # audit gives up payments-0 at hour 20: a tombstone deletes its offset
    ev.append(_offset_delete("audit", "payments", 0, T0 + 20 * HOUR + 10))
    # ... and a later commit of a deleted key comes back
    ev.append(_offset_commit("audit", "payments", 0, 999, T0 + 22 * HOUR + 10, value_version=4))
    ev.append(_offset_commit("audit", "orders", 0, 5, T0 + 1 * HOUR + 20, value_version=2))
    ev.append(_offset_delete("audit", "orders", 0, T0 + 2 * HOUR + 20, key_version=0))

    # classic group membership, every value version
    members_kp = [
        ("kp-0", kafka_python_subscription(0, ["orders"]), kafka_python_assignment(0, [("orders", [0, 1])])),
        (
            "kp-1",
            kafka_python_subscription(1, ["orders", "payments"], b"ud", owned=[("orders", [2])]),
            kafka_python_assignment(1, [("orders", [2]), ("payments", [0])], b"au"),
        ),
        (
            "kp-3",
            kafka_python_subscription(3, ["orders"], None, owned=[("orders", [0])], generation=4, rack="r1"),
            kafka_python_assignment(3, [("orders", [0])]),
        ),
        ("aio-0", aiokafka_subscription(["payments"], b"x"), aiokafka_assignment([("payments", [0, 1, 2])], b"")),
    ]
    for vv in range(5):
        members = []
        for i, (mid, sub, asg) in enumerate(members_kp[: 1 + vv % 4 + (1 if vv == 4 else 0)]):
            m: dict[str, Any] = {
                "memberId": f"{mid}-{vv}",
                "clientId": "client-" + mid,
                "clientHost": f"/10.0.0.{i}",
                "sessionTimeout": 45000,
                "subscription": sub,
                "assignment": asg,
            }
            if vv >= 1:
                m["rebalanceTimeout"] = 300000
            if vv >= 3:
                m["groupInstanceId"] = None if i % 2 else f"static-{i}"
            members.append(m)
        value: dict[str, Any] = {
            "protocolType": "consumer",
            "generation": vv + 1,
            "protocol": "range" if vv != 1 else None,
            "leader": members[0]["memberId"],
            "members": members,
        }
        if vv >= 2:
            value["currentStateTimestamp"] = T0 + vv
        unknown = ((5, b"\x01\x02"),) if vv == 4 else ()
        ev.append(
            coordinator_event(
                "consumer_offsets",
                CONSUMER_OFFSETS_TYPES,
                2,
                {"group": f"classic-{vv}"},
                vv,
                value,
                T0 + 30 + vv,
                unknown_tags=unknown,
            )
        )
    # an empty group (no members, null protocol and leader), then its deletion
    ev.append(
        coordinator_event(
            "consumer_offsets",
            CONSUMER_OFFSETS_TYPES,
            2,
            {"group": "empty"},
            3,
            {
                "protocolType": "",
                "generation": 0,
                "protocol": None,
                "leader": None,
                "currentStateTimestamp": -1,
                "members": [],
            },
            T0 + 40,
        )
    )
    ev.append(coordinator_event("consumer_offsets", CONSUMER_OFFSETS_TYPES, 2, {"group": "empty"}, None, None, T0 + 41))

    # KIP-848 consumer group "modern"
    def k(rt, key, value, ts, **kw):
        ev.append(coordinator_event("consumer_offsets", CONSUMER_OFFSETS_TYPES, rt, key, 0, value, ts, **kw))

    g = {"GroupId": "modern"}
    gm = {"GroupId": "modern", "MemberId": "m-1"}
    k(3, g, {"Epoch": 7}, T0 + 50)
    k(
        4,
        g,
        {
            "Topics": [
                {
                    "TopicId": TOPIC_ORDERS,
                    "TopicName": "orders",
                    "NumPartitions": 2,
                    "PartitionMetadata": [{"Partition": 0, "Racks": ["r1", "r2"]}, {"Partition": 1, "Racks": []}],
                },
            ]
        },
        T0 + 51,
    )
    k(
        5,
        gm,
        {
            "InstanceId": None,
            "RackId": "r1",
            "ClientId": "c1",
            "ClientHost": "/10.1.1.1",
            "SubscribedTopicNames": ["orders", "payments"],
            "SubscribedTopicRegex": None,
            "RebalanceTimeoutMs": 30000,
            "ServerAssignor": "uniform",
        },
        T0 + 52,
    )
    k(
        5,
        {"GroupId": "modern", "MemberId": "m-2"},
        {
            "InstanceId": "i-2",
            "RackId": None,
            "ClientId": "c2",
            "ClientHost": "/10.1.1.2",
            "SubscribedTopicNames": [],
            "SubscribedTopicRegex": "ord.*",
            "RebalanceTimeoutMs": -1,
            "ServerAssignor": None,
            "ClassicMemberMetadata": {
                "SessionTimeoutMs": 10000,
                "SupportedProtocols": [{"Name": "range", "Metadata": kafka_python_subscription(0, ["orders"])}],
            },
        },
        T0 + 53,
        unknown_tags=((3, b"\xff"),),
    )
    k(6, g, {"AssignmentEpoch": 7}, T0 + 54)
    k(7, gm, {"TopicPartitions": [{"TopicId": TOPIC_ORDERS, "Partitions": [0, 1]}]}, T0 + 55)
    k(
        8,
        gm,
        {
            "MemberEpoch": 7,
            "PreviousMemberEpoch": 6,
            "State": 0,
            "AssignedPartitions": [{"TopicId": TOPIC_ORDERS, "Partitions": [0]}],
            "PartitionsPendingRevocation": [{"TopicId": TOPIC_PAYMENTS, "Partitions": [3, 4]}],
        },
        T0 + 56,
    )
    ev.append(coordinator_event("consumer_offsets", CONSUMER_OFFSETS_TYPES, 8, gm, None, None, T0 + 57))
    # share group
    k(11, {"GroupId": "sharers"}, {"Epoch": 2}, T0 + 60)
    k(
        10,
        {"GroupId": "sharers", "MemberId": "s-1"},
        {"RackId": None, "ClientId": "sc", "ClientHost": "/10.2.2.2", "SubscribedTopicNames": ["orders"]},
        T0 + 61,
    )
    ev.sort(key=lambda e: e.timestamp)
    return ev


def transaction_state_events() -> list[Event]:
    ev = []

    def t(tid, vv, value, ts, **kw):
        ev.append(
            coordinator_event(
                "transaction_state", TRANSACTION_STATE_TYPES, 0, {"TransactionalId": tid}, vv, value, ts, **kw
            )
        )

    base = {
        "ProducerId": 4000,
        "ProducerEpoch": 3,
        "TransactionTimeoutMs": 60000,
        "TransactionStatus": 0,
        "TransactionPartitions": None,
        "TransactionLastUpdateTimestampMs": T0,
        "TransactionStartTimestampMs": -1,
    }
    t("tx-a", 0, dict(base), T0)
    t(
        "tx-a",
        0,
        {
            **base,
            "TransactionStatus": 1,
            "TransactionPartitions": [
                {"Topic": "orders", "PartitionIds": [0, 1]},
                {"Topic": "payments", "PartitionIds": []},
            ],
            "TransactionStartTimestampMs": T0 + 5,
        },
        T0 + 5,
    )
    t("tx-b", 1, {**base, "ProducerId": 5000, "TransactionPartitions": []}, T0 + 6)
    t(
        "tx-b",
        1,
        {
            **base,
            "ProducerId": 5001,
            "PreviousProducerId": 5000,
            "NextProducerId": 5002,
            "ClientTransactionVersion": 2,
            "TransactionStatus": 4,
            "TransactionPartitions": [{"Topic": "orders", "PartitionIds": [2]}],
        },
        T0 + 7,
        unknown_tags=((7, b"\x00\x01"),),
    )
    ev.append(
        coordinator_event(
            "transaction_state", TRANSACTION_STATE_TYPES, 0, {"TransactionalId": "tx-a"}, None, None, T0 + 8
        )
    )
    return ev


def _broker(bid, version, ts, **extra):
    value: dict[str, Any] = {
        "BrokerId": bid,
        "IncarnationId": _uuid.UUID(int=0xABC0 + bid),
        "BrokerEpoch": 10 + bid,
        "EndPoints": [
            {"Name": "PLAINTEXT", "Host": f"broker{bid}", "Port": 9092, "SecurityProtocol": 0},
            {"Name": "SSL", "Host": f"broker{bid}", "Port": 65535, "SecurityProtocol": 1},
        ],
        "Features": [{"Name": "metadata.version", "MinSupportedVersion": 1, "MaxSupportedVersion": 21}],
        "Rack": None if bid == 3 else f"rack{bid % 2}",
        "Fenced": True,
    }
    if version >= 1:
        value["InControlledShutdown"] = False
    if version >= 2:
        value["IsMigratingZkBroker"] = False
    value.update(extra)
    return framed_event("cluster_metadata", METADATA, 0, version, value, ts)


def cluster_metadata_log_events() -> list[Event]:
    """The controller's log: brokers register, topics are made, leaders move,
    configs change, a topic is deleted. Two hours from T0."""
    ev: list[Event] = []

    def meta(api, v, value, ts, **kw):
        ev.append(framed_event("cluster_metadata", METADATA, api, v, value, ts, **kw))

    ev.append(
        control_event(
            2,
            {
                "Version": 0,
                "LeaderId": 1,
                "Voters": [{"VoterId": 1}, {"VoterId": 2}],
                "GrantingVoters": [{"VoterId": 2}],
            },
            T0,
        )
    )
    ev.append(control_event(5, {"Version": 0, "KRaftVersion": 1}, T0))
    ev.append(
        control_event(
            6,
            {
                "Version": 0,
                "Voters": [
                    {
                        "VoterId": 1,
                        "VoterDirectoryId": DIR_A,
                        "Endpoints": [{"Name": "CONTROLLER", "Host": "c1", "Port": 9093}],
                        "KRaftVersionFeature": {"MinSupportedVersion": 0, "MaxSupportedVersion": 1},
                    }
                ],
            },
            T0,
        )
    )
    meta(12, 0, {"Name": "metadata.version", "FeatureLevel": 20}, T0 + 1)
    ev.append(_broker(1, 0, T0 + 2))
    ev.append(_broker(2, 1, T0 + 3))
    ev.append(_broker(3, 3, T0 + 4, LogDirs=[DIR_A, DIR_B]))
    meta(8, 0, {"Id": 1, "Epoch": 11}, T0 + 5)
    meta(8, 0, {"Id": 2, "Epoch": 12}, T0 + 5)
    meta(2, 0, {"Name": "orders", "TopicId": TOPIC_ORDERS}, T0 + 10)
    meta(
        3,
        0,
        {
            "PartitionId": 0,
            "TopicId": TOPIC_ORDERS,
            "Replicas": [1, 2, 3],
            "Isr": [1, 2, 3],
            "RemovingReplicas": [],
            "AddingReplicas": [],
            "Leader": 1,
            "LeaderEpoch": 0,
            "PartitionEpoch": 0,
        },
        T0 + 11,
    )
    meta(
        3,
        1,
        {
            "PartitionId": 1,
            "TopicId": TOPIC_ORDERS,
            "Replicas": [2, 3],
            "Isr": [2],
            "RemovingReplicas": [],
            "AddingReplicas": [],
            "Leader": 2,
            "LeaderEpoch": 0,
            "PartitionEpoch": 0,
            "Directories": [DIR_A, DIR_B],
            "LeaderRecoveryState": 1,
        },
        T0 + 11,
    )
    meta(4, 0, {"ResourceType": 2, "ResourceName": "orders", "Name": "retention.ms", "Value": "86400000"}, T0 + 12)
    meta(4, 0, {"ResourceType": 2, "ResourceName": "orders", "Name": "cleanup.policy", "Value": "delete"}, T0 + 12)
    meta(4, 0, {"ResourceType": 4, "ResourceName": "1", "Name": "log.retention.hours", "Value": "48"}, T0 + 12)
    meta(20, 0, {}, T0 + 13)
    # an hour later: leadership moves (v0 carrying an unknown tag 8: v0 has no Directories)
    meta(
        5,
        0,
        {"PartitionId": 0, "TopicId": TOPIC_ORDERS, "Leader": 2, "Isr": [2, 3]},
        T0 + HOUR,
        unknown_tags=((8, b"\x01"),),
    )
    meta(4, 0, {"ResourceType": 2, "ResourceName": "orders", "Name": "retention.ms", "Value": "3600000"}, T0 + HOUR + 1)
    meta(17, 0, {"BrokerId": 1, "BrokerEpoch": 11, "Fenced": 1}, T0 + HOUR + 2)
    meta(7, 0, {"Id": 1, "Epoch": 11}, T0 + HOUR + 2)
    meta(2, 0, {"Name": "payments", "TopicId": TOPIC_PAYMENTS}, T0 + HOUR + 3)
    meta(
        3,
        2,
        {
            "PartitionId": 0,
            "TopicId": TOPIC_PAYMENTS,
            "Replicas": [2, 3],
            "Isr": [2, 3],
            "RemovingReplicas": [],
            "AddingReplicas": [],
            "Leader": 3,
            "LeaderEpoch": 4,
            "PartitionEpoch": 2,
            "Directories": [DIR_B, DIR_A],
            "EligibleLeaderReplicas": [2],
            "LastKnownElr": [],
        },
        T0 + HOUR + 3,
    )
    ev.append(_broker(4, 2, T0 + HOUR + 4, IsMigratingZkBroker=True))
    # -- the snapshot is taken here (SNAPSHOT_BEFORE) --
    meta(
        5,
        1,
        {
            "PartitionId": 1,
            "TopicId": TOPIC_ORDERS,
            "Replicas": [2, 3, 4],
            "AddingReplicas": [4],
            "Directories": [DIR_A, DIR_B, DIR_A],
        },
        T0 + 2 * HOUR,
    )
    meta(
        5,
        2,
        {
            "PartitionId": 1,
            "TopicId": TOPIC_ORDERS,
            "Leader": -1,
            "Isr": [],
            "EligibleLeaderReplicas": [3],
            "LastKnownElr": [2],
            "LeaderRecoveryState": 0,
        },
        T0 + 2 * HOUR + 1,
    )
    meta(
        4, 0, {"ResourceType": 2, "ResourceName": "orders", "Name": "cleanup.policy", "Value": None}, T0 + 2 * HOUR + 2
    )
    meta(
        17,
        2,
        {"BrokerId": 3, "BrokerEpoch": 13, "Fenced": -1, "InControlledShutdown": 1, "LogDirs": [DIR_B]},
        T0 + 2 * HOUR + 3,
    )
    meta(1, 0, {"BrokerId": 4, "BrokerEpoch": 14}, T0 + 2 * HOUR + 4)
    meta(12, 0, {"Name": "group.version", "FeatureLevel": 1}, T0 + 2 * HOUR + 5)
    meta(28, 0, {"TopicName": "orders"}, T0 + 2 * HOUR + 6)
    meta(9, 0, {"TopicId": TOPIC_PAYMENTS}, T0 + 3 * HOUR)
    return ev


#: the snapshot covers the log's records before this time (its first two hours)
SNAPSHOT_BEFORE = T0 + 2 * HOUR


def share_group_state_events() -> list[Event]:
    """``__share_group_state``: a share group's snapshot of a partition's delivery state, then an update."""
    key = {"GroupId": "sharers", "TopicId": TOPIC_ORDERS, "Partition": 0}
    batches = [
        {"FirstOffset": 0, "LastOffset": 9, "DeliveryState": 2, "DeliveryCount": 1},
        {"FirstOffset": 10, "LastOffset": 14, "DeliveryState": 0, "DeliveryCount": 3},
    ]
    snapshot = {"SnapshotEpoch": 65535, "StateEpoch": 4, "LeaderEpoch": 2, "StartOffset": 0, "StateBatches": batches}
    update = {"SnapshotEpoch": 1, "LeaderEpoch": 3, "StartOffset": 10, "StateBatches": batches[1:]}
    return [
        coordinator_event("share_group_state", SHARE_GROUP_STATE_TYPES, 0, key, 0, snapshot, T0 + 70),
        coordinator_event(
            "share_group_state", SHARE_GROUP_STATE_TYPES, 1, key, 0, update, T0 + 71, unknown_tags=((4, b"\x2a"),)
        ),
        coordinator_event("share_group_state", SHARE_GROUP_STATE_TYPES, 1, key, None, None, T0 + 72),
    ]


def remote_log_metadata_events() -> list[Event]:
    ev: list[Event] = []
    tip = {"Name": "orders", "Id": TOPIC_ORDERS, "Partition": 0}
    seg = _uuid.UUID("12345678-1234-4234-8234-123456789abc")
    sid = {"TopicIdPartition": tip, "Id": seg}
    ev.append(
        framed_event(
            "remote_log_metadata",
            REMOTE,
            0,
            0,
            {
                "RemoteLogSegmentId": sid,
                "StartOffset": 0,
                "EndOffset": 999,
                "BrokerId": 1,
                "MaxTimestampMs": T0 + 100,
                "EventTimestampMs": T0 + 200,
                "SegmentLeaderEpochs": [{"LeaderEpoch": 0, "Offset": 0}, {"LeaderEpoch": 1, "Offset": 500}],
                "SegmentSizeInBytes": 1 << 20,
                "CustomMetadata": None,
                "RemoteLogSegmentState": 0,
            },
            T0 + 200,
        )
    )
    ev.append(
        framed_event(
            "remote_log_metadata",
            REMOTE,
            1,
            0,
            {
                "RemoteLogSegmentId": sid,
                "BrokerId": 1,
                "EventTimestampMs": T0 + 300,
                "CustomMetadata": b"\x00meta",
                "RemoteLogSegmentState": 1,
            },
            T0 + 300,
        )
    )
    ev.append(
        framed_event(
            "remote_log_metadata",
            REMOTE,
            3,
            0,
            {
                "SegmentId": seg,
                "StartOffset": 0,
                "EndOffset": 999,
                "BrokerId": 1,
                "MaxTimestampMs": T0 + 100,
                "EventTimestampMs": T0 + 300,
                "SegmentLeaderEpochs": [],
                "SegmentSizeInBytes": 1 << 20,
                "CustomMetadata": b"",
                "RemoteLogSegmentState": 1,
            },
            T0 + 301,
        )
    )
    ev.append(
        framed_event(
            "remote_log_metadata",
            REMOTE,
            2,
            0,
            {"TopicIdPartition": tip, "BrokerId": 2, "EventTimestampMs": T0 + 400, "RemotePartitionDeleteState": 0},
            T0 + 400,
        )
    )
    return ev


# --------------------------------------------------------------------------
# writing the folders
# --------------------------------------------------------------------------


def _records(events: list[Event]) -> list[dict]:
    return [{"key": e.raw_key, "value": e.raw_value, "timestamp": e.timestamp} for e in events]


def _kraft_control_batch(events: list[Event], base_offset: int, leader_epoch: int) -> bytes:
    return rc.encode_v2_batch(
        [{"key": e.raw_key, "value": e.raw_value, "timestamp": e.timestamp} for e in events],
        base_offset=base_offset,
        attributes=rc.ATTR_CONTROL,
        partition_leader_epoch=leader_epoch,
    )


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _metadata_log_bytes(kb, events: list[Event], base_offset: int, epoch: int, codec: str) -> bytes:
    """Runs of data records as kafkabatch-encoded batches, control records as control batches."""
    out = bytearray()
    offset = base_offset
    i = 0
    while i < len(events):
        j = i
        control = events[i].control
        while j < len(events) and events[j].control == control and j - i < 4:
            j += 1
        run = events[i:j]
        if control:
            out += _kraft_control_batch(run, offset, epoch)
        else:
            out += kb.encode(_records(run), compression=codec, base_offset=offset, partition_leader_epoch=epoch)
        offset += len(run)
        i = j
    return bytes(out)


@dataclasses.dataclass
class InternalLogs:
    root: Path
    consumer_offsets: list[Event]
    transaction_state: list[Event]
    cluster_metadata: list[Event]  # the log's records, in offset order
    snapshot: list[Event]  # the .checkpoint's records, in order
    snapshot_end_offset: int
    snapshot_epoch: int
    remote_log_metadata: list[Event]
    share_group_state: list[Event]
    orders_end_offsets: dict[int, int]


def build(root: str | Path) -> InternalLogs:
    """Write the internal topics' folders under ``root`` (a broker's log dir)
    and return the events written, with their offsets."""
    import kafkabatch as kb

    root = Path(root)
    # __consumer_offsets-0: lz4, in two segments; -1: uncompressed, the KIP-848 and share records
    co = consumer_offsets_events()
    commits = [e for e in co if e.record_type_id in (0, 1, 2)]
    others = [e for e in co if e.record_type_id not in (0, 1, 2)]
    half = len(commits) // 2
    for n, e in enumerate(commits):
        e.offset, e.partition_folder = n, "__consumer_offsets-0"
    for n, e in enumerate(others):
        e.offset, e.partition_folder = n, "__consumer_offsets-1"
    kb.write_segment(
        root / "__consumer_offsets-0" / f"{0:020d}.log",
        _records(commits[:half]),
        compression="lz4",
        records_per_batch=7,
    )
    kb.write_segment(
        root / "__consumer_offsets-0" / f"{half:020d}.log",
        _records(commits[half:]),
        compression="lz4",
        records_per_batch=7,
        base_offset=half,
    )
    kb.write_segment(
        root / "__consumer_offsets-1" / f"{0:020d}.log", _records(others), compression="none", records_per_batch=3
    )

    ts = transaction_state_events()
    for n, e in enumerate(ts):
        e.offset, e.partition_folder = n, "__transaction_state-0"
    kb.write_segment(root / "__transaction_state-0" / f"{0:020d}.log", _records(ts), compression="lz4")

    # __cluster_metadata-0: the log in two segments, a snapshot after SNAPSHOT_AFTER records
    log = cluster_metadata_log_events()
    for n, e in enumerate(log):
        e.offset, e.partition_folder = n, "__cluster_metadata-0"
    cut = 14
    folder = root / "__cluster_metadata-0"
    _write(folder / f"{0:020d}.log", _metadata_log_bytes(kb, log[:cut], 0, 1, "none"))
    _write(folder / f"{cut:020d}.log", _metadata_log_bytes(kb, log[cut:], cut, 2, "lz4"))
    covered = sum(1 for e in log if e.timestamp < SNAPSHOT_BEFORE)
    snap = snapshot_events(log[:covered])
    epoch = 2
    snap_bytes = bytearray(_kraft_control_batch([snap[0]], 0, epoch))
    snap_bytes += _metadata_log_bytes(kb, snap[1:-1], 1, epoch, "none")
    snap_bytes += _kraft_control_batch([snap[-1]], len(snap) - 1, epoch)
    for n, e in enumerate(snap):
        e.offset, e.partition_folder = n, "__cluster_metadata-0"
    _write(folder / f"{covered:020d}-{epoch:010d}.checkpoint", bytes(snap_bytes))
    (folder / "quorum-state").write_text(
        '{"leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[],"data_version":0}'
    )

    sg = share_group_state_events()
    for n, e in enumerate(sg):
        e.offset, e.partition_folder = n, "__share_group_state-0"
    kb.write_segment(root / "__share_group_state-0" / f"{0:020d}.log", _records(sg), compression="lz4")

    rl = remote_log_metadata_events()
    for n, e in enumerate(rl):
        e.offset, e.partition_folder = n, "__remote_log_metadata-0"
    kb.write_segment(root / "__remote_log_metadata-0" / f"{0:020d}.log", _records(rl), compression="none")

    # the data topic the groups read: orders-0 and orders-1, with known end offsets
    ends = {0: 2500, 1: 2200}
    for p, n in ends.items():
        kb.write_segment(
            root / f"orders-{p}" / f"{0:020d}.log",
            [{"value": b"o", "timestamp": T0 + i * (24 * HOUR // n)} for i in range(n)],
            compression="lz4",
            records_per_batch=500,
        )
    return InternalLogs(root, co, ts, log, snap, covered, epoch, rl, sg, ends)


def snapshot_events(log_prefix: list[Event]) -> list[Event]:
    """The records a controller's snapshot of ``log_prefix`` holds: the state,
    not the history (one record per live topic, partition, config, broker and
    feature), between a SnapshotHeader and a SnapshotFooter."""
    state = replay_cluster(log_prefix)
    ts = log_prefix[-1].timestamp
    out: list[Event] = [control_event(3, {"Version": 0, "LastContainedLogTimestamp": ts}, ts)]
    for name, level in sorted(state["features"].items()):
        out.append(framed_event("cluster_metadata", METADATA, 12, 0, {"Name": name, "FeatureLevel": level}, ts))
    for b in sorted(state["brokers"].values(), key=lambda b: b["BrokerId"]):
        out.append(framed_event("cluster_metadata", METADATA, 0, 3, {**b}, ts))
    for t in state["topics"].values():
        out.append(framed_event("cluster_metadata", METADATA, 2, 0, {"Name": t["name"], "TopicId": t["id"]}, ts))
        for p in sorted(t["partitions"].values(), key=lambda p: p["PartitionId"]):
            out.append(framed_event("cluster_metadata", METADATA, 3, 2, {**p, "TopicId": t["id"]}, ts))
    for (rtype, rname, name), value in sorted(state["configs"].items()):
        out.append(
            framed_event(
                "cluster_metadata",
                METADATA,
                4,
                0,
                {"ResourceType": rtype, "ResourceName": rname, "Name": name, "Value": value},
                ts,
            )
        )
    out.append(control_event(4, {"Version": 0}, ts))
    return out


# --------------------------------------------------------------------------
# independent expectations for the "at time" helpers
# --------------------------------------------------------------------------


def replay_offsets(events: list[Event], time: int) -> dict[tuple[str, str, int], dict]:
    """Each (group, topic, partition)'s last commit at or before ``time``;
    a tombstone deletes it."""
    state: dict[tuple[str, str, int], dict] = {}
    for e in sorted(
        (e for e in events if e.record_type == "OffsetCommit"), key=lambda e: (e.partition_folder, e.offset)
    ):
        if e.timestamp > time:
            continue
        key = (e.key["group"], e.key["topic"], e.key["partition"])  # type: ignore[index]
        if e.value is None:
            state.pop(key, None)
        else:
            state[key] = {
                "offset": e.value["offset"],
                "metadata": e.value["metadata"],
                "commit_timestamp": e.value["commitTimestamp"],
                "leader_epoch": e.value.get("leaderEpoch", -1),
            }
    return state


def replay_cluster(events: list[Event], time: int | None = None) -> dict:
    """The cluster as a controller's image holds it, from the records in order."""
    topics: dict[bytes, dict] = {}
    brokers: dict[int, dict] = {}
    configs: dict[tuple[int, str, str], str] = {}
    features: dict[str, int] = {}
    for e in events:
        if time is not None and e.timestamp > time:
            continue
        if e.control:
            continue
        v = dict(e.value or {})
        if e.record_type == "TopicRecord":
            topics[_uuid_bytes(v["TopicId"])] = {"name": v["Name"], "id": v["TopicId"], "partitions": {}}
        elif e.record_type == "PartitionRecord":
            p = {
                name: v.get(name)
                for name in (
                    "PartitionId",
                    "Replicas",
                    "Isr",
                    "RemovingReplicas",
                    "AddingReplicas",
                    "Leader",
                    "LeaderEpoch",
                    "PartitionEpoch",
                )
            }
            p["LeaderRecoveryState"] = v.get("LeaderRecoveryState", 0)
            p["Directories"] = v.get("Directories", [])
            p["EligibleLeaderReplicas"] = v.get("EligibleLeaderReplicas")
            p["LastKnownElr"] = v.get("LastKnownElr")
            topics[_uuid_bytes(v["TopicId"])]["partitions"][v["PartitionId"]] = p
        elif e.record_type == "PartitionChangeRecord":
            p = topics[_uuid_bytes(v["TopicId"])]["partitions"][v["PartitionId"]]
            for name in (
                "Isr",
                "Replicas",
                "RemovingReplicas",
                "AddingReplicas",
                "Directories",
                "EligibleLeaderReplicas",
                "LastKnownElr",
            ):
                if v.get(name) is not None:
                    p[name] = v[name]
            if v.get("Leader", -2) != -2:
                p["Leader"] = v["Leader"]
                p["LeaderEpoch"] += 1
            elif "Isr" in v or "Replicas" in v:
                pass
            if v.get("LeaderRecoveryState", -1) != -1:
                p["LeaderRecoveryState"] = v["LeaderRecoveryState"]
            p["PartitionEpoch"] += 1
        elif e.record_type == "ClearElrRecord":
            # as a PartitionChangeRecord setting both lists empty, on partitions that have either
            for t in topics.values():
                if v["TopicName"] not in ("", t["name"]):
                    continue
                for p in t["partitions"].values():
                    if p["EligibleLeaderReplicas"] or p["LastKnownElr"]:
                        p["EligibleLeaderReplicas"], p["LastKnownElr"] = [], []
                        p["PartitionEpoch"] += 1
        elif e.record_type == "RemoveTopicRecord":
            gone = topics.pop(_uuid_bytes(v["TopicId"]))
            for key in [k for k in configs if k[0] == 2 and k[1] == gone["name"]]:
                del configs[key]
        elif e.record_type == "ConfigRecord":
            key = (v["ResourceType"], v["ResourceName"], v["Name"])
            if v["Value"] is None:
                configs.pop(key, None)
            else:
                configs[key] = v["Value"]
        elif e.record_type == "RegisterBrokerRecord":
            b = {**v}
            b.setdefault("InControlledShutdown", False)
            b.setdefault("IsMigratingZkBroker", False)
            b.setdefault("LogDirs", [])
            brokers[v["BrokerId"]] = b
        elif e.record_type in ("FenceBrokerRecord", "UnfenceBrokerRecord"):
            brokers[v["Id"]]["Fenced"] = e.record_type == "FenceBrokerRecord"
        elif e.record_type == "BrokerRegistrationChangeRecord":
            b = brokers[v["BrokerId"]]
            # BrokerRegistrationFencingChange: 1 fence, -1 unfence, 0 (the default) no change
            if v.get("Fenced") in (1, -1):
                b["Fenced"] = v["Fenced"] == 1
            if v.get("InControlledShutdown") == 1:
                b["InControlledShutdown"] = True
            if v.get("LogDirs"):
                b["LogDirs"] = v["LogDirs"]
        elif e.record_type == "UnregisterBrokerRecord":
            brokers.pop(v["BrokerId"], None)
        elif e.record_type == "FeatureLevelRecord":
            if v["FeatureLevel"] == 0:
                features.pop(v["Name"], None)
            else:
                features[v["Name"]] = v["FeatureLevel"]
    return {"topics": topics, "brokers": brokers, "configs": configs, "features": features}


if __name__ == "__main__":  # pragma: no cover
    import sys
    import tempfile

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="kafka-internal-"))
    logs = build(out)
    for p in sorted(out.rglob("*")):
        if p.is_file():
            print(f"{p.stat().st_size:8d}  {p.relative_to(out)}")
