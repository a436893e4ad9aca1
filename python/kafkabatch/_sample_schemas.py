"""The schemas of the sample data ``generate`` writes: JSON Schemas of the JSON topics, the Avro schemas of the Avro topic.

>>> sorted(JSON_SCHEMAS)[:2], sorted(SHIPMENT_SCHEMAS)
(['audit', 'clicks'], [1, 2])
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from kafkabatch import _kafkabatch as _native


class _Topic(Protocol):
    @property
    def name(self) -> str: ...

    def resolved_kind(self) -> str: ...


#: Kinds whose values are Confluent-framed Avro (the rest are JSON).
AVRO_KINDS: tuple[str, ...] = ("shipments",)

#: The Avro writer schemas of ``shipments`` values, by Schema Registry id:
#: version 2 adds ``tracking_id``, ``express`` and ``notes`` with defaults.
SHIPMENT_SCHEMAS: Mapping[int, str] = dict(_native.SHIPMENT_SCHEMAS)

_STRING: dict[str, Any] = {"type": "string"}
_INTEGER: dict[str, Any] = {"type": "integer"}
_NUMBER: dict[str, Any] = {"type": "number"}
_TIME: dict[str, Any] = {"type": "string", "format": "date-time"}


def _object(title: str | None = None, **properties: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": properties}
    return out if title is None else {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title, **out}


def _array(items: Any) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _or_null(node: dict[str, Any]) -> dict[str, Any]:
    return {**node, "type": [node["type"], "null"]}


_ADDRESS = _object(street=_STRING, city=_STRING, postcode=_STRING, country=_STRING)

#: JSON Schemas of the JSON kinds' values (optional fields may be missing).
JSON_SCHEMAS: Mapping[str, Mapping[str, Any]] = {
    "orders": _object(
        "Order",
        order_id=_STRING,
        customer_id=_STRING,
        created_at=_TIME,
        status=_STRING,
        channel=_STRING,
        currency=_STRING,
        items=_array(_object(sku=_STRING, name=_STRING, qty=_INTEGER, unit_price=_NUMBER)),
        total=_NUMBER,
        shipping=_object(method=_STRING, country=_STRING, city=_STRING, postcode=_STRING),
        coupon=_or_null(_STRING),
        note=_STRING,
    ),
    "clicks": _object(
        "Click",
        event=_STRING,
        session_id=_STRING,
        user_id=_or_null(_INTEGER),
        ts=_INTEGER,
        url=_STRING,
        referrer=_or_null(_STRING),
        user_agent=_STRING,
        screen=_object(w=_INTEGER, h=_INTEGER),
        locale=_STRING,
        experiments=_array(_STRING),
        duration_ms=_INTEGER,
    ),
    "payments": _object(
        "Payment",
        payment_id=_STRING,
        order_id=_STRING,
        amount=_NUMBER,
        currency=_STRING,
        method=_STRING,
        card=_object(brand=_STRING, last4=_STRING, exp_month=_INTEGER, exp_year=_INTEGER),
        status=_STRING,
        risk=_object(score=_NUMBER, rules=_array(_STRING)),
        processor=_STRING,
        created_at=_TIME,
        idempotency_key=_STRING,
        description=_STRING,
    ),
    "customers": _object(
        "Customer",
        customer_id=_STRING,
        name=_STRING,
        email=_STRING,
        phone=_STRING,
        address=_ADDRESS,
        tier=_STRING,
        marketing_opt_in={"type": "boolean"},
        tags=_array(_STRING),
        updated_at=_TIME,
        bio=_STRING,
    ),
    "audit": _object(
        "AuditEvent",
        ts=_TIME,
        service=_STRING,
        actor=_STRING,
        action=_STRING,
        resource=_STRING,
        ip=_STRING,
        status=_INTEGER,
        latency_ms=_INTEGER,
        request_id=_STRING,
        details=_STRING,
    ),
    "events": _object("Event", id=_STRING, type=_STRING, ts=_INTEGER, payload=_STRING),
}

#: The file of Schema Registry ids and their Avro schemas, under ``<out_dir>/schemas``.
REGISTRY_FILE = "registry.json"


def write_schemas(root: Path, specs: Iterable[_Topic]) -> dict[str, Path]:
    """Write each topic's value schema under ``root/schemas``: a JSON Schema
    per JSON topic, and one ``{schema id: Avro schema}`` file for the Avro
    topics (a Schema Registry's content, as ``schema_registry`` takes it)."""
    folder = root / "schemas"
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for spec in specs:
        kind = spec.resolved_kind()
        if kind in AVRO_KINDS:
            path = folder / REGISTRY_FILE
            document: Any = {str(k): json.loads(v) for k, v in SHIPMENT_SCHEMAS.items()}
        else:
            path = folder / f"{spec.name}.schema.json"
            document = JSON_SCHEMAS[kind]
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        files[spec.name] = path
    return files
