"""The client's request ids (issue 27): one ``x-request-id`` per call, the same on each
retry of it, and every error raised from an answer names the id the server logged."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

import nsframe
from nsframe.exceptions import ServiceUnavailableError, TableNotFoundError
from tests.client.test_http import Scripted, error, ok_json

RID = "x-request-id"




def sent_ids(server: Scripted) -> list[str]:
    return [{k.lower(): v for k, v in r["headers"].items()}[RID] for r in server.requests]


def test_a_retried_call_sends_the_same_id_each_time(scripted: Callable[..., Scripted]) -> None:
    server = scripted([error(503, 17, "busy", **{"Retry-After": "0"}),
                       error(503, 17, "busy", **{"Retry-After": "0"}), ok_json({"version": 3}),
                       ok_json({"version": 4})])
    conn = nsframe.connect(server.url)
    conn.client.post("/v1/table/{id}/describe", "t", idempotent=True)
    conn.client.post("/v1/table/{id}/describe", "t", idempotent=True)
    first, again, third, other = sent_ids(server)
    assert first == again == third and other != first


def test_a_call_sent_again_on_a_dropped_connection_keeps_its_id(
        scripted: Callable[..., Scripted]) -> None:
    server = scripted([ok_json({"version": 1})], drop_first=1)
    nsframe.connect(server.url).client.post("/v1/table/{id}/describe", "t", idempotent=True)
    dropped, answered = sent_ids(server)
    assert dropped == answered


def test_an_error_names_the_id_it_was_sent_with(scripted: Callable[..., Scripted]) -> None:
    server = scripted([error(404, 4, "Table 't' does not exist.")])
    with pytest.raises(TableNotFoundError) as info:
        nsframe.connect(server.url).table("t").describe()
    (sent,) = sent_ids(server)
    assert info.value.request_id == sent
    assert str(info.value) == f"Table 't' does not exist. (request id {sent})"


def test_an_error_names_the_id_the_server_answered_with(
        scripted: Callable[..., Scripted]) -> None:
    # A server replaces an id it will not log; its answer's id is the one in its log.
    status, headers, body = error(503, 17, "busy", **{"Retry-After": "0"})
    server = scripted([(status, {**headers, RID: "srv-42"}, body)])
    conn = nsframe.connect(server.url, retries=0)
    with pytest.raises(ServiceUnavailableError) as info:
        conn.table("t").describe()
    assert info.value.request_id == "srv-42"
    assert str(info.value).endswith("(request id srv-42)")
    assert json.loads(body)["detail"] == info.value.detail == "busy"


def test_the_id_survives_a_reworded_message_and_pickling() -> None:
    import pickle

    err = TableNotFoundError("no table", request_id="abc").reword("Open it first.")
    assert str(err) == "Open it first. (request id abc)"
    again = pickle.loads(pickle.dumps(err))
    assert (str(again), again.request_id) == ("Open it first. (request id abc)", "abc")
    assert str(TableNotFoundError("no table")) == "no table"
