"""Leave-one-group-out cross-validation without refits: each group's latents integrated out
given the hyperparameters, then PSIS over the hyperparameter draws (:func:`.estimator.logo`)."""
