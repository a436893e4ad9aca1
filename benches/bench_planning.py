"""Planning alone: list, seek and prune a folder of many small segments, decoding nothing.

A generated folder of about 5,000 small segments (``--segments``), read with
bounds that select no record, so ``scan_log`` lists every partition, reads
each segment's indexes and headers to place the bound, and decodes nothing:

* ``time-past-end``   ``scan_log(folder, start_timestamp=<after the newest record>)``
* ``offset-past-end`` ``scan_log(folder, start_offset=<past every partition's end>)``
* ``newest-3pct``     ``scan_log(folder, start_timestamp=T)`` with ``T`` above 97 % of the records
  (planning plus the decode of the few batches that remain)
* ``committed-past-end`` ``time-past-end`` with ``isolation="read_committed"`` (the
  transaction pre-pass walks every segment's headers too)

Each row runs in a fresh subprocess per interpreter (``--python``, repeatable:
the first is the reference, e.g. a virtualenv holding a build of an older
commit), one warm-up, then the median of ``--repeat`` runs, same machine, same
folder::

    .venv/bin/python benches/bench_planning.py [--folder DIR] [--segments 5000] [--repeat 5] \
        [--python .venv/bin/python --python /tmp/kb-base/bin/python] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# One timed run, in the interpreter under test: prints seconds and rows as JSON.
_RUN = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import kafkabatch as kb
folder, case, arg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
kwargs = {"start_timestamp": arg} if case != "offset-past-end" else {"start_offset": arg}
if case == "committed-past-end":
    kwargs["isolation"] = "read_committed"
t0 = time.perf_counter()
rows = sum(batch.num_rows for batch in kb.scan_log(folder, **kwargs))
print(json.dumps({"seconds": time.perf_counter() - t0, "rows": rows}))
"""


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def ensure_folder(folder: Path, segments: int, seed: int) -> None:
    if folder.exists() and any(folder.iterdir()):
        return
    import kafkabatch as kb
    from kafkabatch.generate import DEFAULT_TOPICS

    # About 10 KB per segment; the size is what makes the segment count.
    segment_bytes = 10_000
    size = segments * segment_bytes * 123 // 100  # segments close before they are full
    summary = kb.generate(
        folder,
        size=size,
        segment_bytes=segment_bytes,
        seed=seed,
        topics=list(DEFAULT_TOPICS),
        progress=False,
    )
    print(summary, file=sys.stderr)


def bounds(folder: Path) -> dict[str, object]:
    """The arguments of each case, read once from the folder itself."""
    import pyarrow.compute as pc

    import kafkabatch as kb

    table = kb.scan_log(str(folder)).read_all()
    # Epoch milliseconds, as scan_log takes them (the column is in microseconds).
    ts = pc.divide(table.column("timestamp").cast("int64"), 1000)
    newest = pc.max(ts).as_py()
    t97 = pc.quantile(ts, q=0.97, interpolation="lower")[0].as_py()
    last = pc.max(table.column("offset")).as_py()
    return {
        "time-past-end": newest + 1,
        "offset-past-end": last + 1,
        "newest-3pct": t97,
        "committed-past-end": newest + 1,
    }


def run(python: str, folder: Path, case: str, arg: object) -> dict[str, float]:
    out = subprocess.run(
        [python, "-c", _RUN, str(folder), case, json.dumps(arg)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--segments", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--python", action="append", default=None, help="interpreter to time (repeatable)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    folder = args.folder or Path(tempfile.gettempdir()) / f"kb-planning-{args.segments}"
    ensure_folder(folder, args.segments, args.seed)
    n_segments = sum(1 for _ in folder.glob("*/*.log"))
    pythons = args.python or [sys.executable]
    cases = bounds(folder)
    print(f"# {n_segments} segments in {folder}; {platform.python_version()}; load {loadavg()}")

    results: dict[str, dict[str, float]] = {}
    for case, arg in cases.items():
        for python in pythons:
            run(python, folder, case, arg)  # warm-up: the page cache and the interpreter's imports
            times, rows = [], 0
            for _ in range(args.repeat):
                result = run(python, folder, case, arg)
                times.append(result["seconds"])
                rows = int(result["rows"])
            median = statistics.median(times)
            results.setdefault(case, {})[python] = median
            ratio = results[case][pythons[0]] / median if median else float("inf")
            print(f"{case:18} {python:40} {median * 1000:9.1f} ms  rows={rows:<8} x{ratio:5.2f} vs first")
    print(f"# load after {loadavg()} at {time.strftime('%H:%M:%S')}")
    if args.json:
        args.json.write_text(json.dumps({"segments": n_segments, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
