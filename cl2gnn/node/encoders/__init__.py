"""The built-in encoder (:class:`~cl2gnn.node.GraphEncoder`, its propagation graphs built
once per graph and its features kept sparse), and what the library asks of an encoder of
one's own (:mod:`.own`)."""
