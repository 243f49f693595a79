"""The speed benchmark (not installed): a generated evening, a simulated endpoint, the load rows."""
