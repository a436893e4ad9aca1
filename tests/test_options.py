"""Options can't be misspelled silently, and the documented option tables
can't drift from the code: the ``kafka-log`` source's options (real local
Spark), the Python API's keywords, and the CLI's flags.

Expected counts come from ``kb.decode`` of the segments themselves
(``test_logdir.expected_table``), never from kafkabatch.spark.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_logdir import build_log, expected_table

import kafkabatch as kb
from kafkabatch.cli import build_parser
from kafkabatch.log import list_segments

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def doc_table_names(text: str, first_header: str) -> list[str]:
    """Every backticked name in the first column of the markdown tables whose
    first header cell is ``first_header``."""
    names: list[str] = []
    in_table = False
    for line in text.splitlines():
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not in_table:
            in_table = cells[0] == first_header
            continue
        if set(cells[0]) <= {"-", " ", ":"}:
            continue
        names.extend(re.findall(r"`([^`]+)`", cells[0]))
    return names


# --------------------------------------------------------------------------
# the kafka-log data source
# --------------------------------------------------------------------------

kbs = pytest.importorskip("kafkabatch.spark")

#: A valid value for every option (path/paths are what load() passes).
SAMPLE_VALUES = {
    "pathGlobFilter": "*.log",
    "recursiveFileLookup": "true",
    "storage": "auto",
    "topic": "orders",
    "isolation": "read_committed",
    "kafka.isolation.level": "read_committed",
    "includeControl": "false",
    "validateCrc": "true",
    "mode": "PERMISSIVE",
    "maxDecompressedSize": "64m",
    "startingOffsets": "earliest",
    "endingOffsets": "latest",
    "startingTimestamp": "0",
    "endingTimestamp": "2100-01-01",
    "minPartitions": "2",
    "maxBytesPerPartition": "1m",
    "maxRecordsPerBatch": "100",
    "threads": "2",
    "maxOffsetsPerTrigger": "1000",
    "maxBytesPerTrigger": "16m",
    "failOnDataLoss": "false",
    "valueFormat": "string",
    "valueSchema": "a string",
    "keyFormat": "string",
    "keySchema": "a string",
    "valueMessage": "shop.Order",  # protobuf only: ignored by valueFormat=string
    "valueDescriptorSet": "shop.desc",
    "keyMessage": "shop.Order",
    "keyDescriptorSet": "shop.desc",
    "schemaRegistry": "",
    "schemaRegistry.basic.auth.user.info": "user:password",
    "schemaRegistry.bearer.auth.token": "t0k3n",
    "onValueError": "null",
    "internalTopic": "none",  # neutral: no internal-topic columns
    "definitions": "",
    "tieredKeys": f"key-1={Path(__file__).parent / 'data' / 'tiered-aiven' / 'private-key.pem'}",
}


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    return build_log(tmp_path_factory.mktemp("option-logs") / "kafka-data")


def test_documented_options_are_the_known_options():
    documented = doc_table_names((DOCS / "spark.md").read_text(), "option")
    assert sorted(documented, key=str.lower) == sorted(kbs.KNOWN_OPTIONS, key=str.lower)
    assert len({n.lower() for n in kbs.KNOWN_OPTIONS}) == len(kbs.KNOWN_OPTIONS)


def test_every_known_option_has_a_sample_value_here():
    # A new option needs a line in SAMPLE_VALUES, so the case test below covers it.
    assert set(SAMPLE_VALUES) | {"path", "paths", "partition"} == set(kbs.KNOWN_OPTIONS)


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("isolaton", "isolation"),
        ("isolationlevel", "kafka.isolation.level"),
        ("startingoffset", "startingOffsets"),
        ("maxrecordsperbatches", "maxRecordsPerBatch"),
        ("validatecrcs", "validateCrc"),
    ],
)
def test_misspelled_option_suggests_the_closest(log, name, suggestion):
    with pytest.raises(ValueError, match=rf"^unknown kafka-log option '{name}'; did you mean '{suggestion}'\?") as e:
        kbs.KafkaLogDataSource({"path": str(log), name: "x"})
    assert "maxBytesPerPartition" in str(e.value)  # the valid options are listed


@pytest.mark.parametrize(
    ("name", "advice"),
    [
        ("ignorecorruptfiles", "mode=DROPMALFORMED"),
        ("modifiedafter", "startingTimestamp"),
        ("subscribe", "load"),
        ("kafka.bootstrap.servers", "not a cluster"),
    ],
)
def test_options_from_other_sources_say_what_to_use(log, name, advice):
    with pytest.raises(ValueError, match=f"unknown kafka-log option '{re.escape(name)}'.*{re.escape(advice)}"):
        kbs.KafkaLogDataSource({"path": str(log), name: "x"})


def test_unrelated_name_gets_no_suggestion(log):
    with pytest.raises(ValueError, match=r"^unknown kafka-log option 'zzzz' Known options"):
        kbs.KafkaLogDataSource({"path": str(log), "zzzz": "1"})


def test_recursive_file_lookup_false_is_refused(log):
    with pytest.raises(ValueError, match="recursiveFileLookup"):
        kbs.KafkaLogDataSource({"path": str(log), "recursivefilelookup": "false"})


@pytest.mark.spark
def test_misspelled_isolation_fails_at_load_in_spark(spark, kafka_log, log):
    with pytest.raises(Exception, match=r"unknown kafka-log option 'isolaton'; did you mean 'isolation'\?"):
        spark.read.format(kafka_log).option("isolaton", "read_committed").load(str(log))


@pytest.mark.spark
def test_every_option_in_any_letter_case(spark, kafka_log, log):
    """All documented options at once, upper-cased and then swap-cased: load
    accepts them, and the read gives what kb.decode of the same segments
    gives with the same settings."""
    for spell in (str.upper, str.swapcase):
        reader = spark.read.format(kafka_log)
        for name, value in SAMPLE_VALUES.items():
            reader = reader.option(spell(name), value)
        df = reader.load(str(log))
        if spell is str.upper:
            # every listed setting is neutral for this log except the topic
            # override and read_committed (its segments hold no transactions)
            expected = expected_table(log, isolation="read_committed")
            assert df.count() == expected.num_rows


@pytest.mark.spark
def test_path_glob_filter_reads_matching_file_names_only(spark, kafka_log, log):
    segments = list_segments(log)
    first = [s for s in segments if s.base_offset == 0]
    assert 0 < len(first) < len(segments)
    df = spark.read.format(kafka_log).option("pathGlobFilter", "00000000000000000000.log").load(str(log))
    expected = sum(kb.read_segment(s.path).num_rows for s in first)
    assert df.count() == expected


@pytest.mark.spark
def test_register_explains_workers_without_kafkabatch(tmp_path):
    """A session whose workers run an interpreter without kafkabatch: one
    clear error from register(), and check_workers=False skips the check."""
    bare_python = sys.base_prefix + "/bin/python3"
    bare = subprocess.run([bare_python, "-c", "import kafkabatch"], capture_output=True, text=True)
    if bare.returncode == 0:
        pytest.skip("the base interpreter imports kafkabatch too")
    script = textwrap.dedent(
        """
        from pyspark.sql import SparkSession
        import kafkabatch.spark as kbs
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        spark.sparkContext.setLogLevel("OFF")
        try:
            kbs.register(spark)
        except kbs.WorkerImportError as error:
            print("ERROR:", error)
        kbs.register(spark, check_workers=False)
        print("SKIPPED CHECK OK")
        """
    )
    # As a user who set nothing: workers start whatever `python3` is, here one without kafkabatch.
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PYSPARK_PYTHON"] = bare_python
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith(("ERROR:", "SKIPPED"))]
    assert len(lines) == 2, done.stdout + done.stderr
    assert "No module named 'kafkabatch'" in lines[0]
    assert "PYSPARK_PYTHON" in lines[0] and "check_workers=False" in lines[0]
    assert lines[1] == "SKIPPED CHECK OK"


@pytest.mark.spark
def test_register_says_spark_pyspark_python_in_a_builder_does_not_reach_workers():
    """The workers run PYSPARK_PYTHON (here one without kafkabatch) although
    the builder names this interpreter in spark.pyspark.python: the check
    fails, and its advice is the variable, saying the conf was not enough."""
    bare_python = sys.base_prefix + "/bin/python3"
    if subprocess.run([bare_python, "-c", "import kafkabatch"], capture_output=True).returncode == 0:
        pytest.skip("the base interpreter imports kafkabatch too")
    script = textwrap.dedent(
        f"""
        from pyspark.sql import SparkSession
        import kafkabatch.spark as kbs
        spark = (
            SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
            .config("spark.pyspark.python", {sys.executable!r}).getOrCreate()
        )
        spark.sparkContext.setLogLevel("OFF")
        try:
            kbs.register(spark)
            print("REGISTERED")
        except kbs.WorkerImportError as error:
            print("ERROR:", error)
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PYSPARK_PYTHON"] = bare_python
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith(("ERROR:", "REGISTERED"))]
    assert len(lines) == 1 and lines[0].startswith("ERROR:"), done.stdout + done.stderr
    assert 'os.environ["PYSPARK_PYTHON"] = sys.executable' in lines[0], lines[0]
    assert f"spark.pyspark.python={sys.executable} set in a session builder does not reach the workers" in lines[0]


