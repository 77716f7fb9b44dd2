"""`nsframe._encode`: the insert's fast paths give what the exact paths give."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from nsframe._encode import uniform_lengths
from nsframe._frames import ipc_stream_chunks


def _objects(*items: object) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = list(items)
    return out


@pytest.mark.parametrize(("items", "expected"), [
    ((np.zeros(3), np.ones(3), [1.0, 2.0, 3.0]), True),
    ((np.zeros(3), np.ones(4)), False),
    ((np.zeros(3), None), False),  # missing rows: the exact path decides
    ((np.zeros(3), float("nan")), False),
    ((np.zeros(3), 7), False),  # no length at all
    ((), False),
])
def test_uniform_lengths(items: tuple[object, ...], expected: bool) -> None:
    assert uniform_lengths(_objects(*items), 3) is expected


def test_ipc_stream_chunks_decode_to_the_batches_sent() -> None:
    vectors = np.random.default_rng(1).random((20_000, 128), dtype=np.float32)
    table = pa.table({"id": np.arange(20_000), "text": [str(i) for i in range(20_000)],
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()),
                                                                  128)})
    counter = [0]
    pieces = list(ipc_stream_chunks(table.to_batches(max_chunksize=5000), table.schema,
                                    counter))
    assert all(len(memoryview(p)) for p in pieces)  # an empty chunk would end the body
    body = b"".join(pieces)
    assert counter[0] == len(body)
    assert pa.ipc.open_stream(body).read_all().equals(table)
