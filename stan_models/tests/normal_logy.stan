// A normal model of log y (pairs with lognormal_y.stan): its elpd is on the scale of log y;
// the Jacobian adjustment (--jacobian log:y) puts it on the scale of y.
data {
  int<lower=1> N;
  vector<lower=0>[N] y;
}
parameters {
  real mu;
  real<lower=0> sigma;
}
model {
  mu ~ normal(0, 2);
  sigma ~ lognormal(0, 1);
  log(y) ~ normal(mu, sigma);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = normal_lpdf(log(y[n]) | mu, sigma);
}
