"""``generate(tiered=...)`` / ``kafkabatch generate --tiered``: a sample
tiered-storage bucket, checked two ways:

* undone here without kafkabatch, with the libraries tests/tiered_fixtures.py
  writes buckets with (pycryptodome's PKCS1_OAEP with SHA3-512, cryptography's
  AESGCM, zstandard), chunk by chunk and index by index, into exactly the
  broker segment's bytes; the manifests have the fields, in the order, of
  the fixture uploader's (Aiven's ``SegmentManifestV1``);
* read back by ``scan_log``, equal to its broker folder, alone and together
  with the broker folder (each offset once).
"""

from __future__ import annotations

import base64
import inspect
import json
import struct
from pathlib import Path
from typing import Any

import pytest

import kafkabatch as kb
from kafkabatch._util import parse_size
from kafkabatch.generate import generate

zstandard = pytest.importorskip("zstandard")
pytest.importorskip("Crypto")
pytest.importorskip("cryptography")
import tiered_fixtures as tf  # noqa: E402 - needs the skips above
from Crypto.Cipher import PKCS1_OAEP  # noqa: E402
from Crypto.Hash import SHA3_512  # noqa: E402
from Crypto.PublicKey import RSA  # noqa: E402
from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: E402

MODES = {
    "plain": {},
    "zstd": {"tiered_compression": True},
    "encrypted": {"tiered_encryption": True},
    "zstd+encrypted": {"tiered_compression": True, "tiered_encryption": True},
}
SIZE = "2MB"
SEGMENT_BYTES = "300k"
CHUNK = "64k"


def unpack_sizes(data: bytes) -> list[int]:
    """``ChunkSizesBinaryCodec.decode``, written from the plugin's format."""
    (count,) = struct.unpack_from(">i", data, 0)
    if count == 0:
        return []
    if count == 1:
        return [struct.unpack_from(">i", data, 4)[0]]
    base, width = struct.unpack_from(">ib", data, 4)
    at = 9
    sizes = []
    for _ in range(count - 1):
        sizes.append(base + int.from_bytes(data[at : at + width], "big"))
        at += width
    return [*sizes, struct.unpack_from(">i", data, at)[0]]


