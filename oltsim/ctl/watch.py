"""`oltsimctl events` (a tail of `oltsim.v1.Oltsim/StreamEvents`) and `oltsimctl wait` (until ONUs reach a state).

`wait` polls `GetONUs` (one call gives every ONU with its UNIs and services) every `--interval` seconds until the
ONUs are in the state or `--timeout` passes; a tqdm bar on stderr shows how many are there. The state is one of
the ONU's (`enabled`, `disabled`, ...: compared with its InternalState) or of a service's machines (EAPOL
`eap_response_success_received`, DHCP `dhcp_ack_received`, IGMP `igmp_join_started`, service `disabled`): an ONU
is in a service state when every one of its services that runs that protocol is.
"""
from __future__ import annotations

import datetime
import json
import os
import threading
import time

import grpc
from tqdm import tqdm

from oltsim._proto import bbsim_pb2, oltsim_pb2
from oltsim.api.eventtypes import DEFAULT_TYPES, check_types
from oltsim.api.translate import to_json_dict
from oltsim.ctl.connection import EXIT_CONNECT, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE, CtlError
from oltsim.model.onu import DHCP_MACHINE, EAPOL_MACHINE, IGMP_MACHINE, ONU_MACHINE, SERVICE_MACHINE
from oltsim.suggest import did_you_mean

#: Seconds between two connection attempts of `events --follow`.
RECONNECT_DELAY = 1.0
#: How many ONUs a timeout line names (the rest are counted).
NAMED_ONUS = 10


# ---- events -------------------------------------------------------------------------------------------------

def event_time(seconds: float) -> str:
    """An event's time as UTC ISO 8601 with milliseconds."""
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def event_line(event: oltsim_pb2.Event) -> str:
    """One event on one line: time, type, the identifiers it has (pon, onu, serial, uni), its details by name."""
    parts = [event_time(event.time), event.type]
    for name, value in (("pon", event.pon_id), ("onu", event.onu_id), ("uni", event.uni_id)):
        if value >= 0:
            parts.append(f"{name}={value}")
    if event.onu_serial:
        parts.append(f"serial={event.onu_serial}")
    parts.extend(f"{key}={event.details[key]}" for key in sorted(event.details))
    return " ".join(parts)


def event_json(event: oltsim_pb2.Event) -> str:
    """One event as a JSON line (the REST API's field names)."""
    return json.dumps(to_json_dict(event), sort_keys=True)


#: Seconds `events` with a filter may print nothing before it says, once, that nothing matched yet.
QUIET_NOTICE = 10.0


def event_types(args) -> list[str]:
    """The types `events` asks the daemon for: those of `--type` (repeated or comma-separated; a usage error, with
    the nearest type, for one that is none); every type with `--all` (an empty filter); else DEFAULT_TYPES (state,
    alarm and scenario events)."""
    if args.types:
        try:
            return check_types(t for given in args.types for t in given.split(","))
        except ValueError as exc:
            raise CtlError(f"--type: {exc}", EXIT_USAGE) from None
    return [] if getattr(args, "all", False) else list(DEFAULT_TYPES)


class QuietNotice:
    """One line on `err` when nothing was printed `after` seconds into a filtered `events` (an accepted filter
    that matched nothing so far is told, not silent); `cancel()` at the end. A timer thread, as the stream blocks."""

    def __init__(self, args, err, after: float | None = None):
        self.printed = 0
        self.timer = None
        filters = [f"--type {t}" for t in args.types or ()] + ([f"--onu {args.onu}"] if args.onu else [])
        if filters:
            self.timer = threading.Timer(QUIET_NOTICE if after is None else after, self._say,
                                         (" ".join(filters), err))
            self.timer.daemon = True
            self.timer.start()

    def _say(self, filters: str, err) -> None:
        if not self.printed:
            err.write(f"oltsimctl: no event matched {filters} yet (the filter is valid; waiting, Ctrl-C ends)\n")
            err.flush()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


