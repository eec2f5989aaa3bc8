"""The applications built on the library: the ``cl2gnn`` command (:mod:`.cli`) and what
makes it fail like a tool (:mod:`.cmdline`), the operator checks (:mod:`.verify`), the node
experiment harness (:mod:`.node`), the image pre-training commands (:mod:`.simclr`,
:mod:`.simsiam`, both run by :mod:`.pretrain`) and the dynamics studies
(:mod:`.dynamics`).

The library never imports this package; it may import any part of the library."""
