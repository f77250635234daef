// Simulates alpha, sigma from bf_regression_null.stan's prior and y given them.
data {
  int<lower=0> N;
  vector[N] x;
}
generated quantities {
  real alpha = normal_rng(0, 2);
  real sigma = abs(normal_rng(0, 1));
  vector[N] y;
  for (n in 1:N) y[n] = normal_rng(alpha, sigma);
}
