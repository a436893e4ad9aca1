"""The ``kafkabatch`` command line, run as a user runs it: the installed
console script in a subprocess, on log folders written from batches that
kafka-python / aiokafka built (magic 0/1/2, every codec, headers) and
control batches built by hand from the spec layout.

The expected ``dump`` lines are written here from the format of Kafka's
``kafka.tools.DumpLogSegments`` (``printBatchLevel`` and the deep-iteration
record lines) and the reference readers' view of the batches, not from
kafkabatch's own output.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import realclients as rc
from compare import assert_same_list, table_rows

import kafkabatch as kb

BIN_DIR = os.path.dirname(sys.executable)
KAFKABATCH = shutil.which("kafkabatch", path=BIN_DIR)
pytestmark = pytest.mark.skipif(KAFKABATCH is None, reason=f"no kafkabatch console script in {BIN_DIR}")

CODECS = ("gzip", "snappy", "lz4", "zstd")
TS_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


def run(*args, ok: bool = True, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """Run ``kafkabatch ARGS`` and return the finished process (text mode)."""
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("COLUMNS", None)
    proc = subprocess.run(
        [KAFKABATCH, *map(str, args)], capture_output=True, text=True, env=full_env, timeout=300, **kw
    )
    if ok and proc.returncode != 0:
        raise AssertionError(f"kafkabatch {' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def fixture(name: str):
    """``realclients.get(name)``, or None when that cell can't be built here."""
    why = getattr(rc, "any_skip_reason", None) or rc.skip_reason
    if why(name):
        return None
    try:
        return rc.get(name)
    except (NotImplementedError, ImportError):
        return None


@functools.cache
def decodable(codec: str, magic: int = 2) -> bool:
    """Whether this build of kafkabatch decodes ``codec`` (codecs landed separately)."""
    fx = fixture(f"kafka-python-v{magic}-{codec}-mixed")
    if fx is None:
        return False
    try:
        kb.decode(fx.data)
    except kb.KafkaBatchError:
        return False
    return True


def need(codec: str, magic: int = 2) -> None:
    if codec != "none" and not decodable(codec, magic):
        pytest.skip(f"this kafkabatch build can't decode {codec} (magic {magic}) yet")


# ---------------------------------------------------------------------------
# test data
# ---------------------------------------------------------------------------


def transactions_log() -> bytes:
    """Uncompressed transactional batches of two producers with COMMIT/ABORT
    markers (spec-layout control batches), then plain data:
    P1 data 0-2 | P2 data 3-4 | P1 COMMIT 5 | P1 data 6-7 | P2 ABORT 8 | P1 ABORT 9 | plain 10-11."""
    p1, p2 = 1000, 2000

    def data(pid: int, start: int, n: int, seq: int, tag: str, attributes: int = rc.ATTR_TRANSACTIONAL) -> bytes:
        recs = [
            {
                "key": f"{tag}-{i}".encode(),
                "value": f"value {tag} {i}".encode(),
                "headers": [("txn", tag.encode()), ("i", str(i).encode())],
                "timestamp": rc.BASE_TS + start * 10 + i,
            }
            for i in range(n)
        ]
        return rc.encode_v2_batch(
            recs,
            base_offset=start,
            attributes=attributes,
            producer_id=pid,
            producer_epoch=3 if pid >= 0 else -1,
            base_sequence=seq,
            partition_leader_epoch=4,
        )

    return b"".join(
        [
            data(p1, 0, 3, 0, "p1a"),
            data(p2, 3, 2, 0, "p2a"),
            rc.control_batch(
                "COMMIT",
                base_offset=5,
                producer_id=p1,
                producer_epoch=3,
                coordinator_epoch=11,
                timestamp=rc.BASE_TS + 50,
                partition_leader_epoch=4,
            ),
            data(p1, 6, 2, 3, "p1b"),
            rc.control_batch(
                "ABORT",
                base_offset=8,
                producer_id=p2,
                producer_epoch=3,
                coordinator_epoch=12,
                timestamp=rc.BASE_TS + 80,
                partition_leader_epoch=4,
            ),
            rc.control_batch(
                "ABORT",
                base_offset=9,
                producer_id=p1,
                producer_epoch=3,
                coordinator_epoch=11,
                timestamp=rc.BASE_TS + 90,
                partition_leader_epoch=4,
            ),
            data(-1, 10, 2, -1, "plain", attributes=0),
        ]
    )


# Partitions of the "plain" log dir: (folder name, bytes, base offset). All
# uncompressed, so every test can decode them whatever codecs the build has.
def _plain_partitions() -> list[tuple[str, bytes, int]]:
    return [
        ("v2-0", rc.get("kafka-python-v2-none-multibatch").data, 10**12),
        ("aio-0", rc.get("aiokafka-v2-none-mixed").data, 0),
        ("v0-0", rc.get("kafka-python-v0-none-multibatch").data, 10**12),
        ("v1-0", rc.get("aiokafka-v1-none-multibatch").data, 10**12),
        ("lat-1", rc.get("kafka-python-v2-none-logappendtime").data, 5),
        ("txn-0", transactions_log(), 0),
        ("idem-0", rc.get("kafka-python-v2-zstd-idempotent").data, 42),
    ]


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plain")
    for folder, data, base in _plain_partitions():
        if folder == "idem-0":
            continue  # zstd: see the codec tests
        topic, partition = folder.rsplit("-", 1)
        rc.write_segment(root, topic, int(partition), data, base_offset=base)
    return root


@pytest.fixture(scope="module")
def codecs_dir(tmp_path_factory) -> Path:
    """One partition per (library, magic, codec): k<magic>-<codec>-0 (kafka-python), a<magic>-<codec>-0 (aiokafka)."""
    root = tmp_path_factory.mktemp("codecs")
    for source, tag in (("kafka-python", "k"), ("aiokafka", "a")):
        for magic in (0, 1, 2):
            for codec in rc.codecs_for(magic):
                fx = fixture(f"{source}-v{magic}-{codec}-multibatch")
                if fx is not None:
                    rc.write_segment(root, f"{tag}{magic}-{codec}", 0, fx.data, base_offset=10**12)
    return root


MANY = 40


