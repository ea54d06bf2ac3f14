"""The macro phase: the load generator (its measured HTTP client, plans, workloads, levels, worker processes) and the
serving metrics, with what is sampled beside the load (GPU telemetry, the server's /metrics, the client's wake-up lag)."""
