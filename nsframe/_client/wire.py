"""Answers off the wire: JSON bodies, Arrow IPC bodies (decoded while they arrive) and
the walk over a paged listing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from nsframe._client.exchange import Response, SendError
from nsframe.exceptions import ResponseDecodeError, TransportError

try:  # installed with the server (nsframe[server]), so always in the embedded default
    from msgspec.json import encode as _fast_encode
except ImportError:  # pragma: no cover - a client-only install
    _fast_encode = None  # type: ignore[assignment]


def encode_json(value: Any) -> bytes:
    """A request's JSON body. msgspec writes a query's vector ten times faster than the
    standard library (7 µs against 76 µs for 128 floats, benchmarks/README.md); both write
    the same JSON for the plain values a body holds (the query builder refuses NaN)."""
    if _fast_encode is not None:
        return _fast_encode(value)
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


# Told the rows and Arrow bytes of each record batch of a query answer as it is decoded.
BatchCallback = Callable[[int, int], object]


def paged(fetch: Callable[[str | None], dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every page of a listing: ``fetch(page_token)`` from no token until the answer
    carries a null, missing or empty ``page_token`` (the spec's end of a listing)."""
    token: str | None = None
    while True:
        page = fetch(token)
        yield page
        token = page.get("page_token") or None
        if token is None:
            return


def as_dict(answer: Any) -> dict[str, Any]:
    """A decoded answer that the contract says is a JSON object."""
    # 204 and other empty answers decode to None.
    if answer is None:
        return {}
    if not isinstance(answer, dict):
        raise ResponseDecodeError(f"Expected a JSON object from the server, got {answer!r}.")
    return answer


def decode_json(resp: Response) -> Any:
    """The JSON of a 2xx answer; ``None`` for an empty body."""
    if not resp.content:
        return None
    try:
        return resp.json()
    except ValueError as exc:
        raise ResponseDecodeError(
            f"{resp.request.method} {resp.url} answered {resp.status_code} with a body that "
            f"is not JSON: {resp.text[:200]!r}"
        ) from exc


ARROW_FILE_MAGIC = b"ARROW1"
# Bodies up to this size (with a declared length) are read in one call: decoding them
# as they arrive takes more reads than it saves.
WHOLE_READ_BYTES = 4 << 20


def decode_arrow(resp: Response, *,
                 on_batch: BatchCallback | None = None) -> pa.Table:
    """An Arrow IPC file body (or a stream, which some servers send) as a table.

    A file is decoded while it arrives: after its 8-byte preamble comes an IPC stream
    (then the footer), so each batch is read straight off the connection into the
    memory Arrow keeps, with no copy of the whole body. A small body of known length,
    and anything unexpected, is read whole instead.

    ``on_batch(rows, nbytes)`` is told each batch decoded while the body arrives, and
    what remains once when the body is read whole.
    """
    tally = _Tally(on_batch) if on_batch is not None else None
    if resp.arrow is not None:  # handed over as Arrow data: nothing to decode
        resp.close()
        if tally is not None:
            tally.rest(resp.arrow)
        return resp.arrow
    body = _RecordingReader(resp)
    length = resp.headers.get("Content-Length", "")
    small = length.isdigit() and int(length) <= WHOLE_READ_BYTES
    if tally is None and not small:
        # Nothing to report batch by batch: read the body straight into one aligned
        # buffer and decode it in place (see `read_aligned`).
        aligned = read_aligned(resp)
        if aligned is not None:
            return _decode_whole(resp, aligned, None)
    try:
        head = b"" if small else body.read(8)
        if head[:6] == ARROW_FILE_MAGIC:
            try:
                table = _read_stream(pa.ipc.open_stream(body), tally)
                tail = body.read()
                if len(tail) >= 10 and tail.endswith(ARROW_FILE_MAGIC):
                    return table
            except (pa.ArrowException, OSError) as exc:
                body.raise_broken(resp, exc)
            # Not the layout expected (a writer without the end-of-stream marker, or a
            # body cut short): decode whatever arrived as a whole file.
        content = body.everything()
    except (SendError, OSError) as exc:
        raise TransportError(f"The answer of {resp.url} broke off: {exc}") from exc
    finally:
        resp.close()
    return _decode_whole(resp, pa.py_buffer(content), tally)


