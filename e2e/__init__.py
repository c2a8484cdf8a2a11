"""End-to-end tests and the local control plane they run against."""
