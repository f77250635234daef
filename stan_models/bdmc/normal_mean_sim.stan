// Simulation program for normal_mean.stan: mu from the prior, then y given mu.
data {
  int<lower=1> N;
  real<lower=0> sigma;
  real<lower=0> tau;
}
generated quantities {
  real mu = normal_rng(0, tau);
  vector[N] y;
  for (n in 1:N) {
    y[n] = normal_rng(mu, sigma);
  }
}
