// DELIBERATELY WRONG simulation program for bf_normal_prior.stan: mu ~ normal(0, 0.3 tau)
// instead of normal(0, tau), so the calibration check must fail (benchmarks only).
data {
  int<lower=0> N;
  real<lower=0> sigma;
  real<lower=0> tau;
}
generated quantities {
  real mu = normal_rng(0, 0.3 * tau);
  vector[N] y;
  for (n in 1:N) y[n] = normal_rng(mu, sigma);
}
