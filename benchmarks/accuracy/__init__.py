"""How accurate: every method on every graph, depth, mini-batch training, image SSL."""
