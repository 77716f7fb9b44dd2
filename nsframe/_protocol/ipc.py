"""Arrow IPC bodies as both sides write them: a sink that keeps pyarrow's buffers.

The client encodes insert bodies into it and the server query answers. pyarrow's IPC
writer hands column buffers over as immutable `pa.Buffer`s; kept as they are, a body
goes out from the batch's own memory instead of being copied into a BytesIO and out
of it again.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

# Pieces smaller than this (message headers, padding) are joined before they are sent,
# so that each batch makes a few sends, not dozens; larger ones (column buffers) go out
# as views of the batch's own memory.
SMALL_PIECE_BYTES = 64 << 10


class PieceSink:
    """A write-only file for pyarrow's IPC writer that keeps what it is given."""

    def __init__(self) -> None:
        self._pieces: list[Any] = []
        self._position = 0
        self.closed = False

    def write(self, data: Any) -> int:
        if not isinstance(data, (bytes, pa.Buffer)):
            data = bytes(data)  # a view pyarrow may reuse: copy it now
        size = memoryview(data).nbytes
        self._pieces.append(data)
        self._position += size
        return size

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def drain(self) -> bytes:
        """What was written since the last drain, as one bytes object."""
        out = b"".join(self._pieces)
        self._pieces.clear()
        return out

    def drain_pieces(self) -> list[bytes | memoryview]:
        """What was written since the last drain: small pieces joined, large ones as
        byte views; never an empty piece (in chunked encoding it would end the body)."""
        out: list[bytes | memoryview] = []
        small: list[memoryview] = []
        for piece in self._pieces:
            view = memoryview(piece)
            if view.nbytes >= SMALL_PIECE_BYTES:
                if small:
                    out.append(b"".join(small))
                    small.clear()
                out.append(view.cast("B") if view.format != "B" else view)
            elif view.nbytes:
                small.append(view)
        if small:
            out.append(b"".join(small))
        self._pieces.clear()
        return out
