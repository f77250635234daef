// posteriordb's surgical_model (stan-dev/posteriordb, posterior_database/models/stan/surgical_model.stan),
// WinBUGS "Surgical" (random-effects version), in current Stan array syntax; no log_lik.
// r[i] deaths out of n[i] operations in hospital i; b[i] is hospital i's log-odds.
data {
  int<lower=0> N;
  array[N] int r;
  array[N] int n;
}
parameters {
  real mu;
  real<lower=0> sigmasq;
  array[N] real b;
}
transformed parameters {
  real<lower=0> sigma = sqrt(sigmasq);
  array[N] real<lower=0, upper=1> p = inv_logit(b);
}
model {
  mu ~ normal(0.0, 1000.0);
  sigmasq ~ inv_gamma(0.001, 0.001);
  b ~ normal(mu, sigma);
  r ~ binomial_logit(n, b);
}
generated quantities {
  real pop_mean = inv_logit(mu);
}
