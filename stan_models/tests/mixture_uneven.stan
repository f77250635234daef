// Two normal components with no ordering of their means, a mixing weight lambda and prior
// means -m and m: the posterior has two modes that the labels swap (mu[1] below mu[2] or
// above it). With m = 0 and lambda = 0.5 they are alike in every way; m > 0 makes their
// weights uneven (the prior prefers mu[1] < mu[2]) and lambda away from 0.5 makes a held-out
// observation's density differ between them (benchmarks/modes_spread_coverage.py).
data {
  int<lower=1> N;
  vector[N] y;
  real<lower=0, upper=1> lambda;
  real m;
}
parameters {
  vector[2] mu;
}
model {
  mu[1] ~ normal(-m, 5);
  mu[2] ~ normal(m, 5);
  for (n in 1:N) {
    target += log_mix(lambda, normal_lpdf(y[n] | mu[1], 1), normal_lpdf(y[n] | mu[2], 1));
  }
}
