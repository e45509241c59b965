"""Miniature inputs in each real source's own layout (the Hub's cache, the files a researcher supplies), for the
paper config in miniature (`maskbench.tools.miniature`) and the tests."""
