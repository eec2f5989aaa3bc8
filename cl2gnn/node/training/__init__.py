"""Training: every rule of what goes with what (:mod:`.plan`), the trainers (:mod:`.trainer`,
full batch in :mod:`.fullbatch`, mini-batches in :mod:`.minibatch` with :mod:`.sampler` and
layer-wise :mod:`.inference`), the one loop (:mod:`.fit`) and checkpoints
(:mod:`.checkpoint`)."""
