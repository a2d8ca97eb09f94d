"""metis_model: the pure reference model (filled in below)."""
