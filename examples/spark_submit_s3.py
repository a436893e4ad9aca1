"""Kafka log folders on S3 → Parquet on S3, with spark-submit.

Reads broker log dirs (``<topic>-<partition>/000...0.log`` files, e.g. a
backup of ``log.dirs`` or tiered-storage segments copied out) with the
``kafka-log`` data source and writes the records as Parquet partitioned by
topic::

    spark-submit \\
      --conf spark.executorEnv.AWS_REGION=eu-west-1 \\
      --conf spark.hadoop.fs.s3a.aws.credentials.provider=com.amazonaws.auth.DefaultAWSCredentialsProviderChain \\
      examples/spark_submit_s3.py \\
      s3a://my-bucket/kafka-backup/2024-05-01/ \\
      s3a://my-lake/raw/kafka/ \\
      --starting-timestamp 2024-05-01T00:00:00Z --ending-timestamp 2024-05-02T00:00:00Z \\
      --mode PERMISSIVE --isolation read_committed

What has to be in place:

* kafkabatch (with pyarrow) on the driver and every executor: ``pip install
  kafkabatch`` on the nodes, or ship a packed virtualenv::

      venv-pack -o env.tar.gz
      spark-submit --archives env.tar.gz#env \\
        --conf spark.pyspark.python=./env/bin/python ...

* Credentials for **two** S3 clients. The data source's Python workers read
  the segments through ``pyarrow.fs.S3FileSystem`` (``s3a://`` and ``s3n://``
  are read as ``s3://``), which uses the AWS default chain: instance
  profile / IRSA, ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
  ``AWS_SESSION_TOKEN`` environment variables (pass them to executors with
  ``spark.executorEnv.*``), or ``~/.aws``. Spark itself writes the Parquet
  through Hadoop's S3A connector (``spark.hadoop.fs.s3a.*``, and the
  ``hadoop-aws`` package on the classpath).
* For MinIO and other S3-compatible stores add pyarrow's options to the
  input URI: ``s3a://bucket/kafka/?endpoint_override=http://minio:9000&scheme=http``.

The driver lists the input once (one S3 LIST per prefix); each executor task
then reads one segment, or one ``maxBytesPerPartition`` slice of a large
segment cut at the offsets the segment's ``.index`` file gives (so the
planner never downloads whole segments). Nothing here runs in the test suite.
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import SparkSession

import kafkabatch.spark as kbs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "input",
        nargs="+",
        help="log dirs, <topic>-<partition> folders, segment files or globs (s3a://, s3://, gs://, hdfs:// or local)",
    )
    p.add_argument("output", help="where to write Parquet (partitioned by topic)")
    p.add_argument(
        "--mode",
        default="FAILFAST",
        choices=["FAILFAST", "DROPMALFORMED", "PERMISSIVE"],
        help="what to do with corrupt batches (default FAILFAST: fail the job)",
    )
    p.add_argument("--isolation", default="read_uncommitted", choices=["read_uncommitted", "read_committed"])
    p.add_argument("--starting-offsets", help='JSON, e.g. \'{"orders": {"0": 1000}}\' (-2 = earliest)')
    p.add_argument("--ending-offsets", help='JSON, exclusive, e.g. \'{"orders": {"0": 5000}}\' (-1 = latest)')
    p.add_argument("--starting-timestamp", help="epoch ms or ISO-8601 (inclusive)")
    p.add_argument("--ending-timestamp", help="epoch ms or ISO-8601 (exclusive)")
    p.add_argument("--max-bytes-per-partition", default="128m", help="split larger segments (default 128m)")
    p.add_argument("--output-mode", default="errorifexists", choices=["errorifexists", "overwrite", "append"])
    args = p.parse_args(argv)

    spark = SparkSession.builder.appName("kafka-log-to-parquet").getOrCreate()
    kbs.register(spark)

    reader = (
        spark.read.format("kafka-log")
        .option("mode", args.mode)
        .option("isolation", args.isolation)
        .option("maxBytesPerPartition", args.max_bytes_per_partition)
    )
    for option, value in (
        ("startingOffsets", args.starting_offsets),
        ("endingOffsets", args.ending_offsets),
        ("startingTimestamp", args.starting_timestamp),
        ("endingTimestamp", args.ending_timestamp),
    ):
        if value is not None:
            reader = reader.option(option, value)
    df = reader.load(args.input if len(args.input) > 1 else args.input[0])

    print(f"kafka-log: {df.rdd.getNumPartitions()} input partitions", file=sys.stderr)
    (df.write.mode(args.output_mode).partitionBy("topic").option("compression", "zstd").parquet(args.output))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
