"""``filesystem=``: a caller's ``pyarrow.fs.FileSystem`` read through the core's storage trait.

Each read through a file system is compared with the same bytes read another
way: the same bucket by URI (the core's object store), or the local folder the
objects came from. Reads are shown to go through the caller's file system by
wrapping it in a ``pyarrow.fs.PyFileSystem`` that counts its calls.
"""

from __future__ import annotations

import concurrent.futures
import shutil
import urllib.request
from pathlib import Path

import pyarrow as pa
import pytest
import tiered_fixtures as tf
from pyarrow import fs as pafs

import kafkabatch as kb
from kafkabatch.log import list_segments, scan_log
from kafkabatch.log.roots import list_roots

CHUNK = 8 << 10  # small chunks: every Aiven segment spans many


@pytest.fixture(scope="module")
def broker(tmp_path_factory) -> Path:
    """A broker log dir of several segments per partition, lz4 and zstd batches, transactions."""
    root = tmp_path_factory.mktemp("fs-broker")
    kb.generate(
        root,
        size="700KB",
        topics=[kb.TopicSpec("orders", 2, codec="lz4"), kb.TopicSpec("payments", 1, codec="zstd")],
        segment_bytes="96KB",
        progress=False,
    )
    return root


class Counting(pafs.FileSystemHandler):
    """A file system handler passing every call to ``inner``, counting the calls by name."""

    def __init__(self, inner: pafs.FileSystem) -> None:
        self.inner = inner
        self.calls: dict[str, int] = {}

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Counting) and other.inner.equals(self.inner)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def get_type_name(self) -> str:
        return "counting"

    def normalize_path(self, path: str) -> str:
        return self.inner.normalize_path(path)

    def get_file_info(self, paths):  # type: ignore[no-untyped-def]
        self._count("get_file_info")
        return self.inner.get_file_info(paths)

    def get_file_info_selector(self, selector):  # type: ignore[no-untyped-def]
        self._count("get_file_info_selector")
        return self.inner.get_file_info(selector)

    def open_input_file(self, path: str):  # type: ignore[no-untyped-def]
        self._count("open_input_file")
        return self.inner.open_input_file(path)

    def open_input_stream(self, path: str):  # type: ignore[no-untyped-def]
        self._count("open_input_stream")
        return self.inner.open_input_stream(path)

    def create_dir(self, path, recursive):  # type: ignore[no-untyped-def]
        raise OSError("read only")

    delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = create_dir
    move = copy_file = open_output_stream = open_append_stream = create_dir


def counting(inner: pafs.FileSystem) -> tuple[pafs.FileSystem, Counting]:
    handler = Counting(inner)
    return pafs.PyFileSystem(handler), handler


def rows(table: pa.Table) -> list[tuple]:
    cols = ["topic", "partition", "offset", "timestamp", "timestampType", "key", "value", "headers"]
    return list(zip(*(table[c].to_pylist() for c in cols)))


def put_tree(filesystem: pafs.FileSystem, local: Path, prefix: str) -> dict[str, int]:
    """Every file under ``local`` put on the S3 server under ``prefix``: key → size."""
    sizes = {}
    for path in sorted(local.rglob("*")):
        if path.is_file():
            key = prefix + path.relative_to(local).as_posix()
            with filesystem.open_output_stream(key) as f:
                f.write(path.read_bytes())
            sizes[key] = path.stat().st_size
    return sizes


def s3_filesystem(endpoint: str) -> pafs.S3FileSystem:
    """The caller's own S3 file system: endpoint and keys given to it, none from the environment."""
    return pafs.S3FileSystem(
        endpoint_override=endpoint, scheme="http", access_key="test", secret_key="test", region="us-east-1"
    )


# --------------------------------------------------------------------------
# a local folder through a SubTreeFileSystem
# --------------------------------------------------------------------------


