"""fasteval.core: the protocol, the kernels, the exams, the plan, the runs and the results (no model code here).
Internal: the public edge is ``fasteval.*`` (``fasteval.__all__``) and ``fasteval.mteb``."""
