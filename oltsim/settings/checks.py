"""The checks of one setting (a row's ``check``: Between, AtLeast, Positive, OneOf, NotEmpty) and those that involve
several settings: the listeners and the data plane's interface names. Each raises ConfigError naming the setting."""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from oltsim.dataplane.names import MAX_NAME, NAME, UniSpecError, uni_interface_name, uni_picks
from oltsim.dataplane.vxlan import MAX_VNI, UNI_VNI_BASE
from oltsim.kafkaaddress import parse_address
from oltsim.settings.errors import ConfigError


@dataclass(frozen=True)
class Between:
    """The value must be between ``low`` and ``high``, both included."""

    low: int | float
    high: int | float

    def __call__(self, name: str, value: Any) -> None:
        between(name, value, self.low, self.high)

    def describe(self) -> str:
        return f"{self.low}..{self.high}"


@dataclass(frozen=True)
class AtLeast:
    """The value must be at least ``low`` (``wording`` replaces "at least LOW" in the message when given)."""

    low: int | float
    wording: str | None = None

    def __call__(self, name: str, value: Any) -> None:
        at_least(name, value, self.low, self.wording)

    def describe(self) -> str:
        return f">= {self.low}"


@dataclass(frozen=True)
class Positive:
    """The value must be greater than 0."""

    def __call__(self, name: str, value: Any) -> None:
        positive(name, value)

    def describe(self) -> str:
        return "> 0"


@dataclass(frozen=True)
class OneOf:
    """The value (read lower-cased) must be one of ``choices``."""

    choices: tuple[str, ...]

    def __call__(self, name: str, value: Any) -> None:
        one_of(name, value, self.choices)

    def describe(self) -> str:
        return ", ".join(self.choices)


@dataclass(frozen=True)
class NotEmpty:
    """The value must not be the empty string."""

    def __call__(self, name: str, value: Any) -> None:
        if not value:
            raise ConfigError(f"{name} must not be empty", name)

    def describe(self) -> str:
        return "not empty"


def between(name: str, value: int | float, low: int, high: int, setting: str | None = None) -> None:
    """ConfigError unless ``low <= value <= high``; ``setting`` names the field when ``name`` does not."""
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high} (got {value})", setting or name)


def at_least(name: str, value: int | float, low: int, wording: str | None = None) -> None:
    """ConfigError unless ``value >= low``."""
    if value < low:
        raise ConfigError(f"{name} must be {wording or f'at least {low}'} (got {value})", name)


def positive(name: str, value: float) -> None:
    """ConfigError unless ``value > 0``."""
    if not value > 0:
        raise ConfigError(f"{name} must be greater than 0 (got {value})", name)


def one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    """ConfigError unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(allowed)} (got {value!r})", name)


def check_listeners(s: Any, listener_fields: Iterable[str]) -> None:
    """Every listener of ``s`` (``listener_fields``) an endpoint string, and no two on one port."""
    used: dict[str, str] = {}
    for name in listener_fields:
        value = getattr(s, name)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{name} must be a Twisted endpoint string such as tcp:50060", name)
        if name == "sadis" and not s.sadis_server:
            continue
        # Port 0 asks the OS for a free port, so equal strings only clash when they name a real port.
        if re.fullmatch(r"(?:tcp6?|ssl):0(:.*)?", value):
            continue
        if value in used:
            raise ConfigError(f"{used[value]} and {name} both listen on {value}", name)
        used[value] = name


def check_interfaces(s: Any) -> None:
    """The data plane's names: --uni-interfaces all, a count or SERIAL/UNI pairs; interface names of at most 15
    letters, digits, '_', '.', '-' (the longest UNI name the OLT's shape makes included)."""
    spec = s.uni_interfaces.strip()
    if spec and spec.lower() != "all" and not (spec.isascii() and spec.isdigit()):
        seen = set()
        try:
            for item, serial, uni in uni_picks(spec):
                if (serial.lower(), uni) in seen:
                    raise ConfigError(f"{item!r} is named twice in the UNI interfaces", "uni_interfaces")
                seen.add((serial.lower(), uni))
        except UniSpecError as error:
            raise ConfigError(f"{error.item!r} is not SERIAL/UNI (for example BBSM00000001/0); the UNI interfaces "
                              f"are all, a count or a comma list of SERIAL/UNI", "uni_interfaces") from None
    names = [("interface_prefix", s.interface_prefix, f"the prefix {s.interface_prefix!r}"),
             ("nni_interface", s.nni_interface, f"the NNI interface {s.nni_interface!r}"),
             ("nni_untagged_interface", s.nni_untagged_interface,
              f"the untagged NNI interface {s.nni_untagged_interface!r}")]
    if spec:
        longest = uni_interface_name(s.interface_prefix, max(s.pon - 1, 0), s.onu, max(s.uni - 1, 0))
        names.append(("interface_prefix", longest, f"the UNI interface {longest}"))
    for field_name, name, what in names:
        if name and not NAME.fullmatch(name):
            raise ConfigError(f"{what} may hold only letters, digits, '_', '.' and '-'", field_name)
        if len(name) > MAX_NAME:
            raise ConfigError(f"{what} would be {len(name)} characters long; Linux allows at most "
                              f"{MAX_NAME} in an interface name", field_name)
    if s.nni_interface and s.nni_interface == s.nni_untagged_interface:
        raise ConfigError("nni_untagged_interface must differ from nni_interface", "nni_untagged_interface")


def check_events(s: Any) -> None:
    """Events on: kafka_address names one broker (host:port)."""
    if not s.enable_events:
        return
    if not s.kafka_address.strip():
        raise ConfigError("kafka_address must name a broker (host:port) when events are enabled", "kafka_address")
    try:
        parse_address(s.kafka_address)
    except ValueError as exc:
        raise ConfigError(f"kafka_address: {exc}", "kafka_address") from None


def check_vxlan(s: Any) -> None:
    """VXLAN attachments: addresses that are addresses, no namespaces (nothing is made on the host), and every VNI
    within 24 bits."""
    for field_name, value in (("vxlan_listen", s.vxlan_listen), ("vxlan_remote", s.vxlan_remote)):
        if value.strip():
            try:
                ipaddress.ip_address(value.strip())
            except ValueError:
                raise ConfigError(f"{field_name} {value!r} is not an IPv4 or IPv6 address", field_name) from None
    if s.attachment.lower() != "vxlan":
        return
    if s.uni_netns:
        raise ConfigError("uni_netns needs TAP interfaces: VXLAN attachments make nothing on the host", "uni_netns")
    highest = s.vxlan_vni_base + UNI_VNI_BASE + max(s.pon * s.onu * s.uni - 1, 1)
    if highest > MAX_VNI:
        raise ConfigError(f"vxlan_vni_base {s.vxlan_vni_base}: the last UNI's VNI would be {highest}, above "
                          f"{MAX_VNI} (VNIs have 24 bits)", "vxlan_vni_base")
