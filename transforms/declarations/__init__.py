"""One module per dataset, each declaring its tables as module-level :class:`TableDecl` values.

Modules here are discovered, not listed: adding a dataset is adding a file.
"""
