"""The ready-made suites get their fixtures (cluster, schema, experiment, scenario_report) from the harness plugin.

Run them unchanged against any topology: `pytest --pyargs harness_suites --topology FILE|lab`.
"""
