"""Input formats: one module per family, each turning files into canonical `Trace`s."""
