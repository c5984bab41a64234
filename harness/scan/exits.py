"""The scan's exit codes, one place for the command line, the kubectl plugin and the docs: 0
ready, 2 warnings only, 3 blocking findings, 1 the scan itself failed (unreachable cluster,
refused credentials, bad input), 64 a usage error (sysexits.h EX_USAGE; never 2 or 3, which a
nightly reads as verdicts)."""

EXIT_READY, EXIT_ERROR, EXIT_WARNINGS, EXIT_BLOCKING, EXIT_USAGE = 0, 1, 2, 3, 64
