"""Clock or pizza per seed: modular addition across attention rates x seeds (Zhong et al. 2023)."""
