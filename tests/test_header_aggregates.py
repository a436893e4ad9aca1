"""Aggregates from batch headers (the core's ``Plan::header_aggregates``, through
``_kafkabatch._scan_header_aggregates``) against the same aggregates computed from
the rows the core's reader returns for the same folders and options.

Every answer must equal the rows' aggregate; where the headers can't answer
exactly (bounds inside a batch or a legacy message set, CreateTime minimums,
compacted batches' offsets) the core must say so instead. Legacy message sets
are counted by reading their wrappers, once per file while it is unchanged. Folders: a generated
log dir (transactions with aborts, legacy v1), the real-client log dir and
every real-client fixture (compacted, LogAppendTime, control batches...).
"""

from __future__ import annotations

import os
import shutil
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import realclients as rc
from test_logdir import build_log

import kafkabatch as kb
from kafkabatch import _kafkabatch as native

AGGREGATES = ["count", "min_offset", "max_offset", "min_timestamp", "max_timestamp"]


def from_rows(root: Path, group_by: str, **options: Any) -> list[tuple[Any, Any, list[Any]]]:
    """The aggregates of the rows the core's reader returns."""
    table = native._scan_read([str(root)], **options).read_all()
    topics = table.column("topic").to_pylist()
    partitions = table.column("partition").to_pylist()
    offsets = table.column("offset").to_pylist()
    stamps = table.column("timestamp").cast(pa.int64()).to_pylist()
    groups: dict[tuple[Any, Any], list[tuple[int, int]]] = defaultdict(list)
    if group_by == "all":
        groups[(None, None)] = []
    for t, p, o, s in zip(topics, partitions, offsets, stamps, strict=True):
        key = {"all": (None, None), "topic": (t, None), "partition": (t, p)}[group_by]
        groups[key].append((o, s))
    out = []
    for (t, p), rows in sorted(groups.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or 0)):
        offs = [o for o, _ in rows]
        ts = [s for _, s in rows]
        values = [
            len(rows),
            min(offs, default=None),
            max(offs, default=None),
            min(ts, default=None),
            max(ts, default=None),
        ]
        out.append((t, p, values))
    return out


def check(root: Path, group_by: str = "partition", **options: Any) -> str | None:
    """Each aggregate alone, then all of them: the core's answer equals the rows',
    or the core declines. Returns why COUNT(*) was declined, if it was."""
    want = from_rows(root, group_by, **options)
    declined_count = None
    for i, name in enumerate(AGGREGATES):
        rows, why = native._scan_header_aggregates([str(root)], [name], group_by, **options)
        if rows is None:
            assert why, name
            if name == "count":
                declined_count = why
            continue
        assert rows == [(t, p, [v[i]]) for t, p, v in want], (name, options)
    rows, why = native._scan_header_aggregates([str(root)], AGGREGATES, group_by, **options)
    if rows is not None:
        assert rows == want, options
    return declined_count


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "data"
    kb.generate(out, size="2MB", segment_bytes="64KB", seed=7)
    return out


def v2_topics(root: Path) -> list[str]:
    topics = set(native._scan_read([str(root)], columns=["topic"]).read_all().column("topic").to_pylist())
    return sorted(topics - {"audit-legacy"})


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
@pytest.mark.parametrize("group_by", ["all", "topic", "partition"])
def test_generated_v2_topics_are_answered_from_headers(generated, isolation, group_by):
    topics = v2_topics(generated)
    assert "orders" in topics
    assert check(generated, group_by, isolation=isolation, topics=topics) is None
    rows, why = native._scan_header_aggregates(
        [str(generated)], ["count", "max_timestamp"], group_by, isolation=isolation, topics=topics
    )
    assert why is None and rows


def test_read_committed_leaves_aborted_batches_out(generated):
    topics = ["orders"]
    (everything,), _ = native._scan_header_aggregates([str(generated)], ["count"], "all", topics=topics)
    (committed,), _ = native._scan_header_aggregates(
        [str(generated)], ["count"], "all", topics=topics, isolation="read_committed"
    )
    assert committed[2][0] < everything[2][0]  # the generator aborts some transactions


def settle(folder: Path) -> None:
    """Dates the folder's segments an hour back: old enough for their legacy tallies to be remembered."""
    an_hour_ago = time.time() - 3600
    for log in folder.rglob("*.log"):
        os.utime(log, (an_hour_ago, an_hour_ago))


def test_legacy_message_sets_are_read_once_and_remembered(generated, tmp_path):
    """Legacy wrappers are inflated (their headers don't hold a count) and their
    files' tallies remembered: every answer, the first and the remembered
    ones, equals the rows'; a bound that cuts a legacy segment is declined."""
    folder = tmp_path / "data"
    shutil.copytree(generated / "audit-legacy-0", folder / "audit-legacy-0")
    assert check(folder, "partition") is None
    settle(folder)
    for group_by in ("all", "topic", "partition", "partition"):
        assert check(folder, group_by) is None
    # an append: the file's tally is read again
    log = sorted(folder.rglob("*.log"))[-1]
    data = log.read_bytes()
    first = next(kb.iter_batches(data))
    log.write_bytes(data + data[: first.size_in_bytes])
    settle(folder)
    assert check(folder, "partition") is None
    rows, why = native._scan_header_aggregates([str(folder)], ["count"], "all", start_offset=7)
    assert rows is None and "legacy message set" in why


