"""Which PySpark is installed, for tests of features newer than our floor
(PySpark 4.0): ``arrow_udf`` (``decode_batches_arrow``) needs 4.1."""

from __future__ import annotations

import pytest


def pyspark_version() -> tuple[int, int]:
    """(major, minor) of the installed PySpark, (0, 0) when there is none."""
    try:
        import pyspark
    except ImportError:
        return (0, 0)
    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


#: Skip a test on PySpark 4.0 (CI's lowest-versions job runs it).
requires_spark41 = pytest.mark.skipif(pyspark_version() < (4, 1), reason="needs PySpark 4.1+ (arrow_udf)")
