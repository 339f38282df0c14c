"""One module per control plane. Faults pick the backend their target is reached through."""
