"""What the benchmark scripts share: the result tables' format (``results``), a resumable
journal (``runner``), the loss and kNN benchmarks' timings and tables (``operators``), the
generated graphs of OGB size (``large``) and the node benchmarks' configuration lists
(``node_args``)."""
