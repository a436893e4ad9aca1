"""Protobuf schemas as the Rust core takes them: files by import name, each
``.proto`` text, a serialized ``FileDescriptorProto`` or a ``FileDescriptorSet``.

A schema comes from a generated message class (``order_pb2.Order``), a
mapping naming the message and its descriptor set or ``.proto`` text, or a
Schema Registry (a registered schema and, through their subjects, its
references; ``google/protobuf/*`` imports are built in and never fetched).

>>> protobuf_schema({"message": "shop.Order", "proto": 'syntax = "proto3"; package shop; message Order {}'})
((('schema.proto', 'proto', b'syntax = "proto3"; package shop; message Order {}'),), 'shop.Order')
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkabatch.values.registry import Reference, SchemaRegistry

#: One schema file: ``(import name, kind, bytes)``, kind ``"proto"`` (text),
#: ``"descriptor"`` (a serialized ``FileDescriptorProto``) or ``"descriptor_set"``.
ProtoFile = tuple[str, str, bytes]

#: Imports every Protobuf compiler knows; registries never hold them.
WELL_KNOWN = "google/protobuf/"

_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+")


def registered_file(name: str, schema: Any) -> ProtoFile:
    """A registry's schema as a file: ``.proto`` text, or the base64
    ``FileDescriptorProto`` confluent-kafka's Python serializer registers."""
    if isinstance(schema, bytes):
        return (name, "descriptor", schema)
    text = getattr(schema, "schema_str", schema)
    text = str(text)
    if ";" not in text and "{" not in text and _BASE64.fullmatch(text):
        try:
            return (name, "descriptor", base64.b64decode(text, validate=False))
        except binascii.Error:
            pass
    return (name, "proto", text.encode())


def registry_files(
    registry: SchemaRegistry, schema: str, references: list[Reference], name: str = "schema.proto"
) -> tuple[ProtoFile, ...]:
    """A registered schema and every schema it references (by subject and
    version, recursively), the schema first."""
    files: dict[str, ProtoFile] = {}

    def add(file_name: str, text: str, refs: list[Reference], depth: int) -> None:
        if file_name in files or depth > 64:
            return
        files[file_name] = registered_file(file_name, text)
        for ref_name, subject, version in refs:
            if ref_name.startswith(WELL_KNOWN) or ref_name in files:
                continue
            _, ref_text, ref_refs = registry.version_entry(subject, version)
            add(ref_name, ref_text, ref_refs, depth + 1)

    add(name, schema, references, 0)
    return tuple(files.values())


def _descriptor_files(file: Any) -> list[ProtoFile]:
    """A google.protobuf ``FileDescriptor`` and its imports, serialized, the file first."""
    out: list[ProtoFile] = []
    seen: set[str] = set()

    def add(f: Any) -> None:
        if f.name in seen:
            return
        seen.add(f.name)
        out.append((f.name, "descriptor", bytes(f.serialized_pb)))
        for dep in f.dependencies:
            add(dep)

    add(file)
    return out


def _read(source: Any) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    return Path(source).read_bytes()


def protobuf_schema(schema: Any) -> tuple[tuple[ProtoFile, ...] | None, str | None]:
    """``(files, message full name)`` from a ``value_schema`` for Protobuf:

    - a generated message class or instance, or its ``Descriptor``;
    - a mapping with ``"message"`` and ``"descriptor_set"`` (bytes or a path,
      ``protoc --descriptor_set_out``) or ``"proto"`` (``.proto`` text, a path
      ending ``.proto``, or ``{import name: text}`` with the main file first);
    - a message's full name alone (its files come from a schema registry).
    """
    descriptor = getattr(schema, "DESCRIPTOR", schema)
    if hasattr(descriptor, "full_name") and hasattr(descriptor, "file"):
        return tuple(_descriptor_files(descriptor.file)), str(descriptor.full_name)
    if isinstance(schema, str):
        return None, schema.strip().lstrip(".")
    if not isinstance(schema, Mapping):
        raise TypeError(
            "a Protobuf schema is a generated message class, a message's full name (with a registry), "
            "or a dict with 'message' and 'descriptor_set' or 'proto', "
            f"not {type(schema).__name__}"
        )
    message = schema.get("message")
    if message is None:
        raise ValueError("a Protobuf schema dict needs 'message' (the message's full name, e.g. 'shop.Order')")
    if schema.get("descriptor_set") is not None:
        files: tuple[ProtoFile, ...] = (("descriptor_set", "descriptor_set", _read(schema["descriptor_set"])),)
    elif schema.get("proto") is not None:
        proto = schema["proto"]
        if isinstance(proto, Mapping):
            files = tuple((str(n), "proto", str(t).encode()) for n, t in proto.items())
        elif isinstance(proto, Path) or (isinstance(proto, str) and proto.strip().endswith(".proto")):
            files = ((Path(proto).name, "proto", Path(proto).read_bytes()),)
        else:
            files = (("schema.proto", "proto", str(proto).encode()),)
    else:
        files = ()
    return (files or None), str(message).strip().lstrip(".")
