"""Output: evidence a change board reads instead of logs.

Allure results (labels, steps, attachments, categories), timeline plots with fault windows,
scenario tables, and the single-file HTML report. Everything here reads the timeline and the
workload series; nothing here drives an experiment.
"""
