// Linear regression with one predictor; proper priors on every parameter.
// Copy of examples/regression.stan accepting N = 0 (its prior), for the Bayes-factor tools.
// For regression.data.json, log Z = -29.477367: given sigma the coefficients integrate out
// analytically (y | sigma ~ MVN(0, sigma^2 I + X S X')), leaving a 1-D quadrature over
// sigma (scipy.integrate.quad, relative error < 1e-12).
data {
  int<lower=0> N;
  vector[N] x;
  vector[N] y;
}
parameters {
  real alpha;
  real beta;
  real<lower=0> sigma;
}
model {
  alpha ~ normal(0, 2);
  beta ~ normal(0, 1);
  // sigma is declared <lower=0>, so normal(0, 1) is truncated to its positive half, which has
  // mass 1/2: adding log(2) makes this the normalized half-normal(0, 1) density.
  target += normal_lpdf(sigma | 0, 1) + log(2);
  y ~ normal(alpha + beta * x, sigma);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = normal_lpdf(y[n] | alpha + beta * x[n], sigma);
}