def events(conn, args, out, err) -> int:
    """Print events as they come until `--count` are printed, `--duration` passes, the stream ends (with
    `--follow`: reconnect instead) or Ctrl-C (exit 0)."""
    request = oltsim_pb2.EventFilter(types=event_types(args), onu_serial=args.onu or "")
    deadline = None if args.duration is None else time.monotonic() + args.duration
    printed = 0
    call = None
    outage = False  # a reconnection is being tried: say so once, not every second
    notice = QuietNotice(args, err)
    try:
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return EXIT_OK
            call = conn.stream("StreamEvents", request, timeout=remaining)
            try:
                for event in call:
                    outage = False
                    if event.dropped:  # what was dropped since the event before: once per gap
                        err.write(f"oltsimctl: {event.dropped} events dropped before this one (reading too slowly)\n")
                    out.write((event_json(event) if args.output == "json" else event_line(event)) + "\n")
                    out.flush()
                    printed += 1
                    notice.printed = printed
                    if args.count and printed >= args.count:
                        return EXIT_OK
                if not args.follow:
                    return EXIT_OK  # the server ended the stream
                if not outage:
                    err.write("oltsimctl: the event stream ended; reconnecting\n")
                outage = True
            except grpc.RpcError as exc:
                if deadline is not None and time.monotonic() >= deadline - 0.05 \
                        and exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    return EXIT_OK
                failure = conn.error(exc)
                if not args.follow or failure.code != EXIT_CONNECT and exc.code() != grpc.StatusCode.UNAVAILABLE:
                    raise failure from None
                if not outage:
                    err.write(f"oltsimctl: {failure}; reconnecting every {RECONNECT_DELAY:g}s\n")
                outage = True
            finally:
                call.cancel()
            pause = RECONNECT_DELAY if deadline is None else min(RECONNECT_DELAY, deadline - time.monotonic())
            if pause > 0:
                time.sleep(pause)
    except KeyboardInterrupt:
        if call is not None:
            call.cancel()
        return EXIT_OK
    finally:
        notice.cancel()


# ---- wait ---------------------------------------------------------------------------------------------------

#: Service-level machines: (machine, the Service field holding its state, the Service flag saying it runs).
_SERVICE_MACHINES = ((EAPOL_MACHINE, "EapolState", "NeedsEapol"), (DHCP_MACHINE, "DhcpState", "NeedsDhcp"),
                     (IGMP_MACHINE, "IGMPState", "NeedsIgmp"), (SERVICE_MACHINE, "InternalState", None))


def known_states() -> list[str]:
    """Every state `wait --state` accepts."""
    states = set(ONU_MACHINE.states)
    for machine, _, _ in _SERVICE_MACHINES:
        states |= machine.states
    return sorted(states)


class StateCheck:
    """Whether an ONU is in `state`: an ONU state is its InternalState; a service state is that of each of its
    services that runs the protocol (ONUs without such a service take no part)."""

    def __init__(self, state: str):
        self.state = state
        self.field = self.flag = None
        if state not in ONU_MACHINE.states:
            for machine, field, flag in _SERVICE_MACHINES:
                if state in machine.states:
                    self.field, self.flag = field, flag
                    break
            else:
                hint = did_you_mean(state, known_states())
                raise CtlError(f"unknown state {state!r}{hint}; known states: {', '.join(known_states())}",
                               EXIT_USAGE)

    def services(self, onu: bbsim_pb2.ONU) -> list:
        """The services of `onu` that take part (all of its services for the service machine's own states)."""
        services = [service for uni in onu.unis for service in uni.services] or list(onu.services)
        return [s for s in services if self.flag is None or getattr(s, self.flag)]

    def takes_part(self, onu: bbsim_pb2.ONU) -> bool:
        """Whether `onu` counts at all: always for an ONU state, when it has such a service for a service state."""
        return self.field is None or bool(self.services(onu))

    def status(self, onu: bbsim_pb2.ONU) -> tuple[bool, str]:
        """(in the state, where it is). For an ONU state, where is the ONU's state; for a service state, the ONU's
        state then its subscribers' progress: `enabled, hsia: eap_response_success_received, dhcp_discovery_sent`
        (progress())."""
        if self.field is None:
            return onu.InternalState == self.state, onu.InternalState
        services = self.services(onu)
        if not services:
            return False, f"{onu.InternalState}, " + (f"no service with {self.flag}" if self.flag else "no service")
        reached = all(getattr(service, self.field) == self.state for service in services)
        return reached, f"{onu.InternalState}, {self.progress(services)}"

    def progress(self, services) -> str:
        """Each service's progress, `name: state, state`: its EAPOL state if it runs EAPOL, its DHCP state if it
        runs DHCP, its IGMP state when an IGMP state is waited for (`created`, the first state of each, as `eapol
        created`, `dhcp created`, ...), its own state when a service state is waited for (or when it runs none of
        these). Services of one name in the same place are named once; of one name in different
        places, with their UNI (`hsia uni 0: ...; hsia uni 1: ...`)."""
        entries: list[tuple[str, int, str]] = []
        for service in services:
            states = [service.InternalState] if self.field == "InternalState" else []
            for flag, field, protocol in (("NeedsEapol", "EapolState", "eapol"), ("NeedsDhcp", "DhcpState", "dhcp"),
                                          ("NeedsIgmp", "IGMPState", "igmp")):
                if getattr(service, flag) and (field != "IGMPState" or self.field == field):
                    state = getattr(service, field)
                    # `created` is every machine's first state: say whose.
                    states.append(f"{protocol} {state}" if state == "created" else state)
            entries.append((service.Name or "service", service.UniId, ", ".join(states or [service.InternalState])))
        shown: dict[str, set[str]] = {}
        for name, _, text in entries:
            shown.setdefault(name, set()).add(text)
        parts: list[str] = []
        for name, uni, text in entries:
            label = name if len(shown[name]) == 1 else f"{name} uni {uni}"
            part = f"{label}: {text}"
            if part not in parts:
                parts.append(part)
        return ", ".join(parts)