def _many_segments() -> list[tuple[int, bytes]]:
    segments = []
    offset = 0
    for i in range(MANY):
        n = 3 + i % 4
        recs = [
            {
                "key": f"s{i}-{j}".encode(),
                "value": (f"segment {i} record {j} " * (1 + j)).encode(),
                "headers": [("seg", str(i).encode())] if j % 2 else [],
                "timestamp": rc.BASE_TS + 1000 * offset + j,
            }
            for j in range(n)
        ]
        data = rc.encode_v2_batch(recs[:2], base_offset=offset) + rc.encode_v2_batch(recs[2:], base_offset=offset + 2)
        segments.append((offset, data))
        offset += n
    return segments


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    """A partition folder of 40 segments (written in random order)."""
    root = tmp_path_factory.mktemp("many")
    segments = _many_segments()
    for base, data in sorted(segments, key=lambda s: (s[0] * 7919) % 101):
        rc.write_segment(root, "many", 3, data, base_offset=base)
    return root / "many-3"


def segment_path(root: Path, folder: str) -> Path:
    (path,) = sorted((root / folder).glob("*.log"))
    return path


# ---------------------------------------------------------------------------
# the DumpLogSegments format, written from Kafka's source
# ---------------------------------------------------------------------------

_BOOL = r"(true|false)"
_INT = r"(-?\d+)"
_TAIL = (
    rf" position: (\d+) (CreateTime|LogAppendTime|NoTimestampType): {_INT} size: (\d+) magic: ([012])"
    rf" compresscodec: (none|gzip|snappy|lz4|zstd) crc: (\d+) isvalid: {_BOOL}$"
)
V2_BATCH_LINE = re.compile(
    rf"^baseOffset: {_INT} lastOffset: {_INT} count: (\d+) baseSequence: {_INT} lastSequence: {_INT}"
    rf" producerId: {_INT} producerEpoch: {_INT} partitionLeaderEpoch: {_INT} isTransactional: {_BOOL}"
    rf" isControl: {_BOOL} deleteHorizonMs: (OptionalLong\.empty|OptionalLong\[-?\d+\])" + _TAIL
)
LEGACY_BATCH_LINE = re.compile(rf"^offset: {_INT}" + _TAIL)
RECORD_LINE = re.compile(
    r"^\| offset: (?P<offset>\d+) (?P<tt>CreateTime|LogAppendTime|NoTimestampType): (?P<ts>-?\d+)"
    r" keySize: (?P<ks>-?\d+) valueSize: (?P<vs>-?\d+)"
    r"(?: sequence: (?P<seq>-?\d+) headerKeys: \[(?P<hk>.*?)\])?"
    r"(?: isValid: (?P<valid>true|false) crc: (?P<crc>\d+))?"
    r"(?: endTxnMarker: (?P<marker>COMMIT|ABORT) coordinatorEpoch: (?P<ce>\d+))?"
    r"(?: key: (?P<key>.*?))?(?: payload: (?P<payload>.*))?$"
)


def _jb(v: bool) -> str:
    return "true" if v else "false"


def expected_batch_line(ref: dict) -> str:
    """DumpLogSegments.printBatchLevel for a reference batch."""
    tail = (
        f" position: {ref['position']} {TS_NAMES[ref['timestamp_type']]}: {ref['max_timestamp']}"
        f" size: {ref['size_in_bytes']} magic: {ref['magic']} compresscodec: {ref['compression']}"
        f" crc: {ref['crc']} isvalid: {_jb(ref['crc_ok'])}"
    )
    if ref["magic"] < 2:
        return f"offset: {ref['last_offset']}" + tail
    base_seq = ref["base_sequence"]
    delta = ref["last_offset"] - ref["base_offset"]
    # DefaultRecordBatch.lastSequence: NO_SEQUENCE stays -1, else incrementSequence (wraps at Int.MAX).
    last_seq = -1 if base_seq == -1 else (base_seq + delta) % (2**31)
    horizon = f"OptionalLong[{ref['base_timestamp']}]" if ref["attributes"] & 0x40 else "OptionalLong.empty"
    return (
        f"baseOffset: {ref['base_offset']} lastOffset: {ref['last_offset']} count: {ref['record_count']}"
        f" baseSequence: {base_seq} lastSequence: {last_seq} producerId: {ref['producer_id']}"
        f" producerEpoch: {ref['producer_epoch']} partitionLeaderEpoch: {ref['partition_leader_epoch']}"
        f" isTransactional: {_jb(ref['is_transactional'])} isControl: {_jb(ref['is_control'])}"
        f" deleteHorizonMs: {horizon}" + tail
    )


