"""S1: the inter-site latency sweep."""
