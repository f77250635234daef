// normal_n1.stan with priorsense's lprior: the Bayes-factor tools take the prior from it.
// mu ~ normal(mu0, tau0); y[n] ~ normal(mu, sigma).
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
generated quantities {
  real lprior = normal_lpdf(mu | mu0, tau0);
}
