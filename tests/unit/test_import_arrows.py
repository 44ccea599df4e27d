"""Imports point down (style.md "Arrows point down"): the lower layers never import an upper one, so a
lower module can be read, tested and reused without the control APIs it serves. Read from the source (every import
statement, also those inside functions), so a lazy import does not hide an arrow."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OLTSIM = ROOT / "oltsim"

#: Lower modules and packages, and the upper ones none of them may import.
LOWER = ("serving", "southbound", "model", "omci", "packets", "capture", "dataplane", "status.py", "openoltpb.py",
         "prometheus.py", "config.py", "settings")
UPPER = ("oltsim.api", "oltsim.tap")


def _modules(place: str) -> list[Path]:
    path = OLTSIM / place
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(path: Path) -> set[str]:
    """The absolute names of every module `path` imports (relative imports resolved)."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            out.add(module)
            # `from oltsim.model import olt` imports the module oltsim.model.olt
            out.update(f"{module}.{alias.name}" for alias in node.names)
    return out


def _reaches(names: set[str], targets) -> list[str]:
    return sorted(n for n in names if any(n == t or n.startswith(t + ".") for t in targets))


@pytest.mark.parametrize("path", [p for place in LOWER for p in _modules(place)],
                         ids=lambda p: str(p.relative_to(OLTSIM)))
def test_lower_layers_do_not_import_the_apis(path):
    """No module of serving/, southbound/, the model, the codecs, the capture ring, the data plane, the error table,
    /metrics or the settings imports oltsim.api or the composition root."""
    assert _reaches(imported(path), UPPER) == []


@pytest.mark.parametrize("place", ["serving", "southbound", "config.py", "settings"])
def test_serving_southbound_and_settings_do_not_import_kafka(place):
    """The listeners, the OpenOLT southbound and the settings do not reach the Kafka event sink (an upper, optional
    surface)."""
    for path in _modules(place):
        assert _reaches(imported(path), ("oltsim.kafka",)) == [], path


def test_the_error_table_is_defined_once():
    """oltsim.status holds the one error table; the control APIs' translation re-uses that very object."""
    from oltsim import status
    from oltsim.api import translate
    assert translate.ERROR_TABLE is status.ERROR_TABLE
    assert translate.status_for is status.status_for


def test_the_model_has_no_import_circle():
    """No module of oltsim.model imports itself back through others (TYPE_CHECKING imports count: they are arrows a
    reader follows too); in particular the ONU does not know the OLT."""
    model = {_module_name(p): p for p in _modules("model")}
    graph = {name: {m for m in imported(path) if m in model and m != name} for name, path in model.items()}
    assert "oltsim.model.olt" not in graph["oltsim.model.onu"]

    def circle_from(start):
        stack, seen = [(start, (start,))], set()
        while stack:
            name, trail = stack.pop()
            for nxt in graph[name]:
                if nxt == start:
                    return trail + (start,)
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, trail + (nxt,)))
        return None

    assert [circle_from(name) for name in sorted(graph) if circle_from(name)] == []


def test_the_onu_imports_without_the_olt():
    """In a fresh interpreter, importing the ONU's module loads neither the OLT's module nor anything outside the
    model but the logger (the ONU is built around a DeviceHub, not an OLT)."""
    import subprocess
    import sys
    code = ("import sys, oltsim.model.onu; "
            "print(sorted(m for m in sys.modules if m.startswith('oltsim')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                         check=True).stdout
    loaded = ast.literal_eval(out.strip())
    assert "oltsim.model.olt" not in loaded
    assert [m for m in loaded if not m.startswith("oltsim.model") and m not in ("oltsim", "oltsim.logs")] == []