def _decode_whole(resp: Response, buffer: pa.Buffer, tally: _Tally | None) -> pa.Table:
    try:
        if bytes(memoryview(buffer)[:6]) == ARROW_FILE_MAGIC:
            whole = pa.ipc.open_file(buffer).read_all()
        else:
            whole = pa.ipc.open_stream(buffer).read_all()
    except (pa.ArrowInvalid, OSError) as exc:
        raise ResponseDecodeError(
            f"{resp.request.method} {resp.url} answered {resp.status_code} with a body that is "
            f"not Arrow IPC ({exc})."
        ) from exc
    if tally is not None:
        tally.rest(whole)
    return whole


# A streamed answer of unknown length is read into a buffer this large to begin with
# (doubled when full): only the pages written to are ever resident, and one page of a
# 100k-row read (~50 MB with 128-d vectors) fits without moving the buffer.
READ_CAPACITY = 64 << 20


def read_aligned(resp: Response) -> pa.Buffer | None:
    """The whole body in one buffer of Arrow's own (aligned, so decoding it copies
    nothing), filled straight from the connection; None when the body cannot be read
    that way (then `decode_arrow` decodes it batch by batch).

    Decoding batch by batch from a file object copies every batch at least twice more
    (into a bytes object, then into aligned memory): 52 -> 43 ms for a 27 MB answer.
    """
    into = resp.readinto
    if into is None:
        return None
    length = resp.headers.get("Content-Length", "")
    capacity = int(length) + 1 if length.isdigit() else READ_CAPACITY
    buffer = pa.allocate_buffer(capacity, resizable=True)
    size = 0
    try:
        while True:
            if size == capacity:
                capacity *= 2
                buffer.resize(capacity)
            got = into(memoryview(buffer).cast("B")[size:capacity])
            if not got:
                break
            size += got
    except (SendError, OSError) as exc:
        raise TransportError(f"The answer of {resp.url} broke off: {exc!r}") from exc
    finally:
        resp.close()
    # A slice, not a shrink: shrinking a large block may move it (one more copy), and
    # the pages past the end were never touched, so they cost no memory.
    return buffer.slice(0, size)


class _Tally:
    """Tells ``on_batch`` each batch decoded, and keeps the totals told so far."""

    def __init__(self, on_batch: BatchCallback) -> None:
        self._on_batch = on_batch
        self.rows = 0
        self.nbytes = 0

    def __call__(self, rows: int, nbytes: int) -> None:
        self.rows += rows
        self.nbytes += nbytes
        self._on_batch(rows, nbytes)

    def rest(self, whole: pa.Table) -> None:
        """Tell what ``whole`` holds beyond what was told while it streamed."""
        self(max(0, whole.num_rows - self.rows), max(0, whole.nbytes - self.nbytes))


def _read_stream(reader: pa.ipc.RecordBatchStreamReader, tally: _Tally | None) -> pa.Table:
    """The stream's batches as one table, each told as it is read."""
    if tally is None:
        return reader.read_all()
    batches = []
    for batch in reader:
        batches.append(batch)
        tally(batch.num_rows, batch.nbytes)
    return pa.Table.from_batches(batches, schema=reader.schema)


class _RecordingReader:
    """A blocking file over a response body that remembers what it handed out, so that
    a failed streaming decode can start again from the first byte."""

    def __init__(self, resp: Response) -> None:
        self._resp = resp
        self._seen: list[bytes] = []
        self.closed = False

    def read(self, size: int | None = -1) -> bytes:
        resp = self._resp
        if size is None or size < 0:
            data = resp.read()
        else:
            # A read may come back short at a chunk boundary: Arrow wants all of it.
            data = resp.read(size)
            while len(data) < size:
                more = resp.read(size - len(data))
                if not more:
                    break
                data += more
        self._seen.append(data)
        return data

    def everything(self) -> bytes:
        """The whole body: what was read so far and the rest."""
        self.read()
        return b"".join(self._seen)

    def raise_broken(self, resp: Response, exc: BaseException) -> None:
        """Re-raise a connection failure that surfaced inside pyarrow as one."""
        cause = exc.__context__ or exc.__cause__
        if isinstance(cause, SendError):
            raise TransportError(f"The answer of {resp.url} broke off: {cause}") from cause
