// Group intercepts with a wide prior; the last group has a single observation, so leaving
// it out returns a[J] to its prior (tests/crossval/psis_loo/test_own_latent.py).
data {
  int<lower=1> N;
  int<lower=1> J;
  array[N] int<lower=1, upper=J> g;
  vector[N] y;
}
parameters {
  vector[J] a;
  real<lower=0> sigma;
}
model {
  a ~ normal(0, 10);
  sigma ~ normal(0, 1);
  y ~ normal(a[g], sigma);
}
