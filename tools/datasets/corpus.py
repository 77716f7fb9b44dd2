"""Deterministic generation of the sample corpus: every column but the vectors.

Needs no model, so the tests can regenerate the rows and compare them with the shipped file.
Only ``random.Random`` methods whose output is stable across Python versions are used.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from datetime import date, timedelta

from tools.datasets.vocabulary import TOPICS

SEED = 9
ROWS_PER_CATEGORY = 375
FIRST_DATE = date(2022, 1, 1)
DATE_SPAN_DAYS = 3 * 365 + 1
FOLLOWUP_CHANCE = 0.55

_FORMATTER = string.Formatter()


@dataclass(frozen=True)
class SampleRow:
    id: int
    category: str
    title: str
    text: str
    rating: float
    reads: int
    published: date


def generate_rows(
    seed: int = SEED, per_category: int = ROWS_PER_CATEGORY
) -> list[SampleRow]:
    """Rows ordered by ``id`` (1-based), categories shuffled together, each text and each
    title unique; a title is the headline of its own text's opener, with the same words."""
    rng = random.Random(seed)
    seen: set[str] = set()
    titles: set[str] = set()
    drafts: list[tuple[str, str, str]] = []
    for category, topic in TOPICS.items():
        made = 0
        attempts = 0
        while made < per_category:
            attempts += 1
            if attempts > per_category * 50:
                raise RuntimeError(f"{category}: too few distinct texts for {per_category} rows")
            chosen: dict[str, str] = {}
            opener = rng.randrange(len(topic["openers"]))
            text = _fill(topic["openers"][opener], topic["slots"], rng, chosen)
            if rng.random() < FOLLOWUP_CHANCE:
                text += " " + _fill(rng.choice(topic["followups"]), topic["slots"], rng, chosen)
            # The headline's fields are all the opener's, so this draws no new word.
            title = _fill(topic["headlines"][opener], topic["slots"], rng, chosen)
            if text in seen or title in titles:
                continue
            seen.add(text)
            titles.add(title)
            drafts.append((category, title, text))
            made += 1
    rng.shuffle(drafts)
    return [
        SampleRow(
            id=number,
            category=category,
            title=title,
            text=text,
            rating=round(min(5.0, max(1.0, rng.gauss(3.9, 0.6))), 1),
            reads=int(rng.lognormvariate(6.0, 1.2)),
            published=FIRST_DATE + timedelta(days=rng.randrange(DATE_SPAN_DAYS)),
        )
        for number, (category, title, text) in enumerate(drafts, start=1)
    ]


def _fill(
    template: str,
    slots: dict[str, tuple[str, ...]],
    rng: random.Random,
    chosen: dict[str, str],
) -> str:
    """Fill ``template``, reusing and adding to ``chosen`` (one row's words, by field name).

    ``{x2}`` draws from slot ``x`` a word that ``{x}`` did not get.
    """
    for _, field, _, _ in _FORMATTER.parse(template):
        if field is None or field in chosen:
            continue
        slot = field.rstrip(string.digits)
        taken = {word for name, word in chosen.items() if name.rstrip(string.digits) == slot}
        chosen[field] = rng.choice([word for word in slots[slot] if word not in taken])
    filled = template.format(**chosen)
    return filled[0].upper() + filled[1:]
