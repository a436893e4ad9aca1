"""``kb.scan_polars``: a polars LazyFrame whose predicates, projection and row counts reach the reader.

Every query is checked against an eager read (``kb.scan_log(...).read_all()``
into polars) filtered by polars itself, on the folders of ``test_pushdown``:
real clients' batches with out-of-order timestamps, interleaved producers
whose clocks disagree, a LogAppendTime batch, legacy v1 messages.
"""

from __future__ import annotations

import datetime as dt
import warnings

import pytest
from test_logdir import BASE_TS, build_log
from test_pushdown import ms, write_producers

import kafkabatch as kb
from kafkabatch.polars_io import record_filter

pl = pytest.importorskip("polars")

pytestmark = pytest.mark.filterwarnings("ignore::kafkabatch.IndexFileWarning")  # these folders have no indexes


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = build_log(tmp_path_factory.mktemp("polars") / "data")
    write_producers(root)
    return root


@pytest.fixture(scope="module")
def eager(logs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pl.from_arrow(kb.scan_log(logs).read_all())


def ts(k: int) -> dt.datetime:
    return ms(BASE_TS + 1000 * k)


PREDICATES = [
    (pl.col("timestamp") >= ts(200)) & (pl.col("timestamp") < ts(330)),
    (pl.col("topic") == "orders") & pl.col("partition").is_in([0]) & (pl.col("offset") > 12) & (pl.col("offset") <= 25),
    ~(pl.col("topic") == "payments") & (pl.col("partition") != 1) & ~(pl.col("offset") < 3) & (pl.col("offset") < 20),
    pl.col("offset").is_in([3, 17, 1030, 1039, 45]) & (pl.lit(ts(10)) < pl.col("timestamp")),
    pl.col("topic").str.starts_with("ev") & (pl.col("timestamp") <= ts(500)) & pl.col("key").is_null(),
    (pl.col("timestamp") == ts(35)) | (pl.col("offset") == 2),
    pl.col("topic").is_in(["orders", "payments"]) & (pl.col("value").bin.starts_with(b"value 1")),
]


@pytest.mark.parametrize("index", range(len(PREDICATES)))
def test_filtered_scan_matches_eager_filter(logs, eager, index):
    predicate = PREDICATES[index]
    got = kb.scan_polars(logs).filter(predicate).collect()
    want = eager.filter(predicate)
    assert 0 < want.height < eager.height
    assert got.sort("topic", "partition", "offset").equals(want.sort("topic", "partition", "offset"))


def test_predicates_prune(logs, eager):
    """The conjuncts on topic/partition/offset/timestamp become a RecordFilter (what prunes)."""
    where = record_filter(PREDICATES[1])
    assert where.keeps("orders", 0) and not where.keeps("orders", 1) and not where.keeps("events", 0)
    assert (where.bounds().start_offset, where.bounds().end_offset) == (13, 26)
    assert record_filter(PREDICATES[5]).empty  # an OR: nothing to prune by, polars' filter decides
    late = record_filter(PREDICATES[0]).bounds()
    assert (late.start_ts, late.end_ts) == (int(ts(200).timestamp() * 1e6), int(ts(330).timestamp() * 1e6))


def test_projection_head_and_values(logs, eager):
    lf = kb.scan_polars(logs)
    assert lf.collect_schema() == eager.schema
    assert lf.select("offset", "topic").collect().equals(eager.select("offset", "topic"))
    assert lf.head(7).collect().equals(eager.head(7))
    predicate = pl.col("timestamp") >= ts(300)
    assert lf.filter(predicate).head(4).collect().equals(eager.filter(predicate).head(4))
    # a value not selected is not parsed: these values aren't JSON, so parsing them raises
    import pyarrow as pa

    typed = kb.scan_polars(
        logs, value_format="json", value_schema=pa.struct([("n", pa.int64())]), on_value_error="raise"
    )
    assert typed.select("offset").collect().equals(eager.select("offset"))
    with pytest.raises(Exception, match="(?i)json"):
        typed.select("value").collect()


def test_bad_options_fail_at_scan(logs):
    with pytest.raises(TypeError):
        kb.scan_polars(logs, isolaton="read_committed")


@pytest.mark.parametrize("conjuncts", [100, 1_000])
def test_a_long_chain_of_ands_is_read_without_recursion_errors(logs, eager, conjuncts):
    """A chain of ``&``s: a short one still pushes its bounds; one too deep
    for Python's JSON reader to take in is not pushed at all (no error), and
    either way the rows are polars' own."""
    predicate = pl.col("offset") >= 0
    for k in range(conjuncts):
        predicate = predicate & (pl.col("offset") >= k % 3)
    assert record_filter(predicate).start_offset == (2 if conjuncts < 200 else None)
    got = kb.scan_polars(logs).filter(predicate).collect()
    assert got.sort(["topic", "partition", "offset"]).equals(
        eager.filter(predicate).sort(["topic", "partition", "offset"])
    )
