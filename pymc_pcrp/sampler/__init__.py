"""The chain layer: everything about one Markov chain of labels that is not PyMC.

Nothing here imports PyMC, PyTensor or ArviZ. A chain's options are declared
and resolved in :mod:`~pymc_pcrp.sampler.options`, the likelihood it integrates
out is a cluster family (:mod:`~pymc_pcrp.sampler.families`), the arrays its
kernels take are built and cached in :mod:`~pymc_pcrp.sampler.inputs`, and its
moves beyond the compiled draw are restarts (:mod:`~pymc_pcrp.sampler.restarts`),
template jumps (:mod:`~pymc_pcrp.sampler.templates`) and parallel tempering
(:mod:`~pymc_pcrp.sampler.tempering`). The numba kernels themselves are in
``pymc_pcrp._kernels``; the PyMC step that drives a chain is
:class:`~pymc_pcrp.PCRPGibbs`.
"""
