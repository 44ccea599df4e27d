"""Every command the shell blocks of README.md and docs/*.md show runs as written from the README's set-up (a venv in
`.venv/`, commands typed at the top of the repository): a program the venv provides is named `.venv/bin/X` and X is a
console script of setup.py or of what it installs (twistd), or the venv's python; `.venv/bin/python -m MODULE` names
an importable module, `-c CODE` imports only what can be imported, `.venv/bin/python SCRIPT` runs a file of the
repository; a relative program path (`packaging/build-deb`) and a repository path given as an argument
(`docs/scenarios/x.yaml`, `@docs/...` for curl) name files of the repository; any other bare program is one of the
system tools the docs rely on (SYSTEM_TOOLS). A bare `oltsimctl`, `twistd`, `bbsimctl` or `python -c 'import oltsim'`
fails: outside the venv it is not found, or not this oltsim.

Which lines are commands: in a ```sh (or bash, shell) block every line but comments and here-document bodies; in a
```console block and in an unlabelled block (the docs' transcripts and outputs) only the lines after a `$ ` prompt.
A page that sources `.venv/bin/activate` in a shell block may name the venv's programs bare after it (not through
sudo, which resets PATH).
"""
from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
SHELL = {"sh", "bash", "shell"}
TRANSCRIPT = {"console", ""}
# The venv's own programs besides the console scripts of what it installs.
VENV_OWN = {"python", "python3", "pip", "pip3"}
# The system programs (and shell builtins) the docs use, each installed from the distribution or the tool's project,
# never from the venv. A new one is added here on purpose, so that a typo or a venv program without `.venv/bin/`
# cannot pass as one.
SYSTEM_TOOLS = {
    # shell builtins and coreutils
    ".", "source", "cat", "cd", "cp", "cut", "echo", "grep", "kill", "mkdir", "sleep", "touch",
    # the platform: packages, services, privileges, version control
    "apt", "apt-get", "dpkg", "git", "journalctl", "sudo", "systemctl",
    # HTTP and gRPC clients, JSON
    "curl", "grpcurl", "jq",
    # networking and the data plane's lab
    "dhclient", "dnsmasq", "ethtool", "ip", "iperf", "iperf3", "mausezahn", "nsenter", "ping", "tcpdump", "tshark",
    "wireshark",
    "wpa_supplicant",
    # browsers
    "chromium", "xdg-open",
    # around VOLTHA: its CLI, containers, Kubernetes
    "docker", "helm", "kubectl", "voltctl",
}
# Where the Debian package puts its venv (docs/operations.md): its programs are the same as .venv/bin's.
VENV_DIRS = (".venv/bin/", "/opt/oltsim/bin/")
OPERATORS = {"&&", "||", "|", ";", "&", "(", ")", "|&"}
REDIRECTS = {">", ">>", "<", "<<", "<<<", ">&", "<&", "&>", "&>>", ">|", "<>"}
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
REPO_DIRS = {"bench", "debian", "deploy", "docs", "oltsim", "packaging", "proto", "tests", "tools", "twisted"}


def _setup_keywords() -> dict:
    """The literal keyword arguments of setup.py's setup() call (entry_points, install_requires, extras_require)."""
    tree = ast.parse((REPO / "setup.py").read_text())
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "setup")
    found = {}
    for keyword in call.keywords:
        try:
            found[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            pass  # computed (version, cmdclass)
    return found


def _venv_programs() -> tuple[set[str], set[str]]:
    """(setup.py's console scripts, every program the venv provides: those, the console scripts of the distributions
    setup.py requires that are installed here, and the venv's python and pip)."""
    keywords = _setup_keywords()
    own = {entry.partition("=")[0].strip() for entry in keywords["entry_points"]["console_scripts"]}
    programs = set(own) | VENV_OWN
    requirements = list(keywords["install_requires"])
    for extra in keywords.get("extras_require", {}).values():
        requirements.extend(extra)
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)
        try:
            entry_points = importlib.metadata.distribution(name).entry_points
        except importlib.metadata.PackageNotFoundError:
            continue
        programs |= {entry.name for entry in entry_points if entry.group == "console_scripts"}
    return own, programs


ENTRY_POINTS, VENV_PROGRAMS = _venv_programs()


def blocks(text: str) -> list[tuple[str, str, int]]:
    """The fenced blocks of a page: (language, body with the fence's indentation removed, line of the body)."""
    found = []
    for match in FENCE.finditer(text):
        indent = len(match.group("indent"))
        body = "".join(line[indent:] if line[:indent].isspace() else line
                       for line in match.group("body").splitlines(keepends=True))
        found.append((match.group("lang"), body, text.count("\n", 0, match.start("body")) + 1))
    return found


