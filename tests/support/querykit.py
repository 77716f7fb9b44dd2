"""Helpers shared by the query and index tests: generated tables, HTTP calls, brute force."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import requests

from nsframe._protocol.routes import ARROW_FILE
from tests.support import ARROW_HEADERS, ipc_stream, read_ipc_file

WORDS = ["apple", "banana", "cherry", "river", "mountain", "quick", "brown", "fox", "lazy",
         "dog", "ocean", "forest", "silver", "garden", "thunder", "candle"]


def vectors(rows: int, dim: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((rows, dim), dtype=np.float32)


def fsl(data: np.ndarray) -> pa.FixedSizeListArray:
    return pa.FixedSizeListArray.from_arrays(pa.array(data.ravel()), data.shape[1])


def sentences(rows: int, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=6)) for _ in range(rows)]


def create_table(http: requests.Session, base_url: str, table: str,
                 data: pa.Table) -> dict[str, Any]:
    resp = http.post(f"{base_url}/v1/table/{table}/create", data=ipc_stream(data),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()
    return out


def insert(http: requests.Session, base_url: str, table: str, data: pa.Table) -> dict[str, Any]:
    resp = http.post(f"{base_url}/v1/table/{table}/insert", data=ipc_stream(data),
                     headers=ARROW_HEADERS)
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()
    return out


def query_raw(http: requests.Session, base_url: str, table: str,
              body: dict[str, Any]) -> requests.Response:
    return http.post(f"{base_url}/v1/table/{table}/query", json=body)


def query(http: requests.Session, base_url: str, table: str, body: dict[str, Any]) -> pa.Table:
    resp = query_raw(http, base_url, table, body)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == ARROW_FILE
    return read_ipc_file(resp.content)


def post(http: requests.Session, base_url: str, table: str, action: str,
         body: dict[str, Any] | None = None, **params: Any) -> requests.Response:
    return http.post(f"{base_url}/v1/table/{table}/{action}", json=body or {}, params=params)


def ok(resp: requests.Response) -> dict[str, Any]:
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()
    return out


def brute_force(data: np.ndarray, q: np.ndarray, k: int, metric: str = "l2") -> list[int]:
    """Row numbers of the k nearest rows of ``data`` to ``q``."""
    return [int(i) for i in np.argsort(distances(data, q, metric), kind="stable")[:k]]


def distances(data: np.ndarray, q: np.ndarray, metric: str = "l2") -> np.ndarray:
    if metric == "l2":
        return np.asarray(((data - q) ** 2).sum(axis=1))
    if metric == "cosine":
        sims = data @ q / (np.linalg.norm(data, axis=1) * np.linalg.norm(q))
        return np.asarray(1 - sims)
    if metric == "dot":
        return np.asarray(-(data @ q))
    raise ValueError(metric)


def recall(found: list[int], expected: list[int]) -> float:
    return len(set(found) & set(expected)) / len(expected)
