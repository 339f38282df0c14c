"""The ready-made suites S1-S7, the topmost layer: run them against a topology with
`pytest --pyargs harness_suites --topology FILE|lab` (the plugin's fixtures do the rest)."""
