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
  kafkabatch generate /tmp/tiered --tiered aiven --tiered-compression --tiered-encryption
  kafkabatch stats /tmp/tiered/bucket --tiered-key key-1=/tmp/tiered/private.pem
"""


def add_parser(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    try:
        from kafkabatch.generate import DEFAULT_SIZE
        from kafkabatch.generate_tiered import DEFAULT_CHUNK_SIZE, LAYOUTS
    except ImportError:  # a build without the generator: run() says so
        DEFAULT_SIZE, DEFAULT_CHUNK_SIZE, LAYOUTS = "", 0, ()
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
        metavar="SIZE",
        help=f"about how much to write (default {DEFAULT_SIZE}; k/m/g are powers of 1024)",
    )
    p.add_argument("--seed", type=int, help="random seed, for the same output every time")
    tiered = p.add_argument_group(
        "tiered storage",
        "also upload every segment into a tiered-storage bucket: the log dir is then OUT_DIR/broker, "
        "the bucket OUT_DIR/bucket",
    )
    tiered.add_argument(
        "--tiered",
        choices=LAYOUTS or None,
        help="aiven: as Aiven's tiered-storage-for-apache-kafka plugin stores segments; "
        "local: as Kafka's LocalTieredStorage does",
    )
    tiered.add_argument("--tiered-compression", action="store_true", help="aiven: zstd each chunk")
    tiered.add_argument(
        "--tiered-encryption",
        action="store_true",
        help="aiven: encrypt each chunk (AES-256-GCM) with a new RSA key pair 'key-1' written as "
        "OUT_DIR/private.pem and OUT_DIR/public.pem",
    )
    tiered.add_argument(
        "--tiered-chunk-size",
        type=size_arg,
        metavar="SIZE",
        help=f"aiven: the plugin's chunk.size (default {format_bytes(DEFAULT_CHUNK_SIZE)})",
    )
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
    kwargs: dict[str, Any] = {}
    if args.size is not None:
        kwargs["size"] = args.size
    if args.seed is not None:
        kwargs["seed"] = args.seed
    if args.tiered is None and (args.tiered_compression or args.tiered_encryption):
        raise CliError("--tiered-compression and --tiered-encryption need --tiered aiven")
    if args.tiered == "local" and (args.tiered_compression or args.tiered_encryption):
        raise CliError(
            "--tiered-compression and --tiered-encryption are modes of Aiven's plugin (--tiered aiven); "
            "LocalTieredStorage stores segments as they are"
        )
    if args.tiered is not None:
        kwargs.update(
            tiered=args.tiered,
            tiered_compression=args.tiered_compression,
            tiered_encryption=args.tiered_encryption,
        )
        if args.tiered_chunk_size is not None:
            kwargs["tiered_chunk_size"] = args.tiered_chunk_size
    summary = generate(args.out_dir, **kwargs)
    files, total = _tree_size(args.out_dir) if os.path.isdir(args.out_dir) else (0, 0)
    print(f"kafkabatch: wrote {files} files ({format_bytes(total)}) under {args.out_dir}", file=sys.stderr)
    bucket = summary.tiered
    if bucket is not None:
        keys = bucket.tiered_keys or {}
        key = "".join(f" --tiered-key {k}={v}" for k, v in keys.items())
        print(
            f"kafkabatch: {bucket}\n"
            f"  read the bucket:           kafkabatch stats {bucket.folder}{key}\n"
            f"  with the broker log dir:   kafkabatch stats {args.out_dir}{key}   (each offset once)",
            file=sys.stderr,
        )
    return 0
