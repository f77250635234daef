// normal.stan with the observation count declared int<lower=1> N (no zero-observation
// instance) and no log_lik: the Bayes-factor tools take its prior from one-observation
// instances. mu ~ normal(mu0, tau0); y[n] ~ normal(mu, sigma).
data {
  int<lower=1> N;
  vector[N] y;
  real<lower=0> sigma;
  real mu0;
  real<lower=0> tau0;
}
parameters {
  real mu;
}
model {
  mu ~ normal(mu0, tau0);
  y ~ normal(mu, sigma);
}
