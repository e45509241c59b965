"""The masking engine: where masks attach, how scores become masks, mask files."""
