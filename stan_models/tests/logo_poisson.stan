// Poisson counts with a random intercept per group: p(y_g | mu, tau) is a 1-D integral, so exact
// leave-one-group-out is that integral on a (mu, tau) grid (benchmarks/truths/crossval/
// truths_logo.py).
data {
  int<lower=0> N;
  int<lower=1> J;
  array[N] int<lower=1, upper=J> g;
  array[N] int<lower=0> y;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[J] a;
}
model {
  mu ~ normal(0, 2);
  tau ~ normal(0, 1);
  a ~ normal(mu, tau);
  y ~ poisson_log(a[g]);
}
