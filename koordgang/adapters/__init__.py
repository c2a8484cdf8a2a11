"""koordgang."""
