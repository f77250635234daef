// A zero-inflated Poisson autoregression (counts near 100, about 30% structural zeros, weak
// lag): p(y_t | y_-t, theta) has its mode near the observed count and a spike at 0 beyond a
// trough some 40 nats deep, which a sum that stops at negligible terms never reaches.
data {
  int<lower=1> T;
  array[T] int<lower=0> y;
}
parameters {
  real<lower=0> alpha;
  real<lower=0, upper=1> beta;
  real<lower=0, upper=1> pi;
}
model {
  alpha ~ gamma(4, 0.04);
  beta ~ beta(2, 8);
  pi ~ beta(3, 7);
  for (t in 1:T) {
    real lambda = t == 1 ? alpha / (1 - beta) : alpha + beta * y[t - 1];
    if (y[t] == 0)
      target += log_mix(pi, 0, poisson_lpmf(0 | lambda));
    else
      target += log1m(pi) + poisson_lpmf(y[t] | lambda);
  }
}
