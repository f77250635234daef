// Hierarchical linear regression with group intercepts and known scales (a Gaussian model, so
// every evidence and held-out predictive density is in closed form):
//   y[n] ~ normal(a + b * x[n] + u[g[n]], sigma),  u[j] ~ normal(0, tau),
//   a ~ normal(0, s_ab),  b ~ normal(0, s_ab).
// Marginally y ~ MVN(0, sigma^2 I + tau^2 G G' + s_ab^2 (1 1' + x x')), G the group indicator
// matrix (benchmarks/truths/crossval/truths.py: gaussian_heldout).
data {
  int<lower=1> N;
  int<lower=1> J;
  array[N] int<lower=1, upper=J> g;
  vector[N] x;
  vector[N] y;
  real<lower=0> sigma;
  real<lower=0> tau;
  real<lower=0> s_ab;
}
parameters {
  real a;
  real b;
  vector[J] u;
}
model {
  a ~ normal(0, s_ab);
  b ~ normal(0, s_ab);
  u ~ normal(0, tau);
  y ~ normal(a + b * x + u[g], sigma);
}
