"""fasteval.core: the protocol, the kernels, the exams, the plan, the runs and the results. Models are
``fasteval.models``'s: the core reaches them through the one door (``core.encoders``) and, where a run needs a model
of its own (a sweep's loader, drift's variants, the surface baselines), by importing ``fasteval.models`` from above
it (``.importlinter``'s layers).
Internal: the public edge is ``fasteval.*`` (``fasteval.__all__``) and ``fasteval.mteb``."""