# --------------------------------------------------------------------------
# the Python API
# --------------------------------------------------------------------------


def readme_signature(name: str) -> list[str]:
    """Keyword names of ``name(...)`` as README.md spells out its signature."""
    text = (ROOT / "README.md").read_text()
    found = re.search(rf"^`{name}\((.*)\)`$", text, re.MULTILINE)
    assert found, f"README.md spells out no signature for {name}"
    params = [p.strip() for p in found.group(1).split(",")]
    return [p.split("=")[0].strip() for p in params if p and p not in ("*", "data")]


def test_readme_decode_signature_is_the_code():
    documented = readme_signature("decode")
    actual = [n for n, p in inspect.signature(kb.decode).parameters.items() if p.kind is p.KEYWORD_ONLY]
    assert documented == actual


@pytest.mark.parametrize(
    "call",
    [
        lambda: kb.decode(b"", isolaton="read_committed"),
        lambda: kb.decode_report(b"", isolaton="read_committed"),
        lambda: kb.iter_batches(b"", isolaton="read_committed"),
        lambda: kb.valid_bytes(b"", isolaton="read_committed"),
    ],
    ids=["decode", "decode_report", "iter_batches", "valid_bytes"],
)
def test_api_refuses_unknown_keywords(call):
    with pytest.raises(TypeError, match="isolaton"):
        call()


