"""Benchmarks: our sync beside a dlt rest_api baseline and the lower bound, measured in the same run (see README.md)."""
