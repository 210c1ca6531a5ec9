"""Example operations with several candidates each: CuPy kernels on a GPU, NumPy on the CPU.

Each family module gives its candidates per backend, its `Work` model (the minimum bytes
and operations the problem needs, for the roofline), and its inputs.
"""
