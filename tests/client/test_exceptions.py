"""The exception table shared by client and server is complete and consistent."""

from __future__ import annotations

import inspect

import pytest

from nsframe import exceptions as exc


def api_error_classes() -> list[type[exc.APIError]]:
    return [
        obj for _, obj in inspect.getmembers(exc, inspect.isclass)
        if issubclass(obj, exc.APIError)
    ]


@pytest.mark.parametrize("code", range(24))
def test_every_lance_code_maps_to_a_class_with_that_code(code: int) -> None:
    cls = exc.error_class_for(exc._BY_CODE[code].status, code)
    assert cls.code == code


def test_leaf_codes_are_unique() -> None:
    leaves = [c for c in api_error_classes() if not c.__subclasses__()]
    codes = [c.code for c in leaves if c is not exc.PayloadTooLargeError]
    assert len(codes) == len(set(codes)), sorted(codes)


@pytest.mark.parametrize("cls", api_error_classes(), ids=lambda c: c.__name__)
def test_every_class_renders_the_contract_body(cls: type[exc.APIError]) -> None:
    body = cls("what to fix", instance="/v1/x").to_body()
    assert body["status"] == cls.status
    assert body["type"].startswith("/errors/")
    assert body["title"]
    assert body["detail"] == body["error"] == "what to fix"
    assert body["instance"] == "/v1/x"
    assert body["code"] == cls.code


def test_status_wins_when_code_disagrees() -> None:
    # A server that sends code 4 (table not found) with a 500 is a server error to us.
    assert exc.error_class_for(500, 4) is exc.ServerError
    assert exc.error_class_for(404, None) is exc.NotFoundError
    assert exc.error_class_for(418, None) is exc.APIError
    assert exc.error_class_for(502, None) is exc.ServerError


def test_a_full_store_is_storage_full_whatever_code_it_carries() -> None:
    # Our 507 carries code 18 (Internal), which names ServerError at 500.
    assert exc.error_class_for(507, 18) is exc.StorageFullError
    assert exc.error_class_for(507, None) is exc.StorageFullError
    assert exc.error_class_for(500, 18) is exc.ServerError
    error = exc.StorageFullError("full")
    assert isinstance(error, exc.ServerError)
    assert error.to_body()["type"] == "/errors/insufficient-storage"


def test_method_not_allowed_is_unsupported() -> None:
    assert exc.error_class_for(405, 0) is exc.UnsupportedError
    assert exc.error_class_for(405, None) is exc.UnsupportedError


def test_drop_namespace_fail_is_a_400_namespace_not_found() -> None:
    assert exc.error_class_for(400, 1) is exc.NamespaceNotFoundError


def test_every_exported_name_is_an_exception() -> None:
    for name in exc.__all__:
        obj = getattr(exc, name)
        assert callable(obj)


def test_each_code_names_the_most_specific_class_that_has_it() -> None:
    # Computed from the classes' own `code`: NotFoundError has code 4 too, but a code 4
    # answer is about a table.
    assert exc._BY_CODE[4] is exc.TableNotFoundError
    assert exc._BY_CODE[13] is exc.InvalidInputError  # PayloadTooLargeError borrows 13
    assert sorted(exc._BY_CODE) == list(range(24))


def test_a_subclass_takes_over_the_code_of_its_base(monkeypatch: pytest.MonkeyPatch) -> None:
    special = type("SpecialTableNotFoundError", (exc.TableNotFoundError,), {})
    monkeypatch.setattr(exc, special.__name__, special, raising=False)
    assert exc._classes_by_code()[4] is special


def test_two_unrelated_classes_cannot_claim_one_code(monkeypatch: pytest.MonkeyPatch) -> None:
    rogue = type("RogueError", (exc.APIError,), {"status": 404, "code": 4})
    monkeypatch.setattr(exc, rogue.__name__, rogue, raising=False)
    with pytest.raises(TypeError, match="both claim code 4"):
        exc._classes_by_code()
