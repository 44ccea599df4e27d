"""The access token the control APIs require: given (``api_token``) or read from a file (``api_token_file``), one
line of visible ASCII, never echoed in an error."""
from __future__ import annotations

import os
import re
from typing import Any

from oltsim.settings.errors import ConfigError

#: What an access token may hold: visible ASCII, since it travels in an HTTP header and in gRPC metadata.
_TOKEN = re.compile(r"[\x21-\x7e]+")


def resolve_api_token(values: dict[str, Any], origins: dict[str, str]) -> None:
    """Make ``api_token`` and ``api_token_file`` one setting, then read the file into ``api_token``.

    The one from the higher-precedence source wins (an option given beats the YAML file); both non-empty from the
    same source is an error. The file holds the token on one line; surrounding whitespace (a Kubernetes secret's
    trailing newline) is dropped.
    """
    if "api_token" in values and "api_token_file" in values:
        token_in_file, path_in_file = "api_token" in origins, "api_token_file" in origins
        if token_in_file == path_in_file:
            if values["api_token"] and values["api_token_file"]:
                raise ConfigError("give api_token or api_token_file, not both", "api_token")
        elif token_in_file:
            values["api_token"] = ""
            origins.pop("api_token", None)
        else:
            values["api_token_file"] = ""
            origins.pop("api_token_file", None)
    path = values.get("api_token_file")
    if path:
        values["api_token"] = read_token_file(path)


def read_token_file(path: str) -> str:
    """The access token held by the file at ``path`` (one line, surrounding whitespace dropped); ConfigError if
    the file cannot be read or holds no token."""
    path = os.path.expanduser(path)
    where = f"api_token_file {path}"
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except FileNotFoundError:
        raise ConfigError(f"{where} does not exist", "api_token_file") from None
    except IsADirectoryError:
        raise ConfigError(f"{where} is a directory, not a file", "api_token_file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where} is not UTF-8 text", "api_token_file") from None
    except OSError as error:
        raise ConfigError(f"{where} cannot be read: {error.strerror or error}", "api_token_file") from None
    token = text.strip()
    if not token:
        raise ConfigError(f"{where} is empty", "api_token_file")
    if not _TOKEN.fullmatch(token):
        raise ConfigError(f"{where} must hold the token on one line, printable ASCII without spaces",
                          "api_token_file")
    return token


def check_api_token(s: Any) -> None:
    """The token of settings ``s`` printable ASCII without spaces; the message never repeats it."""
    if s.api_token and not _TOKEN.fullmatch(s.api_token):
        # The message never repeats the token.
        raise ConfigError("api_token must be printable ASCII without spaces (it is sent in an HTTP header)",
                          "api_token")
