"""Report files written below the products: per-cell summary.json and allure side files,
a failed test's diagnostics, the scale benchmark's result file and its cost curves."""
