"""fasteval's benchmarks: fasteval against the tools a user would otherwise use, on the same work, with the numbers
shown equal (``python -m benchmarks``; ``run.py`` says what each section measures). Not part of the package or the
test run."""
