"""The bulk of an insert on the client, with as few passes over the data as possible.

At 1M rows of 128-d vectors (0.5 GB) every pass over the data shows: a copy into fresh
memory costs 0.1-0.25 s here (page faults included), a Python call per row 0.2-0.5 s.
Used by `_vectors` (checking numpy vectors held in a pandas object column) and
`_frames.ipc_stream_chunks` (the request body). `uniform_lengths` answers False when its
input is unusual, and the caller then takes its exact, slower path.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

# Pieces of an encoded batch smaller than this are joined before they are sent; larger
# ones (column buffers) go out as views of the batch's own memory.
SMALL_PIECE_BYTES = 64 << 10


def uniform_lengths(values: Any, width: int) -> bool:
    """True when every item of the object array ``values`` has ``width`` items and none
    is missing: one loop in C instead of one Python call per row. False says nothing:
    the caller checks row by row."""
    import numpy as np
    import pandas as pd

    if len(values) == 0 or bool(pd.isna(values).any()):
        return False
    try:
        lengths = np.frompyfunc(len, 1, 1)(values)
    except TypeError:  # an item without a length
        return False
    return bool((lengths == width).all())


class PieceSink:
    """A write-only file for pyarrow's IPC writer that keeps what it is given.

    pyarrow hands column buffers over as `pa.Buffer`s: kept as they are, the body is
    sent from the batch's own memory instead of being copied into a BytesIO and copied
    out of it again.
    """

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

    def drain(self) -> list[bytes | memoryview]:
        """What was written since the last drain: small pieces joined, large ones as
        views; never an empty piece (in chunked encoding it would end the body)."""
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
