"""CLI: ``kafkabatch dump --print-data`` vs an aiokafka loop, and ``kafkabatch convert``.

* dump: ``kafkabatch dump SEGMENT --print-data > /dev/null`` against a plain
  Python loop over aiokafka's Cython reader (``MemoryRecords``) printing the
  same ``| offset: ... CreateTime: ... keySize: ... valueSize: ... sequence:
  ... headerKeys: [...] key: ... payload: ...`` lines (and one line per batch)
  to /dev/null. Both run as subprocesses (interpreter start-up included);
  median of ``--repeat`` after one warm-up.
* convert: ``kafkabatch convert FOLDER out.parquet`` of a large generated log
  dir (all default topics and codecs, magic 1 included): MB/s of segment bytes
  and peak RSS (``/usr/bin/time -v``, else ``getrusage(RUSAGE_CHILDREN)``).

::

    .venv/bin/python benches/bench_cli.py [--segment-size 64MB] [--convert-size 1GB] [--json OUT]
"""

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent

AIOKAFKA_DUMP = r"""
import sys
from aiokafka.record.memory_records import MemoryRecords

TS = {0: "CreateTime", 1: "LogAppendTime"}
out = sys.stdout
write = out.write
for path in sys.argv[1:]:
    write(f"Dumping {path}\n")
    with open(path, "rb") as f:
        records = MemoryRecords(f.read())
    while records.has_next():
        b = records.next_batch()
        if b is None:
            break
        valid = b.validate_crc()
        ts_name = TS.get(b.timestamp_type, "NoTimestampType")
        base = b.base_offset
        write(f"baseOffset: {base} lastOffset: {base + b.last_offset_delta} producerId: {b.producer_id} "
              f"producerEpoch: {b.producer_epoch} isTransactional: {str(b.is_transactional).lower()} "
              f"isControl: {str(b.is_control_batch).lower()} {ts_name}: {b.max_timestamp} crc: {b.crc} "
              f"isvalid: {str(valid).lower()}\n")
        seq0 = b.base_sequence
        control = b.is_control_batch
        for r in b:
            key, value = r.key, r.value
            seq = -1 if seq0 < 0 else seq0 + (r.offset - base)
            line = (f"| offset: {r.offset} {ts_name}: {r.timestamp} "
                    f"keySize: {-1 if key is None else len(key)} valueSize: {-1 if value is None else len(value)} "
                    f"sequence: {seq} headerKeys: [{','.join(k for k, _ in r.headers)}]")
            if not control:
                if key is not None:
                    line += " key: " + key.decode("utf-8", "backslashreplace")
                if value is not None:
                    line += " payload: " + value.decode("utf-8", "backslashreplace")
            write(line + "\n")
"""


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(cmd: list[str], stdout=subprocess.DEVNULL) -> tuple[float, int | None, str]:
    """Wall seconds, peak RSS (KiB) and stderr of one run."""
    time_v = shutil.which("time", path="/usr/bin")
    full = [time_v, "-v", *cmd] if time_v else cmd
    t0 = time.perf_counter()
    proc = subprocess.run(full, stdout=stdout, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    rss = int(m.group(1)) if m else (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss or None)
    return dt, rss, proc.stderr


def generate(folder: Path, **kw) -> None:
    if folder.exists() and any(folder.iterdir()):
        return
    import kafkabatch as kb

    print(kb.generate(folder, progress=False, **kw), file=sys.stderr)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    tmp = Path(tempfile.gettempdir())
    p.add_argument(
        "--segment-folder",
        type=Path,
        default=tmp / "kafkabatch-bench-seg",
        help="folder with one large segment (generated if missing: one uncompressed orders partition)",
    )
    p.add_argument("--segment-size", default="64MB")
    p.add_argument(
        "--convert-folder",
        type=Path,
        default=tmp / "kafkabatch-bench-convert",
        help="log dir to convert (generated if missing: default topics and codecs)",
    )
    p.add_argument("--convert-size", default="1GB")
    p.add_argument("--repeat", type=int, default=3, help="timed dump runs after one warm-up")
    p.add_argument("--convert-repeat", type=int, default=1, help="timed convert runs (page cache warm)")
    p.add_argument("--skip", default="", help="comma-separated: dump, convert")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    results: dict = {}

    if "dump" not in skip:
        from kafkabatch.generate import TopicSpec

        generate(
            args.segment_folder,
            size=args.segment_size,
            topics=[TopicSpec("orders", 1)],
            codecs="none",
            segment_bytes="2GB",
            seed=1,
        )
        segment = max(args.segment_folder.glob("*/*.log"), key=lambda f: f.stat().st_size)
        size = segment.stat().st_size
        script = Path(tempfile.mkdtemp(prefix="kb-bench-cli-")) / "aiokafka_dump.py"
        script.write_text(AIOKAFKA_DUMP)
        cmds = {
            "kafkabatch dump --print-data": [str(BIN / "kafkabatch"), "dump", str(segment), "--print-data"],
            "aiokafka loop": [sys.executable, str(script), str(segment)],
        }
        lines = {}
        for name, cmd in cmds.items():
            out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True).stdout
            lines[name] = out.count(b"\n| offset:")
        print(f"segment {segment} {size / 1e6:.1f} MB; record lines: {lines}; load {loadavg()}", flush=True)
        dump = {}
        for name, cmd in cmds.items():
            times, rss = [], []
            for i in range(args.repeat + 1):
                dt, r, _ = timed(cmd)
                print(
                    f"  {name:<30} run {i} {dt:7.2f} s rss {r} KiB{'' if i else ' (warm-up)'} load {loadavg()}",
                    flush=True,
                )
                if i:
                    times.append(dt)
                    rss.append(r)
            dump[name] = {
                "times": times,
                "median": statistics.median(times),
                "rss_kib": max(rss),
                "record_lines": lines[name],
            }
        shutil.rmtree(script.parent, ignore_errors=True)
        results["dump"] = {"segment": str(segment), "bytes": size, "load": os.getloadavg(), "runs": dump}

    if "convert" not in skip:
        generate(args.convert_folder, size=args.convert_size, seed=2)
        logs = list(args.convert_folder.glob("*/*.log"))
        size = sum(f.stat().st_size for f in logs)
        out_dir = Path(tempfile.mkdtemp(prefix="kb-bench-convert-"))
        out = out_dir / "out.parquet"
        print(f"convert {args.convert_folder}: {len(logs)} segments, {size / 1e6:.1f} MB; load {loadavg()}", flush=True)
        runs = []
        try:
            for i in range(args.convert_repeat):
                dt, r, err = timed(
                    [str(BIN / "kafkabatch"), "convert", str(args.convert_folder), str(out), "-f", "--no-progress"]
                )
                summary = err.strip().splitlines()[:3]
                out_mb = out.stat().st_size / 1e6
                print(
                    f"  convert run {i + 1} {dt:7.2f} s {size / 1e6 / dt:.1f} MB/s rss {r} KiB out {out_mb:.1f} MB "
                    f"load {loadavg()}\n    {' | '.join(summary)}",
                    flush=True,
                )
                runs.append({"seconds": dt, "mb_s": size / 1e6 / dt, "rss_kib": r, "out_mb": out_mb})
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)
        results["convert"] = {
            "folder": str(args.convert_folder),
            "bytes": size,
            "segments": len(logs),
            "load": os.getloadavg(),
            "runs": runs,
        }

    print(f"\nload after: {loadavg()}\n")
    if "dump" in results:
        d = results["dump"]
        base = d["runs"]["aiokafka loop"]["median"]
        print(f"dump of one {d['bytes'] / 1e6:.1f} MB segment to /dev/null (median of {args.repeat} after a warm-up)\n")
        print("| command | median s | MB/s | peak RSS MiB | record lines | vs aiokafka |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, r in d["runs"].items():
            print(
                f"| {name} | {r['median']:.2f} | {d['bytes'] / 1e6 / r['median']:.1f} | {r['rss_kib'] / 1024:.0f} "
                f"| {r['record_lines']:,} | {base / r['median']:.2f}x |"
            )
        print()
    if "convert" in results:
        c = results["convert"]
        print(f"convert of {c['bytes'] / 1e6:.1f} MB ({c['segments']} segments) to Parquet\n")
        print("| run | s | MB/s | peak RSS MiB | Parquet MB |")
        print("|---|---:|---:|---:|---:|")
        for i, r in enumerate(c["runs"], 1):
            print(f"| {i} | {r['seconds']:.2f} | {r['mb_s']:.1f} | {r['rss_kib'] / 1024:.0f} | {r['out_mb']:.1f} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
