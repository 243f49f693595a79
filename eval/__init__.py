"""The evaluation harness: scores briefings against gold briefings, replaying cassettes.

Not built yet; the layers contract in pyproject.toml already reserves its place above the
pipeline.
"""
