// normal_n1.stan declared int<lower=5> N: no zero- or one-observation instance, no lprior,
// no log_lik, so the Bayes-factor tools find no way to its prior and refuse it.
// mu ~ normal(mu0, tau0); y[n] ~ normal(mu, sigma).
data {
  int<lower=5> N;
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
