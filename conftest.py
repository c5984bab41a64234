# The fixture plugins come from the installed package's pytest11 entry point (fixtures/plugin.py,
# `make venv` installs it), as they do in a vendor's test tree; listing them here too would
# register fixtures.plugin twice.
pytest_plugins = [
    "pytester",  # the harness's own tests run pytest on generated test files
]
