"""fasteval.cli: argument parsing and printing only; the work is done by the library."""
