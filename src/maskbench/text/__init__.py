"""Transformer-encoder code both text tracks share (nlu: papers A and C; gender: paper B): model specs and
checkpoints, tokenizers, encoded text pairs and batched prediction."""
