"""bbsimctl's two table layouts and Go's one-line rendering of protobuf messages.

`columns` is the layout of bbsimctl's `format.Format` tables, written by `tabwriter`, Go's text/tabwriter as
bbsimctl sets it up (upper-case headers, every column as wide as its widest cell plus four spaces, the last cell of
a line not padded). `box` is the layout of its tablewriter tables (flows, traffic schedulers, alarm lists), drawn
with tabulate: ASCII boxes, headers upper-cased with `_` and `.` as spaces and centred, numbers right-aligned, long
cells wrapped at 30 characters.
"""
from __future__ import annotations

import json
import re

from google.protobuf.descriptor import FieldDescriptor
from tabulate import tabulate

#: Go's tabwriter as cordctl's format package sets it up: tabwriter.NewWriter(w, 0, 4, 4, ' ', 0).
TAB_PADDING = 4
#: tablewriter's default column width before it wraps a cell.
WRAP_WIDTH = 30
#: What tablewriter aligns to the right: a decimal number, with optional thousands separators and fraction.
_DECIMAL = re.compile(r"-?(?:\d{1,3}(?:,\d{3})*|\d+)(?:\.\d+)?")
_NO_COST = 2**31 - 1
_LONG_LINE_PENALTY = 100000
_RULE = re.compile(r"^\+(-+\+)+$")


def columns(headers: list[str], rows: list[list], rstrip: bool = False) -> str:
    """bbsimctl's table: headers then one line per row, each cell ended by a tab, laid out by `tabwriter`.
    `rstrip` removes the padding a line ends with when its last cell is empty (for oltsim's own tables; bbsimctl's
    keep it, as Go writes it)."""
    text = "".join("\t".join(cell_text(cell) for cell in line) + "\n" for line in [headers, *rows])
    table = tabwriter(text)
    if rstrip:
        table = "".join(line.rstrip() + "\n" for line in table.splitlines())
    return table


def tabwriter(text: str) -> str:
    """`text` as Go's text/tabwriter writes it with bbsimctl's settings (minwidth 0, padding 4, padchar ' ', no
    flags): a cell is text ended by a tab; each column block (adjacent lines that have a cell in that column) is
    as wide as its widest cell plus four; the last cell of a line (the text after its last tab) is not padded, and
    a line without a tab ends every block. Widths count characters (Go counts runes)."""
    lines = [line.split("\t") for line in text.split("\n")]
    if lines and lines[-1] == [""]:
        lines.pop()  # the text ends with a newline: no line after it
    out: list[str] = []
    segment: list[list[str]] = []
    for cells in lines:
        segment.append(cells)
        if len(cells) == 1:  # Go flushes at a line without cells: blocks never span it
            _format_block(segment, [], 0, len(segment), out)
            segment = []
    _format_block(segment, [], 0, len(segment), out)
    return "".join(out)


def _format_block(lines: list[list[str]], widths: list[int], first: int, end: int, out: list[str]) -> None:
    """tabwriter's format(): lines first..end-1 with the widths of the columns left of `len(widths)` known."""
    column = len(widths)
    this = first
    while this < end:
        if column >= len(lines[this]) - 1:
            this += 1
            continue
        # lines first..this-1 have no cell in this column: write them with the widths known so far
        _write_lines(lines, widths, first, this, out)
        first = this
        width = 0
        while this < end and column < len(lines[this]) - 1:
            width = max(width, len(lines[this][column]) + TAB_PADDING)
            this += 1
        _format_block(lines, widths + [width], first, this, out)
        first = this
    _write_lines(lines, widths, first, end, out)


def _write_lines(lines: list[list[str]], widths: list[int], first: int, end: int, out: list[str]) -> None:
    for cells in lines[first:end]:
        for index, cell in enumerate(cells):
            out.append(cell.ljust(widths[index]) if index < len(widths) else cell)
        out.append("\n")


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
