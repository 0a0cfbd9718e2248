"""Where a model comes from, before anything runs it: the model folder's contract (``folder``), the models known by
name (``registry``), fetching them from PyPI wheels or the Hub (``fetch``), the cache's home (``home``) and what a
model needs of a machine, known before a download (``needs``: ``fasteval sweep --dry-run``)."""
