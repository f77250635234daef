// Poisson regression fitted to over-dispersed counts: a few outlying counts have Pareto k-hat
// above 0.7 in PSIS-LOO (tests and benchmarks of the moment-matching fix-up).
//   alpha, beta ~ normal(0, 2.5);  y[n] ~ poisson_log(alpha + beta * x[n])
data {
  int<lower=0> N;
  vector[N] x;
  array[N] int<lower=0> y;
}
parameters {
  real alpha;
  real beta;
}
model {
  alpha ~ normal(0, 2.5);
  beta ~ normal(0, 2.5);
  y ~ poisson_log(alpha + beta * x);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) {
    log_lik[n] = poisson_log_lpmf(y[n] | alpha + beta * x[n]);
  }
}
