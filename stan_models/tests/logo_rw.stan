// Group intercepts linked by a random walk over groups: leaving a group out changes its
// neighbours' prior, which leave-one-group-out without refits must refuse.
data {
  int<lower=0> N;
  int<lower=1> J;
  array[N] int<lower=1, upper=J> g;
  vector[N] y;
}
parameters {
  real<lower=0> tau;
  vector[J] a;
}
model {
  tau ~ normal(0, 1);
  a[1] ~ normal(0, 2);
  a[2:J] ~ normal(a[1:(J - 1)], tau);
  y ~ normal(a[g], 1);
}
