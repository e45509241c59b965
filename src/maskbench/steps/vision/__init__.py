"""Entry points of the vision track (paper D): data, vanilla models, FFW gates, evaluation, shrinking, the
report."""
