"""The command line's flags for Kafka's internal topics: kafka-dump-log's decoder flags and ``--decoder``."""

from __future__ import annotations

import argparse
import json
from typing import Any

import kafkabatch as kb
from kafkabatch.internal import KINDS, Internal, resolve_internal

from ._common import CliError

#: kafka-dump-log's decoder flags, and the kind each stands for.
DECODER_FLAGS: dict[str, str] = {
    "--offsets-decoder": "consumer_offsets",
    "--transaction-log-decoder": "transaction_state",
    "--cluster-metadata-decoder": "cluster_metadata",
    "--remote-log-metadata-decoder": "remote_log_metadata",
    "--share-group-state-decoder": "share_group_state",
}


def add_decoder_options(p: argparse.ArgumentParser, *, dump: bool) -> None:
    group = p.add_argument_group("Kafka's internal topics")
    group.add_argument(
        "--decoder",
        metavar="KIND",
        help=(
            "decode the records of Kafka's internal topics with Kafka's message definitions: "
            f"auto (by topic name: __consumer_offsets, __cluster_metadata, ...) or one of {', '.join(KINDS)}"
        ),
    )
    if dump:
        for flag, kind in DECODER_FLAGS.items():
            group.add_argument(
                flag, dest="decoder", action="store_const", const=kind, help=f"as kafka-dump-log's: --decoder {kind}"
            )
    group.add_argument(
        "--definitions",
        metavar="DIR",
        help="a folder of Kafka's own *.json message definitions, used over the built-in ones of the same name",
    )


def internal_of(args: argparse.Namespace, *, json_text: bool = False) -> Internal | None:
    """The resolved ``--decoder``/``--definitions``, or None."""
    if getattr(args, "decoder", None) is None:
        if getattr(args, "definitions", None) is not None:
            raise CliError("--definitions needs --decoder (auto or a kind)")
        return None
    try:
        return resolve_internal(args.decoder, args.definitions, json_text)
    except (TypeError, ValueError, FileNotFoundError) as error:
        text = str(error).replace("internal ", "--decoder ", 1).replace("definitions:", "--definitions:", 1)
        raise CliError(text) from None


def scan_options(internal: Internal | None) -> dict[str, Any]:
    """scan_log's keywords for ``internal``."""
    if internal is None:
        return {}
    return {
        "internal": internal.kind if internal.kind is not None else dict(internal.topics),
        "definitions": internal.definitions,
    }


class Decoded:
    """Each record's decoded form by offset, as kafka-dump-log prints it (key and payload JSON)."""

    def __init__(self, data: Any, topic: str | None, internal: Internal) -> None:
        self.by_offset: dict[int, tuple[Any, Any, str | None]] = {}
        if internal.kind_for(topic) is None:
            return
        table = kb.decode(
            data,
            topic=topic,
            include_control=True,
            validate_crc=False,
            on_error="skip",
            internal=internal.kind or dict(internal.topics),
            definitions=internal.definitions,
            internal_json=True,
        )
        for offset, text, error in zip(
            table["offset"].to_pylist(), table["json"].to_pylist(), table["error"].to_pylist()
        ):
            if error is not None or text is None:
                self.by_offset[offset] = (None, None, error or "not decoded")
                continue
            obj = json.loads(text)
            if "payload" in obj:  # coordinator records: key and value
                self.by_offset[offset] = (obj["key"], obj["payload"], None)
            else:  # metadata and control records have no key
                self.by_offset[offset] = (None, obj, None)

    def text(self, offset: int) -> str | None:
        """`` key: {...} payload: {...}`` as kafka-dump-log's decoders print a record, or None."""
        found = self.by_offset.get(offset)
        if found is None:
            return None
        key, payload, error = found
        if error is not None:
            return f" Error at offset {offset}, skipping. {error}"
        out = "" if key is None else f" key: {json.dumps(key, separators=(',', ':'))}"
        shown = "<DELETE>" if payload is None else json.dumps(payload, separators=(",", ":"))
        return f"{out} payload: {shown}"

    def fields(self, offset: int) -> dict[str, Any]:
        """The JSON output's ``decoded_key``, ``decoded_value`` and ``decode_error`` of a record."""
        found = self.by_offset.get(offset)
        if found is None:
            return {}
        key, payload, error = found
        return {"decoded_key": key, "decoded_value": payload, "decode_error": error}
