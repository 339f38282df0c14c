"""The checkers: pure functions over the timeline and the workload's series."""
