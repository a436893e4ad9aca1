"""Add a JNI library built for one platform to kafkabatch's Spark jar.

    python scripts/jar_add_native.py JAR LIBRARY PLATFORM

PLATFORM is ``<os>-<arch>`` as the Java ``NativeLoader`` names it (``linux-x86_64``,
``linux-aarch64``, ``darwin-aarch64``, ``darwin-x86_64``, ``windows-x86_64``); the
library lands at ``io/github/kafkabatch/native/<PLATFORM>/<file name>`` with its
SHA-256 beside it (``<file name>.sha256``), replacing those already there. The
release workflow builds the Java classes once (``make jvm`` with ``NATIVE=0``),
then each wheel job adds its own platform's library before packing the jar into
the wheel, and one more job adds them all into one jar.
Runs on the Python of manylinux containers (3.6+): standard library only.
"""

import hashlib
import os
import re
import shutil
import sys
import tempfile
import zipfile

PLATFORM = re.compile(r"^(linux|darwin|windows)-[a-z0-9_]+$")


def add(jar, library, platform):
    if not PLATFORM.match(platform):
        raise SystemExit("jar_add_native.py: platform must be <os>-<arch> such as linux-x86_64, not %r" % platform)
    name = "io/github/kafkabatch/native/%s/%s" % (platform, os.path.basename(library))
    handle, tmp = tempfile.mkstemp(suffix=".jar", dir=os.path.dirname(os.path.abspath(jar)))
    os.close(handle)
    try:
        with zipfile.ZipFile(jar) as old, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as new:
            for item in old.infolist():
                if item.filename not in (name, name + ".sha256"):
                    new.writestr(item, old.read(item.filename))
            new.write(library, name)
            # its SHA-256 beside it: NativeLoader names the extracted copy by it without hashing the library
            with open(library, "rb") as f:
                new.writestr(name + ".sha256", hashlib.sha256(f.read()).hexdigest() + "\n")
        shutil.move(tmp, jar)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    print("jar_add_native.py: %s += %s" % (jar, name))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    add(*sys.argv[1:])
