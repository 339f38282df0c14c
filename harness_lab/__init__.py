"""The embedded lab: a two-site cluster with a witness, built from real parts on one machine."""
