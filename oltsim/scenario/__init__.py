"""Fault scenarios (docs/scenarios.md): a YAML file of timed steps played on the OLT's clock.

`schema` parses and validates a file (pure), `actions` maps each action to the control API's use cases and
their undo, `runner` plays one scenario at a time and reports each step as an event."""
