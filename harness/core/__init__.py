"""The bottom layer: errors, the version matrix (versions.toml), cells, report layout,
requirements and expectations as data, redaction, outputs, upstream upgrade facts.
Imports nothing else from harness."""
