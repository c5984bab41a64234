pytest_plugins = [
    "pytester",  # the harness's own tests run pytest on generated test files
    "fixtures.options",
    "fixtures.requirements",  # before the plugins importing it, so pytest rewrites its asserts
    "fixtures.cluster",
    "fixtures.namespace",
    "fixtures.nodes",
    "fixtures.fake_driver",
    "fixtures.driver",
    "fixtures.reporting",
    "fixtures.redaction",
    "fixtures.scan",
    "fixtures.realnodes",
    "fixtures.progress",
]
