"""The runs that carry out plans (``fasteval.core.plan``): a sweep's ``job`` and the ``sweep`` over many models (here,
or on Ray: ``ray_executor``), the vector ladder (``ladder``: a model's vectors as stores keep them, rung by rung),
the surface-form baselines computed (``baselines``), ``drift/`` (the CI gate, a room of its own: its request planned
once, its checks a registry), ``check``, ``bench`` (timings) and ``training`` (PhysScoreEvaluator)."""
