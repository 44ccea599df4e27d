"""The suite collects as one run: pytest imports test modules by their file name (rootdir-based, no packages), so
two test files of one name in different folders make the whole run fail at collection."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_name():
    """Every test_*.py under tests/ has a file name of its own (and so does every module the tests import by name)."""
    names = Counter(path.name for path in TESTS.rglob("*.py") if "__pycache__" not in path.parts
                    and path.name not in ("__init__.py", "conftest.py"))
    assert [name for name, count in names.items() if count > 1] == []
