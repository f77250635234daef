// Positive values near 100 with an exponential component at the declared bound 0:
// p(y_n | theta) = pi Exp(y_n | 1) + (1 - pi) LogNormal(y_n | mu, sigma). The mixture is
// normalized on (0, inf), so log p(y_n | y_-n, theta) is its log density; for a value near 100
// the second mode sits on the bound, beyond a trough more than 40 nats deep.
data {
  int<lower=1> N;
  vector<lower=0>[N] y;
}
parameters {
  real mu;
  real<lower=0> sigma;
  real<lower=0, upper=1> pi;
}
model {
  mu ~ normal(4.6, 1);
  sigma ~ normal(0, 1);
  pi ~ beta(2, 8);
  for (n in 1:N)
    target += log_mix(pi, exponential_lpdf(y[n] | 1), lognormal_lpdf(y[n] | mu, sigma));
}
