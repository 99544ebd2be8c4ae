"""Hot kernels (ground floor): imports nothing from mdps/, algorithms/ or validations/."""
