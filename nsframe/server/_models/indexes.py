"""Index operations: create (vector, scalar, FTS), list, stats, drop.

``branch`` may come as a query parameter or a body member (upstream clients differ);
given both ways, it must be the same.
"""

from __future__ import annotations

from typing import ClassVar

from nsframe.exceptions import InvalidInputError
from nsframe.server._http.fields import Count, Positive
from nsframe.server._http.pagination import PageRequest
from nsframe.server._http.validation import Envelope
from nsframe.server._search.vector import DistanceType
from nsframe.server._storage.names import check_name

VECTOR_TYPES = (
    "IVF_PQ", "IVF_HNSW_SQ", "IVF_FLAT", "IVF_SQ", "IVF_HNSW_PQ", "IVF_HNSW_FLAT", "IVF_RQ",
)
SCALAR_TYPES = ("BTREE", "BITMAP", "LABEL_LIST", "FTS", "INVERTED", "NGRAM", "ZONEMAP",
                "BLOOMFILTER")
FTS_TOKENIZERS = ("simple", "whitespace", "raw", "ngram", "icu", "icu/split")


class CreateIndexRequest(Envelope, kw_only=True):
    column: str | None = None
    # Normalized by __post_init__: upper case, FTS spelled INVERTED (Lance's name).
    index_type: str | None = None
    name: str | None = None
    # Missing: rebuild an index of the same name.
    replace: bool | None = None
    branch: str | None = None
    # Vector index builds.
    num_partitions: Positive | None = None
    num_sub_vectors: Positive | None = None
    num_bits: Positive | None = None
    sample_rate: Positive | None = None
    max_iterations: Positive | None = None
    m: Positive | None = None
    ef_construction: Positive | None = None
    target_partition_size: Positive | None = None
    distance_type: DistanceType | None = None
    # Upstream's older name for distance_type.
    metric_type: DistanceType | None = None
    # FTS index builds.
    with_position: bool | None = None
    lower_case: bool | None = None
    stem: bool | None = None
    remove_stop_words: bool | None = None
    ascii_folding: bool | None = None
    base_tokenizer: str | None = None
    language: str | None = None
    max_token_length: Positive | None = None

    QUERY = ("branch",)
    SCALAR_ONLY: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not self.column:
            raise InvalidInputError("The member 'column' is required: the field path to index.")
        self.index_type = self._checked_type(self.index_type)
        if self.name:
            # Lance takes any text and files the index under it: "../../x" was built, and
            # then could be neither described nor dropped through a URL path.
            check_name(self.name, "index name")
        if self.base_tokenizer is not None:
            if self.base_tokenizer.lower() not in FTS_TOKENIZERS:
                raise InvalidInputError(
                    f"The base_tokenizer {self.base_tokenizer!r} is not known: use one of "
                    + ", ".join(FTS_TOKENIZERS) + "."
                )
            self.base_tokenizer = self.base_tokenizer.lower()

    def _checked_type(self, raw: str | None) -> str:
        if raw is None or not raw.strip():
            raise InvalidInputError(
                "The member 'index_type' is required: one of "
                + ", ".join(VECTOR_TYPES + SCALAR_TYPES) + "."
            )
        wanted = raw.strip().upper()
        if wanted in SCALAR_TYPES:
            return "INVERTED" if wanted == "FTS" else wanted
        if wanted in VECTOR_TYPES:
            if self.SCALAR_ONLY:
                raise InvalidInputError(
                    f"{wanted} is a vector index: build it with create_index, not "
                    "create_scalar_index."
                )
            return wanted
        raise InvalidInputError(
            f"The index_type {raw!r} is not known: use one of "
            + ", ".join(SCALAR_TYPES if self.SCALAR_ONLY else VECTOR_TYPES + SCALAR_TYPES) + "."
        )

    @property
    def metric(self) -> str | None:
        return self.distance_type or self.metric_type


class CreateScalarIndexRequest(CreateIndexRequest, kw_only=True):
    SCALAR_ONLY = True


class ListIndexesRequest(PageRequest, kw_only=True):
    version: Count | None = None
    branch: str | None = None

    QUERY = (*PageRequest.QUERY, "version", "branch")


class IndexStatsRequest(Envelope, kw_only=True):
    version: Count | None = None
    branch: str | None = None

    QUERY = ("version", "branch")


class DropIndexRequest(Envelope, kw_only=True):
    branch: str | None = None

    QUERY = ("branch",)
