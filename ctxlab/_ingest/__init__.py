"""Reading traces: any file or folder to canonical `Trace`s (`load`), one reader per producer
family in `formats/`, sniffed by content; what each call received (`inputs`) and the
compactions the recording holds (`recorded`).

Private: the public API is `ctxlab` and its public subpackages (docs/architecture.md).
"""
