// Simulates alpha, beta, sigma from bf_regression.stan's prior and y given them.
data {
  int<lower=0> N;
  vector[N] x;
}
generated quantities {
  real alpha = normal_rng(0, 2);
  real beta = normal_rng(0, 1);
  real sigma = abs(normal_rng(0, 1));
  vector[N] y;
  for (n in 1:N) y[n] = normal_rng(alpha + beta * x[n], sigma);
}
