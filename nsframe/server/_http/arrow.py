"""Arrow on the wire: request bodies read as streams, schemas as JSON, results as IPC files.

An insert body is never held whole: `BodyFile` receives the request's byte chunks up to
`PREFETCH_BYTES` ahead of the Lance write and hands them to pyarrow as a blocking file
object, so memory stays at a few MiB plus a few batches whatever the body's size.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import anyio.from_thread
import pyarrow as pa
from starlette.requests import ClientDisconnect, Request

from nsframe.exceptions import APIError, InvalidInputError, PayloadTooLargeError
from nsframe.server._http.request import body_chunks
from nsframe.server._storage.writes import WRITE_BATCH_ROWS

READ_BUFFER_BYTES = 1 << 20
# How far receiving may run ahead of the Lance write: bounds the memory per insert.
PREFETCH_BYTES = 32 << 20


class BodyFile(io.RawIOBase):
    """A blocking, read-only file over an async byte stream (use from a worker thread).

    A task on the event loop receives the body ahead of the reader into a bounded buffer
    (`PREFETCH_BYTES`), so that the network and the Lance write overlap instead of taking
    turns. Call `close()` when done: it stops that task if the body was not read to its end.
    """

    def __init__(self, chunks: AsyncIterator[bytes], limit: int | None = None) -> None:
        self._chunks = chunks
        self._limit = limit
        self.bytes_read = 0
        # Received chunks not yet read, as views: handed on without joining or copying.
        self._pending: deque[memoryview] = deque()
        self._buffered = 0
        self._done = False  # the receiving task has finished (end, error or cancel)
        self._error: BaseException | None = None
        self._ready = threading.Condition()
        self._space: asyncio.Event | None = None
        self._waiting = False  # the receiving task waits for the reader to make room
        self._task: asyncio.Task[None] | None = None
        # Lance pulls batches from its own threads, not from this worker thread: the
        # receiving task is started from here and hands bytes over through the condition.
        self._loop, self._task = anyio.from_thread.run_sync(self._start)

    def _start(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Task[None]]:
        loop = asyncio.get_running_loop()
        self._space = asyncio.Event()
        return loop, loop.create_task(self._receive())

    async def _receive(self) -> None:
        assert self._space is not None
        error: BaseException | None = None
        try:
            async for chunk in self._chunks:
                if not chunk:
                    continue
                with self._ready:
                    self.bytes_read += len(chunk)
                    self._pending.append(memoryview(chunk))
                    self._buffered += len(chunk)
                    full = self._buffered >= PREFETCH_BYTES
                    if full:
                        self._space.clear()
                        self._waiting = True
                    self._ready.notify()
                if self._limit is not None and self.bytes_read > self._limit:
                    error = PayloadTooLargeError(
                        f"The Arrow body is larger than {self._limit} bytes, this server's "
                        "limit for inserts: send the data in several requests."
                    )
                    return
                if full:
                    await self._space.wait()
        except asyncio.CancelledError:
            error = _Closed()
            raise
        except Exception as exc:  # ClientDisconnect among others: the reader re-raises it
            error = exc
        finally:
            with self._ready:
                self._error = error
                self._done = True
                self._ready.notify_all()

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        with self._ready:
            while not self._pending and not self._done:
                self._ready.wait()
            if self._error is not None:
                # Too large, or the client hung up: nothing will be written, stop now.
                raise self._error
            if not self._pending:
                return 0
            head = self._pending[0]
            n = min(len(target), len(head))
            target[:n] = head[:n]
            if n == len(head):
                self._pending.popleft()
            else:
                self._pending[0] = head[n:]
            self._buffered -= n
            wake = self._waiting and self._buffered < PREFETCH_BYTES // 2
            if wake:
                self._waiting = False
        if wake and self._space is not None:
            self._loop.call_soon_threadsafe(self._space.set)
        return n

    def close(self) -> None:
        """Stop receiving (a body not read to its end is left unread)."""
        if self._task is not None and not self._done:
            # RuntimeError: the event loop is already closed, so nothing is left to stop.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._task.cancel)
        super().close()


class _Closed(Exception):
    """The body was closed before it was read to its end."""


def _gone() -> InvalidInputError:
    # A client that hangs up mid-body made the mistake; not a server failure to log.
    return InvalidInputError(
        "The client closed the connection before the Arrow stream ended: nothing was written."
    )


class StreamReader:
    """An Arrow IPC stream read from a body, re-batched for Lance, counting its rows.

    Errors from a malformed stream become `InvalidInputError` (400); they surface
    inside the Lance write, which then commits nothing. Errors of the body itself (too
    large, too slow: an `APIError` raised by `BodyFile`) keep their own status.
    """

    def __init__(self, body: io.RawIOBase) -> None:
        self._file = io.BufferedReader(body, buffer_size=READ_BUFFER_BYTES)
        try:
            self._reader = pa.ipc.open_stream(self._file)
            # Field names are decoded here: bytes that are not UTF-8 raise.
            self.schema: pa.Schema = self._reader.schema
            names = [field.name for field in self.schema]
        except ClientDisconnect as exc:
            raise _gone() from exc
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, EOFError,
                UnicodeDecodeError) as exc:
            if isinstance(exc.__context__, APIError):
                raise exc.__context__ from None
            if isinstance(exc, UnicodeDecodeError):
                raise InvalidInputError(
                    "A field name of the Arrow schema is not valid UTF-8: name the "
                    "columns with UTF-8 text."
                ) from exc
            raise InvalidInputError(
                "The body is not an Arrow IPC stream: send the records as "
                "application/vnd.apache.arrow.stream (an IPC stream, not a file)."
            ) from exc
        check_field_names(names)
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
        except APIError as exc:
            self.error = exc
            raise
        except ClientDisconnect as exc:
            self.error = _gone()
            raise self.error from exc
        except (pa.ArrowException, OSError, EOFError, UnicodeDecodeError) as exc:
            cause = exc.__context__
            self.error = (
                cause
                if isinstance(cause, APIError)
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


@contextmanager
def arrow_body(request: Request) -> Iterator[StreamReader]:
    """The request's Arrow IPC stream body, read as it arrives under the size limit."""
    limit = getattr(request.app.state, "max_arrow_bytes", None)
    # Under the body's idle and total timeouts and minimum rate: a client that stops or
    # trickles makes the read fail (408), which frees the worker thread that waits for it.
    body = BodyFile(body_chunks(request), limit=limit)
    try:
        yield StreamReader(body)
    finally:
        body.close()


def _align_decimals(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Copy decimal columns to fresh buffers: IPC aligns buffers to 8 bytes, and Lance
    (arrow-rs) panics on a decimal128 buffer that is not 16-byte aligned."""
    if "decimal" not in str(batch.schema):
        return batch
    columns = [pa.concat_arrays([c]) if "decimal" in str(c.type) else c for c in batch.columns]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def table_to_ipc_file(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def check_field_names(names: list[str]) -> None:
    """400 for column names Lance cannot store: empty, or with a '.' (Lance reads it as
    the path into a struct, and refuses the write only deep inside with an error that
    does not say it is the client's)."""
    for name in names:
        if not name:
            raise InvalidInputError("A column of the Arrow schema has an empty name: name it.")
        if "." in name:
            raise InvalidInputError(
                f"The column name {name!r} contains '.', which names a field inside a "
                "struct column: rename it, or send a struct column."
            )
