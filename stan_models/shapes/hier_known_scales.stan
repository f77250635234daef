// Hierarchical normal with sigma and tau known (the exact LOO is closed-form:
// benchmarks/band_bias_coverage.py), int<lower=1> N and a data array it never uses.
data {
  int<lower=1> N;
  int<lower=1> J;
  array[N] int<lower=1, upper=J> g;
  vector[N] y;
  array[N] real w;  // unused
  real<lower=0> sigma;
  real<lower=0> tau;
}
parameters {
  real mu;
  vector[J] theta;
}
model {
  mu ~ normal(0, 5);
  theta ~ normal(mu, tau);
  y ~ normal(theta[g], sigma);
}
