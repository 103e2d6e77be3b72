// Package run is a load test run's vocabulary, shared by the engine that generates the load, the
// agents that carry it and the server that admits, merges and judges it: a shard's segment of the
// run, the workload a script and its overrides ask for, one second of metrics with the
// generator's health, the verdict on that health and what it delivered, why load stopped, and a
// run's result. It imports the domain, metrics, script and thresholds, never the engine, so the
// server can speak of runs without importing the load generator.
package run
