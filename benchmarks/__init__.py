"""The benchmarks, one script per question, grouped by the kind of question (``README.md``).
Each runs as a module from the repository's root, e.g.
``python -m benchmarks.speed.knn_build --help``; what they share is in ``_shared``."""
