"""How Go bbsimctl 1.16.8's parser (go-flags, with PassDoubleDash and PassAfterNonOption) reads a command line,
where it differs from argparse's, and its shell completion; both read the argparse tree `oltsim.ctl.oltsimctl` builds.

go-flags fills a command's positional arguments in order and, once they are filled, passes the first further word
and everything after it (options included) to the command, which ignores them: `bbsimctl uni list BBSM00000001`
lists every UNI, and `bbsimctl onu get SN extra -v` is not verbose. Options before that point may come between the
positional arguments, and the global options (`-s`, `-c`, `-d`) are read at every level of the tree, `bbsimctl olt
-d get` included. `--` makes the words after it positional arguments. :func:`go_flags_argv` rewrites a command
line into one argparse reads the same way: the ignored words dropped, global options given between two command
names moved before the first.

Completion is go-flags' protocol: with `GO_FLAGS_COMPLETION` set, the program prints the candidates for the last
word (command names, option names, or the values a positional argument takes), one a line, and exits 0; the bash
function `completion bash` prints asks for them. :func:`complete` computes the candidates.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable

__all__ = ["ENV_COMPLETION", "bash_script", "complete", "go_flags_argv", "subcommands"]

#: The environment variable go-flags' completion protocol sets.
ENV_COMPLETION = "GO_FLAGS_COMPLETION"


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The commands under `parser` by name (aliases included); empty for a leaf command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The positional arguments of a leaf command, in order."""
    return [action for action in parser._actions
            if not action.option_strings and not isinstance(action, argparse._SubParsersAction)]


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _option(parser: argparse.ArgumentParser, word: str) -> tuple[argparse.Action | None, bool]:
    """The option `word` names in `parser` and whether its value is in the word itself (`--server=x`, `-sx`);
    (None, False) for a word argparse would not know (it reports it)."""
    if word.startswith("--"):
        name, inline = word.split("=", 1)[0], "=" in word
        actions = parser._option_string_actions
        if name in actions:
            return actions[name], inline
        matches = [option for option in actions if option.startswith(name) and option.startswith("--")]
        return (actions[matches[0]], inline) if len(matches) == 1 else (None, False)
    # a cluster of short options: the first that takes a value takes the rest of the word, or the next word
    for index, char in enumerate(word[1:], start=1):
        action = parser._option_string_actions.get(f"-{char}")
        if action is None:
            return None, False
        if _takes_value(action):
            return action, index < len(word) - 1
    return parser._option_string_actions.get(f"-{word[-1]}"), False


def _is_option(word: str) -> bool:
    """go-flags' argumentIsOption: `-x...` or `--x...` (so `-1` is an option, an unknown one)."""
    return (len(word) > 1 and word[0] == "-" and word[1] != "-") or (len(word) > 2 and word.startswith("--"))


def go_flags_argv(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """`argv` rewritten so that argparse reads it as go-flags reads bbsimctl's: the words a command ignores
    dropped, global options given at a group level moved to the front (see the module docstring). Words argparse
    will refuse (an unknown command or option) are left where they are, for it to report."""
    root, current = parser, parser
    moved: list[str] = []
    kept: list[str] = []
    left = 0  # positional arguments of the current leaf command still to fill
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        if word == "--":
            # the words after it are positional: a group's become (unknown) commands, for argparse to report
            return moved + kept + [word, *(argv[index:] if subcommands(current) else argv[index:index + left])]
        if _is_option(word):
            action, inline = _option(current, word)
            target = kept
            if action is None and current is not root and subcommands(current):
                action, inline = _option(root, word)  # a global option between two command names
                target = moved if action is not None else kept
            words = [word] + ([] if action is None or inline or not _takes_value(action) else argv[index:index + 1])
            target += words
            index += len(words) - 1
            continue
        commands = subcommands(current)
        if commands:
            if word not in commands:
                return moved + kept + argv[index - 1:]  # argparse names the unknown command
            kept.append(word)
            current = commands[word]
            left = len(positionals(current))
            continue
        if left:
            kept.append(word)
            left -= 1
            continue
        break  # PassAfterNonOption: this word and the rest go to the command, which ignores them
    return moved + kept


#: A completer: given a way to open a connection, the values a positional argument takes.
Completer = Callable[[Callable], Iterable[str]]


def complete(parser: argparse.ArgumentParser, words: list[str], connect: Callable) -> list[str]:
    """The candidates for the last of `words` (the command line after the program's name, the word being
    completed last, possibly empty): the commands of the current group, the options of the current command when
    the word starts with `-`, else the values of the positional argument it fills (its action's `completer`,
    called with `connect`). Those starting with the word, in the tree's order."""
    *before, last = words or [""]
    current = parser
    filled = 0
    skip = False
    for word in before:
        if skip:
            skip = False
            continue
        if _is_option(word):
            action, inline = _option(current, word)
            skip = action is not None and _takes_value(action) and not inline
            continue
        commands = subcommands(current)
        if commands:
            if word not in commands:
                return []
            current, filled = commands[word], 0
        else:
            filled += 1
    if last.startswith("-"):
        options = [option for action in current._actions for option in action.option_strings]
        return [option for option in options if option.startswith(last)]
    commands = subcommands(current)
    if commands:
        return [name for name in commands if name.startswith(last)]
    arguments = positionals(current)
    if filled >= len(arguments):
        return []
    completer: Completer | None = getattr(arguments[filled], "completer", None)
    if completer is None:
        return []
    try:
        values = list(completer(connect))
    except Exception:  # a completion that cannot reach the server offers nothing rather than failing
        return []
    return [value for value in values if value.startswith(last)]


def bash_script(prog: str) -> str:
    """The bash completion function for `prog` that `completion bash` prints: it asks the program itself
    (go-flags' protocol, so the same function serves Go bbsimctl and ours)."""
    name = "_" + "".join(char if char.isalnum() else "_" for char in prog)
    return (f"# bash completion for {prog}: `source <({prog} completion bash)`, or save it in\n"
            f"# /etc/bash_completion.d/{prog}. The program itself lists the candidates (GO_FLAGS_COMPLETION).\n"
            f"{name}() {{\n"
            f"    local IFS=$'\\n'\n"
            f"    COMPREPLY=($({ENV_COMPLETION}=1 \"${{COMP_WORDS[0]}}\" \"${{COMP_WORDS[@]:1:$COMP_CWORD}}\"))\n"
            f"    return 0\n"
            f"}}\n"
            f"complete -F {name} {prog}\n")
