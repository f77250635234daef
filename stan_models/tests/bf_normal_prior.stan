// Alternative of the calibration pair: mu ~ normal(0, tau), y ~ normal(mu, sigma) (conjugate).
data {
  int<lower=0> N;
  vector[N] y;
  real<lower=0> sigma;
  real<lower=0> tau;
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, tau);
  y ~ normal(mu, sigma);
}
