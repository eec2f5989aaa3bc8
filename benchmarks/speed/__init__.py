"""How fast, and how much memory: epochs, steps, the exact loss, kNN graphs, scale-out."""