def test_subtree_filesystem_reads_as_the_folder_does(broker):
    """Paths relative to a SubTreeFileSystem's base: folders, globs, lists, bounds, read_committed,
    read_segment and scan_polars give what the folder read by its local paths gives."""
    sub, handler = counting(pafs.SubTreeFileSystem(str(broker), pafs.LocalFileSystem()))
    whole = scan_log(broker).read_all()
    got = scan_log("", filesystem=sub).read_all()
    assert handler.calls.get("open_input_file", 0) > 0  # read through the caller's file system
    assert rows(got) == rows(whole)
    assert rows(scan_log("orders-*", filesystem=sub).read_all()) == rows(scan_log(broker / "orders-*").read_all())
    # a list of roots in one file system: joined as local roots are
    listed = scan_log(["payments-0", "orders-1", "orders-1/"], filesystem=sub).read_all()
    assert rows(listed) == rows(scan_log([broker / "payments-0", broker / "orders-1"]).read_all())
    # bounds (offsets and time), read_committed: the same rows
    start_ts = whole["timestamp"][whole.num_rows // 2].value // 1000
    for options in (
        {"start_offset": 150, "end_offset": 900},
        {"start_timestamp": start_ts},
        {"isolation": "read_committed"},
        {"isolation": "read_committed", "start_offset": 300},
    ):
        expected = scan_log(broker, **options).read_all()
        assert rows(scan_log("", filesystem=sub, **options).read_all()) == rows(expected), options
    assert scan_log(broker, isolation="read_committed").read_all().num_rows < whole.num_rows  # aborted ones hidden
    # typed values, parsed as the core reads
    schema = pa.schema(
        [("order_id", pa.string()), ("total", pa.float64()), ("items", pa.list_(pa.struct([("qty", pa.int64())])))]
    )
    typed = scan_log("orders-0", filesystem=sub, value_format="json", value_schema=schema).read_all()
    assert typed.schema.field("value").type == pa.struct(schema)
    assert typed.equals(scan_log(broker / "orders-0", value_format="json", value_schema=schema).read_all())
    assert typed["value"].null_count == 0
    # the segments' paths are the file system's
    segments = list_segments("orders-0", filesystem=sub)
    assert [s.path for s in segments] == [f"orders-0/{p.name}" for p in sorted((broker / "orders-0").glob("*.log"))]
    assert all(s.filesystem is sub for s in segments)
    assert [s.path for s in list_roots(["orders-0"], filesystem=sub)] == [s.path for s in segments]
    first = segments[1].path
    assert rows(kb.read_segment(first, filesystem=sub, start_offset=segments[1].base_offset + 5)) == rows(
        kb.read_segment(broker / first, start_offset=segments[1].base_offset + 5)
    )


def test_scan_polars_through_a_filesystem(broker):
    pl = pytest.importorskip("polars")
    sub = pafs.SubTreeFileSystem(str(broker), pafs.LocalFileSystem())
    query = pl.col("offset").is_between(100, 400)
    got = kb.scan_polars("orders-*", filesystem=sub).filter(query).sort("partition", "offset").collect()
    expected = kb.scan_polars(str(broker / "orders-*")).filter(query).sort("partition", "offset").collect()
    assert got.height > 0 and got.equals(expected)


def test_local_filesystem_is_read_as_local_paths(broker):
    """pyarrow's LocalFileSystem: its paths are the machine's, read memory-mapped as without it."""
    got = scan_log(str(broker / "orders-0"), filesystem=pafs.LocalFileSystem()).read_all()
    assert rows(got) == rows(scan_log(broker / "orders-0").read_all())


# --------------------------------------------------------------------------
# errors in Python's words
# --------------------------------------------------------------------------


def test_errors_name_the_argument(broker):
    sub = pafs.SubTreeFileSystem(str(broker), pafs.LocalFileSystem())
    with pytest.raises(TypeError, match=r"filesystem must be a pyarrow\.fs\.FileSystem, not builtins\.str"):
        scan_log("orders-0", filesystem="s3")
    with pytest.raises(TypeError, match="filesystem must be a pyarrow.fs.FileSystem"):
        kb.read_segment("orders-0/00000000000000000000.log", filesystem=object())
    with pytest.raises(TypeError, match="filesystem must be a pyarrow.fs.FileSystem"):
        list_segments("orders-0", filesystem=42)
    # A URI with a file system, as pyarrow.dataset refuses it: the file system says where its paths are.
    with pytest.raises(
        ValueError, match=r"path 's3://tiered/kafka/' is a URI, but filesystem= was given.*'tiered/kafka/'"
    ):
        scan_log("s3://tiered/kafka/", filesystem=sub)
    with pytest.raises(ValueError, match=r"'file:///orders-0' is a URI"):
        scan_log(["orders-0", "file:///orders-0"], filesystem=sub)
    with pytest.raises(FileNotFoundError, match="no-such-topic-0"):
        scan_log("no-such-topic-0", filesystem=sub)
    with pytest.raises(FileNotFoundError, match=r"orders-9\*"):
        scan_log("orders-9*", filesystem=sub)
    with pytest.raises(FileNotFoundError, match="no-such-topic-0"):
        kb.read_segment("no-such-topic-0/00000000000000000000.log", filesystem=sub)


def test_an_exception_of_the_filesystem_is_raised_as_it_was(broker):
    """What the caller's file system raises mid-read reaches the caller unchanged."""

    class Failing(Counting):
        def open_input_file(self, path: str):  # type: ignore[no-untyped-def]
            raise PermissionError(f"denied by the caller's file system: {path}")

    fs = pafs.PyFileSystem(Failing(pafs.SubTreeFileSystem(str(broker), pafs.LocalFileSystem())))
    reader = scan_log("orders-0", filesystem=fs)
    with pytest.raises(PermissionError, match="denied by the caller's file system: orders-0/0"):
        reader.read_all()


# --------------------------------------------------------------------------
# S3 (moto's server) through the caller's S3FileSystem
# --------------------------------------------------------------------------


def test_s3_filesystem_reads_a_broker_dir_as_its_uri_does(broker, moto_s3, monkeypatch):
    """A broker dir in a bucket, through the caller's S3FileSystem: the same rows as by URI
    (the core's object store) and as the local folder, bounds and read_committed included;
    an endpoint in the environment that points nowhere is not used."""
    server_fs, endpoint, _ = moto_s3
    put_tree(server_fs, broker, "tiered/broker/")
    query = f"?endpoint_override={endpoint}&scheme=http"
    s3, handler = counting(s3_filesystem(endpoint))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # the core's store would go there
    for options in ({}, {"start_offset": 200, "end_offset": 700}, {"isolation": "read_committed"}):
        got = scan_log("tiered/broker/", filesystem=s3, **options).read_all()
        by_uri = scan_log(f"s3://tiered/broker/{query}", **options).read_all()
        assert rows(got) == rows(by_uri) == rows(scan_log(broker, **options).read_all()), options
    assert handler.calls["open_input_file"] > 0
    # a list of roots in the bucket, and a glob
    two = scan_log(["tiered/broker/payments-0", "tiered/broker/orders-0"], filesystem=s3).read_all()
    assert rows(two) == rows(scan_log([broker / "payments-0", broker / "orders-0"]).read_all())
    glob = scan_log("tiered/broker/orders-*", filesystem=s3).read_all()
    assert rows(glob) == rows(scan_log(broker / "orders-*").read_all())


def test_s3_filesystem_reads_an_aiven_bucket_with_its_index_objects(broker, moto_s3):
    """An encrypted, compressed Aiven bucket through the caller's S3FileSystem: the rows of the
    URI read and of the broker folder; a bounded read fetches a few chunks and one index slice
    (counted by the server), so the ``.indexes`` objects are used through the file system."""
    server_fs, endpoint, recording = moto_s3
    key = tf.make_key_pair("key-1")
    bucket = broker.parent / "fs-aiven-bucket"
    if not bucket.exists():
        uploader = tf.Uploader(bucket, "zstd+encrypted", CHUNK, key, prefix="")
        for folder in sorted(p for p in broker.iterdir() if p.is_dir()):
            topic, _, partition = folder.name.rpartition("-")
            for log in tf.broker_segments(folder):
                batches = list(kb.iter_batches(log.read_bytes(), validate_crc=False))
                end, max_ts = batches[-1].last_offset, max(b.max_timestamp for b in batches)
                uploader.upload(log, topic, int(partition), end_offset=end, max_timestamp=max_ts)
    sizes = put_tree(server_fs, bucket, "tiered/aiven/")
    keys = {key.key_id: key.private_pem}
    s3 = s3_filesystem(endpoint)
    query = f"?endpoint_override={endpoint}&scheme=http"
    whole = scan_log("tiered/aiven/", filesystem=s3, tiered_keys=keys).read_all()
    assert rows(whole) == rows(scan_log(f"s3://tiered/aiven/{query}", tiered_keys=keys).read_all())
    assert sorted(rows(whole)) == sorted(rows(scan_log(broker).read_all()))
    segments = list_segments("tiered/aiven/", filesystem=s3, tiered_keys=keys)
    seg = next(s for s in segments if s.base_offset and s.layout == "aiven")
    assert seg.path.startswith("tiered/aiven/") and seg.manifest.endswith(".rsm-manifest")
    start = seg.base_offset + 100
    urllib.request.urlopen(
        urllib.request.Request(f"http://{endpoint}/moto-api/recorder/start-recording", method="POST")
    )
    folder = seg.path.rsplit("/", 1)[0] + "/"
    got = scan_log(folder, filesystem=s3, tiered_keys=keys, start_offset=start, end_offset=start + 5).read_all()
    urllib.request.urlopen(urllib.request.Request(f"http://{endpoint}/moto-api/recorder/stop-recording", method="POST"))
    local = broker / f"{seg.topic}-{seg.partition}"
    assert got.num_rows == 5
    assert rows(got) == rows(scan_log(local, start_offset=start, end_offset=start + 5).read_all())
    fetched = tf.bytes_fetched(recording, endpoint, sizes)
    manifest = kb._kafkabatch.RemoteManifest(
        server_fs.open_input_file(seg.manifest).read().decode(), kb._kafkabatch.TieredKeys(keys)
    )
    biggest_chunk = max(manifest.chunk(i)[3] for i in range(manifest.chunk_count))
    indexes = seg.path[: -len(".log")] + ".indexes"
    assert 0 < fetched.get(seg.path, 0) <= 3 * biggest_chunk, (fetched, biggest_chunk)
    assert 0 < fetched.get(indexes, 0) <= manifest.index_slice("offset")[1]


def test_a_bucket_and_a_broker_dir_in_one_filesystem_give_every_offset_once(broker, moto_s3, tmp_path):
    """The older segments uploaded in Aiven's layout, the newer (and some of the same) in a broker
    dir, both under one S3FileSystem: joined, each offset once, as the original folder has them."""
    server_fs, endpoint, _ = moto_s3
    uploader = tf.Uploader(tmp_path / "aiven", "zstd", CHUNK, None, prefix="")
    copy = tmp_path / "broker"
    for folder in sorted(p for p in broker.iterdir() if p.is_dir()):
        topic, _, partition = folder.name.rpartition("-")
        logs = tf.broker_segments(folder)
        if not logs:  # schemas/: the generator's schema files
            continue
        for log in logs[:2]:
            batches = list(kb.iter_batches(log.read_bytes(), validate_crc=False))
            end, max_ts = batches[-1].last_offset, max(b.max_timestamp for b in batches)
            uploader.upload(log, topic, int(partition), end_offset=end, max_timestamp=max_ts)
        (copy / folder.name).mkdir(parents=True)
        for log in logs[1:]:
            for f in folder.glob(log.stem + ".*"):
                shutil.copy(f, copy / folder.name / f.name)
    put_tree(server_fs, tmp_path / "aiven", "tiered/joined/bucket/")
    put_tree(server_fs, copy, "tiered/joined/broker/")
    s3 = s3_filesystem(endpoint)
    expected = scan_log(broker).read_all()
    got = scan_log(["tiered/joined/bucket/", "tiered/joined/broker/"], filesystem=s3)
    table = got.read_all()
    offsets = list(zip(table["topic"].to_pylist(), table["partition"].to_pylist(), table["offset"].to_pylist()))
    assert len(offsets) == len(set(offsets))
    assert sorted(rows(table)) == sorted(rows(expected))
    alone = [
        scan_log(root, filesystem=s3).read_all().num_rows for root in ("tiered/joined/bucket/", "tiered/joined/broker/")
    ]
    assert all(0 < n < expected.num_rows for n in alone) and sum(alone) > expected.num_rows


def test_reads_on_worker_threads_do_not_deadlock(broker, moto_s3):
    """scan_log through a Python-level file system from several worker threads at once:
    the core calls back into Python with the GIL taken only for each call."""
    server_fs, endpoint, _ = moto_s3
    put_tree(server_fs, broker, "tiered/threads/")
    s3, _handler = counting(s3_filesystem(endpoint))
    sub, _ = counting(pafs.SubTreeFileSystem(str(broker), pafs.LocalFileSystem()))
    expected = rows(scan_log(broker).read_all())
    jobs = [("tiered/threads/", s3), ("", sub)] * 2
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [pool.submit(lambda r, f: scan_log(r, filesystem=f).read_all(), root, fs) for root, fs in jobs]
        for future in futures:
            assert rows(future.result(timeout=120)) == expected


def test_paths_are_never_read_from_the_local_disk(broker, tmp_path, monkeypatch):
    """A relative path in the file system is its path, even where the working directory
    holds a folder of that name (here with another partition's segments)."""
    decoy = tmp_path / "payments-0"
    shutil.copytree(broker / "orders-0", decoy)
    monkeypatch.chdir(tmp_path)
    sub = pafs.SubTreeFileSystem(str(broker), pafs.LocalFileSystem())
    got = scan_log("payments-0", filesystem=sub, start_offset=10).read_all()
    assert rows(got) == rows(scan_log(broker / "payments-0", start_offset=10).read_all())
    assert rows(got) != rows(scan_log(decoy, start_offset=10).read_all())
