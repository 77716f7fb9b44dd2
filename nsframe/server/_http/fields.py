"""Field types of request models whose rules msgspec has no native spelling for.

msgspec hands a member declared with one of these types to `dec_hook`, which calls the
type's ``from_wire``. A refusal raises `ValueError` saying what is allowed; msgspec adds
the member's path and `_http.decode` turns both into the 400's detail.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

# Every integer the contract has (versions, counts, limits) is an int64.
MAX_INT64 = 2**63 - 1
_C = TypeVar("_C", bound="Choice")
_N = TypeVar("_N", bound="Count")


def shown(value: object) -> str:
    """A member's value as a detail quotes it: JSON-like, and never very long."""
    text = "null" if value is None else repr(value) if not isinstance(value, bool) \
        else str(value).lower()
    return text if len(text) <= 60 else text[:57] + "..."


class Count(int):
    """An integer >= ``MINIMUM``, at most an int64.

    A JSON number with no fraction (``10.0``) counts as an integer, as it always has here;
    ``true``, ``"10"`` and ``1.5`` do not. (msgspec's own ``int`` refuses ``10.0``.)
    """

    MINIMUM: ClassVar[int] = 0

    @classmethod
    def describe(cls) -> str:
        return f"an integer >= {cls.MINIMUM}"

    @classmethod
    def from_wire(cls: type[_N], value: object) -> _N:
        number = int(value) if isinstance(value, float) and value.is_integer() else value
        if isinstance(number, bool) or not isinstance(number, int) or number < cls.MINIMUM:
            raise ValueError(f"must be {cls.describe()}, got {shown(value)}")
        if number > MAX_INT64:
            raise ValueError(f"must be {cls.describe()} and at most {MAX_INT64}, got {number}")
        return cls(number)


class Positive(Count):
    """An integer >= 1: Lance's build options, where 0 means nothing sensible."""

    MINIMUM = 1


class Choice(str):
    """One of ``CHOICES`` (PascalCase), sent in any case, PascalCase or snake_case:
    ``ExistOk``, ``exist_ok``, ``EXISTOK``. Null or ``""`` is ``DEFAULT``."""

    CHOICES: ClassVar[tuple[str, ...]] = ()
    DEFAULT: ClassVar[str] = ""

    @classmethod
    def default(cls: type[_C]) -> _C:
        return cls(cls.DEFAULT)

    @classmethod
    def describe(cls) -> str:
        return f"one of {', '.join(cls.CHOICES)} (any case, PascalCase or snake_case)"

    @classmethod
    def from_wire(cls: type[_C], value: object) -> _C:
        if value is None or value == "":
            return cls(cls.DEFAULT)
        if isinstance(value, str):
            wanted = value.replace("_", "").replace("-", "").lower()
            for choice in cls.CHOICES:
                if choice.lower() == wanted:
                    return cls(choice)
        raise ValueError(f"must be {cls.describe()}, got {shown(value)}")


def dec_hook(kind: type, value: Any) -> Any:
    """msgspec's hook for the types above (and any other with a ``from_wire``)."""
    from_wire = getattr(kind, "from_wire", None)
    if from_wire is None:
        raise NotImplementedError(f"no decoder for {kind.__name__}")
    return from_wire(value)
