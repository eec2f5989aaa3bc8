"""Tools for studying one graph: configuration lists, training length, read-outs."""
