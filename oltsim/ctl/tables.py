"""bbsimctl's two table layouts, drawn with tabulate, and Go's one-line rendering of protobuf messages.

`columns` is the layout of bbsimctl's `format.Format` tables (Go's tabwriter: upper-case headers, every column as
wide as its widest cell plus four spaces, the last column not padded). `box` is the layout of its tablewriter
tables (flows, traffic schedulers, alarm lists): ASCII boxes, headers upper-cased with `_` and `.` as spaces and
centred, numbers right-aligned, long cells wrapped at 30 characters.
"""
from __future__ import annotations

import json
import re

from google.protobuf.descriptor import FieldDescriptor
from tabulate import DataRow, TableFormat, tabulate

#: Go's tabwriter as cordctl's format package sets it up: cells padded by four spaces, no rules.
_TABWRITER = TableFormat(lineabove=None, linebelowheader=None, linebetweenrows=None, linebelow=None,
                         headerrow=DataRow("", "    ", ""), datarow=DataRow("", "    ", ""), padding=0,
                         with_header_hide=None)
#: tablewriter's default column width before it wraps a cell.
WRAP_WIDTH = 30
_NUMBER = re.compile(r"-?\d+")
_RULE = re.compile(r"^\+(-+\+)+$")


def columns(headers: list[str], rows: list[list]) -> str:
    """bbsimctl's tabwriter table: headers then one line per row, columns four spaces apart."""
    # The headers go in as the first row: tabulate widens header columns by two spaces, tabwriter does not.
    table = tabulate([list(headers), *([cell_text(cell) for cell in row] for row in rows)], tablefmt=_TABWRITER,
                     disable_numparse=True, stralign="left")
    return "\n".join(line.rstrip() for line in table.splitlines()) + "\n"


def box_header(name: str) -> str:
    """tablewriter's header: upper case, `_` and `.` shown as spaces."""
    return re.sub(r"[_.]", " ", name).upper()


def box(headers: list[str], rows: list[list], row_lines: bool = True, wrap: tuple[int, ...] = ()) -> str:
    """A tablewriter box; `row_lines` draws a rule between rows, `wrap` lists the columns wrapped at 30."""
    texts = [[cell_text(cell) for cell in row] for row in rows]
    align = ["right" if texts and all(_NUMBER.fullmatch(row[i]) for row in texts) else "left"
             for i in range(len(headers))]
    titles = [box_header(h) for h in headers]
    # The headers go in as the first row (tabulate widens header columns by two spaces, tablewriter does not),
    # then their line is drawn again centred, and without `row_lines` only the rules around the headers and
    # the last one are kept.
    lines = tabulate([titles, *texts], tablefmt="grid", disable_numparse=True, colalign=align,
                     maxcolwidths=[WRAP_WIDTH if i in wrap else None for i in range(len(headers))]).splitlines()
    widths = [len(part) - 2 for part in lines[0].split("+")[1:-1]]
    lines[1] = "|" + "|".join(f" {_centre(title, width)} " for title, width in zip(titles, widths)) + "|"
    if not row_lines:
        lines = [line for index, line in enumerate(lines)
                 if index <= 2 or index == len(lines) - 1 or not _RULE.match(line)]
    return "\n".join(lines) + "\n"


def _centre(text: str, width: int) -> str:
    """tablewriter's centring: the smaller half of the gap on the left."""
    gap = max(0, width - len(text))
    return " " * (gap // 2) + text + " " * (gap - gap // 2)


def cell_text(value) -> str:
    """A cell as Go's template prints it: booleans `true`/`false`, everything else `str`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def go_text(message) -> str:
    """A protobuf message on one line as Go's `String()` shows it (the compact text format of the protobuf version
    BBSim uses): every set field in declaration order as `name:value` followed by a space, strings quoted, nested
    messages as `name:<...>`."""
    values = {field.number: value for field, value in message.ListFields()}
    parts = []
    for field in message.DESCRIPTOR.fields:
        if field.number in values:
            items = values[field.number] if field.is_repeated else [values[field.number]]
            parts.extend(_go_field(field, item) + " " for item in items)
    return "".join(parts)


def go_list(messages) -> str:
    """A repeated message field as Go's template prints a slice: `[a b]` (each element ending in its space)."""
    return "[" + " ".join(go_text(message) for message in messages) + "]"


def _go_field(field, value) -> str:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return f"{field.name}:<{go_text(value)}>"
    if field.type == FieldDescriptor.TYPE_STRING:
        return f"{field.name}:{json.dumps(value)}"
    if field.type == FieldDescriptor.TYPE_BYTES:
        return f"{field.name}:{json.dumps(value.decode('latin-1'))}"
    if field.type == FieldDescriptor.TYPE_BOOL:
        return f"{field.name}:{'true' if value else 'false'}"
    if field.type == FieldDescriptor.TYPE_ENUM:
        number = field.enum_type.values_by_number.get(value)
        return f"{field.name}:{number.name if number is not None else value}"
    return f"{field.name}:{value}"
