"""What a parquet file's footer says that polars does not: where its row groups are (their rows, and the bytes
of each column); and, where polars cannot read a column's type, which column it is.

Why: polars reads a slice of a row group by decoding the whole of it, so a reader that batches a file must cut it
at row-group boundaries (:func:`row_groups`). The footer is Thrift's compact protocol
(https://github.com/apache/parquet-format/blob/master/src/main/thrift/parquet.thrift): ``FileMetaData`` field 4
lists the ``RowGroup`` s, each with its ``num_rows`` (field 3) and ``ColumnChunk`` s (field 1), whose
``ColumnMetaData`` (field 3) has its path (3) and uncompressed size (6). Field 5 is the key-value metadata, where a
writer of Arrow data keeps the Arrow schema (:func:`time_zones`), whose types are richer than parquet's own: a time
zone, which polars names when it cannot read it, but not the column.
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def row_groups(path: Path) -> list[RowGroup] | None:
    """The row groups of the parquet file at ``path``; None when its footer is larger than
    :data:`MAX_FOOTER_BYTES`; ValueError (or OSError) when it cannot be read."""
    try:
        metadata = _decoded_footer(path)
        if metadata is None:
            return None
        groups = [RowGroup(group[3], tuple(_leaf(chunk) for chunk in group.get(1, []))) for group in metadata[4]]
    except (IndexError, KeyError, TypeError, struct.error, RecursionError):
        raise ValueError("truncated or damaged parquet footer") from None
    if metadata.get(3) != sum(group.rows for group in groups):
        raise ValueError("parquet footer without its row groups")
    return groups


def _leaf(chunk: dict[int, Any]) -> tuple[str, int]:
    meta = chunk.get(3, {})
    path = meta.get(3) or [b""]
    return path[0].decode("utf-8", "replace"), meta.get(6, 0)


#: A footer larger than this is not decoded: it takes about a second to decode, and it describes tens of thousands of
#: column chunks (more than 8,000 row groups of 50 columns): row groups so small that the file may be cut anywhere.
MAX_FOOTER_BYTES = 8 << 20


def time_zones(path: Path) -> list[tuple[str, str]]:
    """Each column of times with a time zone, as the Arrow schema in the footer of the parquet file at ``path`` gives
    it: (its dotted path, the zone); none when the footer has no Arrow schema, or it cannot be read."""
    try:
        metadata = _decoded_footer(path, {5: True})
        schema = next((item.get(2, b"") for item in (metadata or {}).get(5, []) if item.get(1) == b"ARROW:schema"), None)
        return [] if schema is None else _ArrowSchema(base64.b64decode(schema)).time_zones()
    except (OSError, ValueError, IndexError, KeyError, TypeError, AttributeError, struct.error, binascii.Error, RecursionError):
        return []


class _ArrowSchema:
    """An Arrow IPC ``Message`` holding a ``Schema`` (https://github.com/apache/arrow/blob/main/format/Schema.fbs), as
    pyarrow and polars keep it in a parquet footer (``ARROW:schema``, base64): a flatbuffer, after a continuation
    marker (0xFFFFFFFF; none before Arrow 0.15) and its length. A table starts with the offset back to its vtable,
    whose entries, after its own size and the table's, are the offsets of the table's fields from its start (0: not
    given); a string, a vector or a table field holds the offset to it from where it is held."""

    #: The ``Type`` union's code of a timestamp, and of a struct (whose children are named in a path).
    TIMESTAMP, STRUCT = 10, 13

    def __init__(self, message: bytes):
        start = 8 if message.startswith(b"\xff\xff\xff\xff") else 4
        self.data = message[start : start + int.from_bytes(message[start - 4 : start], "little")]

    def time_zones(self) -> list[tuple[str, str]]:
        message = self._ref(0)
        schema = self._table_at(message, 2)  # Message.header (a Schema: Message.header_type 1)
        return [] if schema is None else [found for field in self._vector(schema, 1) for found in self._zones(field, self._string(field, 0) or "")]

    def _zones(self, field: int, path: str) -> list[tuple[str, str]]:
        """The zones of a ``Field`` (name 0, type_type 2, type 3, children 5) at ``path`` and of its children, at any
        depth (a struct's named in the path, a list's items and a map's entries at the list's or the map's)."""
        kind, typed = self._ubyte(field, 2), self._table_at(field, 3)
        zone = self._string(typed, 1) if kind == self.TIMESTAMP and typed is not None else None  # Timestamp.timezone
        found = [(path, zone)] if zone else []
        for child in self._vector(field, 5):
            found += self._zones(child, f"{path}.{self._string(child, 0) or ''}" if kind == self.STRUCT else path)
        return found

    def _slot(self, table: int, slot: int) -> int | None:
        vtable = table - struct.unpack_from("<i", self.data, table)[0]
        entry = 4 + 2 * slot
        if entry + 2 > struct.unpack_from("<H", self.data, vtable)[0]:
            return None
        offset = struct.unpack_from("<H", self.data, vtable + entry)[0]
        return table + offset if offset else None

    def _ref(self, at: int) -> int:
        return at + struct.unpack_from("<I", self.data, at)[0]

    def _ubyte(self, table: int, slot: int) -> int:
        at = self._slot(table, slot)
        return 0 if at is None else self.data[at]

    def _table_at(self, table: int, slot: int) -> int | None:
        at = self._slot(table, slot)
        return None if at is None else self._ref(at)

    def _string(self, table: int, slot: int) -> str | None:
        at = self._table_at(table, slot)
        if at is None:
            return None
        length = struct.unpack_from("<I", self.data, at)[0]
        return self.data[at + 4 : at + 4 + length].decode("utf-8", "replace")

    def _vector(self, table: int, slot: int) -> list[int]:
        """The tables of a vector field."""
        at = self._table_at(table, slot)
        if at is None:
            return []
        return [self._ref(at + 4 + 4 * i) for i in range(struct.unpack_from("<I", self.data, at)[0])]


def _decoded_footer(path: Path, wanted: dict[int, Any] | None = None) -> dict[int, Any] | None:
    footer = _footer_bytes(path)
    return None if footer is None else _Compact(footer).read_struct(WANTED if wanted is None else wanted)


def _footer_bytes(path: Path) -> bytes | None:
    """The footer of the parquet file at ``path`` (None: larger than :data:`MAX_FOOTER_BYTES`)."""
    with open(path, "rb") as handle:
        size = handle.seek(0, 2)
        if size < 12:
            raise ValueError("not a parquet file")
        handle.seek(size - 8)
        tail = handle.read(8)
        if tail[4:] != b"PAR1":
            raise ValueError("not a parquet file")
        length = int.from_bytes(tail[:4], "little")
        if not 0 < length <= size - 12:
            raise ValueError("footer length out of range")
        if length > MAX_FOOTER_BYTES:
            return None
        handle.seek(size - 8 - length)
        return handle.read(length)


#: The parts of ``FileMetaData`` this module reads, by field id (a nested dict: the fields wanted of a struct, or of
#: each struct of a list; True: the whole value). The rest (the schema, encodings, page offsets, key-value
#: metadata...) is skipped unbuilt: at 800 row groups that is most of the footer.
WANTED = {
    3: True,  # num_rows
    4: {  # row_groups
        1: {3: {3: True, 6: True}},  # columns: meta_data
        3: True,  # num_rows
    },
}


class _Compact:
    """A reader of the Thrift compact protocol: structs as {field id: value}, lists as lists, binary as bytes.
    Written for speed (a footer of 800 row groups holds about a million values): one-byte varints, the commonest,
    take a short path, and fields not wanted are skipped without building their values."""

    def __init__(self, data: bytes):
        self.data = data
        self.at = 0

    def byte(self) -> int:
        value = self.data[self.at]
        self.at += 1
        return value

    def varint(self) -> int:
        data, at = self.data, self.at
        byte = data[at]
        if byte < 0x80:
            self.at = at + 1
            return byte
        result, shift = byte & 0x7F, 7
        while True:
            at += 1
            byte = data[at]
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                self.at = at + 1
                return result
            shift += 7
            if shift > 70:
                raise ValueError("varint too long")

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def binary(self) -> bytes:
        length = self.varint()
        end = self.at + length
        if end > len(self.data):
            raise ValueError("binary past the end")
        value = self.data[self.at : end]
        self.at = end
        return value

    def list_header(self) -> tuple[int, int]:
        header = self.byte()
        size, element = header >> 4, header & 0x0F
        return self.count(self.varint() if size == 15 else size), element

    def count(self, size: int) -> int:
        """A list's or map's number of elements, each of which takes a byte at least: a damaged size is an error, not
        a long wait."""
        if size > len(self.data) - self.at:
            raise ValueError("elements past the end")
        return size

    def value(self, kind: int, wanted: Any = True) -> Any:
        if kind == 12:
            return self.read_struct(wanted)
        if kind in (4, 5, 6):
            return self.zigzag()
        if kind == 8:
            return self.binary()
        if kind in (9, 10):
            size, element = self.list_header()
            return [self.value(element, wanted) for _ in range(size)]
        if kind in (1, 2):  # a boolean in a list (in a struct the type carries it)
            return self.byte() == 1
        if kind == 3:
            return struct.unpack("b", bytes([self.byte()]))[0]
        if kind == 7:
            self.at += 8
            return struct.unpack("<d", self.data[self.at - 8 : self.at])[0]
        if kind == 11:
            size = self.count(self.varint())
            if not size:
                return {}
            types = self.byte()
            return {self.value(types >> 4): self.value(types & 0x0F) for _ in range(size)}
        raise ValueError(f"unknown thrift type {kind}")

    def read_struct(self, wanted: Any = True) -> dict[int, Any]:
        """A struct's fields; only those in ``wanted`` (a dict as :data:`WANTED`) unless it is True."""
        fields: dict[int, Any] = {}
        last = 0
        data = self.data
        while True:
            header = data[self.at]
            self.at += 1
            if header == 0:
                return fields
            kind, delta = header & 0x0F, header >> 4
            last = last + delta if delta else self.zigzag()
            if kind == 1 or kind == 2:
                fields[last] = kind == 1
            elif wanted is not True and last not in wanted:
                self.skip(kind)
            elif kind == 5 or kind == 6:
                fields[last] = self.zigzag()
            else:
                fields[last] = self.value(kind, True if wanted is True else wanted[last])

    def skip(self, kind: int) -> None:
        """Step over a value of type ``kind`` (as a list element, where a boolean takes a byte)."""
        if kind in (4, 5, 6):
            self.varint()
        elif kind == 8:
            self.binary()
        elif kind == 12:
            while True:
                header = self.byte()
                if header == 0:
                    return
                if not header >> 4:
                    self.zigzag()
                if header & 0x0F not in (1, 2):
                    self.skip(header & 0x0F)
        elif kind in (9, 10):
            size, element = self.list_header()
            for _ in range(size):
                self.skip(element)
        elif kind in (1, 2, 3):
            self.at += 1
        elif kind == 7:
            self.at += 8
        elif kind == 11:
            size = self.count(self.varint())
            if size:
                types = self.byte()
                for _ in range(size):
                    self.skip(types >> 4)
                    self.skip(types & 0x0F)
        else:
            raise ValueError(f"unknown thrift type {kind}")
