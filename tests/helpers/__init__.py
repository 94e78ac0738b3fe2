"""Test helpers shared across tests/ folders (importable because tests/ is on sys.path)."""
