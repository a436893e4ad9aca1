"""Typed values read from a log folder with ``scan_log`` when most of them are
bad: 200,000 values, nine in ten a bad one (Avro and Protobuf, plain and
Confluent-framed), written as three segments, read on a worker thread.

With ``on_value_error="null"`` every good row keeps its own value (compared
with what other people's readers give for the same bytes: fastavro,
confluent-kafka's deserializers, google.protobuf) and every bad row is null,
read whole and from an offset (rows filtered before they are parsed); with
``"raise"`` the first bad record is named by its offset. Each case runs in a
fresh interpreter, so a crash is a failed test naming its signal.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import test_bad_values_bulk as bulk

import kafkabatch as kb

HERE = Path(__file__).resolve().parent
ROWS = 200_000
SEGMENTS = 3
#: One good value in this many.
GOOD_EVERY = 10
FORMATS = ["avro", "avro-confluent", "protobuf-plain", "protobuf-confluent"]


def _on_a_thread(read: Any) -> Any:
    """``read()`` run on a worker thread: its result, or its exception raised here."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = read()
        except BaseException as error:  # handed to the caller
            out["error"] = error

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def child_scan(fmt: str, proto_root: str, folder: str) -> None:
    import pyarrow.compute as pc

    good, bad, options, reference, rows_of, key = bulk._case(fmt, proto_root)
    values = bulk.mostly_bad(good, bad, GOOD_EVERY)
    per = -(-ROWS // SEGMENTS)
    for base in range(0, ROWS, per):
        kb.write_segment(
            Path(folder) / "orders-0" / f"{base:020d}.log",
            bulk.values_table(values[base : base + per]),
            base_offset=base,
            compression="lz4",
            records_per_batch=500,
        )
    # Row i holds good[(i // GOOD_EVERY) % DISTINCT]: each good value is read once by the reference.
    readings = [reference(v) for v in good]
    for start in (None, ROWS // 2 + 3):
        table = _on_a_thread(
            lambda start=start: kb.scan_log(
                folder, start_offset=start, on_value_error="null", max_chunk_bytes="256KiB", **options
            ).read_all()
        )
        first = start or 0
        assert table.column("offset").to_pylist() == list(range(first, ROWS))
        column = table.column("value")
        kept = [i for i in range(first, ROWS) if i % GOOD_EVERY == 0]
        assert [first + i for i, ok in enumerate(column.is_valid().to_pylist()) if ok] == kept
        got = column.filter(column.is_valid())
        want = [readings[(i // GOOD_EVERY) % bulk.DISTINCT] for i in kept]
        if key is not None:  # compared field by field where the readers' types agree: the key field, then all
            assert pc.struct_field(got, key).to_pylist() == [w[key] for w in want]
        assert rows_of(got.slice(0, 2 * bulk.DISTINCT)) == want[: 2 * bulk.DISTINCT]
    try:
        _on_a_thread(lambda: kb.scan_log(folder, **options).read_all())
    except kb.ValueDecodeError as error:
        assert (error.offset, error.column, error.topic, error.partition) == (1, "value", "orders", 0), str(error)
        assert str(error).startswith("value at offset 1 of orders-0: "), str(error)
    else:
        raise AssertionError("on_value_error='raise' raised nothing")
    print(json.dumps({"rows": table.num_rows, "kept": len(kept)}))


@pytest.fixture(scope="module")
def proto_root(tmp_path_factory) -> str:
    import importlib.util

    if importlib.util.find_spec("grpc_tools") is None or importlib.util.find_spec("google.protobuf") is None:
        pytest.skip("grpcio-tools and protobuf are needed")
    import test_protobuf as tp

    return str(tp.make_protos(tmp_path_factory.mktemp("protos")).root)


@pytest.mark.parametrize("fmt", FORMATS)
def test_scan_log_of_mostly_bad_typed_values_on_a_thread(fmt, proto_root, tmp_path):
    pytest.importorskip("fastavro")
    pytest.importorskip("confluent_kafka.schema_registry")
    out = json.loads(
        bulk.run_child("scan", fmt, proto_root, str(tmp_path / "log"), script=__file__, timeout=600).splitlines()[-1]
    )
    half = ROWS // 2 + 3
    assert out == {"rows": ROWS - half, "kept": len(range(half + (-half % GOOD_EVERY), ROWS, GOOD_EVERY))}


if __name__ == "__main__":
    what, *rest = sys.argv[1:]
    if what == "scan":
        child_scan(*rest)
