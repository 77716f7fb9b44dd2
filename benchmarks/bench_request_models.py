"""The cost of checking one request body: msgspec vs pydantic v2 vs json.loads + hand checks.

Two bodies: a representative query (128-d vector, filter, k, columns, full_text_query and
the envelope) and a small describe body. Each way decodes the raw bytes and checks the same
rules: integers >= 0 (an integral float such as 10.0 allowed, true refused), strings,
booleans, finite numbers, the vector as an object or a bare array, the columns in any of
LanceDB's three shapes. Reported: microseconds per call, the median of ``--repeat``
timings of ``--number`` calls each (one process, one core, the ways interleaved).

    .venv/bin/python benchmarks/bench_request_models.py [--number 2000] [--repeat 25]

The hand checks exist up to commit b00b4ad, the server's own models after it: each is
measured where the checkout has it.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import msgspec
import numpy as np
import pydantic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DIM, median, print_table, write_results

QUERY = {
    "id": ["bench", "docs"],
    "context": {"trace": "abc"},
    "vector": {"single_vector": np.random.default_rng(3).random(DIM).round(6).tolist()},
    "k": 10,
    "filter": "id % 100 = 7",
    "columns": {"column_names": ["id", "text"]},
    "full_text_query": {"string_query": {"query": "quick fox", "columns": ["text"]}},
    "prefilter": True,
    "nprobes": 20,
    "distance_type": "cosine",
    "with_row_id": False,
}
DESCRIBE = {"id": ["bench", "docs"], "version": 3, "branch": "dev"}
Decode = Callable[[bytes], object]
DISTANCES = {"l2", "euclidean", "cosine", "dot", "inner_product", "hamming"}


def whole_int(value: object) -> object:
    """10.0 is 10; anything else is left for the type check."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# ----------------------------------------------------------------------- msgspec
class Count(int):
    """An integer >= 0, checked by `dec_hook` (msgspec refuses 10.0 for an int)."""


def dec_hook(kind: type, value: Any) -> Any:
    if kind is Count:
        value = whole_int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"must be an integer >= 0, got {value!r}")
        return Count(value)
    raise NotImplementedError(kind)


class MsVector(msgspec.Struct):
    single_vector: list[float] | None = None
    multi_vector: list[list[float]] | None = None


class MsStringQuery(msgspec.Struct):
    query: str
    columns: list[str] | None = None


class MsTextQuery(msgspec.Struct):
    string_query: MsStringQuery | None = None
    structured_query: dict[str, Any] | None = None


class MsEnvelope(msgspec.Struct):
    id: list[str] | None = None
    context: dict[str, Any] | None = None
    branch: str | None = None
    version: Count | None = None


class MsQuery(MsEnvelope):
    vector: MsVector | list[float | list[float]] | None = None
    k: Count | None = None
    offset: Count | None = None
    nprobes: Count | None = None
    refine_factor: Count | None = None
    ef: Count | None = None
    filter: str | None = None
    columns: dict[str, list[str] | dict[str, str] | str] | list[str] | None = None
    full_text_query: MsTextQuery | None = None
    prefilter: bool | None = None
    with_row_id: bool | None = None
    fast_search: bool | None = None
    bypass_vector_index: bool | None = None
    distance_type: str | None = None
    lower_bound: float | None = None
    upper_bound: float | None = None

    def __post_init__(self) -> None:
        if self.distance_type is not None and self.distance_type.lower() not in DISTANCES:
            raise ValueError("distance_type is not known")


MS_QUERY = msgspec.json.Decoder(MsQuery, dec_hook=dec_hook)
MS_DESCRIBE = msgspec.json.Decoder(MsEnvelope, dec_hook=dec_hook)


# ---------------------------------------------------------------------- pydantic
PdCount = Annotated[int, pydantic.BeforeValidator(whole_int), pydantic.Field(ge=0)]
Finite = Annotated[float, pydantic.Field(allow_inf_nan=False)]
STRICT = pydantic.ConfigDict(strict=True)


class PdVector(pydantic.BaseModel):
    model_config = STRICT
    single_vector: list[Finite] | None = None
    multi_vector: list[list[Finite]] | None = None


class PdStringQuery(pydantic.BaseModel):
    model_config = STRICT
    query: str
    columns: list[str] | None = None


class PdTextQuery(pydantic.BaseModel):
    model_config = STRICT
    string_query: PdStringQuery | None = None
    structured_query: dict[str, Any] | None = None


class PdEnvelope(pydantic.BaseModel):
    model_config = STRICT
    id: list[str] | None = None
    context: dict[str, Any] | None = None
    branch: str | None = None
    version: PdCount | None = None


