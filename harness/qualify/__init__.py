"""Vendor driver qualification: preflight, the suites in external mode, and the report."""
