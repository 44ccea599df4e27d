"""`oltsim-platform`: classify an update, print its runbook, update a controller app, update the OLT agent.

`main(argv)` parses the command line. `classify` and `plan` are pure and return their exit code; `app-update`
and `agent-update` run on the reactor under `twisted.internet.task.react`, which exits the process with the
procedure's exit code (see docs/platform.md). Progress goes to stderr, results to stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from oltsim.platform import catalog, classify, plan

PROG = "oltsim-platform"


def _die(message: str, code: int = 1) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return code


# ---- classify ---------------------------------------------------------------------------------------------

def cmd_classify(args) -> int:
    """Print the class of an update and the rule that decided it."""
    try:
        decision = classify.classify(args.component, args.change or (), kind=args.kind)
    except (catalog.UnknownComponent, classify.BadChange) as exc:
        return _die(str(exc), 2)
    sys.stdout.write(json.dumps(decision.as_dict(), indent=2) + "\n" if args.json else decision.text())
    return 0


# ---- plan -------------------------------------------------------------------------------------------------

def _values_from_args(args) -> dict:
    given = {}
    if args.values:
        given.update(plan.read_values_file(args.values))
    lists: dict[str, list] = {}
    for item in args.set or ():
        key, sep, value = item.partition("=")
        if not sep:
            raise plan.BadValues(f"--set takes KEY=VALUE, not {item!r}")
        key = key.strip().replace("-", "_")
        spec = plan.KEYS_BY_NAME.get(key)
        value = plan.parse_set_value(value)  # `[a, b]` is a list, as in the values file
        if spec is not None and spec.multi:
            # repeated --set of a list key builds the list
            lists.setdefault(key, []).extend(value if isinstance(value, list) else [value])
        else:
            given.update(plan.load_values({key: value}))
    given.update(lists)
    for key in plan.KEYS:
        value = getattr(args, f"v_{key.name}", None)
        if value is not None:
            given.update(plan.load_values({key.name: value}))
    return plan.load_values(given)


def cmd_plan(args) -> int:
    """Print a runbook with its commands filled in."""
    try:
        if args.runbook and args.classify:
            return _die("give a runbook or --classify, not both", 2)
        if args.classify:
            name = classify.classify(args.classify, args.change or ()).runbook
        elif args.runbook:
            name = args.runbook
        else:
            return _die("give a runbook (" + ", ".join(plan.RUNBOOKS) + ") or --classify COMPONENT", 2)
        rendered = plan.render(name, _values_from_args(args))
    except (plan.UnknownRunbook, plan.BadValues, catalog.UnknownComponent, classify.BadChange, ValueError,
            OSError) as exc:
        return _die(str(exc), 2)
    sys.stdout.write(rendered.json() if args.json else rendered.text())
    return 0


# ---- app-update -------------------------------------------------------------------------------------------

def _app_request(args):
    from oltsim.platform.appupdate import Timing, UpdateRequest, expected_version
    from oltsim.platform.archive import BadArchive, read_archive
    from oltsim.platform.controller import parse_target

    target = parse_target(args.controller, args.user, args.password, args.ca)
    data = Path(args.oar).read_bytes()
    try:
        info = read_archive(data)
    except BadArchive as exc:
        raise ValueError(f"{args.oar}: {exc}") from None
    app = catalog.app_name(args.app)
    version = expected_version(info, app, args.expect_version)
    watch = None
    if args.no_watch:
        watch = ()
    elif args.watch:
        watch = tuple(catalog.app_name(w) for w in args.watch)
    for name, value in (("--poll-interval", args.poll_interval), ("--remove-timeout", args.remove_timeout),
                        ("--ready-timeout", args.ready_timeout), ("--request-timeout", args.request_timeout)):
        if not value > 0:
            raise ValueError(f"{name} must be positive")
    timing = Timing(args.poll_interval, args.remove_timeout, args.ready_timeout)
    request = UpdateRequest(app, data, info, version, Path(args.backup_dir), watch, timing, args.conflict_retries)
    return target, request


def cmd_app_update(args) -> int:
    """Run (or with --dry-run, list) the verified controller-app update."""
    from oltsim.platform.appupdate import EXIT_UNCHANGED, dry_run_json, dry_run_text
    try:
        target, request = _app_request(args)
    except (ValueError, OSError) as exc:
        return _die(f"nothing changed: {exc}", EXIT_UNCHANGED)
    if args.dry_run:
        text = dry_run_json if args.json else dry_run_text
        sys.stdout.write(text(target, request, args.oar))
        return 0
    from twisted.internet.task import react
    react(_run_app_update, (target, request, args))
    return 0  # not reached: react exits


def _run_app_update(reactor, target, request, args):
    from twisted.internet.defer import ensureDeferred

    from oltsim.platform.appupdate import EXIT_UNCHANGED, AppUpdate
    from oltsim.platform.controller import ApplicationsClient, make_http_client
    from oltsim.platform.progress import Progress

    async def run():
        try:
            http = make_http_client(reactor, target)
        except (OSError, ValueError) as exc:
            raise SystemExit(_die(f"nothing changed: CA file: {exc}", EXIT_UNCHANGED))
        client = ApplicationsClient(http, target, reactor, timeout=args.request_timeout)
        sys.stderr.write(f"app-update {request.app} -> {request.expected_version} on {target.display()}\n")
        report = await AppUpdate(client, reactor, Progress(reactor), request).run()
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n" if args.json else report.text())
        sys.stdout.flush()
        raise SystemExit(report.exit_code)
    return ensureDeferred(run())


# ---- agent-update -----------------------------------------------------------------------------------------

def cmd_agent_update(args) -> int:
    """Install a new oltsim package on this host and verify the restart."""
    from twisted.internet.task import react
    react(_run_agent_update, (args,))
    return 0  # not reached


def _run_agent_update(reactor, args):
    from twisted.internet.defer import ensureDeferred

    from oltsim.platform.agentupdate import AgentOptions, AgentUpdate, Host, OpenoltProbe, run_command
    from oltsim.platform.progress import Progress

    async def run():
        options = AgentOptions(os.path.abspath(args.deb), args.address, args.service, args.timeout,
                               args.poll_interval)
        try:
            probe = OpenoltProbe(args.address, ca_file=args.ca)
        except OSError as exc:
            raise SystemExit(_die(f"refused: CA file: {exc}", 1))
        runner = AgentUpdate(options, Host.probe(), os.path.isfile(options.deb), probe, run_command, reactor,
                             Progress(reactor))
        report = await runner.run()
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n" if args.json else report.text())
        sys.stdout.flush()
        raise SystemExit(report.exit_code)
    return ensureDeferred(run())


# ---- parser -----------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    """The argument parser with its four subcommands."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Update procedures of the platform around the OLT (abstraction stack, controller "
        "and its apps, key-value store, message bus, OLT agent): classify, plan, app-update, agent-update. Numbers "
        "such as 9.4 name the procedures of the platform's update document; docs/platform.md lists them.")
    sub = parser.add_subparsers(dest="command", required=True)
    changes = ", ".join(classify.CHANGES)

    p = sub.add_parser("classify", help="minor, major or not-in-service, with the rule that decides")
    p.add_argument("component", help="olt (the OLT, i.e. its agent), stack component (rw-core, ofagent, "
                   "openolt-adapter, openonu-adapter), controller app (olt-app or org.opencord.olt, sadis, aaa, "
                   "...), controller (onos), kv-store (etcd), message-bus; case-insensitive")
    p.add_argument("--change", action="append", choices=list(classify.CHANGES), metavar="CHANGE",
                   help=f"what changed (repeatable): {changes}; none means a bug fix")
    p.add_argument("--kind", choices=catalog.KINDS, help="the component's kind, for names the catalog lacks")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_classify)

    p = sub.add_parser("plan", help="a runbook (procedures 9.3 to 9.9) with concrete commands")
    p.add_argument("runbook", nargs="?", help=", ".join(plan.RUNBOOKS) + " (or its procedure number, 9.3 to 9.7)")
    p.add_argument("--classify", metavar="COMPONENT", help="choose the runbook by classifying this component")
    p.add_argument("--change", action="append", choices=list(classify.CHANGES), metavar="CHANGE",
                   help="with --classify: what changed (repeatable)")
    p.add_argument("--values", metavar="FILE", help="YAML file of values (flat mapping; keys as the flags)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="one value (repeatable); a list as in the values file: subscribers=[a, b]")
    p.add_argument("--json", action="store_true", help="print JSON")
    values = p.add_argument_group("values (flags win over --set, which wins over --values)")
    for key in plan.KEYS:
        flag = "--" + key.name.replace("_", "-")
        default = f" [default: {key.default}]" if key.default else ""
        if key.multi:
            values.add_argument(flag, dest=f"v_{key.name}", action="append", metavar="VALUE",
                                help=key.help + " (repeatable)")
        else:
            values.add_argument(flag, dest=f"v_{key.name}", metavar="VALUE", help=key.help + default)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("app-update", help="replace a controller app, verify it, roll back on failure (9.4)")
    p.add_argument("--controller", required=True, metavar="URL",
                   help="controller REST URL, e.g. http://karaf:karaf@127.0.0.1:8181 (root /onos/v1 if no path)")
    p.add_argument("--app", required=True, help="app name (org.opencord.olt) or short name (olt)")
    p.add_argument("--oar", required=True, metavar="FILE", help="the new app archive")
    p.add_argument("--expect-version", metavar="VERSION", help="refuse unless the archive has this version")
    p.add_argument("--user", help="controller user (wins over the URL's)")
    p.add_argument("--password", help="controller password (wins over the URL's)")
    p.add_argument("--ca", metavar="FILE", help="PEM CA bundle to verify the controller's HTTPS certificate")
    p.add_argument("--watch", action="append", metavar="APP",
                   help="app that must stay ACTIVE (repeatable; default: every other ACTIVE app)")
    p.add_argument("--no-watch", action="store_true", help="watch no other app")
    p.add_argument("--backup-dir", default=".", metavar="DIR", help="where the rollback archive is saved [.]")
    p.add_argument("--poll-interval", type=float, default=1.0, metavar="S", help="seconds between polls [1]")
    p.add_argument("--remove-timeout", type=float, default=30.0, metavar="S",
                   help="seconds to wait for the app to be gone [30]")
    p.add_argument("--ready-timeout", type=float, default=120.0, metavar="S",
                   help="seconds to wait for ACTIVE, the version and health ready [120]")
    p.add_argument("--request-timeout", type=float, default=10.0, metavar="S", help="seconds per HTTP request [10]")
    p.add_argument("--conflict-retries", type=int, default=1, metavar="N",
                   help="delete again and retry the install this many times on 409 [1]")
    p.add_argument("--dry-run", action="store_true", help="print the calls, send nothing")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_app_update)

    p = sub.add_parser("agent-update", help="install a new oltsim .deb here and verify the restart (minor OLT-agent "
                       "update, 9.9)")
    p.add_argument("--deb", required=True, metavar="FILE", help="the new oltsim package")
    p.add_argument("--address", default="127.0.0.1:50060", metavar="HOST:PORT",
                   help="the OpenOLT gRPC address of this oltsim [127.0.0.1:50060]")
    p.add_argument("--service", default="oltsim", help="the systemd service [oltsim]")
    p.add_argument("--ca", metavar="FILE", help="PEM CA bundle, if the OpenOLT listener serves TLS (ssl:...)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="seconds to wait for the new agent [120]")
    p.add_argument("--poll-interval", type=float, default=1.0, metavar="S", help="seconds between checks [1]")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_agent_update)
    return parser


def main(argv=None) -> int:
    """Run the command line; returns the exit code (app-update and agent-update exit through react)."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
