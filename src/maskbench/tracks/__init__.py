"""What is specific to a track: its models, batches, module kinds and evaluation."""
