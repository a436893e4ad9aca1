"""Listing: ``list_segments`` over a folder of 5,000 small segments, medians of wall and CPU time.

50 ``<topic>-<partition>`` folders of 100 segments each (a 61-byte ``.log`` with an
empty ``.index`` and ``.timeindex``), made once under FOLDER. Run it with two
interpreters (this checkout's and one with another build) on the same folder, in
turns, to compare builds::

    python benches/bench_listing.py /tmp/kb-listing 21
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import kafkabatch
from kafkabatch.log import list_segments


def make_folder(root: Path) -> None:
    for p in range(50):
        folder = root / f"topic{p % 5}-{p}"
        folder.mkdir(parents=True)
        for s in range(100):
            base = s * 1000
            (folder / f"{base:020d}.log").write_bytes(b"\0" * 61)
            (folder / f"{base:020d}.index").write_bytes(b"")
            (folder / f"{base:020d}.timeindex").write_bytes(b"")


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/kb-listing")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 21
    if not root.exists():
        make_folder(root)
    wall, cpu = [], []
    segments: list = []
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        segments = list_segments(root)
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    assert len(segments) == 5000, len(segments)
    print(
        f"{kafkabatch.__file__}: {len(segments)} segments, median wall {statistics.median(wall) * 1000:.1f} ms, "
        f"median CPU {statistics.median(cpu) * 1000:.1f} ms (n={runs})"
    )


if __name__ == "__main__":
    main()
