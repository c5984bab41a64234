"""The command line (`dra-harness`, harness.cli.main.main:main): the only place that prints
and exits. One module per command group; the work is in the packages below."""
