"""The runs that carry out plans (``fasteval.core.plan``): a sweep's ``job`` and the ``sweep`` over many models (here,
or on Ray: ``ray_executor``), ``drift/`` (the CI gate, a room of its own), ``check``, ``bench`` (timings) and
``training`` (PhysScoreEvaluator)."""
