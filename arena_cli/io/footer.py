"""A parquet file's row groups (their rows, and the bytes of each column), from its footer.

Polars reads a slice of a row group by decoding the whole of it, so a reader that batches a file must cut it
at row-group boundaries; polars does not say where they are. The footer is Thrift's compact protocol
(https://github.com/apache/parquet-format/blob/master/src/main/thrift/parquet.thrift): ``FileMetaData``
field 4 lists the ``RowGroup`` s, each with its ``num_rows`` (field 3) and ``ColumnChunk`` s (field 1), whose
``ColumnMetaData`` (field 3) has its column's path (field 3) and uncompressed size (field 6). Every other field
is skipped by its type.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Compact protocol types.
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)


#: Bytes per row a leaf column takes at least once decoded (a string's view, or a number and its validity), where
#: its footer size may say far less (dictionary or run-length encoded).
DECODED_ROW_BYTES = 16


@dataclass(frozen=True)
class RowGroup:
    rows: int
    leaves: tuple[tuple[str, int], ...]  # (top-level column, uncompressed bytes) of each leaf column

    def decoded_bytes(self, columns: list[str] | None) -> int:
        """About the bytes ``columns`` (default: all) of this row group take once decoded."""
        return sum(max(size, DECODED_ROW_BYTES * self.rows) for name, size in self.leaves if columns is None or name in columns)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def byte(self) -> int:
        self.at += 1
        return self.data[self.at - 1]

    def varint(self) -> int:
        shift = result = 0
        while True:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def integer(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def binary(self) -> bytes:
        size = self.varint()
        self.at += size
        return self.data[self.at - size:self.at]

    def list_header(self) -> tuple[int, int]:
        header = self.byte()
        size = header >> 4
        return (self.varint() if size == 15 else size), header & 0x0F

    def fields(self) -> Any:
        """(field id, type) of each field of a struct, to its end; the caller reads or skips each value."""
        field = 0
        while (header := self.byte()) != 0:
            delta = header >> 4
            field = field + delta if delta else self.integer()
            yield field, header & 0x0F

    def value(self, kind: int) -> Any:
        """A value of ``kind``: integers and binaries are returned, anything else is skipped (None)."""
        if kind in (_TRUE, _FALSE):
            return kind == _TRUE
        if kind == _BYTE:
            return self.byte()
        if kind in (_I16, _I32, _I64):
            return self.integer()
        if kind == _DOUBLE:
            self.at += 8
        elif kind == _BINARY:
            return self.binary()
        elif kind in (_LIST, _SET):
            size, inner = self.list_header()
            for _ in range(size):
                self.value(inner)
        elif kind == _MAP:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    self.value(types >> 4)
                    self.value(types & 0x0F)
        elif kind == _STRUCT:
            for _, inner in self.fields():
                self.value(inner)
        else:
            raise ValueError(f"unknown thrift type {kind}")
        return None


def row_groups(path: Path) -> list[RowGroup]:
    """The row groups of the parquet file at ``path``; ValueError (or OSError) when its footer cannot be read."""
    with open(path, "rb") as handle:
        handle.seek(-8, 2)
        size, magic = struct.unpack("<I4s", handle.read(8))
        if magic != b"PAR1":
            raise ValueError("no parquet footer")
        handle.seek(-8 - size, 2)
        reader = _Reader(handle.read(size))
    groups, total = None, None
    try:
        for field, kind in reader.fields():
            if field == 3 and kind == _I64:
                total = reader.value(kind)
            elif field == 4 and kind == _LIST:
                count, _ = reader.list_header()
                groups = [_row_group(reader) for _ in range(count)]
            else:
                reader.value(kind)
    except IndexError:
        raise ValueError("truncated parquet footer") from None
    if groups is None or total != sum(group.rows for group in groups):
        raise ValueError("parquet footer without its row groups")
    return groups


def _row_group(reader: _Reader) -> RowGroup:
    rows = 0
    leaves: tuple[tuple[str, int], ...] = ()
    for field, kind in reader.fields():
        if field == 3:
            rows = reader.value(kind)
        elif field == 1 and kind == _LIST:
            count, _ = reader.list_header()
            leaves = tuple(_column_chunk(reader) for _ in range(count))
        else:
            reader.value(kind)
    return RowGroup(rows, leaves)


def _column_chunk(reader: _Reader) -> tuple[str, int]:
    name, size = "", 0
    for field, kind in reader.fields():
        if field != 3 or kind != _STRUCT:
            reader.value(kind)
            continue
        for inner, inner_kind in reader.fields():
            if inner == 3 and inner_kind == _LIST:
                count, _ = reader.list_header()
                path = [reader.binary() for _ in range(count)]
                name = path[0].decode("utf-8", "replace") if path else ""
            elif inner == 6:
                size = reader.value(inner_kind)
            else:
                reader.value(inner_kind)
    return name, size
