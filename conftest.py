"""Repository-wide pytest settings.

The harness's plugin is not loaded here: it comes from its `pytest11` entry point, as for any
project that installs the harness (`pip install -e .` in this repository).
"""
