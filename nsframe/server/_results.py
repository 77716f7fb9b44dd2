"""Query results on the wire: an Arrow IPC file, streamed batch by batch.

The IPC file format puts its footer last, so a writer can emit each batch as soon as
Lance produces it. The first batches are read inside the handler, where a Lance error
(a bad filter, say) can still become a 400; a result that fits in `INLINE_BYTES` goes
out as one plain body, anything larger streams.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from starlette.responses import Response, StreamingResponse

from nsframe._spec import ARROW_FILE
from nsframe.server._errors import lance_errors, log

INLINE_BYTES = 4 << 20


class _ChunkSink:
    """A write-only file object that hands out what was written since the last drain."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._position = 0
        self.closed = False

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._chunks.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def drain(self) -> bytes:
        out = b"".join(self._chunks)
        self._chunks.clear()
        return out


def arrow_file_response(reader: pa.RecordBatchReader, context: str) -> Response:
    """Send ``reader`` as an IPC file; errors before the first bytes leave become 4xx."""
    sink = _ChunkSink()
    writer = pa.ipc.new_file(sink, reader.schema)
    head: list[bytes] = []
    size = 0
    with lance_errors(context):
        for batch in reader:
            writer.write_batch(batch)
            chunk = sink.drain()
            head.append(chunk)
            size += len(chunk)
            if size > INLINE_BYTES:
                return StreamingResponse(
                    _stream_rest(head, reader, writer, sink), media_type=ARROW_FILE
                )
    writer.close()
    head.append(sink.drain())
    return Response(b"".join(head), media_type=ARROW_FILE)


def _stream_rest(
    head: list[bytes], reader: pa.RecordBatchReader, writer: Any, sink: _ChunkSink
) -> Iterator[bytes]:
    yield b"".join(head)
    try:
        for batch in reader:
            writer.write_batch(batch)
            yield sink.drain()
        writer.close()
        yield sink.drain()
    except Exception:
        # The status line is gone; a truncated body (no footer) is what the client sees.
        log.exception("query result stream failed")
        raise


def table_response(table: pa.Table) -> Response:
    """A small, already materialised result."""
    sink = _ChunkSink()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return Response(sink.drain(), media_type=ARROW_FILE)
