"""Record Python's own answers for the Rust glob tests (src/storage/glob.rs).

Writes three files beside glob.rs: ``glob_fnmatch_cases.in`` (pattern, name,
``fnmatch.fnmatchcase(name, pattern)``), ``glob_tree.in`` (a folder tree) and
``glob_glob_cases.in`` (pattern, sorted ``glob.glob(root + pattern, recursive=True)``
relative to the tree's root). Run once with the Python the project supports:

    python scripts/record_glob_cases.py
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import sys
import tempfile
from fnmatch import fnmatchcase
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "src" / "storage"

PATTERNS = [
    "*", "?", "*.log", "0000*.log", "0000?.log", "*1*", "a*b*c", "**", "***", "[abc]", "[!abc]", "[^abc]",
    "[a-c]", "[!a-c]", "[c-a]", "[!c-a]", "[z-a!]", "[a-]", "[-a]", "[!-a]", "[]]", "[]a]", "[!]]", "[!]",
    "[", "[a", "a[", "[]", "[!", "[a-c-e]", "[a-cx-z]", "[\\]", "[\\-z]", "[&~|]", "[a&&b]", "[[]", "[[a]",
    "[a-c-]", "[--0]", "[%--]", "x[0-9][0-9]", "*.[lr]og", "*-delete", "?*?", "*?*", "[!.]*", ".*", "\\*",
    "é*", "[é-ü]", "*\n", "a?c", "[0-9]*[!0-9]", "[b-a-c]", "[c-b-a]", "[a-b-c]", "[z-ab-c]", "[!z-ab-c]",
]  # fmt: skip
NAMES = [
    "", "a", "b", "c", "d", "x", "z", "!", "^", "-", "]", "[", "\\", "&", "~", "|", ".", ".log", "a.log",
    "00001.log", "0000x.log", "00001.rog", "abc", "axbyc", "ac", "a-b", "x12", "x1", "é", "éa", "ñ", "a\nb",
    "ab\n", "*", "0", "%", ".hidden", "orders-0.0123456789abcdef0123456789abcdef-delete", "a/b", "abc/d",
]  # fmt: skip

TREE = [
    "data/", "data/orders-0/", "data/orders-0/00000000000000000000.log", "data/orders-0/00000000000000000000.index",
    "data/orders-0/00000000000000000030.log", "data/orders-1/", "data/orders-1/00000000000000001000.log",
    "data/.hidden-0/", "data/.hidden-0/00000000000000000000.log", "data/payments-0/", "data/payments-0/.x.log",
    "data/payments-0/00000000000000000000.log", "data/b1/", "data/b1/orders-0/", "data/b1/orders-0/0.log",
    "data/b1/deep/", "data/b1/deep/er/", "data/b1/deep/er/x.log", "data/[x]/", "data/[x]/1.log", "top.log",
]  # fmt: skip
GLOBS = [
    "data/*", "data/orders-*", "data/*/*", "data/*/*.log", "data/**", "data/**/*.log", "data/**/", "**/*.log",
    "data/**/orders-*", "data/.*", "data/.*/*", "data/*-0/0000000000000000003*", "data/[o]rders-[01]",
    "data/[!o]*", "data/**/**", "data/b1/**", "data/nothing-*", "data/[x]/*", "data/[[]x]/*", "*/orders-0/",
    "data/*/", "data/orders-0/0*", "data/?rders-?/*.log", "*", "data/**/er", "data/b1/**/x.log", "d*/b*/d*/e*/*",
]  # fmt: skip


def rust(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(rust(v) for v in value)
        return f"&[{inner}]" if isinstance(value, list) else f"({inner})"
    raise TypeError(value)


def main() -> None:
    fn_cases = [(p, n, fnmatchcase(n, p)) for p, n in itertools.product(PATTERNS, NAMES)]
    (HERE / "glob_fnmatch_cases.in").write_text(rust(fn_cases) + "\n", encoding="utf-8")
    (HERE / "glob_tree.in").write_text(rust(TREE) + "\n", encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        for entry in TREE:
            path = Path(tmp, entry)
            if entry.endswith("/"):
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(b"x")
        prefix = tmp + os.sep
        cases = []
        for pattern in GLOBS:
            found = sorted(glob.glob(prefix + pattern, recursive=True))
            cases.append((pattern, [f[len(prefix) :] if f.startswith(prefix) else f for f in found]))
    (HERE / "glob_glob_cases.in").write_text(rust(cases) + "\n", encoding="utf-8")
    print(f"{len(fn_cases)} fnmatch cases, {len(cases)} glob cases ({sys.version.split()[0]})")


if __name__ == "__main__":
    main()
