"""fasteval.core: the protocol, the kernels, the exams and the results (no model code here)."""
