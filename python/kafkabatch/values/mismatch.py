"""A JSON schema that matches nothing: values parsed with another topic's
schema come out as rows whose every field is null, which reads like data.
:func:`warn_unmatched` looks at a parsed batch (every field null on every row
whose value is not null) and warns once per topic, naming the schema's fields.

>>> kb.decode(orders, value_format="json", value_schema=clicks_schema)  # doctest: +SKIP
SchemaMismatchWarning: value of topic 'orders': no value in a batch of 4,096 has any field of the
JSON schema (page, session_id, ...); is it the schema of another topic?
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import pyarrow as pa

__all__ = ["SchemaMismatchWarning", "Warned", "warn_unmatched"]


class SchemaMismatchWarning(UserWarning):
    """Values parsed with a JSON schema none of whose fields they have."""


#: ``(topic, column)`` pairs a read has warned about.
Warned = set[tuple[str | None, str]]
#: Field names shown in a warning.
_SHOWN_FIELDS = 8


def warn_unmatched(
    batch: pa.RecordBatch | pa.Table, columns: Iterable[str], topic: str | None = None, warned: Warned | None = None
) -> None:
    """Warn when a parsed struct column of ``batch`` (those of ``columns``
    that are structs: JSON values) has values but no field set in any of
    them; ``warned`` (kept by the caller for one read) makes it once per
    topic and column."""
    for column in columns:
        if column not in batch.schema.names:
            continue
        parsed = batch.column(column)
        kind = parsed.type
        if not pa.types.is_struct(kind) or kind.num_fields == 0:
            continue
        fields = tuple(kind.field(i).name for i in range(kind.num_fields))
        if (warned is not None and (topic, column) in warned) or parsed.null_count == len(parsed):
            continue
        chunks = parsed.chunks if isinstance(parsed, pa.ChunkedArray) else [parsed]
        # A field is set somewhere when it has fewer nulls than the rows (parent nulls merged in by flatten).
        if any(child.null_count < len(chunk) for chunk in chunks for child in chunk.flatten()):
            continue
        if warned is not None:
            warned.add((topic, column))
        shown = ", ".join(fields[:_SHOWN_FIELDS]) + (", ..." if len(fields) > _SHOWN_FIELDS else "")
        where = f"{column} of topic {topic!r}" if topic is not None else column
        warnings.warn(
            f"{where}: no value in a batch of {len(parsed):,} has any field of the JSON schema ({shown}); "
            "is it the schema of another topic?",
            SchemaMismatchWarning,
            stacklevel=2,
        )
