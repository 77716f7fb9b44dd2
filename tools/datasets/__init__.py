"""Build ``nsframe/datasets/sample_texts.parquet``: the corpus generator and the embedding run."""
