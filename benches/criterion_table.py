#!/usr/bin/env python3
"""Markdown table of the last `cargo bench --bench decode` run, from criterion's
files under target/criterion (medians; records/s and GB/s from each
benchmark's throughput; ratio = time / kafkabatch's time in the same group).

    python3 benches/criterion_table.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "target" / "criterion"


def load() -> list[dict]:
    rows = []
    for bench in sorted(ROOT.glob("*/*/new/benchmark.json")):
        meta = json.loads(bench.read_text())
        est = json.loads((bench.parent / "estimates.json").read_text())
        t = est["median"]["point_estimate"] / 1e9
        thr = meta.get("throughput") or {}
        elements = bytes_ = None
        if "ElementsAndBytes" in thr:
            elements, bytes_ = thr["ElementsAndBytes"]["elements"], thr["ElementsAndBytes"]["bytes"]
        elif "Bytes" in thr:
            bytes_ = thr["Bytes"]
        elif "Elements" in thr:
            elements = thr["Elements"]
        rows.append(
            {
                "group": meta["group_id"],
                "bench": meta["function_id"],
                "median_s": t,
                "elements": elements,
                "bytes": bytes_,
            }
        )
    return rows


def fmt_time(t: float) -> str:
    return f"{t * 1e3:.2f} ms" if t >= 1e-3 else f"{t * 1e6:.1f} µs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args()
    rows = load()
    ref = {r["group"]: r["median_s"] for r in rows if r["bench"] == "kafkabatch"}
    print("| group | benchmark | median | records/s | GB/s | time ÷ kafkabatch |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        t = r["median_s"]
        rps = f"{r['elements'] / t / 1e6:,.1f} M" if r["elements"] else "—"
        gbs = f"{r['bytes'] / t / 1e9:.2f}" if r["bytes"] else "—"
        rel = f"{t / ref[r['group']]:.2f}" if r["group"] in ref else "—"
        print(f"| {r['group']} | {r['bench']} | {fmt_time(t)} | {rps} | {gbs} | {rel} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
