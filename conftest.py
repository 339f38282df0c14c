"""Loads the harness's pytest plugin for every test run from this repository."""

pytest_plugins = ["harness.plugin"]
