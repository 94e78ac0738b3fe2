"""docs/generate.py's jobs, one module each: references, figures, tables (and what they share)."""
