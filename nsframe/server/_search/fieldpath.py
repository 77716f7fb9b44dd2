"""Field paths: the namespace spec's syntax for naming a (possibly nested) column.

A path is dot-separated segments; a segment holding a dot (or a backtick) is quoted in
backticks, and a backtick inside a quoted segment is doubled: ``a.`b.c`.d``. A leaf
name alone names only a top-level field. The canonical form of a path quotes exactly
the segments that are not plain identifiers; errors show it, and Lance reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

from nsframe._protocol.hints import missing_column
from nsframe.exceptions import ColumnNotFoundError, InvalidInputError

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_path(path: str, member: str = "field path") -> list[str]:
    """The segments of ``path``; malformed syntax is a 400 naming ``member``."""
    if not path:
        raise InvalidInputError(f"The {member} is empty: name a column, e.g. \"vector\".")
    segments: list[str] = []
    i, n = 0, len(path)
    while True:
        if i < n and path[i] == "`":
            i += 1
            chars: list[str] = []
            while True:
                if i >= n:
                    raise InvalidInputError(
                        f"The {member} {path!r} has an unclosed backtick: end the quoted "
                        "segment with ` (write `` for a backtick inside it)."
                    )
                if path[i] == "`":
                    if i + 1 < n and path[i + 1] == "`":
                        chars.append("`")
                        i += 2
                        continue
                    i += 1
                    break
                chars.append(path[i])
                i += 1
            segment = "".join(chars)
        else:
            end = path.find(".", i)
            end = n if end < 0 else end
            segment = path[i:end]
            if "`" in segment:
                raise InvalidInputError(
                    f"The {member} {path!r} has a backtick inside an unquoted segment: quote "
                    "the whole segment in backticks and double the backtick."
                )
            i = end
        if not segment:
            raise InvalidInputError(
                f"The {member} {path!r} has an empty segment: remove the extra dot."
            )
        segments.append(segment)
        if i >= n:
            return segments
        if path[i] != ".":
            raise InvalidInputError(
                f"The {member} {path!r} has text after a quoted segment: separate segments "
                "with a dot."
            )
        i += 1
        if i >= n:
            raise InvalidInputError(f"The {member} {path!r} ends with a dot: remove it.")


def quote_segment(segment: str) -> str:
    if _PLAIN.fullmatch(segment):
        return segment
    return "`" + segment.replace("`", "``") + "`"


def format_path(segments: list[str]) -> str:
    """The canonical text of a path."""
    return ".".join(quote_segment(s) for s in segments)


@dataclass(frozen=True)
class ResolvedField:
    segments: tuple[str, ...]
    field: pa.Field

    @property
    def path(self) -> str:
        return format_path(list(self.segments))


def iter_fields(schema: pa.Schema) -> list[ResolvedField]:
    """Every field of ``schema``, structs walked, outermost first."""
    found: list[ResolvedField] = []

    def walk(prefix: tuple[str, ...], fields: list[pa.Field]) -> None:
        for f in fields:
            found.append(ResolvedField((*prefix, f.name), f))
            if pa.types.is_struct(f.type):
                walk((*prefix, f.name), [f.type.field(i) for i in range(f.type.num_fields)])

    walk((), list(schema))
    return found


def resolve(schema: pa.Schema, path: str, member: str = "column") -> ResolvedField:
    """The field ``path`` names in ``schema``; 404 ColumnNotFound naming the canonical path."""
    segments = parse_path(path, member)
    fields: list[pa.Field] = list(schema)
    field: pa.Field | None = None
    for depth, segment in enumerate(segments):
        field = next((f for f in fields if f.name == segment), None)
        if field is None:
            break
        if depth + 1 < len(segments):
            if not pa.types.is_struct(field.type):
                field = None
                break
            fields = [field.type.field(i) for i in range(field.type.num_fields)]
    if field is None:
        canonical = format_path(segments)
        leaf = segments[-1]
        near = [r.path for r in iter_fields(schema)
                if r.segments[-1] == leaf and len(r.segments) > 1]
        if near:
            raise ColumnNotFoundError(
                f"The {member} {canonical} is not in the table. Did you mean "
                f"{', '.join(near)}? A leaf name alone only names a top-level field."
            )
        raise ColumnNotFoundError(missing_column(canonical, schema.names, member))
    return ResolvedField(tuple(segments), field)


def vector_kind(t: pa.DataType) -> str | None:
    """'vector' for a fixed-size list of numbers, 'multivector' for a list of those."""
    if pa.types.is_fixed_size_list(t) and _is_number(t.value_type):
        return "vector"
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_fixed_size_list(
        t.value_type
    ) and _is_number(t.value_type.value_type):
        return "multivector"
    return None


def _is_number(t: pa.DataType) -> bool:
    return bool(pa.types.is_floating(t) or pa.types.is_integer(t))


def vector_fields(schema: pa.Schema) -> list[ResolvedField]:
    return [r for r in iter_fields(schema) if vector_kind(r.field.type) is not None]


def text_fields(schema: pa.Schema) -> list[ResolvedField]:
    return [
        r for r in iter_fields(schema)
        if pa.types.is_string(r.field.type) or pa.types.is_large_string(r.field.type)
    ]
