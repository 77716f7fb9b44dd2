"""Query results on the wire: an Arrow IPC file, streamed batch by batch.

The IPC file format puts its footer last, so a writer can emit each batch as soon as
Lance produces it. The first batches are read inside the handler, where a Lance error
(a bad filter, say) can still become a 400; a result that fits in `INLINE_BYTES` goes
out as one plain body, anything larger streams.

Between two batches the request's `Work` is checked: past its deadline, or once its
client is gone, no further batch is read. Before the status line that is a 400 naming
the limit; after it, the body ends where it is (a file without its footer, which a
client reads as truncated) and the server's log says why.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import anyio.to_thread
import pyarrow as pa
from starlette.responses import Response, StreamingResponse

from nsframe._protocol.ipc import PieceSink
from nsframe._protocol.routes import ARROW_FILE
from nsframe.server._http.capacity import Work, WorkStopped
from nsframe.server._http.in_process import ArrowResponse
from nsframe.server._storage.errors import lance_errors, log

INLINE_BYTES = 4 << 20


def _has_dictionary(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return True
    return any(_has_dictionary(t.field(i).type) for i in range(t.num_fields))


def arrow_file_response(reader: pa.RecordBatchReader, context: str,
                        work: Work | None = None, *, as_arrow: bool = False) -> Response:
    """Send ``reader`` as an IPC file; errors before the first bytes leave become 4xx.

    ``work`` is checked before each batch (see the module's docstring). ``as_arrow``
    (a caller in process, `in_process.accepts_arrow`): a result that fits one plain body
    is answered as the table itself, not encoded.
    """
    if any(_has_dictionary(field.type) for field in reader.schema):
        # Batches written at different times carry different dictionaries (a pandas
        # categorical inserted twice), and an IPC file allows one dictionary per field:
        # such a result is unified whole before it is written.
        with lance_errors(context):
            return table_response(reader.read_all())
    first: list[pa.RecordBatch] = []
    if as_arrow:
        held = 0
        with lance_errors(context):
            for batch in reader:
                if work is not None:
                    work.check()
                first.append(batch)
                held += batch.nbytes
                if held > INLINE_BYTES:
                    break
            else:
                return ArrowResponse(pa.Table.from_batches(first, schema=reader.schema))
    sink = PieceSink()
    writer = pa.ipc.new_file(sink, reader.schema)
    head: list[bytes] = []
    size = 0
    with lance_errors(context):
        for n, batch in enumerate(itertools.chain(first, reader), 1):
            if work is not None:
                work.check()
            writer.write_batch(batch)
            chunk = sink.drain()
            head.append(chunk)
            size += len(chunk)
            if size > INLINE_BYTES and n >= len(first):  # the rest comes from `reader`
                return StreamingResponse(
                    _stream_rest(head, _Rest(reader, writer, sink, work)),
                    media_type=ARROW_FILE,
                )
    writer.close()
    head.append(sink.drain())
    return Response(b"".join(head), media_type=ARROW_FILE)


async def _stream_rest(head: list[bytes], rest: _Rest) -> AsyncIterator[bytes | memoryview]:
    # An async generator: one trip to a worker thread per batch (Lance blocks), then
    # its pieces go out from the event loop without further thread switches. The trips
    # run in the request's lane, whose slot the response holds until it is sent.
    # A cancelled trip (the client hung up) still waits for its thread, so the reader is
    # never closed under a thread that reads it.
    threads = rest.work.threads if rest.work is not None else None
    try:
        yield b"".join(head)
        while pieces := await anyio.to_thread.run_sync(rest.next_pieces, limiter=threads):
            for piece in pieces:
                yield piece
    except WorkStopped as stopped:
        # The status line is gone: the body ends without its footer, and the client
        # reads a truncated file.
        log.warning("query result stream stopped: %s", stopped.detail)
    except Exception:
        # Ended cleanly rather than raised: an exception here would make the server
        # close the connection, and the client's next request on it would fail.
        log.exception("query result stream failed")
    finally:
        rest.close()


class _Rest:
    """The batches of a result not yet sent, and the writer that frames them."""

    def __init__(self, reader: pa.RecordBatchReader, writer: Any, sink: PieceSink,
                 work: Work | None = None) -> None:
        self.reader = reader
        self.writer = writer
        self.sink = sink
        self.work = work
        self.done = False

    def close(self) -> None:
        """Let Lance stop: a reader not read to its end still holds its scan."""
        self.done = True
        close = getattr(self.reader, "close", None)
        if close is not None:
            close()

    def next_pieces(self) -> list[bytes | memoryview]:
        """The IPC bytes of the next batch, or of the footer after the last; [] at the end."""
        if self.done:
            return []
        if self.work is not None:
            self.work.check()
        try:
            self.writer.write_batch(self.reader.read_next_batch())
        except StopIteration:
            self.writer.close()
            self.done = True
        return self.sink.drain_pieces()


def table_response(table: pa.Table) -> Response:
    """A small, already materialised result."""
    sink = PieceSink()
    options = pa.ipc.IpcWriteOptions(unify_dictionaries=True)
    with pa.ipc.new_file(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return Response(sink.drain(), media_type=ARROW_FILE)
