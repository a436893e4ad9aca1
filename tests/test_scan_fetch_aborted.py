"""``scan_log(isolation="read_committed", aborted_transactions=...)``: a Fetch
response's aborted list instead of the pre-pass, on the log librdkafka's
transactional producers wrote (tests/test_transactions.py): two producers
that each abort a transaction and then write another (committed, or left
open), split into two segments mid-transaction and read in windows of one
batch. As Kafka's consumer does, a listed transaction ends at its producer's
ABORT marker, so what the producer writes after it shows, whichever window or
segment the marker was read in.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
import realclients as rc
from test_transactions import TOPIC, _aborted_list, _rows, _want, interleaved  # noqa: F401 (a fixture)

import kafkabatch as kb


def _two_segments(data: bytes, tmp_path):
    """``data`` as two segments of ``TOPIC``-0, cut at the batch before the first ABORT marker."""
    batches = list(kb.iter_batches(data))
    marker = next(b for b in batches if b.is_control and b.control.type == "ABORT")
    cut = max(b.position for b in batches if b.position < marker.position)
    rc.write_segment(tmp_path, TOPIC, 0, data[:cut])
    rc.write_segment(
        tmp_path, TOPIC, 0, data[cut:], base_offset=next(b.base_offset for b in batches if b.position == cut)
    )
    return tmp_path


def test_a_listed_abort_ends_at_its_marker_across_windows_and_segments(interleaved, tmp_path):  # noqa: F811
    data, produced = interleaved
    folder = _two_segments(data, tmp_path)
    aborted = _aborted_list(data)
    assert len(aborted) == 2 and len({pid for pid, _ in aborted}) == 2  # each producer aborts once, then writes on
    for chunk in (1, "16MiB"):  # one batch a window, or each segment at once
        got = kb.scan_log(folder, isolation="read_committed", aborted_transactions=aborted, max_chunk_bytes=chunk)
        table = got.read_all()
        # the open transaction has no entry and no marker: a list judges it shown
        assert _rows(table) == _want(produced, "commit", "plain", "open"), chunk
        offsets = table.column("offset").to_pylist()
        assert offsets == sorted(offsets)
        hidden = kb.scan_log(
            folder,
            isolation="read_committed",
            aborted_transactions=list(reversed(aborted)),
            hide_open_transactions=True,
            max_chunk_bytes=chunk,
        ).read_all()
        assert _rows(hidden) == _want(produced, "commit", "plain"), chunk
        # the pre-pass agrees where the open transaction is hidden
        assert hidden.equals(kb.scan_log(folder, isolation="read_committed", max_chunk_bytes=chunk).read_all())


def test_a_list_without_its_markers_hides_what_it_names(interleaved, tmp_path):  # noqa: F811
    """Offsets bounded before the first ABORT marker: only the list can tell the aborted rows."""
    data, produced = interleaved
    folder = _two_segments(data, tmp_path)
    marker = next(b for b in kb.iter_batches(data) if b.is_control and b.control.type == "ABORT")
    fate = {r["key"]: r["fate"] for r in produced}
    shown = _rows(kb.scan_log(folder, end_offset=marker.base_offset).read_all())
    got = kb.scan_log(
        folder,
        isolation="read_committed",
        aborted_transactions=_aborted_list(data),
        end_offset=marker.base_offset,
        max_chunk_bytes=1,
    ).read_all()
    assert _rows(got) == [row for row in shown if fate[row[0]] != "abort"]
    assert len(_rows(got)) < len(shown)


def test_aborted_transactions_needs_read_committed(interleaved, tmp_path):  # noqa: F811
    data, _ = interleaved
    folder = _two_segments(data, tmp_path)
    with pytest.raises(ValueError, match="aborted_transactions needs isolation='read_committed'"):
        kb.scan_log(folder, aborted_transactions=[]).read_all()


def test_decode_range_ends_a_listed_abort_at_its_marker(interleaved, tmp_path):  # noqa: F811
    """``decode_range`` with a Fetch response's list, a window a batch: what a producer
    commits after its aborted transaction shows, as scan_log (and Kafka's consumer) show it."""
    from kafkabatch.log import SegmentResult, decode_range
    from kafkabatch.log.fs import open_source
    from kafkabatch.log.listing import Segment

    data, produced = interleaved
    path = rc.write_segment(tmp_path, TOPIC, 0, data)
    aborted = _aborted_list(data)
    segment = Segment(str(path), TOPIC, 0, 0, len(data))
    for chunk in (1, 1 << 24):
        for hide_open, fates in ((None, ("commit", "plain", "open")), (True, ("commit", "plain"))):
            source = open_source(str(path))
            try:
                result = SegmentResult(segment)
                options = {"aborted_transactions": aborted, "hide_open_transactions": hide_open}
                got = pa.Table.from_batches(
                    decode_range(
                        source, segment, max_chunk_bytes=chunk, result=result, isolation="read_committed", **options
                    ),
                    schema=kb.SCHEMA,
                )
            finally:
                source.close()
            assert _rows(got) == _want(produced, *fates), (chunk, hide_open)
            listed = kb.scan_log(tmp_path, isolation="read_committed", max_chunk_bytes=chunk, **options).read_all()
            assert got.equals(listed), (chunk, hide_open)
            assert result.rows == got.num_rows and result.end == len(data)
    # the range's own markers, no list: every transaction they end is judged by them, whatever the window
    source = open_source(str(path))
    try:
        got = pa.Table.from_batches(
            decode_range(source, segment, max_chunk_bytes=1, isolation="read_committed"), schema=kb.SCHEMA
        )
    finally:
        source.close()
    assert _rows(got) == _want(produced, "commit", "plain")
