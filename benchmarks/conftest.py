"""Benchmarks report ratios measured side by side in one run, never absolute gates."""
