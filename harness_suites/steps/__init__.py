"""What more than one suite reads: the measured steps (S1, S5, S6)."""
