"""Plain functions over API objects that say what is wrong: failure-mode detectors, the
invariants a live cluster must keep, the migration guide's verification checks."""
