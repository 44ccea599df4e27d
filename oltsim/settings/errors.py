"""What a configuration that oltsim cannot use raises (ConfigError), and what it says about keys it ignores
(ConfigWarning)."""
from __future__ import annotations

from collections.abc import Iterable


class ConfigWarning(str):
    """A key or section of a configuration file that oltsim ignores: reads as the message a person acts on
    (``config file /x.yaml: olt.pon_port: unknown key; did you mean olt.pon_ports?``), and carries what the log
    records: ``event`` (``config-key-unknown``, ``config-key-unsupported``, ``config-section-unknown``, or
    ``config-key-ignored`` for a key that is no news to a BBSim user, see
    :data:`oltsim.settings.bbsimfile.IGNORED_AS_BBSIM`), ``key`` (``olt.pon_port``), ``hint`` (the nearest known
    key, or ""), ``file``, ``text`` (the message without the file) and ``level``: ``warn``, or ``debug`` for
    ``config-key-ignored`` (a note, not a warning: Settings keeps it in ``notes``, and --strict-config does not
    refuse it)."""

    event: str
    key: str
    hint: str
    file: str
    text: str
    level: str

    def __new__(cls, where: str, file: str, event: str, key: str, hint: str = "") -> ConfigWarning:
        level = "warn"
        if event == "config-key-unsupported":
            text = f"{key}: not supported by oltsim, ignored"
        elif event == "config-key-ignored":
            # ``hint`` says why the key is no news: BBSim ignores it too, or its value is what oltsim does anyway
            text, level = f"{key}: ignored, {hint}", "debug"
        else:
            what = "section" if event == "config-section-unknown" else "key"
            text = f"{key}: unknown {what}; did you mean {hint}?" if hint else f"{key}: unknown {what}, ignored"
        warning = super().__new__(cls, f"{where}: {text}")
        warning.event, warning.key, warning.hint, warning.file, warning.text = event, key, hint, file, text
        warning.level = level
        return warning


def strict_error(warnings: Iterable[str]) -> ConfigError:
    """The error ``--strict-config`` makes of a configuration's warnings: the first one, and how many more."""
    warnings = list(warnings)
    more = len(warnings) - 1
    keys = ", ".join(getattr(w, "key", "?") for w in warnings[1:])
    tail = f" (and {more} more: {keys}; errors with --strict-config)" if more else " (an error with --strict-config)"
    return ConfigError(f"{warnings[0]}{tail}")


class ConfigError(Exception):
    """A configuration that cannot be used, with one message for the person who wrote it.

    ``setting`` names the Settings field at fault when there is one, so that the loader can say which file key or
    option set it.
    """

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.setting = setting

    def __str__(self) -> str:
        return self.message
