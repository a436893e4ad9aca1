"""kafkabatch._util: the one home of sizes, byte counts, Kafka's names,
memory maps and progress bars (its doctests, and the edges)."""

from __future__ import annotations

import argparse
import doctest

import pytest

from kafkabatch import _util


def test_doctests():
    failures, tried = doctest.testmod(_util)
    assert tried >= 5 and failures == 0


@pytest.mark.parametrize(
    ("text", "size"),
    [("128m", 128 << 20), ("128MB", 128 << 20), ("1.5k", 1536), ("100", 100), (5, 5), ("2TiB", 2 << 40)],
)
def test_parse_size(text, size):
    assert _util.parse_size(text) == size


@pytest.mark.parametrize("bad", ["", "lots", "-1", "12 parsecs", True, -3])
def test_parse_size_refuses(bad):
    with pytest.raises(ValueError, match="window"):
        _util.parse_size(bad, "window")
    with pytest.raises(argparse.ArgumentTypeError):
        _util.size_arg(str(bad))


def test_names():
    assert _util.topic_partition_of_folder("a-b-c-0") == ("a-b-c", 0)
    assert _util.topic_partition_of_folder("orders-3.abc-delete") is None
    assert _util.segment_base_offset("00000000000000000042.log.deleted") == 42
    assert _util.segment_base_offset("leader-epoch-checkpoint") is None


def test_mapped_file(tmp_path):
    empty, full = tmp_path / "empty.log", tmp_path / "full.log"
    empty.write_bytes(b"")
    full.write_bytes(b"abc")
    with _util.mapped_file(empty) as data:
        assert bytes(data) == b""
    with _util.mapped_file(full) as data:
        assert bytes(data) == b"abc"
