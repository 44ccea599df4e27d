"""`oltsimctl`: bbsimctl's commands and output against oltsim's v1 gRPC API (`bbsim.BBSim`, `oltsim.v1.Oltsim`),
with what bbsimctl cannot do: TLS, the access token, JSON output, an event tail and a wait for ONU states.

`oltsim.ctl.oltsimctl` parses the command line, `oltsim.ctl.settings` gathers the connection settings (flags, environment,
config file), `oltsim.ctl.connection` holds the channel and turns gRPC failures into one-line errors,
`oltsim.ctl.tables` lays out bbsimctl's tables, `oltsim.ctl.subcommands` runs bbsimctl's commands and
`oltsim.ctl.watch` the `events` and `wait` commands. See docs/oltsimctl.md.
"""

import os

# gRPC's core logs connection and TLS failures to stderr on its own; oltsimctl reports each failure as one line
# (the call's status) instead. Set GRPC_VERBOSITY to see the core's lines again.
#: whether the user asked for gRPC's core lines (then oltsimctl leaves file descriptor 2 alone, see cli.run)
USER_GRPC_VERBOSITY = "GRPC_VERBOSITY" in os.environ
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