@pytest.mark.parametrize(
    "bounds",
    [
        {"start_offset": 150},
        {"end_offset": 400},
        {"start_offset": {"orders": {0: 500}}, "end_offset": 2_000},
        {"start_offset": 10, "end_offset": 5},
    ],
)
@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_offset_bounds_are_answered_only_on_batch_boundaries(generated, bounds, isolation):
    check(generated, "partition", isolation=isolation, topics=v2_topics(generated), **bounds)


def test_time_bounds(generated):
    topics = v2_topics(generated)
    stamps = sorted(
        native._scan_read([str(generated)], topics=topics).read_all().column("timestamp").cast(pa.int64()).to_pylist()
    )
    middle = stamps[len(stamps) // 2] // 1000
    past_end = stamps[-1] // 1000 + 1
    check(generated, "partition", topics=topics, start_timestamp=middle)
    check(generated, "partition", topics=topics, end_timestamp=middle)
    # CreateTime batches wholly before the end bound: exact
    assert check(generated, "topic", topics=topics, end_timestamp=past_end) is None
    # a start time after every record: every batch is wholly outside
    assert check(generated, "all", topics=topics, start_timestamp=past_end) is None


@pytest.fixture(scope="module")
def client_log(tmp_path_factory) -> Path:
    return build_log(tmp_path_factory.mktemp("logs") / "kafka-data")


@pytest.mark.filterwarnings("ignore:.*no offset index")
@pytest.mark.parametrize(
    "options", [{}, {"isolation": "read_committed"}, {"start_offset": 25}, {"max_chunk_bytes": 100}]
)
def test_real_client_log_dir(client_log, options):
    check(client_log, "partition", **options)
    check(client_log, "all", **options)


def _fixture_names() -> list[str]:
    return [n for n in rc.all_fixture_names() if not n.startswith("librdkafka-")]


@pytest.mark.parametrize("name", _fixture_names())
def test_real_client_fixtures(golden, name, tmp_path):
    """Each fixture as a one-segment partition: the headers' answer equals the
    rows', or is declined; v2 data with good CRCs is always counted."""
    fixture = golden(name)
    folder = rc.write_segment(tmp_path, "t", 0, fixture.data).parent
    options = {} if fixture.crc_valid else {"validate_crc": False}
    for isolation in ("read_uncommitted", "read_committed"):
        try:
            kb.scan_log(folder, isolation=isolation, **options).read_all()
        except kb.KafkaBatchError:
            rows, why = native._scan_header_aggregates([str(folder)], ["count"], "all", isolation=isolation, **options)
            assert rows is None or rows[0][2] == [0] or why is None  # the read fails: an answer is not required
            continue
        declined = check(folder, "partition", isolation=isolation, **options)
        magics = {b.magic for b in kb.iter_batches(fixture.data, validate_crc=False)}
        if magics == {2} and fixture.crc_valid:
            assert declined is None, (name, isolation, declined)
        if magics != {2} and magics and fixture.crc_valid:
            # legacy wrappers read whole, then remembered: the same answers
            assert declined is None, (name, isolation, declined)
            settle(folder)
            assert check(folder, "partition", isolation=isolation, **options) is None


def test_compacted_and_log_append_time_fixtures_say_what_they_cannot_answer(golden, tmp_path):
    names = [n for n in _fixture_names() if "compacted" in n and "v2" in n]
    assert names
    for name in names:
        folder = rc.write_segment(tmp_path / name, "t", 0, golden(name).data).parent
        rows, why = native._scan_header_aggregates([str(folder)], ["min_offset", "max_offset"], "all")
        want = from_rows(folder, "all")
        if rows is None:
            assert "offset gaps" in why, why
        else:
            assert rows == [(None, None, want[0][2][1:3])]
        (count,), _ = native._scan_header_aggregates([str(folder)], ["count"], "all")
        assert count[2] == [want[0][2][0]]
    lat = [n for n in _fixture_names() if "logappendtime" in n and "v2" in n]
    for name in lat:
        folder = rc.write_segment(tmp_path / name, "t", 0, golden(name).data).parent
        rows, why = native._scan_header_aggregates([str(folder)], ["min_timestamp"], "all")
        assert why is None, why
        assert rows == [(None, None, [from_rows(folder, "all")[0][2][3]])]


def test_columns_of_the_core_reader(generated):
    """``columns=``: only those columns, the same values as the full read's."""
    full = native._scan_read([str(generated)]).read_all()
    for names in (["offset"], ["timestamp", "key"], []):
        part = native._scan_read([str(generated)], columns=names).read_all()
        assert part.num_rows == full.num_rows
        assert part.column_names == [n for n in full.column_names if n in names]
        for n in names:
            assert part.column(n).equals(full.column(n))
    with pytest.raises(ValueError, match="no column"):
        native._scan_read([str(generated)], columns=["offsets"])
