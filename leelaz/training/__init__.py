"""Training data (Leela Zero chunk records) and the supervised data path."""
