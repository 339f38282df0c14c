"""Dell VPLEX / metro node, observed through its REST API v2: what the metro storage decided under a fault."""