def test_read_segment_and_scan_log_refuse_unknown_keywords(log):
    segment = list_segments(log)[0].path
    with pytest.raises(TypeError, match="isolaton"):
        kb.read_segment(segment, isolaton="read_committed")
    with pytest.raises(TypeError, match="isolaton"):
        kb.scan_log(log, isolaton="read_committed")


def test_spark_udf_helpers_refuse_unknown_keywords():
    with pytest.raises(TypeError, match="isolaton"):
        kbs.decode_batches("content", isolaton="read_committed")


# --------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------


def cli_sections() -> dict[str, str]:
    """docs/cli.md split by ``## `kafkabatch COMMAND` `` headings."""
    text = (DOCS / "cli.md").read_text()
    parts = re.split(r"^## `kafkabatch (\w+)`", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def subcommand_flags() -> dict[str, set[str]]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return {
        name: {opt for a in sub._actions for opt in a.option_strings if opt.startswith("--")} - {"--help", "--debug"}
        for name, sub in action.choices.items()
    }


@pytest.mark.parametrize("command", sorted(subcommand_flags()))
def test_cli_docs_name_exactly_the_flags_of_each_command(command):
    section = cli_sections().get(command)
    assert section is not None, f"docs/cli.md has no section for kafkabatch {command}"
    mentioned = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", section))
    flags = subcommand_flags()[command]
    assert sorted(flags - mentioned) == [], f"flags of kafkabatch {command} missing from docs/cli.md"
    anywhere = set().union(*subcommand_flags().values())
    assert sorted(mentioned - anywhere) == [], f"docs/cli.md's {command} section mentions flags no command has"


def test_cli_refuses_unknown_flags(capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["dump", "--isolaton", "read_committed", "x.log"])
    assert e.value.code == 2
    assert "--isolaton" in capsys.readouterr().err
