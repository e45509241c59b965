"""Small stand-ins written in the real formats and layouts of outside sources (the Hugging Face Hub cache)."""
