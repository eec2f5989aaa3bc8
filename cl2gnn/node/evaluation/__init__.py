"""Evaluation: the frozen-embedding probes and the protocols' splits (:mod:`.probes`),
method ``auto`` (:mod:`.auto`), and the experiment of seeds × protocols × baselines that the
``cl2gnn node`` command runs and prints (:mod:`.experiment`)."""
