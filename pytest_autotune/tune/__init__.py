"""The tuning engine: the port of the seed's autotune module. It never imports pytest, nor
anything of this package outside `tune/` (tests/unit/test_architecture.py holds it to that)."""