def command_lines(lang: str, body: str, first: int) -> list[tuple[int, str]]:
    """The command lines of a block, (line number, command): continuations joined, `$ ` prompts removed, here-document
    bodies left out; in a transcript only prompted lines (and their continuations) count."""
    if lang not in SHELL | TRANSCRIPT:
        return []
    lines = body.splitlines()
    out = []
    i = 0
    while i < len(lines):
        number, line = first + i, lines[i]
        i += 1
        if line.startswith("$ "):
            line = line[2:]
        elif lang in TRANSCRIPT:
            continue
        while (line.endswith("\\") or open_quote(line)) and i < len(lines):
            line = line[:-1] + " " + lines[i].strip() if line.endswith("\\") else line + "\n" + lines[i]
            i += 1
        heredoc = HEREDOC.search(strip_comment(line))
        if heredoc:
            while i < len(lines) and lines[i].strip() != heredoc.group(2):
                i += 1
            i += 1
        if strip_comment(line).strip():
            out.append((number, line.strip()))
    return out


def _scan(line: str):
    """Yield (index, character, quoted) over a shell line: quoted is the quote (' or ") the character is inside."""
    quote = None
    escaped = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
            yield index, char, quote or "\\"
            continue
        if char == "\\" and quote != "'":
            escaped = True
            yield index, char, quote
            continue
        if quote is None and char in "'\"":
            quote = char
            yield index, char, char
            continue
        if quote is not None and char == quote:
            quote = None
            yield index, char, char
            continue
        yield index, char, quote


def open_quote(line: str) -> bool:
    """Whether a quote of the line (its comment left out) is still open at its end: the command goes on on the next
    line."""
    quote = None
    escaped = False
    for char in strip_comment(line):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote is None and char in "'\"":
            quote = char
        elif char == quote:
            quote = None
    return quote is not None


def strip_comment(line: str) -> str:
    """The line without its `# comment` (a `#` outside quotes that starts a word)."""
    for index, char, quoted in _scan(line):
        if char == "#" and quoted is None and (index == 0 or line[index - 1].isspace()):
            return line[:index]
    return line


def substitutions(line: str) -> tuple[str, list[str]]:
    """(the line with each `$(...)` replaced by a placeholder word, the commands inside them)."""
    inner = []
    out = []
    depth = 0
    start = 0
    last = 0
    for index, char, quoted in _scan(line):
        if quoted == "'" or quoted == "\\":
            continue
        if char == "(" and index > 0 and line[index - 1] == "$":
            if depth == 0:
                start = index + 1
                out.append(line[last:index - 1])
            depth += 1
        elif char == "(" and depth:
            depth += 1  # a subshell or a call inside the substitution
        elif char == ")" and depth:
            depth -= 1
            if depth == 0:
                inner.append(line[start:index])
                out.append("SUBSTITUTION")
                last = index + 1
    out.append(line[last:])
    return "".join(out), inner


def simple_commands(line: str) -> list[list[str]]:
    """The words of each simple command of a command line (split at &&, ||, |, ;, &, parentheses), command
    substitutions included as commands of their own; redirections and their targets left out."""
    line, inner = substitutions(strip_comment(line))
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    commands: list[list[str]] = [[]]
    skip_next = False
    for token in lexer:
        if skip_next:
            skip_next = False
            continue
        if token in OPERATORS:
            commands.append([])
        elif token in REDIRECTS:
            skip_next = True
            if commands[-1] and commands[-1][-1].isdigit():  # 2>/dev/null
                commands[-1].pop()
        else:
            commands[-1].append(token)
    for command in inner:
        commands.extend(simple_commands(command))
    return [words for words in commands if words]


def program(words: list[str]) -> tuple[str | None, list[str], bool]:
    """(the program a simple command runs, its arguments, whether through sudo): leading `NAME=value` assignments,
    `sudo [-opts]`, `env`, `exec`, `nohup`, `time`, `timeout [-opts] DURATION` and `ip netns exec NS` are stepped
    over, so that the program they run is the one checked."""
    via_sudo = False
    words = list(words)
    while words:
        if ASSIGNMENT.match(words[0]):
            words.pop(0)
        elif words[0] == "sudo":
            via_sudo = True
            words.pop(0)
            while words and words[0].startswith("-"):
                words.pop(0)
        elif words[0] in ("env", "exec", "nohup", "time"):
            words.pop(0)
        elif words[0] == "timeout" and len(words) > 2:
            words = words[1:]
            while words and words[0].startswith("-"):
                option = words.pop(0)
                if option in ("-s", "-k") and words:  # --signal and --kill-after take a value
                    words.pop(0)
            words = words[1:]  # the duration
        elif words[:3] == ["ip", "netns", "exec"] and len(words) > 4:
            words = words[4:]
        else:
            return words[0], words[1:], via_sudo
    return None, [], via_sudo


