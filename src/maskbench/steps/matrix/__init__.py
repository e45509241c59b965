"""Entry points of the cross-paper matrix (maskbench.matrix): the report from every track's cell records."""
