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