def unescape(text: str) -> bytes:
    """The documented utf8 text escapes: \\xNN is the byte NN, \\uNNNN a
    character, \\n \\r \\t \\\\ themselves; anything else is UTF-8 text."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] != "\\":
            out += text[i].encode()
            i += 1
        elif text[i + 1] == "x":
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
        elif text[i + 1] == "u":
            out += chr(int(text[i + 2 : i + 6], 16)).encode()
            i += 6
        else:
            out += {"n": b"\n", "r": b"\r", "t": b"\t", "\\": b"\\"}[text[i + 1]]
            i += 2
    return bytes(out)


def check_record_line(line: str, ref_batch: dict, rec: dict, *, print_data: bool) -> None:
    m = RECORD_LINE.match(line)
    assert m, line
    key, value = rec["key"], rec["value"]
    assert int(m["offset"]) == rec["offset"]
    assert m["tt"] == TS_NAMES[ref_batch["timestamp_type"]]
    assert int(m["ts"]) == rec["timestamp"]
    assert int(m["ks"]) == (-1 if key is None else len(key))
    assert int(m["vs"]) == (-1 if value is None else len(value))
    if ref_batch["magic"] == 2:
        base_seq = ref_batch["base_sequence"]
        seq = -1 if base_seq == -1 else base_seq + rec["offset"] - ref_batch["base_offset"]
        assert int(m["seq"]) == seq
        assert m["hk"] == ",".join(k for k, _ in rec["headers"])
        assert m["valid"] is None
    else:
        assert m["seq"] is None
        if ref_batch["compression"] == "none":  # the message is the record: its CRC is the batch's
            assert (m["valid"], int(m["crc"])) == ("true", ref_batch["crc"])
    if ref_batch["is_control"]:
        control = ref_batch["control"]
        assert (m["marker"], int(m["ce"])) == (control["type"], control["coordinator_epoch"])
        assert m["key"] is None and m["payload"] is None  # Kafka prints no key/payload for markers
        return
    assert m["marker"] is None
    if not print_data:
        assert m["key"] is None and m["payload"] is None
        return
    assert (m["key"] is None) == (key is None), line
    assert (m["payload"] is None) == (value is None), line
    if key is not None:
        assert unescape(m["key"]) == key
    if value is not None:
        assert unescape(m["payload"]) == value
        assert not re.search(r"[\x00-\x1f\x7f]", m["payload"])


def dump_sections(stdout: str) -> list[list[str]]:
    """Lines per 'Dumping FILE' section."""
    sections: list[list[str]] = []
    for line in stdout.splitlines():
        if line.startswith("Dumping "):
            sections.append([])
        sections[-1].append(line)
    return sections


# ---------------------------------------------------------------------------
# help, version, errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["dump", "stats", "convert", "generate"])
def test_help_of_every_subcommand(command):
    proc = run(command, "--help")
    assert proc.stdout.startswith(f"usage: kafkabatch {command}")
    assert "examples:" in proc.stdout and f"kafkabatch {command} " in proc.stdout.split("examples:", 1)[1]
    assert proc.stderr == ""


def test_top_level_help_and_version():
    proc = run("--help")
    for command in ("dump", "stats", "convert", "generate"):
        assert command in proc.stdout
    assert run("--version").stdout.strip() == f"kafkabatch {kb.__version__}"


def test_python_dash_m():
    proc = subprocess.run(
        [sys.executable, "-m", "kafkabatch", "--version"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.strip() == f"kafkabatch {kb.__version__}"


def test_no_command_is_a_usage_error():
    proc = run(ok=False)
    assert proc.returncode == 2 and "usage: kafkabatch" in proc.stderr


@pytest.mark.parametrize(
    "args, code, pattern",
    [
        (["dump", "does-not-exist.log"], 1, r"no such file or folder: does-not-exist\.log"),
        (["dump"], 1, r"no files to dump"),
        (["dump", "--offsets", "x:y", "a.log"], 2, r"--offsets"),
        (["dump", "--max-bytes", "lots", "a.log"], 2, r"--max-bytes"),
        (["dump", "--batches", "{log}"], 1, r"--batches only makes sense with --json"),
        (["stats", "/nonexistent/kafka"], 1, r"no such file or folder"),
        (["convert", "{log}", "{tmp}/out.csv"], 1, r"can't tell the output format"),
        (["convert", "{log}", "{tmp}/out.parquet", "--compression", "gzip", "--format", "jsonl"], 1, r"uncompressed"),
        (["convert", "{log}", "-", "--format", "parquet"], 1, r"only JSON lines can go to stdout"),
        (["convert", "{log}", "{tmp}/exists.parquet"], 1, r"exists \(use --force"),
        (["convert", "{stray}", "{tmp}/stray.parquet"], 1, r"not in a <topic>-<partition> folder.*--topic"),
        (["convert", "{log}", "{tmp}/o.parquet", "--isolation", "serializable"], 2, r"--isolation"),
        (["stats", "{tmp}/empty-0"], 1, r"no \.log segment files"),
        (["frobnicate"], 2, r"invalid choice"),
    ],
)
def test_errors_are_one_line_with_exit_status(plain, tmp_path, args, code, pattern):
    log = segment_path(plain, "v2-0")
    (tmp_path / "exists.parquet").write_bytes(b"x")
    (tmp_path / "stray.log").write_bytes(log.read_bytes())
    (tmp_path / "empty-0").mkdir()
    args = [a.format(log=log, tmp=tmp_path, stray=tmp_path / "stray.log") for a in args]
    proc = run(*args, ok=False)
    assert proc.returncode == code, proc.stderr
    assert re.search(pattern, proc.stderr), proc.stderr
    assert "Traceback" not in proc.stderr
    if code == 1:
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"kafkabatch {args[0]}: error: ")
    assert (tmp_path / "exists.parquet").read_bytes() == b"x"


def test_debug_shows_the_traceback():
    proc = run("--debug", "dump", "does-not-exist.log", ok=False)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "CliError" in proc.stderr
    proc = run("dump", "--debug", "does-not-exist.log", ok=False)
    assert proc.returncode == 1 and "Traceback" in proc.stderr


def test_generate(tmp_path):
    out = tmp_path / "gen"
    if importlib.util.find_spec("kafkabatch.generate") is None:
        proc = run("generate", out, "--size", "1MB", "--seed", "3", ok=False)
        assert proc.returncode == 1
        assert proc.stderr.strip() == (
            "kafkabatch generate: error: this kafkabatch has no data generator (module kafkabatch.generate is missing)"
        )
        return
    run("generate", out, "--size", "256KB", "--seed", "3")
    stats = json.loads(run("stats", "--json", out).stdout)
    assert stats["total"]["records"] > 0 and stats["total"]["unreadable_batches"] == 0
    assert stats["total"]["file_bytes"] > 0


def test_generate_rejects_bad_sizes(tmp_path):
    proc = run("generate", tmp_path / "g", "--size", "big", ok=False)
    assert proc.returncode == 2 and "--size" in proc.stderr


# ---------------------------------------------------------------------------
# dump: batch lines
# ---------------------------------------------------------------------------

PLAIN_FOLDERS = ["v2-0", "aio-0", "v0-0", "v1-0", "lat-1", "txn-0"]


@pytest.mark.parametrize("folder", PLAIN_FOLDERS)
def test_dump_batch_lines_match_dumplogsegments(plain, folder):
    log = segment_path(plain, folder)
    proc = run("dump", log)
    lines = proc.stdout.splitlines()
    assert lines[0] == f"Dumping {log}"
    assert lines[1] == f"Log starting offset: {int(log.stem)}"
    refs = rc.reference_batches(log.read_bytes())
    body = lines[2:]
    assert len(body) == len(refs)
    for line, ref in zip(body, refs):
        pattern = V2_BATCH_LINE if ref["magic"] == 2 else LEGACY_BATCH_LINE
        assert pattern.match(line), line
        assert line == expected_batch_line(ref)
    assert proc.stderr == ""


@pytest.mark.parametrize("tag", ["k", "a"])
@pytest.mark.parametrize("magic, codec", [(m, c) for m in (0, 1, 2) for c in CODECS if c in rc.codecs_for(m)])
def test_dump_batch_lines_every_codec(codecs_dir, tag, magic, codec):
    folder = codecs_dir / f"{tag}{magic}-{codec}-0"
    if not folder.exists():
        pytest.skip("this library can't write that cell here")
    if magic < 2:
        need(codec, magic)  # a legacy wrapper's offsets are inside the compressed payload
    log = segment_path(codecs_dir, folder.name)
    lines = run("dump", log).stdout.splitlines()[2:]
    refs = rc.reference_batches(
        log.read_bytes(), "aiokafka" if tag == "a" and not (magic == 0 and codec == "lz4") else "kafka-python"
    )
    assert lines == [expected_batch_line(r) for r in refs]
    assert all(f"compresscodec: {codec} " in line for line in lines)


def test_dump_delete_horizon(tmp_path):
    data = rc.get("kafka-python-v2-none-multibatch").data
    first = rc.parse_header(data)
    data = rc.set_attributes(data, 0, first["attributes"] | 0x40)  # delete horizon flag, CRC redone
    log = rc.write_segment(tmp_path, "compacted", 0, data)
    line = run("dump", log).stdout.splitlines()[2]
    assert f"deleteHorizonMs: OptionalLong[{first['base_timestamp']}] " in line
    assert line == expected_batch_line(rc.reference_batches(data)[0])


# ---------------------------------------------------------------------------
# dump: record lines
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("folder", PLAIN_FOLDERS)
@pytest.mark.parametrize("option", ["--print-data", "--print-data-log", "--deep-iteration"])
def test_dump_record_lines(plain, folder, option):
    log = segment_path(plain, folder)
    lines = run("dump", option, log).stdout.splitlines()[2:]
    refs = rc.reference_batches(log.read_bytes())
    i = 0
    for ref in refs:
        assert lines[i] == expected_batch_line(ref)
        i += 1
        for rec in ref["records"]:
            check_record_line(lines[i], ref, rec, print_data=option != "--deep-iteration")
            i += 1
    assert i == len(lines)


@pytest.mark.parametrize("codec", CODECS)
def test_dump_print_data_compressed(codecs_dir, codec):
    need(codec)
    log = segment_path(codecs_dir, f"k2-{codec}-0")
    lines = run("dump", "--print-data", log).stdout.splitlines()[2:]
    records = [line for line in lines if line.startswith("| ")]
    refs = rc.reference_batches(log.read_bytes())
    expected = [(ref, rec) for ref in refs for rec in ref["records"]]
    assert len(records) == len(expected)
    for line, (ref, rec) in zip(records, expected):
        check_record_line(line, ref, rec, print_data=True)


def test_dump_control_records(plain):
    lines = run("dump", "--print-data", segment_path(plain, "txn-0")).stdout.splitlines()
    markers = [line for line in lines if "endTxnMarker" in line]
    assert [
        re.search(r"offset: (\d+) .* endTxnMarker: (\w+) coordinatorEpoch: (\d+)$", m).groups() for m in markers
    ] == [("5", "COMMIT", "11"), ("8", "ABORT", "12"), ("9", "ABORT", "11")]
    control_batches = [line for line in lines if "isControl: true" in line]
    assert len(control_batches) == 3 and all("isTransactional: true" in b for b in control_batches)


def test_dump_key_and_value_formats(tmp_path):
    recs = [
        {"key": b"\x00\xffk\n", "value": "wert ✓\\ \t\x85".encode() + b"\xc3", "timestamp": rc.BASE_TS},
        {"key": b"", "value": None, "timestamp": rc.BASE_TS + 1},
        {"key": None, "value": b"plain", "timestamp": rc.BASE_TS + 2},
    ]
    log = rc.write_segment(tmp_path, "fmt", 0, rc.encode_v2_batch(recs))

    def record_lines(*opts):
        return [line for line in run("dump", "--print-data", *opts, log).stdout.splitlines() if line.startswith("|")]

    utf8 = record_lines()
    assert utf8[0].endswith(r" key: \x00\xffk\n payload: wert ✓\\ \t\u0085\xc3")
    assert utf8[1].endswith(" key: ") and "payload" not in utf8[1]  # empty key, null value
    assert utf8[2].endswith(" payload: plain") and " key:" not in utf8[2]
    for line, rec in zip(utf8, recs):
        check_record_line(
            line,
            {
                "magic": 2,
                "timestamp_type": 0,
                "base_sequence": -1,
                "base_offset": 0,
                "is_control": False,
                "compression": "none",
            },
            {**rec, "offset": recs.index(rec), "headers": []},
            print_data=True,
        )
    hexed = record_lines("--key-format", "hex", "--value-format", "hex")
    assert hexed[0].endswith(f" key: {recs[0]['key'].hex()} payload: {recs[0]['value'].hex()}")
    b64 = record_lines("--key-format", "base64", "--value-format", "base64")
    assert b64[0].endswith(
        f" key: {base64.b64encode(recs[0]['key']).decode()} payload: {base64.b64encode(recs[0]['value']).decode()}"
    )
    # Kafka's prefix logic: without metadata a record with no key starts with " payload:".
    skipped = run("dump", "--print-data", "--skip-record-metadata", log).stdout.splitlines()[3:]
    assert skipped == [r"| key: \x00\xffk\n payload: wert ✓\\ \t\u0085\xc3", "| key: ", " payload: plain"]


def test_dump_offsets_range(plain):
    log = segment_path(plain, "txn-0")
    lines = run("dump", "--deep-iteration", "--offsets", "3:7", log).stdout.splitlines()[2:]
    batch_lines = [line for line in lines if not line.startswith("|")]
    assert [re.match(r"baseOffset: (\d+)", line)[1] for line in batch_lines] == ["3", "5", "6"]
    assert [int(re.match(r"\| offset: (\d+)", line)[1]) for line in lines if line.startswith("|")] == [3, 4, 5, 6]
    single = run("dump", "--offsets", "9", log).stdout.splitlines()[2:]
    assert len(single) == 1 and single[0].startswith("baseOffset: 9 ")


def test_dump_offsets_seek_with_index(plain, tmp_path):
    """--offsets START starts at the .index entry at or below START (positions stay file positions)."""
    data = segment_path(plain, "txn-0").read_bytes()
    log = rc.write_segment(tmp_path, "seek", 0, data)
    spans = rc.batch_spans(data)
    index = struct.pack(">ii", 4, spans[1][0]) + struct.pack(">ii", 7, spans[3][0]) + bytes(64)
    log.with_suffix(".index").write_bytes(index)
    lines = run("dump", "--offsets", "8:", log).stdout.splitlines()[2:]
    assert [int(re.search(r" position: (\d+) ", line)[1]) for line in lines] == [p for p, _ in spans[4:]]
    # A stale index pointing into the middle of a batch is ignored.
    log.with_suffix(".index").write_bytes(struct.pack(">ii", 7, spans[3][0] + 5))
    again = run("dump", "--offsets", "8:", log).stdout.splitlines()[2:]
    assert again == lines


def test_dump_max_bytes(plain):
    log = segment_path(plain, "v2-0")
    spans = rc.batch_spans(log.read_bytes())
    proc = run("dump", "--max-bytes", str(spans[1][0] + spans[1][1] + 10), log)
    lines = proc.stdout.splitlines()[2:]
    assert len(lines) == 2  # Kafka: no "invalid bytes" line when --max-bytes cuts the file
    assert "invalid bytes" not in proc.stdout


def test_dump_read_committed(plain):
    log = segment_path(plain, "txn-0")
    proc = run("dump", "--isolation", "read_committed", "--deep-iteration", log, ok=False)
    if proc.returncode and "not available" in proc.stderr:
        pytest.skip("read_committed is not in this build yet")
    assert proc.returncode == 0, proc.stderr
    offsets = [int(m) for m in re.findall(r"^\| offset: (\d+)", proc.stdout, re.M)]
    assert offsets == [0, 1, 2, 10, 11]


# ---------------------------------------------------------------------------
# dump: damaged files
# ---------------------------------------------------------------------------


def test_dump_crc_mismatch_shows_isvalid_false_and_goes_on(plain, tmp_path):
    data = segment_path(plain, "v2-0").read_bytes()
    spans = rc.batch_spans(data)
    pos, size = spans[1]
    bad = rc.flip_bit(data, pos + size - 3)  # inside the records: only the CRC notices
    log = rc.write_segment(tmp_path, "crc", 0, bad)
    lines = run("dump", "--print-data", log).stdout.splitlines()[2:]
    batch_lines = [line for line in lines if not line.startswith("|")]
    assert len(batch_lines) == len(spans)
    assert [line.endswith("isvalid: false") for line in batch_lines] == [i == 1 for i in range(len(spans))]
    assert all(V2_BATCH_LINE.match(line) for line in batch_lines)
    refs = rc.reference_batches(bad)
    assert batch_lines == [expected_batch_line(r) for r in refs]


@pytest.mark.parametrize("folder", ["v2-0", "v0-0", "v1-0"])
def test_dump_truncated_file(plain, tmp_path, folder):
    data = segment_path(plain, folder).read_bytes()
    spans = rc.batch_spans(data)
    cut = len(data) - 7
    log = rc.write_segment(tmp_path, "cut", 0, data[:cut])
    lines = run("dump", log).stdout.splitlines()
    assert len(lines) == 2 + len(spans) - 1 + 1
    assert lines[-1] == f"Found {cut - spans[-1][0]} invalid bytes at the end of {log.name}"


def test_dump_broken_framing(plain, tmp_path):
    data = segment_path(plain, "v2-0").read_bytes()
    spans = rc.batch_spans(data)
    log = rc.write_segment(tmp_path, "broken", 0, rc.set_length(data, spans[1][0], 3))
    lines = run("dump", log).stdout.splitlines()[2:]
    assert lines[0] == expected_batch_line(rc.reference_batches(data)[0])
    assert lines[1].startswith(f"Broken framing at position: {spans[1][0]} reason: ")
    assert lines[2] == f"Found {len(data) - spans[1][0]} invalid bytes at the end of {log.name}"
    assert len(lines) == 3


def test_dump_unreadable_batch_is_one_line_and_the_walk_goes_on(plain, tmp_path):
    data = segment_path(plain, "txn-0").read_bytes()
    spans = rc.batch_spans(data)
    log = rc.write_segment(tmp_path, "magic", 0, rc.set_magic(data, spans[2][0], 9))
    proc = run("dump", "--print-data", log)
    lines = proc.stdout.splitlines()[2:]
    bad = [line for line in lines if line.startswith("Skipping unreadable batch")]
    assert bad == [line for line in lines if str(spans[2][0]) in line and "position" in line and "Skipping" in line]
    assert len(bad) == 1
    assert re.match(
        rf"Skipping unreadable batch at position: {spans[2][0]} size: {spans[2][1]} magic: 9 error: .*magic", bad[0]
    )
    batch_lines = [line for line in lines if line.startswith("baseOffset:")]
    assert len(batch_lines) == len(spans) - 1  # every other batch is still there


def test_dump_several_files_and_folders(many):
    logs = sorted(many.glob("*.log"), key=lambda p: int(p.stem))
    proc = run("dump", many)
    sections = dump_sections(proc.stdout)
    assert [s[0] for s in sections] == [f"Dumping {p}" for p in logs]
    assert all(len(s) == 4 for s in sections)  # header, starting offset, two batches
    # kafka-dump-log.sh style: --files a,b
    files = run("dump", "--files", f"{logs[1]},{logs[0]}").stdout
    assert [s[0] for s in dump_sections(files)] == [f"Dumping {logs[1]}", f"Dumping {logs[0]}"]


def test_dump_non_consecutive_offsets_reported_on_stderr(many, tmp_path):
    logs = sorted(many.glob("*.log"), key=lambda p: int(p.stem))
    joined = rc.write_segment(tmp_path, "gap", 0, logs[0].read_bytes() + logs[2].read_bytes())
    proc = run("dump", "--deep-iteration", joined)
    last_of_first = int(logs[1].stem) - 1
    assert f"Non-consecutive offsets in {joined}" in proc.stderr
    assert f"  {last_of_first} is followed by {int(logs[2].stem)}" in proc.stderr


# ---------------------------------------------------------------------------
# dump: index files
# ---------------------------------------------------------------------------


def test_dump_index_files(plain, tmp_path):
    data = segment_path(plain, "txn-0").read_bytes()
    log = rc.write_segment(tmp_path, "idx", 0, data)
    spans = rc.batch_spans(data)
    refs = rc.reference_batches(data)
    entries = [(refs[1]["last_offset"], spans[1][0]), (refs[3]["last_offset"], spans[3][0])]
    index = log.with_suffix(".index")
    index.write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in entries) + bytes(8 * 100))
    timeindex = log.with_suffix(".timeindex")
    timeindex.write_bytes(struct.pack(">qi", refs[1]["max_timestamp"], 4) + bytes(12 * 10))
    txnindex = log.with_suffix(".txnindex")
    txnindex.write_bytes(struct.pack(">hqqqq", 0, 2000, 3, 8, 3) + struct.pack(">hqqqq", 0, 1000, 6, 9, 5))
    proc = run("dump", index, timeindex, txnindex)
    assert proc.stdout.splitlines() == [
        f"Dumping {index}",
        f"offset: {entries[0][0]} position: {entries[0][1]}",
        f"offset: {entries[1][0]} position: {entries[1][1]}",
        f"Dumping {timeindex}",
        f"timestamp: {refs[1]['max_timestamp']} offset: 4",
        f"Dumping {txnindex}",
        "version: 0 producerId: 2000 firstOffset: 3 lastOffset: 8 lastStableOffset: 3",
        "version: 0 producerId: 1000 firstOffset: 6 lastOffset: 9 lastStableOffset: 5",
    ]
    assert "Mismatches" not in proc.stderr
    as_json = [json.loads(line) for line in run("dump", "--json", txnindex).stdout.splitlines()]
    assert as_json[0] == {
        "file": str(txnindex),
        "version": 0,
        "producer_id": 2000,
        "first_offset": 3,
        "last_offset": 8,
        "last_stable_offset": 3,
    }


def test_dump_index_mismatch_and_partial_entry(plain, tmp_path):
    data = segment_path(plain, "txn-0").read_bytes()
    log = rc.write_segment(tmp_path, "idx", 0, data)
    spans = rc.batch_spans(data)
    index = log.with_suffix(".index")
    index.write_bytes(struct.pack(">ii", 3, spans[1][0]) + b"\x00\x01")  # batch there ends at 4, not 3
    proc = run("dump", index)
    assert proc.stdout.splitlines()[1] == f"offset: 3 position: {spans[1][0]}"
    assert f"Mismatches in :{index}" in proc.stderr
    assert "  Index offset: 3, log offset: 4" in proc.stderr
    assert "2 bytes (a partial entry) are ignored" in proc.stderr
    verify = run("dump", "--verify-index-only", index)
    assert verify.stdout.splitlines() == [f"Dumping {index}"]
    empty = log.with_suffix(".index")
    empty.write_bytes(b"")
    assert run("dump", empty).stdout.splitlines() == [f"Dumping {empty}", f"{empty} is empty."]


# ---------------------------------------------------------------------------
# dump --json
# ---------------------------------------------------------------------------


def json_rows(stdout: str) -> list[dict]:
    """dump --json / convert JSON lines as rows of kb.SCHEMA (timestamp in µs)."""
    rows = []
    for line in stdout.splitlines():
        obj = json.loads(line)

        def raw(text, enc):
            if text is None:
                return None
            return {
                "utf8": text.encode(),
                "hex": bytes.fromhex(text) if enc == "hex" else None,
                "base64": base64.b64decode(text) if enc == "base64" else None,
            }[enc]

        rows.append(
            {
                "key": raw(obj["key"], obj["key_encoding"]),
                "value": raw(obj["value"], obj["value_encoding"]),
                "topic": obj["topic"],
                "partition": obj["partition"],
                "offset": obj["offset"],
                "timestamp": obj["timestamp"] * 1000,
                "timestampType": obj["timestamp_type"],
                "headers": [{"key": h["key"], "value": raw(h["value"], h["value_encoding"])} for h in obj["headers"]],
            }
        )
    return rows


@pytest.mark.parametrize("folder", PLAIN_FOLDERS)
@pytest.mark.parametrize("fmt", ["utf8", "hex", "base64"])
def test_dump_json_matches_decode(plain, folder, fmt):
    log = segment_path(plain, folder)
    proc = run("dump", "--json", "--key-format", fmt, "--value-format", fmt, "--header-format", fmt, log)
    topic, partition = folder.rsplit("-", 1)
    want = kb.decode(log.read_bytes(), topic=topic, partition=int(partition))
    assert_same_list(json_rows(proc.stdout), table_rows(want), f"{folder} --json")
    objs = [json.loads(line) for line in proc.stdout.splitlines()]
    encodings = {o["value_encoding"] for o in objs} - {None}
    assert encodings <= ({"utf8", "base64"} if fmt == "utf8" else {fmt})
    assert all(o["file"] == str(log) and o["control"] is None for o in objs)


def test_dump_json_utf8_falls_back_to_base64(plain):
    log = segment_path(plain, "v2-0")
    objs = [json.loads(line) for line in run("dump", "--json", log).stdout.splitlines()]
    all_bytes = next(o for o in objs if o["key_encoding"] == "base64")
    assert base64.b64decode(all_bytes["key"]) == bytes(range(256))
    assert any(o["key_encoding"] == "utf8" for o in objs)


def test_dump_json_control_records_and_batches(plain):
    log = segment_path(plain, "txn-0")
    records = [json.loads(line) for line in run("dump", "--json", "--include-control", log).stdout.splitlines()]
    controls = [r for r in records if r["control"] is not None]
    assert [(r["offset"], r["control"]) for r in controls] == [
        (5, {"type": "COMMIT", "coordinator_epoch": 11}),
        (8, {"type": "ABORT", "coordinator_epoch": 12}),
        (9, {"type": "ABORT", "coordinator_epoch": 11}),
    ]
    batches = [json.loads(line) for line in run("dump", "--json", "--batches", log).stdout.splitlines()]
    refs = rc.reference_batches(log.read_bytes())
    assert len(batches) == len(refs)
    for got, ref in zip(batches, refs):
        for name in (
            "position",
            "size_in_bytes",
            "magic",
            "base_offset",
            "last_offset",
            "crc",
            "compression",
            "is_transactional",
            "is_control",
            "producer_id",
            "producer_epoch",
            "base_sequence",
            "record_count",
            "max_timestamp",
            "partition_leader_epoch",
        ):
            assert got[name] == ref[name], name
        assert got["crc_valid"] is True and got["error"] is None
        assert (got["control"] or {}).get("type") == (ref["control"] or {}).get("type")
        assert (got["topic"], got["partition"]) == ("txn", 0)


def test_dump_json_damaged_file_keeps_stdout_json(plain, tmp_path):
    data = segment_path(plain, "txn-0").read_bytes()
    spans = rc.batch_spans(data)
    log = rc.write_segment(tmp_path, "bad", 0, rc.set_magic(data, spans[1][0], 9)[:-5])
    proc = run("dump", "--json", log)
    for line in proc.stdout.splitlines():
        json.loads(line)
    assert f"skipping unreadable batch at position {spans[1][0]}" in proc.stderr
    assert f"Found {spans[-1][1] - 5} invalid bytes at the end of {log.name}" in proc.stderr
    batches = [json.loads(line) for line in run("dump", "--json", "--batches", log).stdout.splitlines()]
    assert [b["error_type"] for b in batches[:2]] == [None, "UnsupportedFormatError"]


# ---------------------------------------------------------------------------
# stats
# ---------------------------------------------------------------------------


def test_stats_json_counts(plain):
    doc = json.loads(run("stats", "--json", plain).stdout)
    segments = {(s["topic"], s["partition"]): s for s in doc["segments"]}
    assert set(segments) == {tuple([f.rsplit("-", 1)[0], int(f.rsplit("-", 1)[1])]) for f in PLAIN_FOLDERS}
    for folder in PLAIN_FOLDERS:
        topic, partition = folder.rsplit("-", 1)
        s = segments[(topic, int(partition))]
        data = segment_path(plain, folder).read_bytes()
        refs = rc.reference_batches(data)
        data_batches = [r for r in refs if not r["is_control"]]
        assert s["batches"] == len(refs)
        assert s["records"] == sum(len(r["records"]) for r in data_batches)
        assert s["file_bytes"] == s["stored_bytes"] == len(data)
        assert s["control_batches"] == len(refs) - len(data_batches)
        assert s["transactional_batches"] == sum(r["is_transactional"] for r in data_batches)
        assert s["first_offset"] == refs[0]["base_offset"] and s["last_offset"] == refs[-1]["last_offset"]
        assert s["codecs"] == {"none": len(refs)}
        assert s["magics"] == {str(refs[0]["magic"]): len(refs)}
        assert s["invalid_crc_batches"] == s["unreadable_batches"] == s["trailing_bytes"] == 0
        payload = sum(
            len(r["key"] or b"")
            + len(r["value"] or b"")
            + sum(len(k.encode()) + len(v or b"") for k, v in r["headers"])
            for b in data_batches
            for r in b["records"]
        )
        assert s["record_bytes"] == payload
        assert s["compression_ratio"] == pytest.approx(payload / len(data), abs=1e-4)
        times = [r["max_timestamp"] for r in refs if r["max_timestamp"] >= 0]
        assert s["max_timestamp"] == (max(times) if times else None)
    txn = segments[("txn", 0)]
    assert (txn["commit_markers"], txn["abort_markers"]) == (1, 2)
    assert doc["total"]["records"] == sum(s["records"] for s in doc["segments"])
    assert len(doc["partitions"]) == len(PLAIN_FOLDERS)


@pytest.mark.parametrize("codec", CODECS)
def test_stats_compression_ratio(codecs_dir, codec):
    need(codec)
    doc = json.loads(run("stats", "--json", codecs_dir / f"k2-{codec}-0").stdout)
    (s,) = doc["segments"]
    assert s["codecs"] == {codec: 3} and s["unreadable_batches"] == 0
    assert s["compression_ratio"] > 1.5  # the mixed data set is very compressible


def test_stats_table_and_many_segments(many):
    proc = run("stats", many)
    assert "\x1b[" not in proc.stdout + proc.stderr  # no colours or progress bars in a pipe
    rows = [line for line in proc.stdout.splitlines() if "many-3" in line]
    assert len(rows) == MANY + 1  # a row per segment and the partition's total
    assert f"{MANY} seg" in rows[-1]
    doc = json.loads(run("stats", "--json", many).stdout)
    assert [s["base_offset"] for s in doc["segments"]] == [base for base, _ in _many_segments()]
    assert doc["partitions"][0]["segments"] == MANY
    assert doc["total"]["records"] == sum(3 + i % 4 for i in range(MANY))
    summary = run("stats", "--partitions", "--headers-only", many).stdout
    assert sum("many-3" in line for line in summary.splitlines()) == 1


def test_stats_reports_problems(plain, tmp_path):
    data = segment_path(plain, "txn-0").read_bytes()
    spans = rc.batch_spans(data)
    bad = rc.flip_bit(data, spans[0][0] + 34)  # in the base timestamp: CRC-invalid, still decodable
    bad = rc.set_magic(bad, spans[3][0], 9)[:-4]
    rc.write_segment(tmp_path, "bad", 0, bad)
    doc = json.loads(run("stats", "--json", tmp_path / "bad-0").stdout)
    (s,) = doc["segments"]
    assert s["invalid_crc_batches"] == 1 and s["unreadable_batches"] == 1
    assert s["trailing_bytes"] == spans[-1][1] - 4 and s["end"] == "truncated"
    table = run("stats", tmp_path / "bad-0").stdout
    assert "1 bad CRC" in table and "1 unreadable" in table and "at end (truncated)" in table


# ---------------------------------------------------------------------------
# convert
# ---------------------------------------------------------------------------


def expected_table(root: Path, folders: list[str], *, sort: bool = True) -> pa.Table:
    """kb.decode of every segment, in topic, partition, base offset order
    (a log dir), or folder by folder as given (several PATH arguments)."""
    tables = []
    if sort:
        folders = sorted(folders, key=lambda f: (f.rsplit("-", 1)[0], int(f.rsplit("-", 1)[1])))
    for folder in folders:
        topic, partition = folder.rsplit("-", 1)
        for log in sorted((root / folder).glob("*.log"), key=lambda p: int(p.stem)):
            tables.append(kb.decode(log.read_bytes(), topic=topic, partition=int(partition)))
    return pa.concat_tables(tables)


@pytest.mark.parametrize("out_name", ["out.parquet", "out.arrow", "out.feather", "out.jsonl"])
def test_convert_round_trip(plain, tmp_path, out_name):
    out = tmp_path / out_name
    proc = run("convert", plain, out)
    want = expected_table(plain, PLAIN_FOLDERS)
    if out.suffix == ".parquet":
        got = pq.read_table(out)
        meta = pq.ParquetFile(out).metadata
        assert meta.row_group(0).column(0).compression == "ZSTD"
    elif out.suffix == ".jsonl":
        assert_same_list(json_rows(out.read_text()), table_rows(want), "jsonl")
        got = None
    else:
        with pa.memory_map(str(out)) as source:
            got = pa.ipc.open_file(source).read_all()
    if got is not None:
        assert got.schema == kb.SCHEMA
        assert_same_list(table_rows(got), table_rows(want), out_name)
    assert re.search(
        rf"converted {len(PLAIN_FOLDERS)} segments \(.*\) to {want.num_rows:,} records in {out}"
        r" .* MiB/s",
        proc.stderr,
    ), proc.stderr
    assert not list(tmp_path.glob(".*partial*"))


def test_convert_parquet_with_duckdb(many, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    out = tmp_path / "many.parquet"
    run("convert", many, out, "--row-group-size", "50")
    want = table_rows(expected_table(many.parent, ["many-3"]))
    con = duckdb.connect()
    rows = con.execute(
        'select key, value, topic, "partition", "offset", epoch_us("timestamp"), "timestampType", headers '
        'from read_parquet(?) order by "offset"',
        [str(out)],
    ).fetchall()
    got = [
        {
            "key": r[0],
            "value": r[1],
            "topic": r[2],
            "partition": r[3],
            "offset": r[4],
            "timestamp": r[5],
            "timestampType": r[6],
            "headers": [{"key": h["key"], "value": h["value"]} for h in r[7]],
        }
        for r in rows
    ]
    assert_same_list(got, want, "duckdb")
    assert pq.ParquetFile(out).metadata.num_row_groups == -(-len(want) // 50)


@pytest.mark.parametrize("codec", CODECS)
def test_convert_compressed_logs(codecs_dir, tmp_path, codec):
    need(codec)
    folders = [f"k2-{codec}-0"] + ([f"a2-{codec}-0"] if (codecs_dir / f"a2-{codec}-0").exists() else [])
    out = tmp_path / "c.arrow"
    run("convert", *[codecs_dir / f for f in folders], out)
    with pa.memory_map(str(out)) as source:
        got = pa.ipc.open_file(source).read_all()
    assert_same_list(table_rows(got), table_rows(expected_table(codecs_dir, folders, sort=False)), codec)


def test_convert_small_window_and_offsets(many, tmp_path):
    out = tmp_path / "w.parquet"
    run("convert", many, out, "--window", "300", "--offsets", "10:100")
    got = pq.read_table(out)
    assert got.column("offset").to_pylist() == list(range(10, 100))
    want = expected_table(many.parent, ["many-3"])
    want = want.filter(
        pa.compute.and_(pa.compute.greater_equal(want["offset"], 10), pa.compute.less(want["offset"], 100))
    )
    assert_same_list(table_rows(got), table_rows(want), "window")


def test_convert_to_stdout_and_formats(plain):
    proc = run("convert", segment_path(plain, "v2-0"), "-", "--key-format", "hex", "--value-format", "base64")
    objs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {o["key_encoding"] for o in objs} <= {"hex", None} and {o["value_encoding"] for o in objs} <= {
        "base64",
        None,
    }
    want = kb.read_segment(segment_path(plain, "v2-0"))
    assert_same_list(json_rows(proc.stdout), table_rows(want), "stdout")
    assert "converted 1 segment " in proc.stderr


def test_convert_topic_and_partition_for_stray_files(plain, tmp_path):
    stray = tmp_path / "segment.log"
    stray.write_bytes(segment_path(plain, "v1-0").read_bytes())
    out = tmp_path / "s.parquet"
    run("convert", stray, out, "--topic", "legacy", "--partition", "9", "-q")
    got = pq.read_table(out)
    assert set(got.column("topic").to_pylist()) == {"legacy"} and set(got.column("partition").to_pylist()) == {9}


def test_convert_corrupt_input(plain, tmp_path):
    data = segment_path(plain, "v2-0").read_bytes()
    spans = rc.batch_spans(data)
    rc.write_segment(tmp_path / "in", "bad", 0, rc.flip_bit(data, spans[1][0] + spans[1][1] - 3))
    out = tmp_path / "bad.parquet"
    proc = run("convert", tmp_path / "in", out, ok=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "00000000000000000000.log" in proc.stderr and str(spans[1][0]) in proc.stderr
    assert not out.exists() and not list(tmp_path.glob(".*partial*"))
    skip = run("convert", tmp_path / "in", out, "--on-error", "skip")
    assert "skipped 1 corrupt batch" in skip.stderr
    got = pq.read_table(out)
    want = kb.decode(rc.flip_bit(data, spans[1][0] + spans[1][1] - 3), topic="bad", partition=0, on_error="skip")
    assert_same_list(table_rows(got), table_rows(want), "skip")
    nocrc = run("convert", tmp_path / "in", tmp_path / "nocrc.parquet", "--no-crc")
    assert pq.read_table(tmp_path / "nocrc.parquet").num_rows == sum(
        r["record_count"] for r in rc.reference_batches(data)
    )
    assert nocrc.returncode == 0


def test_convert_read_committed_and_control(plain, tmp_path):
    out = tmp_path / "rc.parquet"
    proc = run("convert", plain / "txn-0", out, "--isolation", "read_committed", ok=False)
    if proc.returncode and "not available" in proc.stderr:
        pytest.skip("read_committed is not in this build yet")
    assert proc.returncode == 0, proc.stderr
    assert pq.read_table(out).column("offset").to_pylist() == [0, 1, 2, 10, 11]
    run("convert", plain / "txn-0", out, "--include-control", "--force")
    assert pq.read_table(out).column("offset").to_pylist() == list(range(12))


def test_convert_force_overwrites(plain, tmp_path):
    out = tmp_path / "o.parquet"
    out.write_bytes(b"old")
    run("convert", plain / "v0-0", out, "--force", "-q")
    assert pq.read_table(out).num_rows == kb.read_segment(segment_path(plain, "v0-0")).num_rows


# ---------------------------------------------------------------------------
# progress bars: only on a terminal
# ---------------------------------------------------------------------------


def test_no_progress_escape_codes_in_pipes(many, tmp_path):
    proc = run("convert", many, tmp_path / "p.parquet")
    assert "\x1b" not in proc.stderr and "\r" not in proc.stderr
    proc = run("stats", many)
    assert "\x1b" not in proc.stdout + proc.stderr


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal(many, tmp_path):
    master, slave = os.openpty()
    chunks: list[bytes] = []

    def pump():
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120")
    env.pop("NO_COLOR", None)
    proc = subprocess.run(
        [KAFKABATCH, "convert", str(many), str(tmp_path / "t.parquet")],
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
        timeout=300,
    )
    os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    assert proc.returncode == 0
    text = b"".join(chunks).decode(errors="replace")
    assert "converted 40 segments" in text
    assert "\x1b[" in text  # rich drew (and cleared) a bar