class PdQuery(PdEnvelope):
    vector: PdVector | list[Finite] | list[list[Finite]] | None = None
    k: PdCount | None = None
    offset: PdCount | None = None
    nprobes: PdCount | None = None
    refine_factor: PdCount | None = None
    ef: PdCount | None = None
    filter: str | None = None
    columns: dict[str, list[str] | dict[str, str] | str] | list[str] | None = None
    full_text_query: PdTextQuery | None = None
    prefilter: bool | None = None
    with_row_id: bool | None = None
    fast_search: bool | None = None
    bypass_vector_index: bool | None = None
    distance_type: str | None = None
    lower_bound: Finite | None = None
    upper_bound: Finite | None = None

    @pydantic.field_validator("distance_type")
    @classmethod
    def _known(cls, value: str | None) -> str | None:
        if value is not None and value.lower() not in DISTANCES:
            raise ValueError("distance_type is not known")
        return value


PD_QUERY_ADAPTER = pydantic.TypeAdapter(PdQuery)


# ------------------------------------------------------- json.loads + hand checks
def hand_ways() -> dict[str, tuple[Decode, Decode]]:
    """The server's way before request models (up to commit b00b4ad): json.loads, then its
    get_* helpers. Absent from later checkouts; run this script with PYTHONPATH pointing at
    an older one (``git worktree add /tmp/nsframe-base b00b4ad``) to measure it."""
    try:
        from nsframe.server._http import request
        from nsframe.server._routes import query
        get_dict, get_int, get_str = request.get_dict, request.get_int, request.get_str
        parse_request = query.parse_request
    except (ImportError, AttributeError):
        return {}

    def envelope(body: dict[str, Any]) -> None:
        ident = body.get("id")
        if ident is not None and not (isinstance(ident, list) and all(
                isinstance(p, str) for p in ident)):
            raise ValueError("id")
        get_dict(body, "context")
        get_int(body, "version")
        get_str(body, "branch")

    def query_body(raw: bytes) -> object:
        body: dict[str, Any] = json.loads(raw)
        envelope(body)
        return parse_request(body)

    def describe_body(raw: bytes) -> object:
        body: dict[str, Any] = json.loads(raw)
        envelope(body)
        return body

    return {"json.loads + get_* helpers": (query_body, describe_body)}


def nsframe_ways() -> dict[str, tuple[Decode, Decode]]:
    """This checkout's request models, through the server's own `decode` (msgspec)."""
    try:
        from nsframe.server._http.validation import decode
        from nsframe.server._models.query import QueryRequest
        from nsframe.server._models.tables import DescribeTableRequest
    except ImportError:
        return {}
    return {"nsframe models (validation.decode)": (
        lambda raw: decode(QueryRequest, raw, {}),
        lambda raw: decode(DescribeTableRequest, raw, {}),
    )}


# ------------------------------------------------------------------------ timing
WAYS: dict[str, tuple[Decode, Decode]] = {
    "pydantic model_validate_json": (PdQuery.model_validate_json,
                                     PdEnvelope.model_validate_json),
    "pydantic TypeAdapter.validate_json": (PD_QUERY_ADAPTER.validate_json,
                                           pydantic.TypeAdapter(PdEnvelope).validate_json),
    "msgspec.json.Decoder(type=...)": (MS_QUERY.decode, MS_DESCRIBE.decode),
}


def check_agreement(ways: dict[str, tuple[Decode, Decode]]) -> None:
    """Every way accepts both bodies and refuses the same mistakes."""
    good = (json.dumps(QUERY).encode(), json.dumps(DESCRIBE).encode())
    bad = [{"k": -1}, {"k": "10"}, {"k": True}, {"k": 1.5}, {"version": -3},
           {"prefilter": 1}, {"filter": 3}, {"vector": {"single_vector": ["x"]}},
           {"distance_type": "manhattan"}, {"id": "x"}]
    for name, (query, describe) in ways.items():
        query(good[0])
        describe(good[1])
        query(json.dumps({"k": 10.0}).encode())
        for body in bad:
            try:
                query(json.dumps(body).encode())
            except Exception:  # each library raises its own error class
                continue
            raise AssertionError(f"{name} accepted {body}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args(argv)
    ways = {**hand_ways(), **WAYS, **nsframe_ways()}
    check_agreement(ways)
    bodies = {"query": json.dumps(QUERY).encode(), "describe": json.dumps(DESCRIBE).encode()}
    micros: dict[str, dict[str, list[float]]] = {
        name: {"query": [], "describe": []} for name in ways}
    for _ in range(args.repeat):
        for name, funcs in ways.items():
            for (kind, raw), func in zip(bodies.items(), funcs, strict=True):
                seconds = timeit.timeit(lambda f=func, r=raw: f(r), number=args.number)
                micros[name][kind].append(1e6 * seconds / args.number)
    rows = [[name, median(m["query"]), median(m["describe"])] for name, m in micros.items()]
    print(f"\nquery body {len(bodies['query']):,} bytes ({DIM}-d vector), describe body "
          f"{len(bodies['describe'])} bytes; µs per call, median of {args.repeat} x "
          f"{args.number}\n")
    print_table(["way", "query µs", "describe µs"], rows)
    print(f"\nresults: {write_results('request-models', {'micros': micros})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
