"""Paper A's Table 1 and trade-off, paper C's sparsity curves, mask pruning rates and the ID/OOD figure, built
from the evaluation JSONs."""
