"""`nsframe.connect_async`: the sync workflow, awaited, through each transport; 100
queries at once from one event loop, each answered with its own rows."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import nsframe
from nsframe.exceptions import (
    APIError,
    InvalidInputError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from nsframe.transport import HTTPTransport
from tests.support import text_vector_rows

from .test_transports import TRANSPORTS, _streamed, workflow


async def async_workflow(conn: nsframe.AsyncConnection) -> dict[str, Any]:
    """`test_transports.workflow`, awaited step by step."""
    seen: dict[str, Any] = {}
    await conn.create_namespace("db")
    tbl = await conn.create_table("db$t", text_vector_rows(100))
    seen["insert"] = (await tbl.insert(text_vector_rows(50, start=100))).num_rows
    seen["streamed"] = (await tbl.insert(_streamed(1000, 150, batches=5))).num_rows
    seen["count"] = await tbl.count_rows()
    seen["filtered"] = await tbl.count_rows("id >= 140")
    seen["read"] = (await tbl.to_arrow(filter="id < 10")).sort_by("id")
    seen["search"] = await tbl.search(np.zeros(8, dtype=np.float32)).limit(5).to_arrow()
    seen["tables"] = await conn.namespace("db").table_names()

    async def missing() -> Any:
        return await (await conn.open_table("db$missing")).count_rows()

    for step, call in {
        "404": missing,
        "400": lambda: tbl.search().where("no_such_column > 1").to_arrow(),
        "409": lambda: conn.create_table("db$t", text_vector_rows(1)),
    }.items():
        with pytest.raises(APIError) as info:
            await call()
        err = info.value
        seen[step] = (type(err), err.status, err.code, err.detail, err.type, err.title)
    return seen


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_the_async_workflow_answers_as_the_sync_one(kind: str, tmp_path: Path) -> None:
    def transport() -> HTTPTransport | None:
        return HTTPTransport() if kind == "http" else None

    async def run() -> dict[str, Any]:
        async with await nsframe.connect_async(tmp_path / "async",
                                               transport=transport()) as conn:
            assert isinstance(conn, nsframe.AsyncConnection)
            return await async_workflow(conn)

    awaited = asyncio.run(run())
    with nsframe.connect(tmp_path / "sync", transport=transport()) as conn:
        synced = workflow(conn)
    assert awaited.keys() == synced.keys()
    for step in synced:
        if step in ("read", "search"):
            assert awaited[step].equals(synced[step]), step
        else:
            assert awaited[step] == synced[step], step
    assert awaited["count"] == 5150
    assert [awaited[s][0] for s in ("404", "400", "409")] == \
        [TableNotFoundError, InvalidInputError, TableAlreadyExistsError]


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_a_hundred_concurrent_queries_from_one_loop(kind: str, tmp_path: Path) -> None:
    ids = np.arange(1000)
    vectors = np.eye(1000, 8, dtype=np.float32) + ids[:, None].astype(np.float32)
    data = pa.table({"id": ids, "vector": pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.ravel()), 8)})

    async def run() -> list[Any]:
        transport = HTTPTransport() if kind == "http" else None
        async with await nsframe.connect_async(tmp_path, transport=transport) as conn:
            tbl = await conn.create_table("t", data)
            queries = [tbl.search(vectors[i * 7]).limit(1).select(["id"]).to_list()
                       for i in range(50)]
            counts = [tbl.count_rows(f"id < {i}") for i in range(50)]
            return await asyncio.gather(*queries, *counts)

    answers = asyncio.run(run())
    assert [a[0]["id"] for a in answers[:50]] == [i * 7 for i in range(50)]
    assert answers[50:] == list(range(50))


def test_sync_names_and_what_runs_at_once(tmp_path: Path) -> None:
    async def run() -> None:
        conn = await nsframe.connect_async(tmp_path)
        tbl = await conn.create_table("t", {"id": [1, 2, 3]})
        assert isinstance(tbl, nsframe.AsyncTable) and tbl.name == "t"
        assert tbl == await conn.open_table("t")  # the same table
        query = tbl.search().where("id > 1").limit(5)  # builders: nothing sent yet
        assert isinstance(query, nsframe.AsyncQuery)
        assert (await query.to_pandas())["id"].tolist() == [2, 3]
        assert await tbl.version() == 1  # a property that asks the server: awaited
        assert await conn.table_names() == ["t"]
        await conn.close()
        assert conn.closed

    asyncio.run(run())


def test_an_asyncio_web_app_awaits_its_queries(tmp_path: Path) -> None:
    """A Starlette app that opens the connection at start-up and awaits a query per
    request; 20 requests at once on one event loop are each answered with their rows."""
    import contextlib

    import httpx
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    state: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        async with await nsframe.connect_async(tmp_path) as conn:
            await conn.create_table("t", {"id": list(range(100))})
            state["tbl"] = await conn.open_table("t")
            yield

    async def below(request: Request) -> JSONResponse:
        n = int(request.path_params["n"])
        return JSONResponse({"n": n, "rows": await state["tbl"].count_rows(f"id < {n}")})

    app = Starlette(routes=[Route("/below/{n}", below)], lifespan=lifespan)

    async def run() -> list[Any]:
        async with app.router.lifespan_context(app):
            client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                       base_url="http://app")
            async with client:
                answers = await asyncio.gather(*(client.get(f"/below/{n}")
                                                 for n in range(0, 100, 5)))
            return [a.json() for a in answers]

    assert asyncio.run(run()) == [{"n": n, "rows": n} for n in range(0, 100, 5)]
