"""Built-in kernel cards (see :mod:`occmodel.card`).

* ``decode_attention``: MLA decode attention over a paged latent KV cache, split-KV,
  the decode-attention kernel occmodel's examples use, with its KV tiles software-pipelined.
* ``decode_attention_nopipe``: the same kernel with the usual per-token page lookup,
  which makes Triton's pipeliner treat the KV loads as indirect: num_stages 2, 3, 4
  leave shared memory (and the prefetch depth) unchanged.
* ``matmul``: a tiled fp16/bf16 GEMM with grouped tile order.

Each module defines a private ``_kernel``, a public launcher that checks shapes, a
torch reference and ``CARD``. Importing a module imports triton, not torch.
"""
