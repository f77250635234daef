// Simulates mu and data from bf_normal_prior.stan.
data {
  int<lower=0> N;
  real<lower=0> sigma;
  real<lower=0> tau;
}
generated quantities {
  real mu = normal_rng(0, tau);
  vector[N] y;
  for (n in 1:N) y[n] = normal_rng(mu, sigma);
}
