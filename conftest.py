pytest_plugins = [
    "pytester",  # the harness's own tests run pytest on generated test files
    "fixtures.options",
    "fixtures.cluster",
    "fixtures.namespace",
    "fixtures.requirements",
    "fixtures.nodes",
    "fixtures.fake_driver",
    "fixtures.driver",
    "fixtures.reporting",
    "fixtures.redaction",
    "fixtures.scan",
]
