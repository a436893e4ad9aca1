"""Two copies of the same broker log dir read together: each offset once.

A backup of a log dir (in a bucket, or another folder) holds the same segment
names as the live one, its newest segments shorter (taken earlier). Read
together (``scan_log([backup, live])``, the CLI's ``convert`` and ``stats`` with
both paths), every offset
comes once, the live copy's newer records included, whichever copy is named
first and whichever sorts first. The newest segment of a folder has no end in
its name: its end is read from its last batch header (for a remote file, from
where the last entry in use of its ``.index`` points, past the zeros a broker
preallocates for the active segment).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kafkabatch as kb


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> Path:
    """A broker log dir: three partitions of several segments, one topic transactional."""
    root = tmp_path_factory.mktemp("live")
    kb.generate(
        root,
        size="900KB",
        topics=[
            kb.TopicSpec("orders", 2, codec="lz4", transactional_producers=2),
            kb.TopicSpec("clicks", 1, codec="zstd"),
        ],
        segment_bytes="96KB",
        progress=False,
    )
    return root


def _backup(live: Path, into: Path) -> Path:
    """A copy of ``live`` taken earlier: each partition's newest segment holds the first
    half of its batches; its ``.index`` keeps every entry the live one has and a
    preallocated zero tail, as a broker's active segment's index."""
    shutil.copytree(live, into)
    for folder in into.iterdir():
        logs = sorted(folder.glob("*.log"))
        if not logs:
            continue
        newest = logs[-1]
        data = newest.read_bytes()
        batches = list(kb.iter_batches(data, validate_crc=False))
        assert len(batches) > 1
        keep = batches[len(batches) // 2 - 1]
        newest.write_bytes(data[: keep.position + keep.size_in_bytes])
        index = newest.with_suffix(".index")
        if index.exists():
            index.write_bytes(index.read_bytes() + bytes(8 * 1000))
    return into


def _keys(table: pa.Table) -> list[tuple]:
    return sorted(zip(table["topic"].to_pylist(), table["partition"].to_pylist(), table["offset"].to_pylist()))


def _rows(table: pa.Table) -> list[tuple]:
    cols = ["topic", "partition", "offset", "timestamp", "key", "value"]
    return sorted(zip(*(table[c].to_pylist() for c in cols)))


def test_two_local_copies_give_each_offset_once(live, tmp_path):
    # "a-..." sorts before the live copy's folder: the shorter copy comes first at equal offsets.
    backup = _backup(live, tmp_path / "a-backup")
    for isolation in ("read_uncommitted", "read_committed"):
        want = kb.scan_log(live, isolation=isolation).read_all()
        shorter = kb.scan_log(backup, isolation=isolation).read_all()
        assert 0 < shorter.num_rows < want.num_rows
        for roots in ([backup, live], [live, backup]):
            got = kb.scan_log(roots, isolation=isolation).read_all()
            assert len(_keys(got)) == len(set(_keys(got))), roots
            assert _rows(got) == _rows(want), (roots, isolation)


def test_a_bucket_backup_and_the_live_dir_give_each_offset_once(live, moto_s3, monkeypatch, tmp_path):
    filesystem, endpoint, _ = moto_s3
    backup = _backup(live, tmp_path / "backup")
    for path in sorted(backup.rglob("*")):
        if path.is_file():
            with filesystem.open_output_stream("tiered/backup/" + path.relative_to(backup).as_posix()) as f:
                f.write(path.read_bytes())
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{endpoint}")
    remote = "s3://tiered/backup/"
    want = kb.scan_log(live).read_all()
    assert 0 < kb.scan_log(remote).read_all().num_rows < want.num_rows
    for roots in ([remote, live], [live, remote]):
        got = kb.scan_log(roots).read_all()
        assert len(_keys(got)) == len(set(_keys(got))), roots
        assert _rows(got) == _rows(want), roots
    committed = kb.scan_log([remote, live], isolation="read_committed").read_all()
    assert _rows(committed) == _rows(kb.scan_log(live, isolation="read_committed").read_all())
    # The command line reads both paths as one log too.
    from kafkabatch.cli import main

    out = tmp_path / "both.parquet"
    with contextlib.redirect_stderr(None):
        assert main(["convert", remote, str(live), str(out), "--no-progress", "-q"]) == 0
    assert _rows(pq.read_table(out)) == _rows(want)
    totals = []
    for paths in ([remote, str(live)], [str(live)]):
        stats = tmp_path / "stats.json"
        with open(stats, "w") as f, contextlib.redirect_stdout(f):
            assert main(["stats", *paths, "--json", "--no-progress"]) == 0
        totals.append(json.loads(stats.read_text())["total"])
    assert totals[0]["records"] == totals[1]["records"] == want.num_rows
