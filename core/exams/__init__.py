"""The exams: measurement geometry (``geometry``, Exam 1), lexical vs numeric (``lexical``, Exam 2), the
recalibration probe (``probe``, Exam 3). Each takes an EmbeddingTable and returns a typed result; none loads
a model or a tokenizer."""
