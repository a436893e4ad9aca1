"""Listing in the core, as Python sees it: Python's own glob rules, symbolic links, remote file systems."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest
from pyarrow import fs as pafs

import kafkabatch.log.fs as kbfs
from kafkabatch._kafkabatch import list_segments as native_list_segments
from kafkabatch.log import list_segments

ID = "tqimKeZwStOEOwRzT3L5oQ"


def _tree(root: Path) -> Path:
    for rel in [
        "data/orders-0/00000000000000000000.log",
        "data/orders-0/00000000000000000030.log",
        "data/orders-0/00000000000000000030.index",
        "data/orders-1/00000000000000001000.log",
        "data/.hidden-0/00000000000000000000.log",
        "data/payments-0/00000000000000000000.log",
        "data/b1/orders-2/00000000000000000000.log",
        "data/b1/deep/er-7/00000000000000000005.log",
        "data/[x]-3/00000000000000000001.log",
    ]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    return root / "data"


def _expected_by_python_glob(pattern: str) -> list[str]:
    """The .log files Python's glob.glob(recursive=True) leads to: matched files, and those under matched folders."""
    found = []
    for root in sorted(glob.glob(pattern, recursive=True)):
        if os.path.isfile(root):
            if root.endswith(".log"):
                found.append(root)
        else:
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames.sort()
                found += [os.path.join(dirpath, n) for n in sorted(filenames) if n.endswith(".log")]
    return sorted(set(found))


@pytest.mark.parametrize(
    "pattern",
    [
        "*",
        "orders-*",
        "*/*.log",
        "**",
        "**/*.log",
        "**/orders-?",
        ".*",
        "[o]rders-[!0]",
        "[[]x]-*",
        "*-[0-9]/0000000000000000003*",
        "b1/**/er-7",
        "*/",
    ],
)
def test_globs_are_pythons(tmp_path, pattern):
    data = _tree(tmp_path)
    expected = _expected_by_python_glob(f"{data}/{pattern}")
    assert expected  # each pattern finds something
    assert sorted({s.path for s in list_segments(f"{data}/{pattern}")}) == expected


def test_symbolic_link_loops_are_listed_once(tmp_path):
    data = _tree(tmp_path)
    (data / "b1" / "deep" / "back").symlink_to(data)  # a loop
    (data / "alias-0").symlink_to(data / "orders-0")  # a second way into one folder
    # Python's os.walk following links, each real folder once (names sorted): what listing always did.
    expected, seen = [], set()
    for dirpath, dirnames, filenames in os.walk(data, followlinks=True):
        if os.path.realpath(dirpath) in seen:
            dirnames[:] = []
            continue
        seen.add(os.path.realpath(dirpath))
        dirnames.sort()
        expected += [os.path.join(dirpath, n) for n in sorted(filenames) if n.endswith(".log")]
    segments = list_segments(data)
    assert sorted(s.path for s in segments) == sorted(expected)
    assert len(segments) == 8
    # The folder is reached first through its link (sorted names: alias-0 before orders-0).
    assert [s.path for s in segments if s.topic == "alias"] == [
        str(data / "alias-0" / f"{0:020d}.log"),
        str(data / "alias-0" / f"{30:020d}.log"),
    ]


def test_a_callers_pyarrow_file_system(tmp_path):
    data = _tree(tmp_path)
    segments, warnings, problems = native_list_segments(
        f"mock://{data.as_posix()}/orders-*", filesystem=pafs.LocalFileSystem()
    )
    assert (warnings, problems) == ([], [])
    assert [(s["path"], s["size"], s["layout"]) for s in segments] == [
        (f"mock://{data.as_posix()}/orders-0/{0:020d}.log", 0, "broker"),
        (f"mock://{data.as_posix()}/orders-0/{30:020d}.log", 0, "broker"),
        (f"mock://{data.as_posix()}/orders-1/{1000:020d}.log", 0, "broker"),
    ]


