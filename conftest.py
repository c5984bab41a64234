pytest_plugins = [
    "fixtures.options",
    "fixtures.cluster",
    "fixtures.namespace",
    "fixtures.requirements",
    "fixtures.nodes",
    "fixtures.fake_driver",
    "fixtures.driver",
    "fixtures.reporting",
    "fixtures.scan",
]
