"""fasteval.models: model folders, sources, ONNX export, the onnxruntime encoder, served models, receipts and MTEB
models as encoders. Internal: the public edge is ``fasteval.*`` (``fasteval.__all__``) and ``fasteval.mteb``."""


def installed_version(distribution: str) -> str | None:
    """The installed version of a distribution ("onnxruntime-gpu", "transformers"), None when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
