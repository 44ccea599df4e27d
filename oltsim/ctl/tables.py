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
#: What tablewriter aligns to the right: a decimal number, with optional thousands separators and fraction.
_DECIMAL = re.compile(r"-?(?:\d{1,3}(?:,\d{3})*|\d+)(?:\.\d+)?")
_NO_COST = 2**31 - 1
_LONG_LINE_PENALTY = 100000
_RULE = re.compile(r"^\+(-+\+)+$")


def columns(headers: list[str], rows: list[list]) -> str:
    """bbsimctl's tabwriter table: headers then one line per row, columns four spaces apart."""
    # The headers go in as the first row: tabulate widens header columns by two spaces, tabwriter does not.
    table = tabulate([list(headers), *([cell_text(cell) for cell in row] for row in rows)], tablefmt=_TABWRITER,
                     disable_numparse=True, stralign="left")
    return "\n".join(line.rstrip() for line in table.splitlines()) + "\n"


def box_header(name: str) -> str:
    """tablewriter's header: upper case, `_` (and a `.` not inside a number) shown as a space."""
    chars = list(name)
    for i, char in enumerate(chars):
        if char == "_":
            chars[i] = " "
        elif char == "." and ((i > 0 and not _num_or_space(chars[i - 1]))
                              or (i < len(chars) - 1 and not _num_or_space(chars[i + 1]))):
            chars[i] = " "
    return ("".join(chars).strip() or " ").upper()


def _num_or_space(char: str) -> bool:
    return char.isdigit() or char == " "


def wrap_words(text: str, limit: int) -> tuple[list[str], int]:
    """tablewriter's WrapString: the text split on single spaces (empty words kept, so a trailing space stays),
    broken into lines of least raggedness (squared slack, lines over the limit penalised); returns the lines and
    the limit, raised to the longest word."""
    words = text.replace("\n", " ").split(" ")
    limit = max(limit, *(len(word) for word in words))
    count = len(words)
    span = [[0] * count for _ in range(count)]  # span[i][j]: width of words i..j on one line
    for i in range(count):
        span[i][i] = len(words[i])
        for j in range(i + 1, count):
            span[i][j] = span[i][j - 1] + 1 + len(words[j])
    cost, breaks = [_NO_COST] * count, [0] * count
    for i in range(count - 1, -1, -1):
        if span[i][count - 1] <= limit:
            cost[i], breaks[i] = 0, count
            continue
        for j in range(i + 1, count):
            slack = limit - span[i][j - 1]
            candidate = slack * slack + cost[j] + (_LONG_LINE_PENALTY if span[i][j - 1] > limit else 0)
            if candidate < cost[i]:
                cost[i], breaks[i] = candidate, j
    lines, i = [], 0
    while i < count:
        lines.append(" ".join(words[i:breaks[i]]))
        i = breaks[i]
    return lines, limit


def _cell_lines(text: str) -> tuple[list[str], int]:
    """tablewriter's parseDimension: a cell's lines, each paragraph wrapped at its width capped to 30, and the
    width the cell asks of its column."""
    paragraphs = text.split("\n")
    width = min(max(len(p) for p in paragraphs), WRAP_WIDTH)
    lines, wanted = [], width
    for index, paragraph in enumerate(paragraphs):
        wrapped, _ = wrap_words(paragraph, width)
        wanted = max([wanted, *(len(line) for line in wrapped)])
        lines += ([" "] if index else []) + wrapped
    return lines, wanted


def box(headers: list[str], rows: list[list], row_lines: bool = True) -> str:
    """A tablewriter box as bbsimctl draws it: headers centred, every cell wrapped at 30 characters, each line of
    a cell right-aligned when it is a number and left-aligned otherwise; `row_lines` draws a rule under every
    row, else only under the headers. tabulate draws the rules around the cells laid out here."""
    titles = [_cell_lines(box_header(h)) for h in headers]
    cells = [[_cell_lines(cell_text(cell)) for cell in row] for row in rows]
    widths = [max([titles[i][1], *(row[i][1] for row in cells)]) for i in range(len(headers))]

    def block(column_cells, align) -> list[str]:
        height = max(len(lines) for lines, _ in column_cells)
        return ["\n".join(align(line, widths[i]) for line in lines + [""] * (height - len(lines)))
                for i, (lines, _) in enumerate(column_cells)]

    table = [block(titles, _centre)] + [block(row, _aligned) for row in cells]
    lines = tabulate(table, tablefmt="grid", disable_numparse=True, stralign="left",
                     preserve_whitespace=True).splitlines()
    if not row_lines:
        lines = [line for index, line in enumerate(lines)
                 if index <= 2 or index == len(lines) - 1 or not _RULE.match(line)]
    return "\n".join(lines) + "\n"


def _aligned(text: str, width: int) -> str:
    """tablewriter's default alignment: numbers to the right, the rest to the left."""
    return text.rjust(width) if _DECIMAL.fullmatch(text.strip()) else text.ljust(width)


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
