"""Data layer: dataset registry (hf:/local:/synthetic:), prepared-parquet schema, negation subset."""
