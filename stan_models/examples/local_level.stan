// Local-level (random-walk) state-space model with known scales: one latent state per time,
// so every prefix of the series has its own number of parameters.
//   mu[1] ~ normal(0, s0),  mu[t] ~ normal(mu[t-1], s),  y[t] ~ normal(mu[t], sigma).
// Marginally y ~ MVN(0, sigma^2 I + C), C[i, j] = s0^2 + s^2 (min(i, j) - 1), so every
// leave-future-out term is a Gaussian conditional (benchmarks/truths/crossval/truths.py:
// local_level_cov).
data {
  int<lower=2> N;
  vector[N] y;
  real<lower=0> sigma;
  real<lower=0> s;
  real<lower=0> s0;
}
parameters {
  vector[N] mu;
}
model {
  mu[1] ~ normal(0, s0);
  mu[2:N] ~ normal(mu[1:(N - 1)], s);
  y ~ normal(mu, sigma);
}
