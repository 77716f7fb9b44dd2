"""Scraping ``/metrics`` in tests: the samples of a Prometheus text answer, and sums of them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import requests
from prometheus_client.parser import text_string_to_metric_families

Labels = frozenset[tuple[str, str]]
Samples = dict[tuple[str, Labels], float]


def parse(text: str) -> Samples:
    """``{(sample name, labels): value}`` of a scrape."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def scrape(url: str, headers: Mapping[str, str] | None = None) -> Samples:
    resp = requests.get(f"{url}/metrics", headers=dict(headers or {}), timeout=30)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain"), resp.headers
    return parse(resp.text)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, found), v in samples.items() if n == name and wanted <= found)


def by(samples: Samples, name: str, *keys: str) -> Counter[tuple[str, ...]]:
    """``name``'s samples summed by the values of the labels ``keys`` (zeros left out)."""
    counts: Counter[tuple[str, ...]] = Counter()
    for (n, found), v in samples.items():
        if n == name and v:
            labels = dict(found)
            counts[tuple(labels.get(k, "") for k in keys)] += int(v)
    return counts


def added(after: Iterable[Counter[tuple[str, ...]]],
          before: Iterable[Counter[tuple[str, ...]]]) -> Counter[tuple[str, ...]]:
    """What the counts of several servers grew by, added up over the servers."""
    grown: Counter[tuple[str, ...]] = Counter()
    for counts in after:
        grown.update(counts)
    for counts in before:
        grown.subtract(counts)
    return +grown  # only what grew


def label_values(samples: Samples) -> set[str]:
    """Every label value of a scrape (to check what the labels reveal)."""
    return {value for (_, labels) in samples for _, value in labels}
