"""Allure: in-test steps and evidence, the results directory, and the report generated from it."""
