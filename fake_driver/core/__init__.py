"""One-line errors, output paths checked first, the stop signal."""
