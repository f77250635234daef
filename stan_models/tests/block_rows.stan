// Each observation is a row of T trials with two latents of its own (a small version of
// posteriordb's dogs programs): the density is not a sum of independent per-value terms, the
// conditional normalization handles one value each and the integrated route one latent, so
// pointwise LOO refuses and names K-fold over whole rows.
data {
  int<lower=0> N;
  int<lower=1> T;
  array[N, T] int<lower=0, upper=1> y;
}
parameters {
  real mu;
  matrix[N, 2] z;
}
model {
  mu ~ normal(0, 2);
  to_vector(z) ~ normal(0, 1);
  for (n in 1:N)
    for (t in 1:T)
      y[n, t] ~ bernoulli_logit(mu + z[n, 1] + z[n, 2] * (t - 1));
}
