// Poisson regression with an exposure log_expo, as the loo vignette's roaches model (simulated
// roaches-like data in roaches_sim.json; benchmarks/coverage_loo_mcse.py, tests/crossval/psis_loo/test_loo_mcse.py).
data {
  int<lower=0> N;
  int<lower=1> K;
  matrix[N, K] X;
  vector[N] log_expo;
  array[N] int<lower=0> y;
}
parameters {
  real alpha;
  vector[K] beta;
}
model {
  alpha ~ normal(0, 2.5);
  beta ~ normal(0, 2.5);
  y ~ poisson_log(log_expo + alpha + X * beta);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) {
    log_lik[n] = poisson_log_lpmf(y[n] | log_expo[n] + alpha + X[n] * beta);
  }
}
