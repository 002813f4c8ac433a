"""The lock-free counters and histograms behind /metrics expose what prometheus-client would:
cumulative buckets by upper bound, a sum and a count, counters with ``_total``."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from orbit_actors.observe.metrics import Counts, Latencies


def exposed(metric: Counts | Latencies) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    class One(Collector):
        def collect(self):  # type: ignore[no-untyped-def]
            yield metric.family()

    registry = CollectorRegistry()
    registry.register(One())
    text = generate_latest(registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_an_observation_counts_in_every_bucket_at_or_above_it() -> None:
    latencies = Latencies("took_seconds", "How long.", ["workflow"], [0.1, 1.0])
    for seconds in (0.05, 0.1, 0.5, 7.0):
        latencies.observe(seconds, "w")
    found = exposed(latencies)
    bucket = "took_seconds_bucket"
    assert found[(bucket, (("le", "0.1"), ("workflow", "w")))] == 2  # 0.1 is "<= 0.1"
    assert found[(bucket, (("le", "1.0"), ("workflow", "w")))] == 3
    assert found[(bucket, (("le", "+Inf"), ("workflow", "w")))] == 4
    assert found[("took_seconds_count", (("workflow", "w"),))] == 4
    assert found[("took_seconds_sum", (("workflow", "w"),))] == 7.65


def test_a_histogram_without_labels_is_exposed_at_zero_before_any_observation() -> None:
    assert (
        exposed(Latencies("commit_seconds", "Commits.", [], [0.1]))[("commit_seconds_count", ())]
        == 0
    )


def test_counters_are_exposed_with_total_by_label_values() -> None:
    counts = Counts("finished", "Finished.", ["workflow", "status"])
    counts.inc("w", "completed")
    counts.inc("w", "completed")
    counts.inc("w", "failed")
    found = exposed(counts)
    assert found[("finished_total", (("status", "completed"), ("workflow", "w")))] == 2
    assert found[("finished_total", (("status", "failed"), ("workflow", "w")))] == 1


def test_a_bound_child_is_the_series_its_label_observes_into() -> None:
    latencies = Latencies("took_seconds", "How long.", ["workflow"], [0.1, 1.0])
    latencies.observe(0.5, "w")
    child = latencies.child("w")
    child[1] += 1  # what an observation of 0.5 through the child adds
    child[-1] += 0.5
    assert latencies.child("w") is child
    assert exposed(latencies)[("took_seconds_count", (("workflow", "w"),))] == 2
