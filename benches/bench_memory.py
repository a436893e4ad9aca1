#!/usr/bin/env python3
"""Peak memory of streaming a large log folder (scan_log and the
Spark reader over a 2 GiB folder must keep peak RSS <= 512 MiB).

Generates a folder (``kafkabatch.generate``, every codec, transactions) of
``--size`` once, then in fresh child processes streams it:

* ``scan_log``      - ``kafkabatch.scan_log(folder)``, every batch consumed;
* ``spark reader``  - the ``kafka-log`` source's reader (``KafkaLogReader.read``)
                      over every planned partition, as a Spark Python worker
                      runs it (no JVM: the worker's own memory);

and reports each child's peak RSS (``ru_maxrss``), rows and wall time.

    .venv/bin/python benches/bench_memory.py [--folder DIR] [--size 2GiB]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
mode, folder = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
rows = 0
if mode == "scan_log":
    import kafkabatch as kb
    for batch in kb.scan_log(folder):
        rows += batch.num_rows
else:
    from kafkabatch.spark import KafkaLogDataSource, KAFKA_SCHEMA
    reader = KafkaLogDataSource({"path": folder}).reader(KAFKA_SCHEMA)
    for part in reader.partitions():
        for batch in reader.read(part):
            rows += batch.num_rows
print(json.dumps({"rows": rows, "seconds": time.perf_counter() - t0,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "kafkabatch-bench-memory")
    p.add_argument("--size", default="2GiB", help="size to generate when the folder is missing")
    p.add_argument("--json", type=Path, help="write the results as JSON here")
    args = p.parse_args()
    if not (args.folder.exists() and any(args.folder.iterdir())):
        import kafkabatch as kb

        print(kb.generate(args.folder, size=args.size, seed=7, progress=False), file=sys.stderr)
    logs = sorted(args.folder.glob("*/*.log"))
    total = sum(f.stat().st_size for f in logs)
    biggest = max(f.stat().st_size for f in logs)
    print(
        f"folder {args.folder}: {len(logs)} segments, {total / 2**30:.2f} GiB, largest segment {biggest / 2**20:.0f} MiB"
    )
    results = []
    print("| reader | rows | s | peak RSS MiB |")
    print("|---|---:|---:|---:|")
    for mode in ("scan_log", "spark reader"):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, mode, str(args.folder)], check=True, capture_output=True, text=True
        ).stdout
        r = json.loads(out.strip().splitlines()[-1]) | {"reader": mode}
        results.append(r)
        print(f"| {mode} | {r['rows']:,} | {r['seconds']:.1f} | {r['peak_rss_mib']:.0f} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"bytes": total, "segments": len(logs), "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
