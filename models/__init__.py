"""fasteval.models: what fasteval embeds with, a room a job: ``sources/`` (model folders, the registry, PyPI and Hub
fetching, the cache's home, a model's needs), ``onnx/`` (the export and the onnxruntime encoder), ``served/`` (a model
behind an HTTP server), ``adapters/`` (a receipt, an MTEB model); ``loader`` turns a name into an encoder and
``machine`` says where it ran. Internal: the public edge is ``fasteval.*`` (``fasteval.__all__``) and
``fasteval.mteb``."""


def installed_version(distribution: str) -> str | None:
    """The installed version of a distribution ("onnxruntime-gpu", "transformers"), None when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
