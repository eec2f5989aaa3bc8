"""The bounds no number the library takes may pass, whatever it counts or scales (standard
library only: the command line reads them before torch is imported).

* a count (nodes, keys, a batch, a fan-out, images) is what an int32 index holds: PyG's and
  the samplers' indices, and torch's sizes past it, overflow;
* a real number is what float32 holds, the precision the library computes in: a larger one
  becomes ``inf`` where it meets a tensor.
"""

COUNT_MAX = 2**31 - 1
FLOAT32_MAX = 3.4028234663852886e38