def undo_segment(manifest_path: Path, private_pem: str | None) -> tuple[bytes, dict[str, bytes]]:
    """The original ``.log`` bytes and indexes of one uploaded segment."""
    manifest = json.loads(manifest_path.read_text())
    stem = str(manifest_path)[: -len(".rsm-manifest")]
    key = aad = None
    if "encryption" in manifest:
        assert private_pem is not None
        key_id, wrapped = manifest["encryption"]["dataKey"].split(":", 1)
        assert key_id == "key-1"
        cipher = PKCS1_OAEP.new(RSA.import_key(private_pem), hashAlgo=SHA3_512)
        key = cipher.decrypt(base64.b64decode(wrapped))
        aad = base64.b64decode(manifest["encryption"]["aad"])

    def undo(piece: bytes, compressed: bool) -> bytes:
        if key is not None:
            piece = AESGCM(key).decrypt(piece[:12], piece[12:], aad)
        if compressed:
            # decompress() without max_output_size needs the frame's content size, as the plugin writes it
            piece = zstandard.ZstdDecompressor().decompress(piece)
        return piece

    index = manifest["chunkIndex"]
    stored = Path(f"{stem}.log").read_bytes()
    if index["type"] == "variable":
        sizes = unpack_sizes(zstandard.ZstdDecompressor().decompress(base64.b64decode(index["transformedChunks"])))
    else:
        whole, last = index["transformedChunkSize"], index["finalTransformedChunkSize"]
        count = -(-index["originalFileSize"] // index["originalChunkSize"])
        sizes = [whole] * (count - 1) + [last] if count else []
    assert sum(sizes) == len(stored)
    original = b""
    at = 0
    for size in sizes:
        original += undo(stored[at : at + size], manifest["compression"])
        at += size
    assert len(original) == index["originalFileSize"]
    indexes_bytes = Path(f"{stem}.indexes").read_bytes()
    indexes = {}
    for name, where in manifest["segmentIndexes"].items():
        if where is not None:
            piece = indexes_bytes[where["position"] : where["position"] + where["size"]]
            indexes[name] = undo(piece, False) if piece else b""
    return original, indexes


def shape(value: Any) -> Any:
    """A JSON document's keys, in order, all the way down (values left out)."""
    if isinstance(value, dict):
        return [(k, shape(v)) for k, v in value.items()]
    return type(value).__name__


@pytest.fixture(scope="module", params=list(MODES))
def aiven(request, tmp_path_factory) -> tuple[str, Any]:
    out = tmp_path_factory.mktemp("tiered") / request.param
    summary = generate(
        out, size=SIZE, segment_bytes=SEGMENT_BYTES, seed=5, tiered="aiven", tiered_chunk_size=CHUNK,
        progress=False, **MODES[request.param],
    )  # fmt: skip
    return request.param, summary


def test_aiven_bucket_undone_independently_is_the_broker_folder(aiven):
    mode, summary = aiven
    bucket = summary.tiered
    assert bucket is not None and bucket.mode == mode and bucket.layout == "aiven"
    assert (bucket.private_key is not None) == ("encrypted" in mode)
    pem = bucket.private_key.read_text() if bucket.private_key is not None else None
    manifests = sorted(bucket.folder.glob("*/*/*.rsm-manifest"))
    broker_logs = sorted(bucket.broker.glob("*-*/*.log"))
    assert len(manifests) == len(broker_logs) == bucket.segments > len(summary.topics)
    seen = set()
    for manifest_path in manifests:
        manifest = json.loads(manifest_path.read_text())
        meta = manifest["remoteLogSegmentMetadata"]
        tp = meta["remoteLogSegmentId"]["topicIdPartition"]
        topic, partition = tp["topicPartition"]["topic"], tp["topicPartition"]["partition"]
        # {topic}-{topicId}/{partition}/{offset:020d}-{segmentId}.rsm-manifest
        assert manifest_path.parent.name == str(partition)
        assert manifest_path.parent.parent.name == f"{topic}-{tp['topicId']}"
        assert manifest_path.name == f"{meta['startOffset']:020d}-{meta['remoteLogSegmentId']['id']}.rsm-manifest"
        source = bucket.broker / f"{topic}-{partition}" / f"{meta['startOffset']:020d}.log"
        seen.add(source)
        original, indexes = undo_segment(manifest_path, pem)
        assert original == source.read_bytes()
        assert indexes["offset"] == source.with_suffix(".index").read_bytes()
        assert indexes["timestamp"] == source.with_suffix(".timeindex").read_bytes()
        assert indexes["leaderEpoch"] == (source.parent / "leader-epoch-checkpoint").read_bytes()
        txn = source.with_suffix(".txnindex")
        assert indexes.get("transaction") == (txn.read_bytes() if txn.exists() else None)
        # the segment's last offset: the last record's, from kafkabatch's own decoding of the broker file
        assert meta["endOffset"] == kb.read_segment(source, include_control=True).column("offset")[-1].as_py()
    assert seen == set(broker_logs)


def test_aiven_manifest_fields_are_the_fixture_uploaders(aiven, tmp_path):
    """The same fields in the same order (Jackson's) as tests/tiered_fixtures.py's uploader writes."""
    mode, summary = aiven
    bucket = summary.tiered
    manifest_path = sorted(bucket.folder.glob("*/*/*.rsm-manifest"))[0]
    ours = json.loads(manifest_path.read_text())
    meta = ours["remoteLogSegmentMetadata"]
    tp = meta["remoteLogSegmentId"]["topicIdPartition"]["topicPartition"]
    source = bucket.broker / f"{tp['topic']}-{tp['partition']}" / f"{meta['startOffset']:020d}.log"
    key = tf.make_key_pair("key-1") if "encrypted" in mode else None
    uploader = tf.Uploader(tmp_path, mode, chunk_size=parse_size(CHUNK), key=key)
    theirs = uploader.upload(source, tp["topic"], tp["partition"], end_offset=meta["endOffset"])["rsm-manifest"]
    assert shape(ours) == shape(json.loads(theirs.read_text()))


def test_aiven_bucket_reads_back_as_the_broker_folder(aiven):
    _, summary = aiven
    bucket = summary.tiered
    broker = kb.scan_log(bucket.broker).read_all()
    remote = kb.scan_log(bucket.folder, tiered_keys=bucket.tiered_keys).read_all()
    assert broker.num_rows == summary.records  # every data record (control records are left out)
    assert remote.equals(broker)
    # With the broker folder too (the folder holding both): every offset once.
    both = kb.scan_log(bucket.folder.parent, tiered_keys=bucket.tiered_keys).read_all()
    assert both.equals(broker)


def test_local_tiered_storage_bucket(tmp_path):
    summary = generate(tmp_path / "local", size=SIZE, segment_bytes=SEGMENT_BYTES, seed=2, tiered="local")
    bucket = summary.tiered
    assert bucket is not None and bucket.mode == "local" and bucket.tiered_keys is None
    logs = sorted(bucket.folder.glob("*/*.log"))
    assert len(logs) == bucket.segments == len(list(bucket.broker.glob("*-*/*.log")))
    for log in logs:
        # {topic}-{partition}-{topicId}/{offset:020d}-{segmentId}.log, the segment's own bytes and indexes
        folder, (offset, segment_id) = log.parent.name, log.stem.split("-", 1)
        topic_partition = folder[: -len(segment_id) - 1]
        assert len(segment_id) == 22 and len(folder.rsplit("-", 1)[-1]) <= 22
        source = bucket.broker / topic_partition / f"{offset}.log"
        assert log.read_bytes() == source.read_bytes()
        assert log.with_suffix(".index").read_bytes() == source.with_suffix(".index").read_bytes()
        assert log.with_suffix(".leader_epoch_checkpoint").exists() and log.with_suffix(".snapshot").exists()
    broker = kb.scan_log(bucket.broker).read_all()
    assert kb.scan_log(bucket.folder).read_all().equals(broker)


def test_same_seed_same_bucket(tmp_path):
    kwargs: dict[str, Any] = dict(size="1MB", seed=9, tiered="aiven", tiered_encryption=True, tiered_compression=True)
    a, b = generate(tmp_path / "a", **kwargs).tiered, generate(tmp_path / "b", **kwargs).tiered
    files = sorted(p.relative_to(a.folder) for p in a.folder.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b.folder) for p in b.folder.rglob("*") if p.is_file())
    assert all((a.folder / f).read_bytes() == (b.folder / f).read_bytes() for f in files)
    assert a.private_key.read_text() == b.private_key.read_text()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"tiered": "gcs"}, "tiered must be one of aiven, local"),
        ({"tiered_compression": True}, "need tiered='aiven'"),
        ({"tiered": "local", "tiered_encryption": True}, "modes of Aiven's plugin"),
        ({"tiered": "aiven", "tiered_chunk_size": 0}, "tiered_chunk_size"),
    ],
)
def test_bad_tiered_arguments(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        generate(tmp_path / "x", size="256k", **kwargs)


def test_cli_generates_a_bucket_that_reads_back(tmp_path, capsys):
    from kafkabatch.cli import main

    out = tmp_path / "t"
    argv = ["generate", str(out), "--size", "1MB", "--tiered", "aiven", "--tiered-compression", "--tiered-encryption"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    key = out / "private.pem"
    assert f"--tiered-key key-1={key}" in err
    keys = {"key-1": str(key)}
    broker = kb.scan_log(out / "broker").read_all()
    assert broker.num_rows > 0
    assert kb.scan_log(out / "bucket", tiered_keys=keys).read_all().equals(broker)
    assert main(["stats", str(out / "bucket"), "--tiered-key", f"key-1={key}", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["total"]["records"] == broker.num_rows
    # --tiered-* without --tiered, and encryption in the local layout: errors in the flags' words
    assert main(["generate", str(tmp_path / "u"), "--tiered-encryption"]) == 1
    assert "--tiered-compression and --tiered-encryption need --tiered aiven" in capsys.readouterr().err
    assert main(["generate", str(tmp_path / "v"), "--tiered", "local", "--tiered-compression"]) == 1
    assert "(--tiered aiven)" in capsys.readouterr().err


def test_python_and_cli_share_one_default_size(capsys):
    from kafkabatch.cli import build_parser
    from kafkabatch.generate import DEFAULT_SIZE

    assert inspect.signature(generate).parameters["size"].default == DEFAULT_SIZE
    with pytest.raises(SystemExit):
        build_parser().parse_args(["generate", "--help"])
    assert f"default {DEFAULT_SIZE}" in capsys.readouterr().out
    assert build_parser().parse_args(["generate", "x"]).size is None  # generate()'s own default applies


ROOT = Path(__file__).resolve().parent.parent


def fenced_blocks(doc: str, after: str) -> list[str]:
    """The fenced code blocks of ``doc`` that follow the text ``after``, up to the next heading."""
    text = (ROOT / doc).read_text()
    text = text[text.index(after) :]
    text = text[: text.find("\n#", 1) if "\n#" in text[1:] else len(text)]
    parts = text.split("```")
    return [part.split("\n", 1)[1] for part in parts[1::2]]


def run_cli_lines(block: str, replace: tuple[str, str], capsys) -> list[str]:
    import shlex

    from kafkabatch.cli import main

    outs = []
    for line in block.splitlines():
        line = line.removeprefix("$ ").strip()
        if not line:
            continue
        words = shlex.split(line.replace(*replace))
        assert words[0] == "kafkabatch", line
        assert main(words[1:]) == 0, (line, capsys.readouterr().err)
        outs.append(capsys.readouterr().out)
    return outs


def test_tiered_storage_docs_first_example_runs(tmp_path, capsys):
    sh, python, *_ = fenced_blocks("docs/tiered-storage.md", "To try it")
    out = str(tmp_path / "tiered")
    run_cli_lines(sh, ("/tmp/tiered", out), capsys)
    exec(compile(python.replace("/tmp/tiered", out), "docs/tiered-storage.md", "exec"), {})


def test_cli_docs_tiered_example_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (block,) = fenced_blocks("docs/cli.md", "### A tiered-storage bucket")[:1]
    outs = run_cli_lines(block, ("", ""), capsys)
    totals = [line.split() for out in outs[1:] for line in out.splitlines() if line.split()[:1] == ["total"]]
    assert len(totals) == 2 and totals[0][3:5] == totals[1][3:5], totals  # the same records, alone and with the broker


def test_docs_code_fences_stand_on_their_own_lines():
    for doc in ("README.md", "docs/cli.md", "docs/tiered-storage.md", "docs/spark.md"):
        for number, line in enumerate((ROOT / doc).read_text().splitlines(), 1):
            if "```" in line:
                assert line.lstrip().startswith("```") and line.strip().count("```") == 1, f"{doc}:{number}: {line}"


def test_cli_reads_a_bucket_on_an_s3_endpoint_from_aws_endpoint_url(tmp_path, moto_s3, monkeypatch, capsys):
    """As docs/cli.md and docs/tiered-storage.md set it up: AWS_ENDPOINT_URL and the credentials in the environment."""
    from kafkabatch.cli import main

    filesystem, endpoint, _ = moto_s3
    summary = generate(tmp_path / "t", size="1MB", seed=3, tiered="aiven", tiered_compression=True,
                       tiered_encryption=True)  # fmt: skip
    bucket = summary.tiered
    for path in sorted(bucket.folder.rglob("*")):
        if path.is_file():
            with filesystem.open_output_stream("tiered/prefix/" + path.relative_to(bucket.folder).as_posix()) as f:
                f.write(path.read_bytes())
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{endpoint}")
    key = f"key-1={bucket.private_key}"
    assert main(["stats", "s3://tiered/prefix/", "--tiered-key", key, "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["total"]["records"] == summary.records
    broker = kb.scan_log(bucket.broker).read_all()
    assert kb.scan_log("s3://tiered/prefix/", tiered_keys=bucket.tiered_keys).read_all().equals(broker)
    out = tmp_path / "remote.arrow"
    assert main(["convert", "s3://tiered/prefix/", str(out), "--tiered-key", key, "-q"]) == 0
    import pyarrow.ipc

    assert pyarrow.ipc.open_file(out).read_all().column("offset").equals(broker.column("offset"))
