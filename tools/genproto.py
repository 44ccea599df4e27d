"""Generate oltsim's protobuf and gRPC stubs from proto/*.proto into oltsim/_proto/.

Run from anywhere as ``python tools/genproto.py [--out DIR]``; the output is
committed and must never be edited by hand (tests/unit/test_proto_stubs.py
regenerates it and fails if the committed copy differs).

Why this is more than one protoc call:

* Our protos import ``voltha_protos/openolt.proto`` and
  ``voltha_protos/tech_profile.proto``, but the voltha-protos PyPI package ships
  only the compiled ``*_pb2.py`` modules, not the ``.proto`` sources. So we take
  the descriptors those modules register (``openolt_pb2.DESCRIPTOR`` and,
  recursively, every file it depends on), serialise them into a
  FileDescriptorSet and hand that to protoc with ``--descriptor_set_in``. protoc
  then resolves the imports from the descriptors and generates only our files;
  the generated code imports ``voltha_protos.openolt_pb2`` at run time, so the
  message types are the very ones the installed package defines.

* protoc names our modules after their file names under ``-Iproto``
  (``bbsim_pb2``), so the ``*_pb2_grpc.py`` files say ``import bbsim_pb2``,
  which only works with ``oltsim/_proto`` on ``sys.path``. A deterministic
  rewrite turns each import of one of our own generated modules into
  ``from oltsim._proto import bbsim_pb2``, and gives the generated message
  classes ``oltsim._proto.bbsim_pb2`` as their ``__module__``.
"""

import argparse
import re
import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2
from grpc_tools import protoc
from voltha_protos import openolt_pb2, tech_profile_pb2

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "proto"
DEFAULT_OUT = ROOT / "oltsim" / "_proto"
# The package the generated modules are imported from, whatever --out says, so
# that output written elsewhere (for comparison) is byte-identical.
PACKAGE = "oltsim._proto"
# Files protoc writes for a proto named NAME.proto.
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def dependency_descriptor_set(roots):
    """Return a FileDescriptorSet holding ``roots`` and everything they import.

    Files come dependencies first (protoc requires it) in a deterministic order.
    """
    fds = descriptor_pb2.FileDescriptorSet()
    seen = set()

    def visit(file_descriptor):
        if file_descriptor.name in seen:
            return
        seen.add(file_descriptor.name)
        for dependency in file_descriptor.dependencies:
            visit(dependency)
        proto = descriptor_pb2.FileDescriptorProto()
        file_descriptor.CopyToProto(proto)
        fds.file.append(proto)

    for root in roots:
        visit(root)
    return fds


def rewrite_imports(text, own_modules):
    """Return generated source ``text`` with our own modules imported from PACKAGE.

    ``import bbsim_pb2 as bbsim__pb2`` becomes
    ``from oltsim._proto import bbsim_pb2 as bbsim__pb2``; the module name given
    to the descriptor builder gets the package prefix. Other imports (protobuf,
    grpc, voltha_protos) are left alone.
    """

    def absolute_import(match):
        module = match.group(2)
        if module not in own_modules:
            return match.group(0)
        return f"{match.group(1)}from {PACKAGE} import {module} as {match.group(3)}"

    text = re.sub(
        r"^(\s*)import (\w+) as (\w+)$", absolute_import, text, flags=re.MULTILINE
    )

    def qualified_module_name(match):
        module = match.group(2)
        if module not in own_modules:
            return match.group(0)
        return f"{match.group(1)}'{PACKAGE}.{module}'"

    return re.sub(
        r"(BuildTopDescriptorsAndMessages\(DESCRIPTOR, )'(\w+)'",
        qualified_module_name,
        text,
    )


def generate(out_dir):
    """Compile every proto/*.proto into ``out_dir`` and return the files written.

    Previously generated files in ``out_dir`` whose proto no longer exists are
    removed; anything else there (``__init__.py``) is left untouched.
    """
    protos = sorted(PROTO_DIR.glob("*.proto"))
    if not protos:
        raise SystemExit(f"no .proto files in {PROTO_DIR}")
    own_modules = {p.stem + "_pb2" for p in protos}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="genproto-") as tmp:
        tmp = Path(tmp)
        descriptor_set = tmp / "voltha_protos.fds"
        fds = dependency_descriptor_set(
            [openolt_pb2.DESCRIPTOR, tech_profile_pb2.DESCRIPTOR]
        )
        descriptor_set.write_bytes(fds.SerializeToString(deterministic=True))
        raw = tmp / "out"
        raw.mkdir()
        args = [
            "grpc_tools.protoc",
            f"--descriptor_set_in={descriptor_set}",
            f"-I{PROTO_DIR}",
            f"--python_out={raw}",
            f"--pyi_out={raw}",
            f"--grpc_python_out={raw}",
            *(str(p) for p in protos),
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed (see its messages above)")

        written = []
        for produced in sorted(raw.iterdir()):
            text = rewrite_imports(produced.read_text(encoding="utf-8"), own_modules)
            target = out_dir / produced.name
            target.write_text(text, encoding="utf-8", newline="\n")
            written.append(target)

    expected = {p.name for p in written}
    for old in sorted(out_dir.iterdir()):
        if old.name.endswith(GENERATED_SUFFIXES) and old.name not in expected:
            old.unlink()
    return written


def main(argv=None):
    """Command-line entry point: ``genproto.py [--out DIR]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        default=str(DEFAULT_OUT),
        help="directory to write the stubs into (default: %(default)s)",
    )
    options = parser.parse_args(argv)
    for path in generate(options.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
