"""The report: the paper's tables (``tables``), figures (``plots``), one HTML page (``html``), and the command
that writes them all (``build``)."""
