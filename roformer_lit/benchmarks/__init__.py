"""Benchmarks: measured, printed as markdown tables naming the machine; never asserted."""
