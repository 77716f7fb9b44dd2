"""The shipped sample file is what the generator here makes; the generator is seeded.

The vectors need the model and are not regenerated; tests/client/test_datasets.py checks them.
"""

from __future__ import annotations

from nsframe.datasets import load_sample, sample_info
from tools.datasets import corpus


def test_file_matches_the_generator() -> None:
    # The committed file is what build.py writes from the seeded generator, column for column.
    table = load_sample()
    rows = corpus.generate_rows()
    for name in ("id", "category", "title", "text", "rating", "reads", "published"):
        assert table.column(name).to_pylist() == [getattr(row, name) for row in rows], name


def test_generator_is_seeded() -> None:
    assert corpus.generate_rows(seed=3, per_category=4) == corpus.generate_rows(3, 4)
    assert corpus.generate_rows(seed=3, per_category=4) != corpus.generate_rows(4, 4)


def test_file_records_the_generators_seed() -> None:
    assert sample_info()["seed"] == corpus.SEED
