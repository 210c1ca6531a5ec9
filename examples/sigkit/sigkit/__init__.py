"""sigkit: signal helpers whose implementation is picked per problem size and device."""

from sigkit.ops import moving_sum

__all__ = ["moving_sum"]