def _python_problems(args: list[str]) -> list[str]:
    """What is wrong with the arguments of the venv's python: -m names no importable module, -c imports what is not
    importable or does not parse, the script is no file of the repository."""
    if not args:
        return []
    option = args[0]
    if option == "-m" and len(args) > 1:
        if importlib.util.find_spec(args[1]) is None:
            return [f"python -m {args[1]}: no such module"]
    elif option == "-c" and len(args) > 1:
        try:
            tree = ast.parse(args[1])
        except SyntaxError as exc:
            return [f"python -c: does not parse: {exc}"]
        names = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        names += [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
        return [f"python -c imports {name}: no such module" for name in names if _find(name) is None]
    elif not option.startswith("-") and not (REPO / option).is_file():
        return [f"python {option}: no such file in the repository"]
    return []


def _find(name: str):
    """The module's spec, or None (a missing parent package too)."""
    try:
        return importlib.util.find_spec(name)
    except ModuleNotFoundError:
        return None


def check_command(words: list[str], activated: bool) -> list[str]:
    """What is wrong with one simple command of the docs (empty when it runs as written)."""
    name, args, via_sudo = program(words)
    if name is None or name == "SUBSTITUTION":
        return []
    problems = []
    venv = next((d for d in VENV_DIRS if name.startswith(d)), None)
    python = venv is not None and name[len(venv):] in ("python", "python3")
    for arg in args[1:] if python else args:  # python's script is checked with its options below
        path = arg.lstrip("@")
        if path.split("/", 1)[0] in REPO_DIRS and "/" in path and not any(c in path for c in "*?[<$"):
            if not (REPO / path).exists():
                problems.append(f"{name}: {arg}: no such file in the repository")
    if venv is not None:
        base = name[len(venv):]
        if base not in VENV_PROGRAMS:
            problems.append(f"{name}: the venv has no program {base!r} (setup.py's console scripts: "
                            f"{', '.join(sorted(ENTRY_POINTS))})")
        elif python:
            problems.extend(_python_problems(args))
    elif "/" in name:
        if not (REPO / name).is_file():
            problems.append(f"{name}: no such file in the repository")
    elif name in ("python", "python3") and args[:2] == ["-m", "venv"]:
        pass  # the system python that makes the venv
    elif name in VENV_PROGRAMS:
        if not activated or via_sudo:
            problems.append(f"{name}: the venv's program, run it as .venv/bin/{name}")
    elif name not in SYSTEM_TOOLS:
        problems.append(f"{name}: neither the venv's program nor one of SYSTEM_TOOLS")
    return problems


def page_problems(text: str) -> list[str]:
    """Every command of a page's shell blocks and transcripts that would not run as written, `line: problem`."""
    problems = []
    activated = False
    for lang, body, first in blocks(text):
        for number, line in command_lines(lang, body, first):
            for words in simple_commands(line):
                if words[0] in (".", "source") and words[1:] == [".venv/bin/activate"]:
                    activated = True
                problems.extend(f"{number}: {problem}" for problem in check_command(words, activated))
    return problems


def unmarked_commands(text: str) -> list[str]:
    """Lines of blocks that are not shell blocks (output, transcripts, text) that begin with a venv program without
    a `$ ` prompt: a command shown there without the page's prompt is not recognised as one."""
    found = []
    for lang, body, first in blocks(text):
        if lang in SHELL:
            continue
        for offset, line in enumerate(body.splitlines()):
            word, _, rest = line.partition(" ")
            # `oltsimctl: ...` is its error output, `bbsim  16x32 ...` a row of a table: no command follows by a word
            if any(word.startswith(d) for d in VENV_DIRS) or word in VENV_PROGRAMS and re.match(r"-|[a-z]", rest):
                found.append(f"{first + offset}: {line}")
    return found


def page_id(page: Path) -> str:
    """The page's path in the repository, as the test ids name it."""
    return str(page.relative_to(REPO))


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_command_of_the_page_runs_as_written_from_the_set_up(page):
    """Each command of the page's shell blocks and transcripts names a program that exists where the README's set-up
    leaves the reader: the venv's with `.venv/bin/`, a file of the repository, or a known system tool; and the files
    of the repository it is given exist."""
    problems = page_problems(page.read_text())
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_output_blocks_show_commands_only_after_a_prompt(page):
    """A block that is not a shell block marks the commands it shows with `$ `, so that they are checked as commands
    and the reader can tell them from output."""
    unmarked = unmarked_commands(page.read_text())
    assert not unmarked, "\n".join(unmarked)


def test_the_pages_show_commands_at_all():
    """The walk finds the commands the docs hold (a fence or prompt convention changed would leave nothing to check):
    the README's set-up, and venv programs on several pages."""
    commands = {page_id(page): [words for lang, body, first in blocks(page.read_text())
                                for _, line in command_lines(lang, body, first) for words in simple_commands(line)]
                for page in PAGES}
    assert ["python3", "-m", "venv", ".venv"] in commands["README.md"]
    with_venv = [name for name, found in commands.items() if any(w[0].startswith(".venv/bin/") for w in found)]
    assert len(with_venv) >= 10, with_venv


def _flagged(block: str, lang: str = "sh") -> list[str]:
    """What page_problems reports for a page holding only `block`, fenced as `lang`."""
    return page_problems(f"```{lang}\n{block}\n```\n")


@pytest.mark.parametrize("line", [
    "oltsimctl onu list",
    "twistd -n --pidfile= oltsim",
    "bbsimctl onu list",
    "python -c 'from oltsim.capture.wireshark import LUA_PATH; print(LUA_PATH)'",
    "python3 -m pytest",
    "tshark -X lua_script:$(python -c 'import oltsim') -r x.pcapng",
    "curl -s localhost:50071/v1/olt | oltsimctl events",
    "sudo oltsim-platform agent-update --deb x.deb",
    "ip netns exec labu0-3-1 twistd -n oltsim",
    "FOO=1 oltsimctl wait --state enabled",
    "timeout -s INT 60 oltsimctl events",
    "$ oltsimctl onu list",
    ".venv/bin/oltsimctll onu list",
    ".venv/bin/python -m oltsim.no_such_module",
    ".venv/bin/python -c 'import oltsim.no_such_module'",
    ".venv/bin/python bench/no_such_bench.py",
    "bench/no_such_tool --out x",
    ".venv/bin/oltsimctl scenario run docs/scenarios/no-such-scenario.yaml",
    "curl --data-binary @docs/scenarios/no-such.yaml localhost:50071/v1/scenario",
    "cat x && oltsimctl olt get",
    "echo \"$(oltsimctl olt get)\"",
    "twistd -n oltsim \\\n    --pon 2",
])
def test_a_command_that_would_not_run_as_written_is_reported(line):
    """Bare venv programs (through pipes, `&&`, `$(...)`, sudo, `ip netns exec`, assignments and continuations), a
    misspelt venv program, a module, script or repository file that does not exist, an unknown bare program: each is
    reported."""
    assert _flagged(line), line


@pytest.mark.parametrize("block, lang", [
    (".venv/bin/oltsimctl onu list", "sh"),
    (".venv/bin/twistd --nodaemon --pidfile= oltsim --adapter builtin", "sh"),
    ("tshark -X lua_script:$(.venv/bin/python -c 'from oltsim.capture.wireshark import LUA_PATH; print(LUA_PATH)')"
     " -r stuck.pcapng", "sh"),
    ("PYTHONPATH=tests/integration .venv/bin/python - localhost:50060 <<'EOF'\nimport sys\noltsimctl x\nEOF", "sh"),
    ("python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/python -m pytest", "sh"),
    ("sudo ip netns exec labu0-3-1 dhclient -v -1 labu0-3-1   # oltsimctl in a comment", "sh"),
    (". .venv/bin/activate\noltsim-platform classify olt", "sh"),
    ("$ .venv/bin/oltsimctl dmi start\nmanaging the device as olt\noltsimctl: an error line", ""),
    ("$ .venv/bin/bbsimctl dmi transceiver list\nID    UUID", "console"),
    ("oltsimctl onu list\ntwistd", "text"),
])
def test_a_command_that_runs_as_written_passes(block, lang):
    """The forms the docs use pass: `.venv/bin/` programs, substitutions, here-documents (their body is not
    commands), the set-up's system python, sudo and namespaces around system tools, comments, an activated venv,
    and the output lines of transcripts."""
    assert not _flagged(block, lang), _flagged(block, lang)
