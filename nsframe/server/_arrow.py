"""Arrow on the wire: request bodies read as streams, schemas as JSON, results as IPC files.

An insert body is never held whole: `BodyFile` hands the request's byte chunks to
pyarrow as a blocking file object, from the worker thread that runs the Lance write,
so memory stays at a few batches whatever the body's size.
"""

from __future__ import annotations

import base64
import io
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio.from_thread
import anyio.lowlevel
import pyarrow as pa
from starlette.requests import ClientDisconnect

from nsframe.exceptions import InvalidInputError, PayloadTooLargeError, SchemaMismatchError

# Lance scans fastest on batches of about this many rows (PERFORMANCE_NOTES.md).
WRITE_BATCH_ROWS = 8192
READ_BUFFER_BYTES = 1 << 20
FETCH_BYTES = 1 << 20


class BodyFile(io.RawIOBase):
    """A blocking, read-only file over an async byte stream (use from a worker thread)."""

    def __init__(self, chunks: AsyncIterator[bytes], limit: int | None = None) -> None:
        self._chunks = chunks
        # Lance pulls batches from its own threads, not from this worker thread: keep
        # the event loop's token so that any thread can fetch the next chunk.
        self._token = anyio.from_thread.run_sync(anyio.lowlevel.current_token)
        # Received chunks not yet read, as views: handed on without joining or copying.
        self._pending: deque[memoryview] = deque()
        self._eof = False
        self._limit = limit
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        while not self._pending and not self._eof:
            try:
                chunks = anyio.from_thread.run(self._next_chunks, token=self._token)
            except StopAsyncIteration:
                self._eof = True
                return
            self.bytes_read += sum(len(chunk) for chunk in chunks)
            if self._limit is not None and self.bytes_read > self._limit:
                raise PayloadTooLargeError(
                    f"The Arrow body is larger than {self._limit} bytes, this server's limit "
                    "for inserts: send the data in several requests."
                )
            self._pending.extend(memoryview(chunk) for chunk in chunks if chunk)

    async def _next_chunks(self) -> list[bytes]:
        # Gather about FETCH_BYTES per trip to the event loop, not one network read
        # (<= 64 KiB) per trip: each trip costs two thread switches.
        parts = [await self._chunks.__anext__()]
        size = len(parts[0])
        while size < FETCH_BYTES:
            try:
                parts.append(await self._chunks.__anext__())
            except StopAsyncIteration:
                break
            size += len(parts[-1])
        return parts

    def readinto(self, target: Any) -> int:
        self._fill()
        if not self._pending:
            return 0
        head = self._pending[0]
        n = min(len(target), len(head))
        target[:n] = head[:n]
        if n == len(head):
            self._pending.popleft()
        else:
            self._pending[0] = head[n:]
        return n


def _gone() -> InvalidInputError:
    # A client that hangs up mid-body made the mistake; not a server failure to log.
    return InvalidInputError(
        "The client closed the connection before the Arrow stream ended: nothing was written."
    )


class StreamReader:
    """An Arrow IPC stream read from a body, re-batched for Lance, counting its rows.

    Errors from a malformed stream become `InvalidInputError` (400); they surface
    inside the Lance write, which then commits nothing.
    """

    def __init__(self, body: io.RawIOBase) -> None:
        self._file = io.BufferedReader(body, buffer_size=READ_BUFFER_BYTES)
        try:
            self._reader = pa.ipc.open_stream(self._file)
        except ClientDisconnect as exc:
            raise _gone() from exc
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, EOFError) as exc:
            if isinstance(exc.__context__, PayloadTooLargeError):
                raise exc.__context__ from None
            raise InvalidInputError(
                "The body is not an Arrow IPC stream: send the records as "
                "application/vnd.apache.arrow.stream (an IPC stream, not a file)."
            ) from exc
        self.schema: pa.Schema = self._reader.schema
        self.num_rows = 0
        self.error: Exception | None = None
        self._first: pa.RecordBatch | None = None
        self._peeked = False

    def _next(self) -> pa.RecordBatch | None:
        try:
            batch = self._reader.read_next_batch()
            # The IPC reader trusts offsets and UTF-8 as sent; bad ones would make Lance
            # read out of bounds. Full validation is linear and cheap next to the write.
            batch.validate(full=True)
            return _align_decimals(batch)
        except StopIteration:
            return None
        except PayloadTooLargeError as exc:
            self.error = exc
            raise
        except ClientDisconnect as exc:
            self.error = _gone()
            raise self.error from exc
        except (pa.ArrowException, OSError, EOFError) as exc:
            cause = exc.__context__
            self.error = (
                cause
                if isinstance(cause, PayloadTooLargeError)
                else InvalidInputError(
                    f"The Arrow stream is malformed after {self.num_rows} rows ({exc}): nothing "
                    "was written. Send a complete IPC stream."
                )
            )
            raise self.error from exc

    def is_empty(self) -> bool:
        """True when the stream has no rows at all (reads ahead one batch)."""
        if not self._peeked:
            self._peeked = True
            while True:
                batch = self._next()
                if batch is None or batch.num_rows:
                    self._first = batch
                    break
        return self._first is None

    def batches(self) -> Iterator[pa.RecordBatch]:
        self.is_empty()
        batch = self._first
        while batch is not None:
            for offset in range(0, batch.num_rows, WRITE_BATCH_ROWS):
                piece = batch.slice(offset, WRITE_BATCH_ROWS)
                self.num_rows += piece.num_rows
                yield piece
            batch = self._next()

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, self.batches())


