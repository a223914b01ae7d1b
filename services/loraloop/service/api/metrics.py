"""Prometheus collector over the counters workers keep in the Redis job book."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from loraloop.service.book import LATENCY_BUCKETS_S, JobBook


class JobMetrics:
    """Episodes by status, failures by cause, step and model latency, queue depth, jobs by state."""

    def __init__(self, book: JobBook) -> None:
        self.book = book

    def collect(self) -> Iterator[Metric]:
        """Read the book's counters once per scrape."""
        raw = self.book.metrics()
        episodes = CounterMetricFamily("loraloop_episodes", "Episodes finished, by status", labels=["status"])
        for status, count in raw["episodes"].items():
            episodes.add_metric([status], count)
        yield episodes
        failures = CounterMetricFamily("loraloop_episode_failures", "Episodes that failed, by cause", labels=["cause"])
        for cause, count in raw["failures"].items():
            failures.add_metric([cause], count)
        yield failures
        for name, doc in (("step", "Environment time per step"), ("model", "Model time per step")):
            counts, cumulative, buckets = raw[f"{name}_latency"], 0.0, []
            for bound in [*map(str, LATENCY_BUCKETS_S), "+Inf"]:
                cumulative += counts.get(bound, 0.0)
                buckets.append((bound, cumulative))
            yield HistogramMetricFamily(
                f"loraloop_{name}_latency_seconds", doc, buckets=buckets, sum_value=counts.get("sum", 0.0)
            )
        yield GaugeMetricFamily(
            "loraloop_queue_depth", "Episodes waiting in the broker queue", value=self.book.queue_depth()
        )
        states = GaugeMetricFamily("loraloop_jobs", "Recent jobs by state", labels=["state"])
        jobs = self.book.list(200)
        for state in ("queued", "running", "done", "cancelled"):
            states.add_metric([state], sum(job.state == state for job in jobs))
        yield states
