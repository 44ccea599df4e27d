"""Where `oltsimctl` connects and how: server, TLS files, access token and call deadline.

Each setting comes from, in order of precedence: its command-line flag, the environment (`OLTSIMCTL_SERVER`,
`OLTSIM_TOKEN`), the config file (`--config`, else `OLTSIMCTL_CONFIG`, else `~/.oltsim/config` when it exists),
then the default. Invoked as `bbsimctl` (the `BBSIMCTL` profile) it reads bbsimctl's names instead:
`BBSIMCTL_SERVER`, `BBSIMCTL_CONFIG` and `~/.bbsim/config`, and a config file that does not exist is skipped, as
bbsimctl skips it. The config file is YAML in bbsimctl's shape, so a `~/.bbsim/config` works as one:

    server: localhost:50070
    grpc:
      timeout: 10s
    tls:
      enabled: true
      ca_cert: ca.pem          # relative names are relative to the config file
      client_cert: client.pem
      client_key: client.key
      server_name: olt.example
    token_file: token
    dmi_server: localhost:50075    # the `dmi` commands' endpoint (BBSim's bbsim.BBsim_dmi on the DMI port)

The `dmi` commands call the DMI port, not the v1 one: `--dmi-server`, else `OLTSIMCTL_DMI_SERVER` (as bbsimctl:
`BBSIMCTL_DMI_SERVER`), else `dmi_server` of the config file, else localhost:50075, where bbsimctl 1.16.8 always
calls. That port is plain TCP without a token (as VOLTHA's device manager reaches it), so neither TLS nor the
token apply to it.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from oltsim.suggest import did_you_mean

DEFAULT_SERVER = "localhost:50070"
DEFAULT_DMI_SERVER = "localhost:50075"
DEFAULT_TIMEOUT = 10.0
ENV_CONFIG = "OLTSIMCTL_CONFIG"
ENV_SERVER = "OLTSIMCTL_SERVER"
ENV_DMI_SERVER = "OLTSIMCTL_DMI_SERVER"
ENV_TOKEN = "OLTSIM_TOKEN"


@dataclass(frozen=True)
class Profile:
    """Which client the command line is: its name in messages, the environment variables and default config file
    it reads, and how it exits. `OLTSIMCTL` is oltsimctl's own; `BBSIMCTL` is the same code standing in for BBSim
    1.16.8's `bbsimctl`, where scripts expect bbsimctl's names and exit statuses."""

    prog: str
    env_server: str
    env_config: str
    config_dir: str                  # the default config file is ~/<config_dir>/config
    named_config_required: bool      # a config file named by flag or environment must exist
    every_failure_exits_1: bool      # bbsimctl's log.Fatalf and go-flags errors all exit 1
    igmp_failure_exits_0: bool       # bbsimctl's `onu igmp` only logs a refused call
    env_dmi_server: str = ENV_DMI_SERVER
    go_flags_arguments: bool = False  # extra arguments ignored and global options anywhere, as go-flags parses


OLTSIMCTL = Profile("oltsimctl", ENV_SERVER, ENV_CONFIG, ".oltsim", named_config_required=True,
                    every_failure_exits_1=False, igmp_failure_exits_0=False)
BBSIMCTL = Profile("bbsimctl", "BBSIMCTL_SERVER", "BBSIMCTL_CONFIG", ".bbsim", named_config_required=False,
                   every_failure_exits_1=True, igmp_failure_exits_0=True, env_dmi_server="BBSIMCTL_DMI_SERVER",
                   go_flags_arguments=True)

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_TOP_KEYS = {"server", "grpc", "tls", "token_file", "dmi_server"}
_TLS_KEYS = {"enabled", "ca_cert", "client_cert", "client_key", "server_name"}


class SettingsError(Exception):
    """A setting that cannot be used (unreadable file, bad value); the message names it."""


def parse_duration(value) -> float:
    """Seconds from a number or a Go duration (`10s`, `1m30s`, `500ms`), as bbsimctl's `grpc.timeout` is written."""
    if isinstance(value, bool):
        raise SettingsError(f"not a duration: {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            parts = _DURATION.findall(text)
            if not parts or "".join(number + unit for number, unit in parts) != text:
                raise SettingsError(f"not a duration: {value!r} (examples: 10, 10s, 1m30s, 500ms)") from None
            seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
    if not seconds > 0:
        raise SettingsError(f"a duration must be positive (got {value!r})")
    return seconds


@dataclass
class Settings:
    """The resolved connection settings; `token` is the secret itself and never printed (see `describe`)."""

    server: str = DEFAULT_SERVER
    timeout: float = DEFAULT_TIMEOUT
    tls: bool = False
    ca_cert: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    server_name: str | None = None
    token: str | None = field(default=None, repr=False)
    token_source: str = "none"
    config_file: Path | None = None
    dmi_server: str = DEFAULT_DMI_SERVER

    def describe(self) -> dict:
        """The settings as `oltsimctl config` prints them: where the token came from, never the token."""
        return {
            "server": self.server,
            "grpc": {"timeout": f"{self.timeout:g}s"},
            "tls": {"enabled": self.tls, "ca_cert": _text(self.ca_cert), "client_cert": _text(self.client_cert),
                    "client_key": _text(self.client_key), "server_name": self.server_name},
            "token": self.token_source,
            "config_file": _text(self.config_file),
            "dmi_server": self.dmi_server,
        }


def _text(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _read_config(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise SettingsError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise SettingsError(f"config file {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"config file {path} must be a mapping")
    unknown = sorted(map(str, set(data) - _TOP_KEYS))
    if unknown:
        hint = did_you_mean(unknown[0], _TOP_KEYS) if len(unknown) == 1 else ""
        raise SettingsError(f"config file {path}: unknown key{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(unknown)}{hint} (known: {', '.join(sorted(_TOP_KEYS))})")
    tls = data.get("tls") or {}
    if not isinstance(tls, dict) or set(tls) - _TLS_KEYS:
        raise SettingsError(f"config file {path}: tls takes {', '.join(sorted(_TLS_KEYS))}")
    grpc_section = data.get("grpc") or {}
    if not isinstance(grpc_section, dict) or set(grpc_section) - {"timeout"}:
        raise SettingsError(f"config file {path}: grpc takes timeout")
    return data


def _config_path(flag: str | None, environ, profile: Profile) -> tuple[Path | None, bool]:
    """(the config file, whether it must exist): named ones must (not for bbsimctl), the default is optional."""
    if flag:
        return Path(flag).expanduser(), profile.named_config_required
    if environ.get(profile.env_config):
        return Path(environ[profile.env_config]).expanduser(), profile.named_config_required
    home = environ.get("HOME")
    return (Path(home) if home else Path("~").expanduser()) / profile.config_dir / "config", False


def read_token_file(path: Path) -> str:
    """The token in `path`, surrounding whitespace removed; an empty or unreadable file is an error."""
    try:
        token = Path(path).expanduser().read_text().strip()
    except OSError as exc:
        raise SettingsError(f"cannot read token file {path}: {exc.strerror or exc}") from None
    if not token:
        raise SettingsError(f"token file {path} is empty")
    return token


def resolve(args, environ=None, profile: Profile = OLTSIMCTL) -> Settings:
    """Settings from the parsed global flags (`args`, an argparse namespace), the environment and the config
    file, in that order of precedence; `profile` names the environment variables and the default config file."""
    environ = os.environ if environ is None else environ
    path, required = _config_path(getattr(args, "config", None), environ, profile)
    config: dict = {}
    if path is not None and (required or path.is_file()):
        config = _read_config(path)
    else:
        path = None
    base = path.parent if path is not None else Path.cwd()

    def config_file(value) -> Path | None:
        return None if value in (None, "") else (base / Path(str(value)).expanduser())

    tls_config = config.get("tls") or {}
    settings = Settings(config_file=path)
    settings.server = (getattr(args, "server", None) or environ.get(profile.env_server) or config.get("server")
                       or DEFAULT_SERVER)
    settings.dmi_server = (getattr(args, "dmi_server", None) or environ.get(profile.env_dmi_server)
                           or config.get("dmi_server") or DEFAULT_DMI_SERVER)
    timeout = getattr(args, "call_timeout", None)
    if timeout is None:
        timeout = (config.get("grpc") or {}).get("timeout", DEFAULT_TIMEOUT)
    settings.timeout = parse_duration(timeout)
    settings.ca_cert = _flag_path(args, "ca_cert") or config_file(tls_config.get("ca_cert"))
    settings.client_cert = _flag_path(args, "client_cert") or config_file(tls_config.get("client_cert"))
    settings.client_key = _flag_path(args, "client_key") or config_file(tls_config.get("client_key"))
    settings.server_name = getattr(args, "server_name", None) or tls_config.get("server_name") or None
    settings.tls = bool(getattr(args, "tls", False) or tls_config.get("enabled")
                        or settings.ca_cert or settings.client_cert or settings.server_name)
    if (settings.client_cert is None) != (settings.client_key is None):
        raise SettingsError("--client-cert and --client-key go together")

    token_file, token = getattr(args, "token_file", None), getattr(args, "token", None)
    if token_file and token:
        raise SettingsError("give --token-file or --token, not both")
    if token_file:
        settings.token, settings.token_source = read_token_file(Path(token_file)), f"file {token_file}"
    elif token:
        settings.token, settings.token_source = token.strip(), "--token"
    elif environ.get(ENV_TOKEN):
        settings.token, settings.token_source = environ[ENV_TOKEN].strip(), f"environment {ENV_TOKEN}"
    elif config.get("token_file"):
        file = config_file(config["token_file"])
        settings.token, settings.token_source = read_token_file(file), f"file {file}"
    if settings.token is not None and not settings.token:
        raise SettingsError("the access token is empty")
    return settings


def _flag_path(args, name: str) -> Path | None:
    value = getattr(args, name, None)
    return Path(value).expanduser() if value else None