def test_a_remote_file_systems_own_error_is_raised(tmp_path, monkeypatch):
    class Denied(PermissionError):
        pass

    def resolve(uri):
        raise Denied("the bucket says no")

    monkeypatch.setattr(kbfs, "resolve_remote", resolve)
    with pytest.raises(Denied, match="the bucket says no"):
        list_segments("mock://bucket/prefix/")


def test_remote_queries_stay_on_every_object(tmp_path, monkeypatch):
    data = _tree(tmp_path)
    local = pafs.LocalFileSystem()
    seen = []

    def resolve(uri):
        seen.append(uri)
        return local, uri.split("://", 1)[1].split("?")[0]

    monkeypatch.setattr(kbfs, "resolve_remote", resolve)
    folder = data / "bucket" / "orders-4-MWJ6FHTfRYy67jzwZdeqSQ"  # Kafka's LocalTieredStorage
    folder.mkdir(parents=True)
    (folder / f"7-{ID}.log").write_bytes(b"x")
    segments = list_segments(f"mock://{data.as_posix()}/bucket?region=eu-west-1")
    assert [(s.path, s.layout, s.topic, s.partition, s.base_offset, s.size) for s in segments] == [
        (f"mock://{folder.as_posix()}/7-{ID}.log?region=eu-west-1", "local-tiered", "orders", 4, 7, 1)
    ]
    assert all(uri.endswith("?region=eu-west-1") for uri in seen)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder")
def test_an_unreadable_folder_inside_is_oserror(tmp_path):
    data = _tree(tmp_path)
    locked = data / "b1"
    locked.chmod(0)
    try:
        with pytest.raises(PermissionError) as raised:
            list_segments(data)
        assert raised.value.filename == str(locked)
    finally:
        locked.chmod(0o755)


def test_warnings_given_before_a_listing_error_are_kept(tmp_path):
    """An upload in progress in one partition warns; a hole in the next stops the listing: both are said."""
    from kafkabatch.log.tiered import TieredStorageError, TieredStorageWarning

    topic_folder = tmp_path / "bucket" / "orders-MWJ6FHTfRYy67jzwZdeqSQ"
    (topic_folder / "0").mkdir(parents=True)
    (topic_folder / "0" / f"{0:020d}-{ID}.log").write_bytes(b"x")  # no manifest, nothing after it
    (topic_folder / "1").mkdir()
    (topic_folder / "1" / f"{0:020d}-{ID}.log").write_bytes(b"x")  # no manifest, a complete one after it
    later = f"{100:020d}-AAAAAAAAAAAAAAAAAAAAAA"
    (topic_folder / "1" / f"{later}.log").write_bytes(b"y")
    (topic_folder / "1" / f"{later}.rsm-manifest").write_text('{"chunkIndex": {"originalFileSize": 1}}')
    with pytest.warns(TieredStorageWarning, match="0/00000000000000000000-.*an upload in progress"):
        with pytest.raises(TieredStorageError, match="1/00000000000000000000-.*its manifest .* is missing") as raised:
            list_segments(tmp_path / "bucket")
    assert raised.value.kind == "manifest"
    problems: list = []
    with pytest.warns(TieredStorageWarning):
        segments = list_segments(tmp_path / "bucket", problems=problems)
    assert [(s.partition, s.base_offset) for s in segments] == [(1, 100)]
    assert [(s.partition, s.base_offset, e.kind) for s, e in problems] == [(1, 0, "manifest")]


def test_one_wording_for_a_missing_manifest(tmp_path):
    """Listing a .log named directly without its manifest says what reading code says of it."""
    from kafkabatch.log.tiered import TieredStorageError, missing_manifest_error

    folder = tmp_path / "orders-MWJ6FHTfRYy67jzwZdeqSQ" / "0"
    folder.mkdir(parents=True)
    log = folder / f"{5:020d}-{ID}.log"
    log.write_bytes(b"x")
    with pytest.raises(TieredStorageError) as raised:
        list_segments(log)
    expected = missing_manifest_error(str(log))
    assert (str(raised.value), raised.value.kind, raised.value.object, raised.value.reason) == (
        str(expected),
        expected.kind,
        expected.object,
        expected.reason,
    )
