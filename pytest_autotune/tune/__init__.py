"""The tuning engine: the port of the seed's autotune module. It never imports pytest."""
