// Poisson regression with an offset-free log link and proper priors; int<lower=1> N, so the
// density-difference log-likelihood must use its reference-observation baseline.
data {
  int<lower=1> N;
  vector[N] x;
  array[N] int<lower=0> y;
}
parameters {
  real alpha;
  real beta;
}
model {
  alpha ~ normal(0, 2);
  beta ~ normal(0, 1);
  y ~ poisson_log(alpha + beta * x);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = poisson_log_lpmf(y[n] | alpha + beta * x[n]);
}
