"""``kafkabatch generate``: write a sample Kafka log dir (via :mod:`kafkabatch.generate`)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ._common import CliError, format_bytes, size_arg

EPILOG = """\
examples:
  kafkabatch generate /tmp/kafka-logs
  kafkabatch generate /tmp/kafka-logs --size 1GB --seed 7
  kafkabatch stats /tmp/kafka-logs
"""


def add_parser(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "generate",
        parents=parents,
        help="write a sample Kafka log dir to try the other commands on",
        description="Write a Kafka log dir of <topic>-<partition> folders with segments of generated "
        "records (kafkabatch.generate.generate), about SIZE in total.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("out_dir", metavar="OUT_DIR", help="folder to write (created if missing)")
    p.add_argument(
        "--size",
        type=size_arg,
        default=100 << 20,
        metavar="SIZE",
        help="about how much to write (default 100MB; k/m/g are powers of 1024)",
    )
    p.add_argument("--seed", type=int, help="random seed, for the same output every time")
    p.set_defaults(func=run)


def _tree_size(root: str) -> tuple[int, int]:
    files = total = 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            files += 1
            total += os.path.getsize(os.path.join(dirpath, name))
    return files, total


def run(args: argparse.Namespace) -> int:
    try:
        from kafkabatch.generate import generate
    except ImportError as e:
        if e.name in ("kafkabatch.generate",):
            raise CliError("this kafkabatch has no data generator (module kafkabatch.generate is missing)") from None
        raise
    kwargs: dict[str, Any] = {"size": args.size}
    if args.seed is not None:
        kwargs["seed"] = args.seed
    generate(args.out_dir, **kwargs)
    files, total = _tree_size(args.out_dir) if os.path.isdir(args.out_dir) else (0, 0)
    print(f"kafkabatch: wrote {files} files ({format_bytes(total)}) under {args.out_dir}", file=sys.stderr)
    return 0
