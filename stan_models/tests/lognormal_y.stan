// A lognormal model of positive y (pairs with normal_logy.stan: the same model written for
// log y, whose elpd differs by exactly sum(log y) at the same draws).
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
  y ~ lognormal(mu, sigma);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = lognormal_lpdf(y[n] | mu, sigma);
}