def _align_decimals(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Copy decimal columns to fresh buffers: IPC aligns buffers to 8 bytes, and Lance
    (arrow-rs) panics on a decimal128 buffer that is not 16-byte aligned."""
    if "decimal" not in str(batch.schema):
        return batch
    columns = [pa.concat_arrays([c]) if "decimal" in str(c.type) else c for c in batch.columns]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def check_insert_schema(incoming: pa.Schema, table: pa.Schema, label: str) -> None:
    """Raise `SchemaMismatchError` naming each difference between ``incoming`` and ``table``."""
    problems: list[str] = []
    for field in incoming:
        if field.name not in table.names:
            problems.append(f"column {field.name!r} is not in the table")
            continue
        expected = table.field(field.name)
        if not field.type.equals(expected.type):
            problems.append(f"column {field.name!r} is {field.type}, the table has {expected.type}")
    for expected in table:
        if expected.name not in incoming.names and not expected.nullable:
            problems.append(f"column {expected.name!r} is missing and may not be null")
    if len(set(incoming.names)) != len(incoming.names):
        problems.append("a column name appears twice")
    if problems:
        raise SchemaMismatchError(
            f"The data does not match the schema of table {label!r}: "
            + "; ".join(problems)
            + ". Cast the columns to the table's types, or insert with mode=overwrite to "
            "replace the table."
        )


def schema_to_json(schema: pa.Schema) -> dict[str, Any]:
    """The upstream JsonArrowSchema form (type names as Lance writes them)."""
    out: dict[str, Any] = {"fields": [_field_to_json(f) for f in schema]}
    if schema.metadata:
        out["metadata"] = {
            k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
            for k, v in schema.metadata.items()
        }
    return out


def _field_to_json(field: pa.Field) -> dict[str, Any]:
    return {"name": field.name, "nullable": field.nullable, "type": _type_to_json(field.type)}


def _type_to_json(t: pa.DataType) -> dict[str, Any]:
    if pa.types.is_fixed_size_list(t):
        return {
            "type": "fixed_size_list",
            "length": t.list_size,
            "fields": [_field_to_json(t.value_field)],
        }
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        name = "large_list" if pa.types.is_large_list(t) else "list"
        return {"type": name, "fields": [_field_to_json(t.value_field)]}
    if pa.types.is_struct(t):
        return {
            "type": "struct",
            "fields": [_field_to_json(t.field(i)) for i in range(t.num_fields)],
        }
    if pa.types.is_dictionary(t):
        return _type_to_json(t.value_type)
    if pa.types.is_timestamp(t):
        return {"type": "timestamp"}
    names = {
        "string": "utf8",
        "large_string": "large_utf8",
        "float": "float32",
        "double": "float64",
        "halffloat": "float16",
    }
    text = str(t)
    return {"type": names.get(text, text.split("[")[0])}


def schema_to_base64(schema: pa.Schema) -> str:
    """The exact Arrow schema (IPC-serialised), for clients that want every detail."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def table_to_ipc_file(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())
