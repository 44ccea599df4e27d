"""One row of the table of settings (oltsim.config.SETTINGS): a setting's field, kind, default, help, option, YAML
key, `bbsim` flag and check, and the kinds a value may have."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oltsim.settings.checks import AtLeast, Between, NotEmpty, OneOf, Positive

#: how a value of each kind is read (from the YAML file, an option, a `bbsim` flag) and its Python type:
#: ``endpoint`` a listener (BBSim's "host:port" or a Twisted endpoint string), ``secret`` a string never echoed in
#: an error or repr, ``path`` a file name that the YAML file gives relative to its own folder, ``rate`` bit/s (an
#: integer, or with a k, M or G suffix). The file rows
#: (``config``, ``services``, ``pon-ranges``) are read by load_settings itself and make no scalar field.
KIND_TYPES: dict[str, type] = {"int": int, "float": float, "bool": bool, "str": str, "endpoint": str,
                               "secret": str, "path": str, "rate": int}
FILE_KINDS = ("config", "services", "pon-ranges")


@dataclass(frozen=True)
class Setting:
    """One row of the table of settings: the Settings ``field`` and how a value is read (``kind``), its
    ``default``, the ``help`` shown by ``twistd oltsim --help`` and docs/options.md (``{default}`` in it is replaced
    by the default), and where a user sets it: ``option`` (``twistd oltsim --OPTION``, "" for none; a bool setting
    is a flag), ``yaml`` (``bbsim.KEY`` or ``olt.KEY``, "" for none), ``bbsim`` (the ``bbsim -FLAG`` of BBSim's
    command line, "" for none; ``bbsim_default`` is the default `bbsim -h` shows where BBSim's differs from the
    value oltsim's row holds), and ``check``, the per-field check validate() applies."""

    field: str
    kind: str
    default: Any
    help: str
    option: str = ""
    yaml: str = ""
    bbsim: str = ""
    check: Between | AtLeast | Positive | OneOf | NotEmpty | None = None
    short: str | None = None
    bbsim_default: str | None = None

    @property
    def help_text(self) -> str:
        """The help with its default written in."""
        return self.help.format(default=self.default)

    @property
    def is_flag(self) -> bool:
        """Whether the option is a twistd flag (takes no value)."""
        return self.kind == "bool"

    @property
    def shown_default(self) -> str:
        """The default as docs/options.md shows it."""
        if self.kind == "bool":
            return "on" if self.default else "off"
        if self.default in ("", None):
            return ""
        return f"`{self.default}`" if isinstance(self.default, str) else str(self.default)

    @property
    def flag_default(self) -> str:
        """The default `bbsim -h` shows: BBSim's own when it differs, else this row's in Go's words (``false``,
        ``:50060`` for ``tcp:50060``)."""
        if self.bbsim_default is not None:
            return self.bbsim_default
        if self.kind == "bool":
            return "true" if self.default else "false"
        if self.kind == "endpoint":
            return ":" + self.default.split(":", 1)[1]
        return "" if self.default is None else str(self.default)
