"""Layer 6, run: the library facade (`api`), work units in processes or on Dask, the spilled store,
the end of a run, merge of reports, reading lines back.
"""
