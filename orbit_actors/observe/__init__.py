"""Observation of what runs: Prometheus metrics, OpenTelemetry traces, the structured event log
and its formatters. Each observer sees a batch only once it is durable; none of them changes
what an execution does."""
