"""Bias sources: per-example probabilities that a bias model (hand-crafted features, a hypothesis-only model,
a weak learner) gives each label, which the debiasing losses read."""
