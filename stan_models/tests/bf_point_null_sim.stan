// Simulates data from bf_point_null.stan.
data {
  int<lower=0> N;
  real<lower=0> sigma;
  real<lower=0> tau;
}
generated quantities {
  vector[N] y;
  for (n in 1:N) y[n] = normal_rng(0, sigma);
}
