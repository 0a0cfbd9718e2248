"""fasteval.cli: argument parsing and printing only; the work is done by the library. Internal: the public edge is
the ``fasteval`` command, ``fasteval.*`` (``fasteval.__all__``) and ``fasteval.mteb``."""
