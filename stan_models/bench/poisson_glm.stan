// Poisson regression with K predictors (benchmarks/loo_fixups.py fits it to over-dispersed
// counts, so that many observations have Pareto k-hat above 0.7 in PSIS-LOO).
data {
  int<lower=0> N;
  int<lower=1> K;
  matrix[N, K] X;
  array[N] int<lower=0> y;
}
parameters {
  real alpha;
  vector[K] beta;
}
model {
  alpha ~ normal(0, 2.5);
  beta ~ normal(0, 1);
  y ~ poisson_log(alpha + X * beta);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) {
    log_lik[n] = poisson_log_lpmf(y[n] | alpha + X[n] * beta);
  }
}