def _terminal_size(stream) -> tuple[int, int]:
    """(columns, lines) of the terminal; 80x24 where it reports none (a fresh pseudo-terminal says 0x0, and tqdm
    then draws nothing)."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return 80, 24
    return size.columns if size.columns > 0 else 80, size.lines if size.lines > 0 else 24


def progress_bar(args, err, **options) -> tqdm:
    """A tqdm bar on `err` (`options` are tqdm's: total, desc, unit, bar_format, ...) for `wait` and `scenario run`:
    off with `-q` and when `err` is not a terminal; sized to the terminal, 80x24 where it reports 0x0."""
    quiet = args.quiet or not (hasattr(err, "isatty") and err.isatty())
    columns, lines = _terminal_size(err) if not quiet else (None, None)
    return tqdm(file=err, disable=quiet, leave=True, ncols=columns, nrows=lines, **options)


def _progress(args, err, state: str):
    return progress_bar(args, err, total=0, desc=f"ONUs in {state}", unit="onu",
                        bar_format="{desc}: {n}/{total} |{bar}| {elapsed}")


def wait(conn, args, out, err) -> int:
    """Poll until every ONU (or those of `--onus`) is in `--state`; EXIT_TIMEOUT with a line saying where they
    are when `--timeout` passes first. Connection failures are retried until then (the daemon may be starting)."""
    check = StateCheck(args.state)
    wanted = [serial for item in args.onus or () for serial in item.split(",") if serial]
    deadline = time.monotonic() + args.timeout
    last_failure = None
    statuses: dict[str, tuple[bool, str]] = {}
    with _progress(args, err, args.state) as bar:
        while True:
            remaining = deadline - time.monotonic()
            try:
                onus = conn.call("GetONUs", bbsim_pb2.Empty(), timeout=max(0.1, min(conn.settings.timeout,
                                                                                    remaining))).items
            except CtlError as failure:
                if failure.code != EXIT_CONNECT:
                    raise
                last_failure, onus = failure, None
            if onus is not None:
                last_failure = None
                # A serial's hex may be typed in either case (BBSM000A010B names BBSM000a010b).
                by_serial = {onu.SerialNumber.lower(): onu for onu in onus}
                unknown = [serial for serial in wanted if serial.lower() not in by_serial]
                if unknown:
                    raise CtlError(f"no ONU {', '.join(unknown)} on this OLT", EXIT_USAGE)
                selected = [by_serial[s.lower()] for s in wanted] if wanted else \
                    [o for o in onus if check.takes_part(o)]
                if not selected and not wanted and onus:
                    needed = f"a service with {check.flag} set" if check.flag else "a service"
                    raise CtlError(f"no ONU has {needed}, none can reach {args.state}", EXIT_USAGE)
                statuses = {onu.SerialNumber: check.status(onu) for onu in selected}
                done = sum(1 for ok, _ in statuses.values() if ok)
                bar.total, bar.n = len(statuses), done
                bar.refresh()
                if done == len(statuses):
                    bar.close()
                    _summary(args, out, statuses, True)
                    return EXIT_OK
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                bar.close()
                if last_failure is not None:
                    raise CtlError(f"timed out after {args.timeout:g}s: {last_failure}", EXIT_TIMEOUT)
                _summary(args, out, statuses, False)
                err.write(f"oltsimctl: timed out after {args.timeout:g}s: {_short(statuses, args.state)}\n")
                return EXIT_TIMEOUT
            time.sleep(min(args.interval, remaining))


def _summary(args, out, statuses: dict, reached: bool) -> None:
    done = sorted(serial for serial, (ok, _) in statuses.items() if ok)
    if args.output == "json":
        out.write(json.dumps({"state": args.state, "reached": reached, "total": len(statuses), "in_state": len(done),
                              "onus": {serial: where for serial, (_, where) in sorted(statuses.items())}},
                             indent=2) + "\n")
    elif reached:
        out.write(f"{len(done)} of {len(statuses)} ONUs in {args.state}\n")


def _short(statuses: dict, state: str) -> str:
    """`2 of 4 ONUs in dhcp_ack_received; not yet: BBSM00000002 enabled, hsia: eap_response_success_received,
    dhcp_discovery_sent; ...` (each ONU where it is) with at most NAMED_ONUS ONUs named."""
    others = sorted((serial, where) for serial, (ok, where) in statuses.items() if not ok)
    named = "; ".join(f"{serial} {where}" for serial, where in others[:NAMED_ONUS])
    more = f" and {len(others) - NAMED_ONUS} more" if len(others) > NAMED_ONUS else ""
    return f"{len(statuses) - len(others)} of {len(statuses)} ONUs in {state}; not yet: {named}{more}"
