"""build_pyz makes a Python plugin one executable file: a zipapp holding the barrage_plugin
package and the plugin's modules, with a shebang naming the python that has the SDK's
requirements (scripts/python-env.sh prints it).

The file's bytes depend on its inputs alone (sorted entries, fixed timestamps and modes), so the
same sources give the same sha256, which is what the host checks before it starts a plugin.

Usage: python -B build_pyz.py --main MODULE:FUNCTION [--python PATH] -o OUT SOURCE...
A SOURCE is a module file or a package directory; it lands at the top of the archive.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import zipfile

SDK = pathlib.Path(__file__).resolve().parent
EPOCH = (1980, 1, 1, 0, 0, 0)

MAIN = '''\
# Written by sdk/python/build_pyz.py.
import barrage_plugin  # first: it keeps stdout for the handshake before other code can print

from {module} import {function}

{function}()
'''


def files(source: pathlib.Path):
    """files yields (path in the archive, path on disk) for a module or a package."""
    if source.is_file():
        yield source.name, source
        return
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source.parent)
        if path.is_file() and "__pycache__" not in rel.parts and path.suffix not in (".pyc", ".pyo", ".pyi"):
            yield rel.as_posix(), path


def entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def build(out: pathlib.Path, main: str, python: str, sources) -> None:
    module, sep, function = main.partition(":")
    if not sep or not module or not function:
        raise SystemExit(f"build_pyz: --main {main!r}: want MODULE:FUNCTION")
    contents = {"__main__.py": MAIN.format(module=module, function=function).encode()}
    for source in [SDK / "barrage_plugin", *sources]:
        if not source.exists():
            raise SystemExit(f"build_pyz: {source} does not exist")
        for name, path in files(source):
            if name in contents:
                raise SystemExit(f"build_pyz: {name} is given twice")
            contents[name] = path.read_bytes()
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(b"#!" + python.encode() + b"\n")
        with zipfile.ZipFile(f, "w") as z:
            for name in sorted(contents):
                z.writestr(entry(name), contents[name])
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--main", required=True, help="MODULE:FUNCTION that serves the plugin")
    ap.add_argument("--python", default=sys.executable, help="the interpreter for the shebang (default: this one)")
    ap.add_argument("-o", "--output", required=True, type=pathlib.Path)
    ap.add_argument("sources", nargs="+", type=pathlib.Path)
    args = ap.parse_args()
    build(args.output, args.main, args.python, args.sources)


if __name__ == "__main__":
    main()
