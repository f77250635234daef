// Conjugate normal model with known sigma: the posterior of mu and the evidence are analytic.
//   mu ~ normal(mu0, tau0);  y[n] ~ normal(mu, sigma)
data {
  int<lower=0> N;
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
  real y_rep = normal_rng(mu, sigma);
}
