"""The OpenOLT endpoint's two gRPC engines as one fixture: a test that talks OpenOLT to a real server takes
`grpc_engine` and runs once on each, as [native] (pygrpc-native's front) and [grpcio] (grpc.aio).

Test modules import the fixture from here (as test_faults imports test_daemon's `daemon`). It is not in a
tests/integration/conftest.py: tests import helpers from tests/conftest.py as the module `conftest`, which a second
conftest.py would replace.
"""
from __future__ import annotations

import pytest

#: What `--grpc-engine` can force; `auto` picks native (grpcio only where pygrpc-native does not import).
ENGINES = ("native", "grpcio")


@pytest.fixture(params=ENGINES)
def grpc_engine(request) -> str:
    """The engine this run of the test asks for with `--grpc-engine`."""
    return request.param


def engine_options(engine: str | None) -> list[str]:
    """The oltsim options that ask for `engine` (none: the default, auto)."""
    return [] if engine is None else ["--grpc-engine", engine]
