// normal_n1_lprior.stan with an lprior that drops its normalizing constant and a log_lik: the
// prior's shape is right (power-scaling the prior does not see a constant) but
// lprior + sum(log_lik) is not the program's density, which the Bayes-factor tools warn about.
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
  real lprior = -0.5 * square((mu - mu0) / tau0);
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = normal_lpdf(y[n] | mu, sigma);
}
