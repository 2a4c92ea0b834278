"""The sync, split by concern: `pipelines.sync.edge` (`run_sync`, the keyword form commands, scripts and tests
call), `pipelines.sync.run` (`sync`, the whole run: lock, keys, batches, workers), `pipelines.sync.batches`,
`pipelines.sync.extract` (extract and normalize a batch), `pipelines.sync.outcome` (the extracted batch and its
state and run records), `pipelines.sync.load` (load it) and `pipelines.sync.marks`. What each workspace reads:
`pipelines.source.plan`; settings: `pipelines.core.config`; the warehouse: `pipelines.warehouse.destination`.

Nothing is imported here: the edge checks given keys before dlt is imported, and importing this package must
not import dlt.
"""
