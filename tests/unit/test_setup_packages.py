"""setup.py installs every package of oltsim: a package missing from its explicit list imports from a checkout
(the tests' working directory) but not from the installed wheel or .deb, where the daemon would fail to start."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _setup_keyword(name: str):
    tree = ast.parse((ROOT / "setup.py").read_text())
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup")
    return ast.literal_eval(next(k.value for k in call.keywords if k.arg == name))


def test_every_oltsim_package_is_listed():
    """Each directory under oltsim/ with an __init__.py is in setup.py's packages list, and nothing else is."""
    found = {".".join(path.parent.relative_to(ROOT).parts) for path in (ROOT / "oltsim").rglob("__init__.py")}
    listed = {name for name in _setup_keyword("packages") if name.startswith("oltsim")}
    assert listed == found
