"""Running the exams: ``evaluate`` (one encoder, in memory), ``sweep`` (many models, result folders, resume),
``cache`` (embeddings on disk), ``ray_executor`` (a sweep on Ray), ``bench`` (timings)."""
