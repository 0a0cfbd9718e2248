"""fasteval.models: model folders, sources, ONNX export and the onnxruntime encoder."""


def installed_version(distribution: str) -> str | None:
    """The installed version of a distribution ("onnxruntime-gpu", "transformers"), None when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
