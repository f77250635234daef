// The roaches Poisson regression (roaches_poisson.stan on the real roaches data, 262
// observations) as a user might write it: the size declared int<lower=1> N and a data array
// the model never uses. K-fold's point refits and their coverage
// (benchmarks/kfold_point_refits.py).
data {
  int<lower=1> N;
  array[3] real unused;  // never used
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
