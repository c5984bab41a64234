"""Fake DRA driver publishing GPU-shaped ResourceSlices like real drivers, per version.

Standalone: imports nothing from harness/, fixtures/ or suites/. Run as ``python -m fake_driver``.
"""
