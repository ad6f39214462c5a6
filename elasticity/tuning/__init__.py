"""Configuration tuning (seed 004, Huang et al. 2022): a declared space of knobs, optimisers with an ask/tell
interface (random search, Latin-hypercube hill climbing, Bayesian optimisation with a random-forest surrogate and
expected improvement), and the evaluation loop that records failed configurations and never retries them."""
