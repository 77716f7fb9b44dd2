"""Large inserts: chunks sized by bytes, progress callbacks, partial failures reported,
and LazyFrames streamed rather than collected."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from polars.io.plugins import register_io_source

import nsframe
from nsframe import PartialWriteError
from nsframe._frames import to_source
from nsframe.exceptions import TableNotFoundError

DIM = 16
CHUNK = 100_000  # bytes


def frame(n: int, start: int = 0) -> pd.DataFrame:
    vectors = np.random.default_rng(start).random((n, DIM), dtype=np.float32)
    return pd.DataFrame({"id": np.arange(start, start + n), "vector": list(vectors)})


def expected_chunks(data: Any, chunk_size: int) -> int:
    # One in-memory batch: rows per chunk follow from its bytes per row.
    source = to_source(data)
    per_row = source.nbytes // source.num_rows
    return math.ceil(source.num_rows / max(1, chunk_size // per_row))


@pytest.mark.parametrize("kind", ["pandas", "polars"])
def test_a_frame_larger_than_a_chunk_goes_in_several_inserts(
        kind: str, conn: nsframe.Connection, ns: str) -> None:
    data: Any = frame(10_000)
    if kind == "polars":
        data = pl.from_pandas(data)
    chunks = expected_chunks(data, CHUNK)
    assert chunks >= 7
    calls: list[tuple[int, int]] = []
    tbl = data.ns.to_table(f"{ns}$big", conn=conn, chunk_size=CHUNK,
                           progress=lambda rows, sent: calls.append((rows, sent)))
    assert len(calls) == chunks
    rows = [r for r, _ in calls]
    assert rows == sorted(rows) and rows[-1] == 10_000
    sent = [b for _, b in calls]
    assert all(b2 > b1 for b1, b2 in itertools.pairwise(sent))
    assert sent[-1] >= 10_000 * (8 + 4 * DIM)  # every value went over the wire
    assert tbl.count_rows() == 10_000
    assert [v.version for v in tbl.versions()] == list(range(1, chunks + 1))
    got = tbl.to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == list(range(10_000))
    np.testing.assert_array_equal(
        np.stack(got.column("vector").to_numpy(zero_copy_only=False)),
        np.stack(frame(10_000)["vector"].to_list()))


def test_insert_result_counts_rows_and_ends_at_the_last_version(
        conn: nsframe.Connection, ns: str) -> None:
    tbl = frame(10).ns.to_table(f"{ns}$big", conn=conn)
    result = frame(5_000, 10).ns.insert(tbl, chunk_size=CHUNK)
    assert result.num_rows == 5_000
    assert result.raw["chunks"] == expected_chunks(frame(5_000, 10), CHUNK)
    assert result.version == tbl.version == 1 + result.raw["chunks"]


def test_an_empty_frame_still_creates_the_table(conn: nsframe.Connection, ns: str) -> None:
    calls: list[tuple[int, int]] = []
    tbl = pd.DataFrame({"id": pd.Series([], dtype="int64")}).ns.to_table(
        f"{ns}$empty", conn=conn, progress=lambda r, b: calls.append((r, b)))
    assert tbl.count_rows() == 0
    assert tbl.schema.names == ["id"]
    assert len(calls) == 1 and calls[0][0] == 0


def test_a_failed_chunk_says_what_was_committed(conn: nsframe.Connection, ns: str) -> None:
    ident = f"{ns}$big"
    first = frame(10).ns.to_table(ident, conn=conn)

    def drop_after_first_chunk(rows: int, sent: int) -> None:
        # The table disappears between two chunks: the second insert fails for real.
        if rows and conn.client.table_exists(ident):
            conn.drop_table(ident)

    data = frame(3_000, 10)
    with pytest.raises(PartialWriteError) as caught:
        data.ns.insert(first, chunk_size=CHUNK, progress=drop_after_first_chunk)
    error = caught.value
    per_chunk = CHUNK // (to_source(data).nbytes // 3_000)
    assert (error.table, error.chunks_committed) == (ident, 1)
    assert error.rows_committed == per_chunk
    assert error.version == 2
    assert isinstance(error.__cause__, TableNotFoundError)
    assert f"{per_chunk} rows, table version 2" in str(error)
    assert isinstance(error, nsframe.NsframeError)


def test_a_bad_later_batch_is_a_partial_write(conn: nsframe.Connection, ns: str) -> None:
    def batches() -> Iterator[pa.RecordBatch]:
        for i in range(3):
            yield pa.record_batch({"id": pa.array(range(i * 2000, i * 2000 + 2000))})
        yield pa.record_batch({"other": pa.array(["x"])})

    tbl = conn.create_table(f"{ns}$t", schema=pa.schema([("id", pa.int64())]))
    with pytest.raises(PartialWriteError, match="skip the first") as caught:
        tbl.insert(batches(), chunk_size=20_000)
    assert caught.value.rows_committed == tbl.count_rows() > 0
    assert isinstance(caught.value.__cause__, ValueError)


def test_a_first_chunk_failure_is_the_plain_error(conn: nsframe.Connection, ns: str) -> None:
    with pytest.raises(TableNotFoundError):
        frame(3_000).ns.insert(f"{ns}$missing", conn=conn, chunk_size=CHUNK)
    with pytest.raises(ValueError, match="chunk_size must be"):
        frame(3).ns.insert(f"{ns}$missing", conn=conn, chunk_size=0)
    with pytest.raises(TypeError, match="progress must be"):
        frame(3).ns.insert(f"{ns}$missing", conn=conn, progress="yes")  # type: ignore[arg-type]


def test_progress_true_draws_a_bar(conn: nsframe.Connection, ns: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    frame(3_000).ns.to_table(f"{ns}$big", conn=conn, chunk_size=CHUNK, progress=True)
    err = capsys.readouterr().err
    assert "insert" in err and "3.00k/3.00k" in err and "MB/s" in err


def test_the_bar_moves_while_one_large_chunk_is_sent(
        conn: nsframe.Connection, ns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import tqdm.auto

    shown: list[int] = []  # the bar's count after each of its updates

    class RecordingBar(tqdm.auto.tqdm):  # type: ignore[misc, name-defined]
        def update(self, n: float | None = 1) -> bool | None:
            answer = super().update(n)
            shown.append(int(self.n))
            return answer

    monkeypatch.setattr(tqdm.auto, "tqdm", RecordingBar)
    batches = (pa.RecordBatch.from_pandas(frame(500, i * 500), preserve_index=False)
               for i in range(6))
    tbl = conn.create_table(f"{ns}$one", schema=to_source(frame(1)).schema)
    result = tbl.insert(batches, chunk_size=1 << 30, progress=True)
    assert result.raw["chunks"] == 1 and tbl.count_rows() == 3_000
    # One commit, yet the bar went up batch by batch as the rows were sent.
    assert list(dict.fromkeys(n for n in shown if n)) == [500, 1_000, 1_500, 2_000, 2_500,
                                                          3_000]


def test_no_bar_unless_asked_or_large_and_watched(conn: nsframe.Connection, ns: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    tbl = frame(3_000).ns.to_table(f"{ns}$big", conn=conn, chunk_size=CHUNK)  # None
    frame(10).ns.insert(tbl, progress=False)
    tbl.to_pandas()
    assert "rows" not in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["generator", "lazy"])
def test_a_stream_gets_the_automatic_bar_once_enough_was_sent(
        kind: str, conn: nsframe.Connection, ns: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import nsframe._upload as upload

    def data() -> Any:
        if kind == "lazy":
            return pl.from_pandas(frame(3_000)).lazy()
        return (pa.RecordBatch.from_pandas(frame(500, i * 500), preserve_index=False)
                for i in range(6))

    assert to_source(data()).nbytes is None  # the size of a stream is not known ahead
    monkeypatch.setattr(upload, "interactive", lambda: True)
    tbl = conn.create_table(f"{ns}$big", schema=to_source(frame(1)).schema)
    tbl.insert(data(), chunk_size=CHUNK)  # 216 kB: far under the 100 MB threshold
    assert "rows" not in capsys.readouterr().err
    monkeypatch.setattr(upload, "AUTO_PROGRESS_BYTES", 150_000)
    calls: list[int] = []
    tbl.insert(data(), chunk_size=CHUNK, progress=lambda rows, sent: calls.append(sent))
    assert "rows" not in capsys.readouterr().err  # a callback replaces the bar
    tbl.insert(data(), chunk_size=CHUNK)
    err = capsys.readouterr().err
    # The bar starts at the first chunk that takes the bytes sent past the threshold,
    # counting the rows committed before it.
    assert f"insert {tbl.id}" in err and "MB/s" in err
    assert "0.00 rows" not in err and "3.00k rows" in err
    assert sum(1 for sent in calls if sent <= 150_000) >= 1
    assert tbl.count_rows() == 9_000


def test_reads_report_progress_page_by_page(conn: nsframe.Connection, ns: str) -> None:
    tbl = frame(2_500).ns.to_table(f"{ns}$big", conn=conn)
    calls: list[tuple[int, int]] = []
    table = tbl.to_arrow(page_rows=1_000, progress=lambda r, b: calls.append((r, b)))
    assert table.num_rows == 2_500
    assert [r for r, _ in calls] == [1_000, 2_000, 2_500]
    assert calls[-1][1] >= table.nbytes
    frame_back = tbl.to_pandas(progress=lambda r, b: calls.append((r, b)))
    assert len(frame_back) == 2_500 and calls[-1][0] == 2_500


# ---------------------------------------------------------------------- LazyFrames
BATCH_ROWS = 5_000
BATCHES = 200  # 1,000,000 rows, 72 MB


def counting_lazy_frame(produced: list[int]) -> pl.LazyFrame:
    """A LazyFrame whose rows come from a generator that counts the batches it made."""
    schema = {"id": pl.Int64, "vector": pl.Array(pl.Float32, DIM)}

    def source(with_columns: list[str] | None, predicate: Any, n_rows: int | None,
               batch_size: int | None) -> Iterator[pl.DataFrame]:
        for i in range(BATCHES):
            produced.append(i)
            vectors = np.full((BATCH_ROWS, DIM), i, dtype=np.float32)
            batch = pl.DataFrame({
                "id": np.arange(i * BATCH_ROWS, (i + 1) * BATCH_ROWS),
                "vector": pl.Series(vectors, dtype=pl.Array(pl.Float32, DIM)),
            })
            yield batch.select(with_columns) if with_columns else batch

    return register_io_source(source, schema=schema)


def test_a_lazy_frame_is_streamed_not_collected(conn: nsframe.Connection, ns: str) -> None:
    produced: list[int] = []
    commits: list[tuple[int, int]] = []  # (rows made by the source, rows committed)
    lazy = counting_lazy_frame(produced).with_columns(pl.col("id") * 2)
    result = lazy.ns.to_table(
        f"{ns}$lazy", conn=conn, chunk_size=1 << 20,
        progress=lambda rows, sent: commits.append((len(produced) * BATCH_ROWS, rows)))
    total = BATCH_ROWS * BATCHES
    assert result.count_rows() == total
    assert len(produced) == BATCHES
    # The source never ran far ahead of the inserts: the first chunk was committed
    # before a quarter of it was made, and at no commit was half of it in flight.
    assert len(commits) > 50
    assert commits[0][0] < total // 4
    assert max(made - done for made, done in commits) < total // 2
    assert commits[-1][1] == total
    ids = result.search().where("id % 20000 = 0").select(["id"]).to_arrow()
    assert sorted(ids.column("id").to_pylist()) == list(range(0, 2 * total, 20_000))
    assert result.versions()[-1].version == len(commits)
