"""The Helm chart of the fake GPU fleet (charts/dra-harness-fake-gpu): its files generated from
fake_driver, deploy/manifests generated from it, and helm run with one-line errors."""
